import { type Insertable, type Selectable, sql } from 'kysely';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import { onPostgres } from '../db/prepared.js';
import type { TenantScope } from '../db/tenant.js';
import { MAX_QUESTIONS_PER_EVENT } from './questions.schemas.js';
import type { AnswerTable, QuestionTable } from './questions.table.js';
import './questions.table.js';

export type QuestionRow = Selectable<QuestionTable>;
export type AnswerRow = Selectable<AnswerTable>;

/** Rows or ids per statement: well under both engines' limits on bound values. */
const CHUNK = 200;
const chunks = <T>(items: T[]): T[][] => Array.from({ length: Math.ceil(items.length / CHUNK) }, (_, i) => items.slice(i * CHUNK, (i + 1) * CHUNK));

const live = (scope: TenantScope, eventId: string) => scope.selectFrom('questions').selectAll().where('eventId', '=', eventId).where('deletedAt', 'is', null);

export function findQuestion(scope: TenantScope, eventId: string, id: string): Promise<QuestionRow | undefined> {
  return live(scope, eventId).where('id', '=', id).executeTakeFirst();
}

/**
 * The live question, locked for the rest of the transaction to change or retire it. On PostgreSQL
 * `FOR UPDATE`, which waits for the transactions that validated answers against it (they hold it
 * `FOR KEY SHARE`, questionsForAnswers) and holds new ones off until the change commits, so an
 * option is never removed while an answer that uses it is being written.
 */
export function lockQuestion(tx: TenantScope, eventId: string, id: string): Promise<QuestionRow | undefined> {
  if (!tx.db.isTransaction) throw new Error('lockQuestion needs a transaction');
  const query = live(tx, eventId).where('id', '=', id);
  return (onPostgres(tx.db) ? query.forUpdate() : query).executeTakeFirst();
}

/** The event's live questions in their order (position, then creation). */
export function questionsOfEvent(scope: TenantScope, eventId: string): Promise<QuestionRow[]> {
  return live(scope, eventId).orderBy('position').orderBy('id').limit(MAX_QUESTIONS_PER_EVENT).execute();
}

/** The event's live questions in their order, held against changes (lockQuestion) until the transaction ends. */
export function questionsForAnswers(tx: TenantScope, eventId: string): Promise<QuestionRow[]> {
  if (!tx.db.isTransaction) throw new Error('questionsForAnswers needs a transaction');
  const query = live(tx, eventId).orderBy('position').orderBy('id').limit(MAX_QUESTIONS_PER_EVENT);
  return (onPostgres(tx.db) ? query.forKeyShare() : query).execute();
}

export function pageQuestions(scope: TenantScope, eventId: string, page: KeysetPage): Promise<QuestionRow[]> {
  return keysetPage(live(scope, eventId), page, 'questions.position', 'questions.id', 'asc').execute();
}

/** The event's choice questions among `ids`, live or retired (a pending order's answers may name either). */
export async function choiceQuestions(scope: TenantScope, eventId: string, ids: string[]): Promise<QuestionRow[]> {
  const found: QuestionRow[] = [];
  for (const part of chunks([...new Set(ids)])) {
    found.push(...(await scope.selectFrom('questions').selectAll().where('eventId', '=', eventId).where('id', 'in', part).where('kind', 'in', ['choice', 'multiple_choice']).execute()));
  }
  return found;
}

/** The last position of the event's live questions (null: none). */
export async function lastPosition(scope: TenantScope, eventId: string): Promise<number | null> {
  const row = await scope.selectFrom('questions').select((eb) => eb.fn.max('position').as('last')).where('eventId', '=', eventId).where('deletedAt', 'is', null).executeTakeFirstOrThrow();
  return row.last === null ? null : Number(row.last);
}

export async function insertQuestion(scope: TenantScope, row: Insertable<QuestionTable>): Promise<void> {
  await scope.db.insertInto('questions').values(row).execute();
}

export function updateQuestion(scope: TenantScope, id: string, changes: Partial<QuestionTable>): Promise<QuestionRow> {
  return scope.updateTable('questions').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** The event's count of live questions, moved by `delta` (under the event's lock). */
export async function countQuestions(tx: TenantScope, eventId: string, delta: 1 | -1): Promise<void> {
  await tx.updateTable('events').set((eb) => ({ questions: eb('questions', '+', delta) })).where('id', '=', eventId).execute();
}

/** Of these options of the question, those that some answer uses (its JSON holds the option's JSON string). */
export async function optionsInUse(scope: TenantScope, questionId: string, options: string[]): Promise<string[]> {
  const contains = onPostgres(scope.db) ? (needle: string) => sql<number>`strpos(value, ${needle})` : (needle: string) => sql<number>`instr(value, ${needle})`;
  const used: string[] = [];
  for (const option of options) {
    const hit = await scope.selectFrom('answers').select('subjectId').where('questionId', '=', questionId).where(contains(JSON.stringify(option)), '>', 0).limit(1).executeTakeFirst();
    if (hit) used.push(option);
  }
  return used;
}

/** An answer as shown: whose (its ticket or order), to what, and its JSON. */
export type GivenAnswer = Pick<AnswerRow, 'questionId' | 'orderId' | 'ticketId' | 'value'>;

/** Ids per `in` list when reading answers: a page or an export batch (1,000) in one statement. */
const READ_CHUNK = 1000;
const readChunks = (ids: string[]): string[][] => {
  const unique = [...new Set(ids)];
  return Array.from({ length: Math.ceil(unique.length / READ_CHUNK) }, (_, i) => unique.slice(i * READ_CHUNK, (i + 1) * READ_CHUNK));
};

/** The answers given for these tickets (questions asked per attendee). */
export async function answersOfTickets(scope: TenantScope, eventId: string, ticketIds: string[]): Promise<GivenAnswer[]> {
  const found: GivenAnswer[] = [];
  for (const part of readChunks(ticketIds)) {
    found.push(...(await scope.selectFrom('answers').select(['questionId', 'orderId', 'ticketId', 'value']).where('eventId', '=', eventId).where('ticketId', 'in', part).execute()));
  }
  return found;
}

/**
 * The answers given for the event's tickets from `first` to `last` (ids, inclusive), per attendee:
 * one range of the (event, ticket) index, where an `in` list of an export batch's ids costs a
 * lookup each. Only for an unfiltered export, which walks every ticket of the event in id order, so
 * the range holds little but its batch's tickets; a filtered batch can span the whole event and
 * reads by its ids instead.
 */
export function answersOfTicketRange(scope: TenantScope, eventId: string, first: string, last: string): Promise<GivenAnswer[]> {
  return scope
    .selectFrom('answers')
    .select(['questionId', 'orderId', 'ticketId', 'value'])
    .where('ticketId', '>=', first)
    .where('ticketId', '<=', last)
    .where('eventId', '=', eventId)
    .execute();
}

/** The answers given for these orders to questions asked per order. */
export async function answersOfOrders(scope: TenantScope, orderIds: string[]): Promise<GivenAnswer[]> {
  const found: GivenAnswer[] = [];
  for (const part of readChunks(orderIds)) {
    found.push(...(await scope.selectFrom('answers').select(['questionId', 'orderId', 'ticketId', 'value']).where('orderId', 'in', part).where('ticketId', 'is', null).execute()));
  }
  return found;
}

export async function insertAnswers(scope: TenantScope, rows: Array<Insertable<AnswerTable>>): Promise<void> {
  for (const part of chunks(rows)) await scope.db.insertInto('answers').values(part).execute();
}

/**
 * Removes a ticket's answers to `questionIds` (the live questions asked of it, which a PUT replaces):
 * answers to retired questions, or to questions no longer asked of its type, stay.
 */
export async function deleteTicketAnswers(scope: TenantScope, ticketId: string, questionIds: string[]): Promise<void> {
  if (questionIds.length === 0) return;
  await scope.deleteFrom('answers').where('ticketId', '=', ticketId).where('questionId', 'in', questionIds).execute();
}

/** Removes an order's answers to `questionIds`, questions asked per order (as deleteTicketAnswers). */
export async function deleteOrderAnswers(scope: TenantScope, orderId: string, questionIds: string[]): Promise<void> {
  if (questionIds.length === 0) return;
  await scope.deleteFrom('answers').where('orderId', '=', orderId).where('ticketId', 'is', null).where('questionId', 'in', questionIds).execute();
}

import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, type FieldError, notFound } from '../errors.js';
import { findOrder } from './orders.repository.js';
import * as repo from './questions.repository.js';
import { lockOrderRow } from './refunds.repository.js';
import { findTicket, lockTicket, ticketsOfOrder } from './tickets.repository.js';
import { type AnswerInput, DEFAULT_MAX_LENGTH, MAX_ANSWERS_BYTES, type PutAnswersBody } from './questions.schemas.js';

type QuestionRow = repo.QuestionRow;
export type AnswerValue = string | number | boolean | string[];

/** One validated answer, as stored. */
export interface PreparedAnswer {
  questionId: string;
  value: AnswerValue;
}

/**
 * An order's answers, validated against the event's questions at order time: what writeAnswers
 * stores once the order's tickets exist. Plain JSON, so a pending order can keep it until it completes.
 */
export interface PreparedAnswers {
  eventId: string;
  /** Answers to questions asked per order. */
  order: PreparedAnswer[];
  /** Answers to questions asked per attendee, by the ticket's place in the order's items. */
  attendees: Array<{ itemIndex: number; attendeeIndex: number; answers: PreparedAnswer[] }>;
}

/** What prepareAnswers reads of an order's body (CreateOrderBody). */
export interface AnswersOfOrder {
  answers?: Array<Static<typeof AnswerInput>>;
  items: Array<{ ticketTypeId: string; quantity: number; attendees?: Array<{ answers?: Array<Static<typeof AnswerInput>> }> }>;
}

/** Reported at most, so a body with a thousand wrong answers gets a bounded answer. */
const MAX_ERRORS = 50;

class Problems {
  readonly list: FieldError[] = [];
  add(path: string, message: string): void {
    if (this.list.length < MAX_ERRORS) this.list.push({ path, message });
  }
  /** Throws the errors gathered, if any, as one invalid_request naming each by its pointer. */
  throwIfAny(): void {
    if (this.list.length === 0) return;
    const [first] = this.list;
    const more = this.list.length > 1 ? ` (and ${this.list.length - 1} more: see errors)` : '';
    throw new AppError('invalid_request', `${first!.path} ${first!.message}${more}`, {}, this.list);
  }
}

const named = (q: QuestionRow) => `question ${q.id} (${JSON.stringify(q.label)})`;
const optionsOf = (q: QuestionRow): string[] => (q.options === null ? [] : (JSON.parse(q.options) as string[]));

/** A question as answers are checked against it: its options and ticket types parsed once (not per attendee and answer). */
type Asked = QuestionRow & { optionSet: ReadonlySet<string>; typeSet: ReadonlySet<string> | null };
const asAsked = (q: QuestionRow): Asked => ({ ...q, optionSet: new Set(optionsOf(q)), typeSet: q.ticketTypeIds === null ? null : new Set(JSON.parse(q.ticketTypeIds) as string[]) });
const covers = (q: Asked, ticketTypeId: string) => q.typeSet?.has(ticketTypeId) ?? true;

function oneOf(q: Asked): string {
  const list = JSON.stringify([...q.optionSet]);
  return list.length <= 300 ? `must be one of ${list}` : `must be one of the options of ${named(q)}`;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * The answer `value` to `q` as stored, or null for no answer (null, an empty or blank text, an empty
 * selection); a value the question does not take is reported at `path` and answers null.
 */
function checkedValue(q: Asked, value: unknown, path: string, problems: Problems): AnswerValue | null {
  if (value === null) return null;
  switch (q.kind) {
    case 'text': {
      if (typeof value !== 'string') return problems.add(path, 'must be a string'), null;
      if (value.trim() === '') return null;
      const max = q.maxLength ?? DEFAULT_MAX_LENGTH;
      // Characters are code points (an emoji is one), never fewer than UTF-16 units: count them only when the units are over.
      if (value.length > max && codePoints(value) > max) return problems.add(path, `must have ${max} characters or fewer`), null;
      return value;
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return problems.add(path, 'must be a finite number'), null;
      if (q.minValue !== null && value < q.minValue) return problems.add(path, `must be ${q.minValue} or more`), null;
      if (q.maxValue !== null && value > q.maxValue) return problems.add(path, `must be ${q.maxValue} or less`), null;
      return value;
    }
    case 'boolean':
      if (typeof value !== 'boolean') return problems.add(path, 'must be true or false'), null;
      return value;
    case 'choice':
      if (typeof value !== 'string' || !q.optionSet.has(value)) return problems.add(path, oneOf(q)), null;
      return value;
    case 'multiple_choice': {
      if (!Array.isArray(value)) return problems.add(path, 'must be an array of options'), null;
      const options = q.optionSet;
      const seen = new Set<string>();
      let ok = true;
      value.forEach((option: unknown, i) => {
        if (typeof option !== 'string' || !options.has(option)) ok = (problems.add(`${path}/${i}`, oneOf(q)), false);
        else if (seen.has(option)) ok = (problems.add(`${path}/${i}`, 'is chosen twice'), false);
        else seen.add(option);
      });
      return ok && value.length > 0 ? (value as string[]) : null;
    }
    default:
      throw new Error(`question ${q.id} has an unknown kind ${q.kind}`);
  }
}

/**
 * The answers of one subject (an attendee, or the order) checked against `asked`, the questions put
 * to it: each answer names a live question of the event (an answer to another question is an error
 * that says why), answers it once, with a value it takes; every required question asked is answered.
 * `at` is the pointer of the answers' array, `missingAt` where a missing required answer is reported.
 */
function checkAnswers(
  all: Map<string, Asked>,
  asked: (q: Asked) => string | null,
  answers: Array<Static<typeof AnswerInput>> | undefined,
  at: string,
  missingAt: string,
  problems: Problems,
): PreparedAnswer[] {
  const given = new Map<string, AnswerValue>();
  const seen = new Set<string>();
  (answers ?? []).forEach((answer, i) => {
    const q = all.get(answer.questionId);
    const why = q ? asked(q) : `is not a question of this event`;
    if (why !== null) return problems.add(`${at}/${i}/questionId`, why);
    if (seen.has(answer.questionId)) return problems.add(`${at}/${i}/questionId`, `answers ${named(q!)} a second time`);
    seen.add(answer.questionId);
    const value = checkedValue(q!, answer.value, `${at}/${i}/value`, problems);
    if (value !== null) given.set(q!.id, value);
  });
  const prepared: PreparedAnswer[] = [];
  for (const q of all.values()) {
    if (asked(q) !== null) continue;
    const value = given.get(q.id);
    if (value !== undefined) prepared.push({ questionId: q.id, value });
    else if (q.required === 1) problems.add(missingAt, `needs an answer to ${named(q)}, which is required`);
  }
  const bytes = prepared.reduce((sum, answer) => sum + Buffer.byteLength(JSON.stringify(answer.value)), 0);
  if (bytes > MAX_ANSWERS_BYTES) problems.add(at, `take ${bytes} bytes together, more than the ${MAX_ANSWERS_BYTES} one attendee's or one order's answers may take`);
  return prepared;
}

/** Why `q` is not asked of an attendee with a ticket of `ticketTypeId`, or null if it is. */
const attendeeAsks = (ticketTypeId: string) => (q: Asked) =>
  q.askedPer !== 'attendee' ? 'is asked per order: answer it in the order\'s answers' : covers(q, ticketTypeId) ? null : `is not asked for ticket type ${ticketTypeId}`;

/** Why `q` is not asked of an order with tickets of `ticketTypeIds`, or null if it is. */
const orderAsks = (ticketTypeIds: string[]) => (q: Asked) =>
  q.askedPer !== 'order' ? 'is asked per attendee: answer it in the attendee\'s answers' : ticketTypeIds.some((id) => covers(q, id)) ? null : 'is not asked for the ticket types of this order';

/** The questions by id, each parsed once for the whole body (asAsked). */
const byId = (questions: QuestionRow[]) => new Map(questions.map((q) => [q.id, asAsked(q)]));

/**
 * The answers of an order's body validated against the event's questions, in the order's
 * transaction (the questions it read are held against changes until it ends: questionsForAnswers).
 * Every error is reported at once with its JSON pointer (`/items/0/attendees/1/answers/0/value`).
 * A question asked per attendee that is required needs, for each ticket of the types it covers,
 * an `attendees` entry that answers it. `input.items` must be the event's ticket types (createOrder
 * checks that first). `asked`: the event's `questions` as read under its lock, if the caller has
 * it: an order that answers nothing of an event that asks nothing then reads no questions.
 */
export async function prepareAnswers(tx: TenantScope, eventId: string, input: AnswersOfOrder, asked?: number): Promise<PreparedAnswers> {
  const answered = (input.answers?.length ?? 0) > 0 || input.items.some((item) => item.attendees?.some((a) => (a.answers?.length ?? 0) > 0));
  if (asked === 0 && !answered) return { eventId, order: [], attendees: [] };
  const questions = byId(await repo.questionsForAnswers(tx, eventId));
  const problems = new Problems();
  const order = checkAnswers(questions, orderAsks(input.items.map((item) => item.ticketTypeId)), input.answers, '/answers', '/answers', problems);
  const attendees: PreparedAnswers['attendees'] = [];
  input.items.forEach((item, itemIndex) => {
    const asks = attendeeAsks(item.ticketTypeId);
    const required = [...questions.values()].filter((q) => q.required === 1 && asks(q) === null);
    const listed = item.attendees?.length ?? 0;
    if (required.length > 0 && listed < item.quantity) {
      problems.add(`/items/${itemIndex}/attendees`, `must have one entry per ticket (${item.quantity}): ${named(required[0]!)} is required of every attendee`);
    }
    item.attendees?.forEach((attendee, attendeeIndex) => {
      const at = `/items/${itemIndex}/attendees/${attendeeIndex}/answers`;
      const answers = checkAnswers(questions, asks, attendee.answers, at, at, problems);
      if (answers.length > 0) attendees.push({ itemIndex, attendeeIndex, answers });
    });
  });
  problems.throwIfAny();
  return { eventId, order, attendees };
}

/**
 * Stores an order's prepared answers, in the transaction that issues its tickets: `tickets` says
 * which ticket holds each (item, attendee) place of the order.
 */
export async function writeAnswers(
  tx: TenantScope,
  args: { accountId: string; orderId: string; tickets: Array<{ id: string; itemIndex: number; attendeeIndex: number }>; prepared: PreparedAnswers },
): Promise<void> {
  const { accountId, orderId, prepared } = args;
  if (prepared.order.length === 0 && prepared.attendees.length === 0) return;
  const ticketAt = new Map(args.tickets.map((t) => [`${t.itemIndex}/${t.attendeeIndex}`, t.id]));
  const now = Date.now();
  const row = (answer: PreparedAnswer, ticketId: string | null) => ({
    questionId: answer.questionId,
    subjectId: ticketId ?? orderId,
    accountId,
    eventId: prepared.eventId,
    orderId,
    ticketId,
    value: JSON.stringify(answer.value),
    createdAt: now,
    updatedAt: now,
  });
  const rows = prepared.order.map((answer) => row(answer, null));
  for (const attendee of prepared.attendees) {
    const ticketId = ticketAt.get(`${attendee.itemIndex}/${attendee.attendeeIndex}`);
    if (ticketId === undefined) throw new Error(`order ${orderId} has no ticket for item ${attendee.itemIndex}, attendee ${attendee.attendeeIndex}`);
    rows.push(...attendee.answers.map((answer) => row(answer, ticketId)));
  }
  await repo.insertAnswers(tx, rows);
}

/**
 * A pending order's prepared answers as they can be stored at its completion, under its event's
 * lock: an option removed from its question since the order was placed (removal checks stored
 * answers only, and an expired or cancelled order can still complete when its money arrives) is
 * dropped: a choice answer with it becomes no answer, a multiple choice keeps its other options.
 * So no stored answer ever names an option its question does not offer.
 */
export async function offeredAnswers(tx: TenantScope, prepared: PreparedAnswers): Promise<PreparedAnswers> {
  const all = [...prepared.order, ...prepared.attendees.flatMap((a) => a.answers)];
  const choices = all.filter((a) => typeof a.value === 'string' || Array.isArray(a.value));
  if (choices.length === 0) return prepared;
  const offered = new Map((await repo.choiceQuestions(tx, prepared.eventId, choices.map((a) => a.questionId))).map((q) => [q.id, new Set(optionsOf(q))]));
  const keep = (answers: PreparedAnswer[]): PreparedAnswer[] =>
    answers.flatMap((answer) => {
      const options = offered.get(answer.questionId);
      if (options === undefined) return [answer];
      if (Array.isArray(answer.value)) {
        const left = answer.value.filter((o) => options.has(o));
        return left.length > 0 ? [{ ...answer, value: left }] : [];
      }
      return typeof answer.value === 'string' && !options.has(answer.value) ? [] : [answer];
    });
  return { eventId: prepared.eventId, order: keep(prepared.order), attendees: prepared.attendees.map((a) => ({ ...a, answers: keep(a.answers) })) };
}

/** Each ticket's place in the order (item, attendee), for writeAnswers: tickets are issued item by item, in the items' order. */
export function ticketPlaces(items: Array<{ quantity: number }>, ticketIds: string[]) {
  const places = items.flatMap((item, itemIndex) => Array.from({ length: item.quantity }, (_, attendeeIndex) => ({ itemIndex, attendeeIndex })));
  return ticketIds.map((id, i) => ({ id, ...places[i]! }));
}

// ---------------------------------------------------------------------------------------------
// Reading and editing answers later
// ---------------------------------------------------------------------------------------------

/** One subject's answers (a ticket's, or an order's), by question id. */
type AnswersOf = Map<string, AnswerValue>;

/** Answers as the API shows them: to live questions only, in the questions' order. */
export function presentAnswers(questions: QuestionRow[], values: AnswersOf | undefined): PreparedAnswer[] {
  if (values === undefined) return [];
  const shown: PreparedAnswer[] = [];
  for (const q of questions) {
    const value = values.get(q.id);
    if (value !== undefined) shown.push({ questionId: q.id, value });
  }
  return shown;
}

/**
 * The answers of a set of attendees, per ticket (questions asked per attendee) and per order (asked
 * per order); nothing is read when the event asks nothing. Equal answers are parsed once: an export
 * batch repeats a few values many times. `read`: by the tickets' ids (a page), or by the range
 * they span (an export batch: `rows` in ticket id order).
 */
export async function answersOfAttendees(
  scope: TenantScope,
  eventId: string,
  questions: QuestionRow[],
  rows: Array<{ ticketId: string; orderId: string }>,
  read: 'ids' | 'range' = 'ids',
) {
  const byTicket = new Map<string, AnswersOf>();
  const byOrder = new Map<string, AnswersOf>();
  if (questions.length === 0 || rows.length === 0) return { byTicket, byOrder };
  const parsed = new Map<string, AnswerValue>();
  const parse = (json: string) => parsed.get(json) ?? parsed.set(json, JSON.parse(json) as AnswerValue).get(json)!;
  const group = (map: Map<string, AnswersOf>, key: string, row: repo.GivenAnswer) => (map.get(key) ?? map.set(key, new Map()).get(key)!).set(row.questionId, parse(row.value));
  if (questions.some((q) => q.askedPer === 'attendee')) {
    const ids = rows.map((r) => r.ticketId);
    // `range`: rows in ticket id order (an export batch); answers of tickets in between that are not listed are read and left.
    const given = read === 'range' ? await repo.answersOfTicketRange(scope, eventId, ids[0]!, ids[ids.length - 1]!) : await repo.answersOfTickets(scope, eventId, ids);
    for (const row of given) group(byTicket, row.ticketId!, row);
  }
  if (questions.some((q) => q.askedPer === 'order')) {
    for (const row of await repo.answersOfOrders(scope, rows.map((r) => r.orderId))) group(byOrder, row.orderId, row);
  }
  return { byTicket, byOrder };
}

/** One subject's answers by question. */
const valuesOf = (rows: repo.GivenAnswer[]): AnswersOf => new Map(rows.map((r) => [r.questionId, JSON.parse(r.value) as AnswerValue]));

export async function getTicketAnswers(scope: TenantScope, ticketId: string) {
  const ticket = await findTicket(scope, ticketId);
  if (!ticket) throw notFound('ticket', ticketId);
  const questions = await repo.questionsOfEvent(scope, ticket.eventId);
  return { ticketId, orderId: ticket.orderId, answers: presentAnswers(questions, valuesOf(await repo.answersOfTickets(scope, ticket.eventId, [ticketId]))) };
}

export async function getOrderAnswers(scope: TenantScope, orderId: string) {
  const order = await findOrder(scope, orderId);
  if (!order) throw notFound('order', orderId);
  const questions = await repo.questionsOfEvent(scope, order.eventId);
  return { orderId, answers: presentAnswers(questions, valuesOf(await repo.answersOfOrders(scope, [orderId]))) };
}

/**
 * Replaces a ticket's answers with `input` (the complete set), checked as at order time against
 * the questions asked of its ticket type now: a required one must be answered. Only the answers to
 * those questions are replaced: answers to retired questions, or to questions no longer asked of
 * its type, stay stored (as retiring promises). One transaction,
 * with the ticket locked, so two edits of one ticket run one after the other.
 */
export async function putTicketAnswers(scope: TenantScope, ticketId: string, input: Static<typeof PutAnswersBody>) {
  return scope.transaction(async (tx) => {
    const ticket = await lockTicket(tx, ticketId);
    if (!ticket) throw notFound('ticket', ticketId);
    if (ticket.status !== 'valid') throw new AppError('ticket_cancelled', `Ticket ${ticketId} is cancelled; its answers cannot be edited.`);
    const questions = await repo.questionsForAnswers(tx, ticket.eventId);
    const problems = new Problems();
    const asks = attendeeAsks(ticket.ticketTypeId);
    const all = byId(questions);
    const answers = checkAnswers(all, asks, input.answers, '/answers', '/answers', problems);
    problems.throwIfAny();
    await repo.deleteTicketAnswers(tx, ticketId, [...all.values()].filter((q) => asks(q) === null).map((q) => q.id));
    await writeAnswers(tx, {
      accountId: tx.accountId,
      orderId: ticket.orderId,
      tickets: [{ id: ticketId, itemIndex: 0, attendeeIndex: 0 }],
      prepared: { eventId: ticket.eventId, order: [], attendees: [{ itemIndex: 0, attendeeIndex: 0, answers }] },
    });
    return { ticketId, orderId: ticket.orderId, answers };
  });
}

/**
 * Replaces an order's answers to questions asked per order with `input` (the complete set), checked
 * against the questions asked of the types of the order's valid tickets now (not of its items as
 * placed: an order change may have moved tickets to another type). Only a completed order's: a pending
 * one writes the answers it was placed with when it completes.
 */
export async function putOrderAnswers(scope: TenantScope, orderId: string, input: Static<typeof PutAnswersBody>) {
  return scope.transaction(async (tx) => {
    const order = await lockOrderRow(tx, orderId);
    if (!order) throw notFound('order', orderId);
    if (order.status !== 'completed') throw new AppError('order_not_completed', `Order ${orderId} is ${order.status}; its answers can be edited once it is completed.`, { orderStatus: order.status });
    const questions = await repo.questionsForAnswers(tx, order.eventId);
    // The types of its valid tickets now: an order change may have moved tickets to other types since it was placed.
    const ticketTypeIds = [...new Set((await ticketsOfOrder(tx, orderId)).filter((t) => t.status === 'valid').map((t) => t.ticketTypeId))];
    const problems = new Problems();
    const asks = orderAsks(ticketTypeIds);
    const all = byId(questions);
    const answers = checkAnswers(all, asks, input.answers, '/answers', '/answers', problems);
    problems.throwIfAny();
    await repo.deleteOrderAnswers(tx, orderId, [...all.values()].filter((q) => asks(q) === null).map((q) => q.id));
    await writeAnswers(tx, { accountId: tx.accountId, orderId, tickets: [], prepared: { eventId: order.eventId, order: answers, attendees: [] } });
    return { orderId, answers };
  });
}

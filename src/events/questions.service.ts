import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { requireEvent, requireLockedEvent } from './events.repository.js';
import * as repo from './questions.repository.js';
import { type CreateQuestionBody, MAX_POSITION, MAX_QUESTIONS_PER_EVENT, type UpdateQuestionBody } from './questions.schemas.js';

type QuestionRow = repo.QuestionRow;

export function presentQuestion(row: QuestionRow) {
  return {
    id: row.id,
    eventId: row.eventId,
    label: row.label,
    help: row.help,
    kind: row.kind as 'text' | 'number' | 'choice' | 'multiple_choice' | 'boolean',
    options: row.options === null ? null : (JSON.parse(row.options) as string[]),
    required: row.required === 1,
    askedPer: row.askedPer as 'attendee' | 'order',
    ticketTypeIds: row.ticketTypeIds === null ? null : (JSON.parse(row.ticketTypeIds) as string[]),
    position: row.position,
    maxLength: row.maxLength,
    min: row.minValue,
    max: row.maxValue,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export type Question = ReturnType<typeof presentQuestion>;

const isChoice = (kind: string) => kind === 'choice' || kind === 'multiple_choice';

/** The settings of a question of `kind`, each only where the kind has it; the first misplaced one is a 400 at its pointer. */
function checkSettings(kind: string, settings: { options?: string[] | null; maxLength?: number | null; min?: number | null; max?: number | null }): void {
  if (settings.options != null && !isChoice(kind)) throw invalid('/options', 'is only for choice and multiple_choice questions');
  if (settings.maxLength != null && kind !== 'text') throw invalid('/maxLength', 'is only for text questions');
  for (const bound of ['min', 'max'] as const) {
    if (settings[bound] != null && kind !== 'number') throw invalid(`/${bound}`, 'is only for number questions');
  }
  if (settings.min != null && settings.max != null && settings.min > settings.max) throw invalid('/max', 'must not be less than min');
}

/** The ticket type ids, checked to be the event's (a type of another event is a 400 naming its place). */
async function checkedTypes(scope: TenantScope, eventId: string, ids: string[] | null | undefined): Promise<void> {
  if (!ids) return;
  const known = new Set((await scope.selectFrom('ticketTypes').select('id').where('eventId', '=', eventId).execute()).map((t) => t.id));
  ids.forEach((id, i) => {
    if (!known.has(id)) throw invalid(`/ticketTypeIds/${i}`, `is not a ticket type of event ${eventId}`);
  });
}

async function requireQuestion(scope: TenantScope, eventId: string, questionId: string): Promise<QuestionRow> {
  await requireEvent(scope, eventId);
  const question = await repo.findQuestion(scope, eventId, questionId);
  if (!question) throw notFound('question', questionId);
  return question;
}

/**
 * A new question, last unless `position` says otherwise. Under the event's lock, so the limit of
 * questions per event holds however many are created at once.
 */
export async function createQuestion(scope: TenantScope, eventId: string, input: Static<typeof CreateQuestionBody>): Promise<Question> {
  if (isChoice(input.kind) && input.options === undefined) throw invalid('/options', `is required for a ${input.kind} question`);
  checkSettings(input.kind, input);
  return scope.transaction(async (tx) => {
    // The event's row, read under its lock, counts its live questions (countQuestions keeps it).
    const event = await requireLockedEvent(tx, eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled; its questions cannot change.`);
    if (event.questions >= MAX_QUESTIONS_PER_EVENT) {
      throw new AppError('too_many_questions', `Event ${eventId} has ${event.questions} questions, the most it may have.`, { limit: MAX_QUESTIONS_PER_EVENT });
    }
    await checkedTypes(tx, eventId, input.ticketTypeIds);
    const lastPosition = input.position !== undefined || event.questions === 0 ? null : await repo.lastPosition(tx, eventId);
    const now = Date.now();
    const row: QuestionRow = {
      id: newId('question'),
      accountId: tx.accountId,
      eventId,
      label: input.label,
      help: input.help ?? null,
      kind: input.kind,
      options: input.options ? JSON.stringify(input.options) : null,
      required: input.required ? 1 : 0,
      askedPer: input.askedPer ?? 'attendee',
      ticketTypeIds: input.ticketTypeIds ? JSON.stringify(input.ticketTypeIds) : null,
      position: input.position ?? (lastPosition === null ? 0 : Math.min(lastPosition + 1, MAX_POSITION)),
      maxLength: input.maxLength ?? null,
      minValue: input.min ?? null,
      maxValue: input.max ?? null,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    };
    await repo.insertQuestion(tx, row);
    await repo.countQuestions(tx, eventId, 1);
    return presentQuestion(row);
  });
}

export async function getQuestion(scope: TenantScope, eventId: string, questionId: string): Promise<Question> {
  return presentQuestion(await requireQuestion(scope, eventId, questionId));
}

/** The event's questions in their order: by position, then by creation. */
export async function listQuestions(scope: TenantScope, eventId: string, query: PageParams): Promise<Page<Question>> {
  const page = pageRequest(query, listTag(`questions:${eventId}`));
  await requireEvent(scope, eventId);
  const rows = await repo.pageQuestions(scope, eventId, page);
  return toPage(rows, page, (r) => ({ key: r.position, id: r.id }), presentQuestion);
}

/**
 * Changes a question. `kind` and `askedPer` are fixed (answers were given in their terms). Options
 * that answers use cannot be removed: 409 question_options_in_use, checked with the question
 * locked, so no answer with such an option is written meanwhile. Other changes (required, limits,
 * ticket types) apply to answers given or edited afterwards; answers already given stay.
 */
export async function updateQuestion(scope: TenantScope, eventId: string, questionId: string, input: Static<typeof UpdateQuestionBody>): Promise<Question> {
  return scope.transaction(async (tx) => {
    // The event first, as an order does, so an order and a change of a question never wait on each other in a circle.
    const event = await requireLockedEvent(tx, eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled; its questions cannot change.`);
    const question = await repo.lockQuestion(tx, eventId, questionId);
    if (!question) throw notFound('question', questionId);
    const min = input.min === undefined ? question.minValue : input.min;
    const max = input.max === undefined ? question.maxValue : input.max;
    checkSettings(question.kind, { options: input.options, maxLength: input.maxLength, min, max });
    await checkedTypes(tx, eventId, input.ticketTypeIds);
    if (input.options !== undefined) {
      const removed = (JSON.parse(question.options ?? '[]') as string[]).filter((o) => !input.options!.includes(o));
      const inUse = await repo.optionsInUse(tx, questionId, removed);
      if (inUse.length > 0) {
        throw new AppError('question_options_in_use', `Answers to question ${questionId} use ${inUse.map((o) => JSON.stringify(o)).join(', ')}; those options stay.`, { options: inUse });
      }
    }
    const updated = await repo.updateQuestion(tx, questionId, {
      ...(input.label !== undefined ? { label: input.label } : {}),
      ...(input.help !== undefined ? { help: input.help } : {}),
      ...(input.options !== undefined ? { options: JSON.stringify(input.options) } : {}),
      ...(input.required !== undefined ? { required: input.required ? 1 : 0 } : {}),
      ...(input.ticketTypeIds !== undefined ? { ticketTypeIds: input.ticketTypeIds === null ? null : JSON.stringify(input.ticketTypeIds) } : {}),
      ...(input.position !== undefined ? { position: input.position } : {}),
      ...(input.maxLength !== undefined ? { maxLength: input.maxLength } : {}),
      minValue: min,
      maxValue: max,
      updatedAt: Date.now(),
    });
    return presentQuestion(updated);
  });
}

/**
 * Retires a question: it is no longer asked, listed or exported, and its answers are no longer
 * shown, but they stay with their orders (as pretix hides a question rather than lose what buyers
 * answered), and an order placed before, still pending, can complete with its answer to it.
 */
export async function deleteQuestion(scope: TenantScope, eventId: string, questionId: string): Promise<void> {
  await scope.transaction(async (tx) => {
    await requireLockedEvent(tx, eventId);
    const question = await repo.lockQuestion(tx, eventId, questionId);
    if (!question) throw notFound('question', questionId);
    const now = Date.now();
    await repo.updateQuestion(tx, questionId, { deletedAt: now, updatedAt: now });
    await repo.countQuestions(tx, eventId, -1);
  });
}

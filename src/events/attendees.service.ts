import { Readable } from 'node:stream';
import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { iso } from '../time.js';
import * as repo from './attendees.repository.js';
import { type EventRow, requireEvent } from './events.repository.js';
import type { ExportQuery } from './events.schemas.js';
import { answersOfAttendees, type AnswerValue, presentAnswers } from './questions.answers.js';
import { questionsOfEvent, type QuestionRow } from './questions.repository.js';

type Filters = repo.AttendeeFilters;
type AttendeeRow = repo.AttendeeRow;
type Answers = Awaited<ReturnType<typeof answersOfAttendees>>;

function presentAttendee(row: AttendeeRow, questions: QuestionRow[], answers: Answers) {
  return {
    ticketId: row.ticketId,
    orderId: row.orderId,
    name: row.name,
    email: row.email,
    ticketTypeId: row.ticketTypeId,
    ticketTypeName: row.ticketTypeName,
    checkedIn: row.checkedInAt !== null,
    checkedInAt: iso(row.checkedInAt),
    answers: presentAnswers(questions, answers.byTicket.get(row.ticketId)),
    orderAnswers: presentAnswers(questions, answers.byOrder.get(row.orderId)),
  };
}

/** The event's live questions; none read for an event that asks none. */
const askedQuestions = async (scope: TenantScope, event: EventRow) => (event.questions === 0 ? [] : questionsOfEvent(scope, event.id));

/** Attendees as the API shows them, with their answers and their orders' (read in one go per batch). */
async function presentAttendees(scope: TenantScope, eventId: string, questions: QuestionRow[], rows: AttendeeRow[], read: 'ids' | 'range' = 'ids'): Promise<Attendee[]> {
  const answers = await answersOfAttendees(scope, eventId, questions, rows, read);
  return rows.map((row) => presentAttendee(row, questions, answers));
}

export type Attendee = ReturnType<typeof presentAttendee>;

const attendeesListTag = (eventId: string, filters: Filters) =>
  listTag(`attendees:${eventId}`, { checkedIn: filters.checkedIn, ticketTypeId: filters.ticketTypeId, q: filters.q });

/** One page of attendees, in ticket order (exported for the query-plan test). */
export { attendeePageQuery } from './attendees.repository.js';

export async function listAttendees(scope: TenantScope, eventId: string, query: Filters & PageParams): Promise<Page<Attendee>> {
  const page = pageRequest(query, attendeesListTag(eventId, query));
  const filters: Filters = { checkedIn: query.checkedIn, ticketTypeId: query.ticketTypeId, q: query.q };
  const event = await requireEvent(scope, eventId);
  const rows = await repo.attendeePage(scope, eventId, filters, page);
  const listed = toPage(rows, page, (r) => ({ key: r.ticketId, id: r.ticketId }), (row) => row);
  return { ...listed, data: await presentAttendees(scope, eventId, await askedQuestions(scope, event), listed.data) };
}

/**
 * Attendees per export batch: 1,000 when the event asks nothing; with questions each attendee may
 * carry up to MAX_ANSWERS_BYTES of its own answers and as much of its order's, so a batch of 100
 * holds at most ~13 MB of answers (as many as a page of the list, at most 100).
 */
const EXPORT_BATCH = 1000;
const EXPORT_BATCH_WITH_ANSWERS = 100;
/** The export hands its text on in pieces of about this many characters (not a whole batch at once). */
const EXPORT_CHUNK = 64 * 1024;
const CSV_COLUMNS = ['ticketId', 'orderId', 'name', 'email', 'ticketTypeId', 'ticketTypeName', 'checkedIn', 'checkedInAt'] as const;

/**
 * Where a spreadsheet may see the start of a formula: the start of the cell, or of any piece after
 * a separator it might split on (the delimiters in use, `,` `;` `|` tab, and line breaks), when the
 * first character other than spaces and quotes is = + - @, tab or carriage return (OWASP's list).
 */
const FORMULA_AT = /(?:^|[,;|\t\r\n])[ "]*[=+\-@\t\r]/;
/** The same places, as empty matches at the piece's start (a tab or CR also starts the next piece). */
const FORMULA_PIECE_STARTS = /(?<=^|[,;|\t\r\n])(?=[ "]*[=+\-@\t\r])/g;

/**
 * A cell as CSV, always quoted (quotes doubled). A spreadsheet that splits on another delimiter
 * than the comma (`;` in much of Europe) sees each piece between separators as a cell of its own,
 * so every piece that could run as a formula gets an apostrophe at its start (OWASP's remedy),
 * not only the first. One native regex test per cell (measured faster than a scan in JS over
 * 100,000 rows); only the rare cell that needs it is rewritten.
 */
function csvCell(value: string | boolean | null): string {
  let text = value === null ? '' : String(value);
  if (FORMULA_AT.test(text)) text = text.replace(FORMULA_PIECE_STARTS, "'");
  return `"${text.includes('"') ? text.replaceAll('"', '""') : text}"`;
}

/** What the export needs of a question: its id, and its label as its column's header. */
type Column = Pick<QuestionRow, 'id' | 'label'>;

/** The CSV's first line: the attendee's columns, then one per question (its label), in the questions' order. */
function csvHeader(questions: Column[]): string {
  // Two questions may have the same label: the second column is headed `label (2)`, and so on, so every column is told apart.
  const seen = new Map<string, number>();
  const labels = questions.map((q) => {
    const n = (seen.get(q.label) ?? 0) + 1;
    seen.set(q.label, n);
    return n === 1 ? q.label : `${q.label} (${n})`;
  });
  return `${CSV_COLUMNS.join(',')}${labels.map((label) => `,${csvCell(label)}`).join('')}\r\n`;
}

/** An answer as a CSV cell's text: a multiple choice's options joined by ", "; no answer is an empty cell. */
const answerText = (value: AnswerValue | undefined): string | null => (value === undefined ? null : Array.isArray(value) ? value.join(', ') : String(value));

/**
 * One attendee as a line of the export: in CSV, its answer to each question (its own, or its
 * order's) in that question's column. Both lists are in the questions' order, so one walk pairs them.
 */
function exportLine(format: 'csv' | 'json', attendee: Attendee, questions: Column[]): string {
  if (format === 'json') return `${JSON.stringify(attendee)}\n`;
  let line = CSV_COLUMNS.map((c) => csvCell(attendee[c])).join(',');
  let own = 0;
  let order = 0;
  for (const q of questions) {
    let value: AnswerValue | undefined;
    if (attendee.answers[own]?.questionId === q.id) value = attendee.answers[own++]!.value;
    else if (attendee.orderAnswers[order]?.questionId === q.id) value = attendee.orderAnswers[order++]!.value;
    // A number is data a spreadsheet reads as a number: -5 stays -5 (no formula can hide in it).
    line += typeof value === 'number' ? `,"${value}"` : `,${csvCell(answerText(value))}`;
  }
  return `${line}\r\n`;
}

const SAMPLE_QUESTIONS: Column[] = [
  { id: 'qst_01jv8e3a1b2c3d4e5f6g7h8j9k', label: 'Meal' },
  { id: 'qst_01jv8e3a1b2c3d4e5f6g7h8j9m', label: 'Company' },
];

const SAMPLE_ATTENDEES: Attendee[] = [
  {
    ticketId: 'tkt_01jv8e5qk3c9g2t7w4m6n0pxyz',
    orderId: 'ord_01jv8e5qk1a2b3c4d5e6f7g8h9',
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    ticketTypeId: 'tt_01jv8e2m7r5s4q3p2n1m0k9j8h',
    ticketTypeName: 'General admission',
    checkedIn: true,
    checkedInAt: '2027-05-01T18:04:11.000Z',
    answers: [{ questionId: SAMPLE_QUESTIONS[0]!.id, value: 'Vegan' }],
    orderAnswers: [{ questionId: SAMPLE_QUESTIONS[1]!.id, value: '@SUM(1+1)*cmd|"/C calc"!A0' }],
  },
  {
    ticketId: 'tkt_01jv8e5qk4d0h3v8x5n7p1qrst',
    orderId: 'ord_01jv8e5qk1a2b3c4d5e6f7g8h9',
    name: '=HYPERLINK("http://evil.example","Müller, Jürgen")',
    email: 'j.mueller@example.de',
    ticketTypeId: 'tt_01jv8e2m7r5s4q3p2n1m0k9j8h',
    ticketTypeName: 'General admission',
    checkedIn: false,
    checkedInAt: null,
    answers: [],
    orderAnswers: [{ questionId: SAMPLE_QUESTIONS[1]!.id, value: '@SUM(1+1)*cmd|"/C calc"!A0' }],
  },
];

/** What an export of two attendees looks like, written by the same code as a real one (for the OpenAPI document). */
export const EXPORT_EXAMPLES = {
  csv: csvHeader(SAMPLE_QUESTIONS) + SAMPLE_ATTENDEES.map((a) => exportLine('csv', a, SAMPLE_QUESTIONS)).join(''),
  json: SAMPLE_ATTENDEES.map((a) => exportLine('json', a, SAMPLE_QUESTIONS)).join(''),
};

/**
 * The attendees as CSV or NDJSON, read from the database in keyset batches so memory is bounded by
 * a batch (EXPORT_BATCH_WITH_ANSWERS) however many there are, and written in pieces of ~64 KB as
 * fast as the client reads (backpressure).
 */
export async function exportAttendees(scope: TenantScope, eventId: string, query: Static<typeof ExportQuery>) {
  const event = await requireEvent(scope, eventId);
  const format = query.format ?? 'csv';
  const questions = await askedQuestions(scope, event);
  // Unfiltered, a batch's tickets are all the event's in their id range: read its answers by that
  // range. Filtered, the range may span the whole event (a rare ticket type): read by the batch's ids.
  const read = query.checkedIn === undefined && query.ticketTypeId === undefined && query.q === undefined ? 'range' : 'ids';
  async function* lines() {
    if (format === 'csv') yield csvHeader(questions);
    const batch = questions.length === 0 ? EXPORT_BATCH : EXPORT_BATCH_WITH_ANSWERS;
    let after: string | null = null;
    for (;;) {
      const rows = await repo.attendeesAfter(scope, eventId, query, after, batch);
      if (rows.length === 0) return;
      let chunk = '';
      for (const attendee of await presentAttendees(scope, eventId, questions, rows, read)) {
        chunk += exportLine(format, attendee, questions);
        if (chunk.length >= EXPORT_CHUNK) {
          yield chunk;
          chunk = '';
        }
      }
      if (chunk !== '') yield chunk;
      after = rows[rows.length - 1]!.ticketId;
      if (rows.length < batch) return;
    }
  }
  return {
    contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    filename: `attendees-${eventId}.${format === 'csv' ? 'csv' : 'ndjson'}`,
    stream: Readable.from(lines(), { objectMode: false }),
  };
}

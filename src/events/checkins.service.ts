import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { afterCommit } from '../db/transaction.js';
import { AppError, invalid, notFound } from '../errors.js';
import { keysetPage } from '../db/keyset.js';
import { listTag, type Page, type PageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { insertJobsUnnest, JOB_ARRAYS, type JobArrays, jobArrays, jobRows } from '../jobs/queue.js';
import { jobsQueued } from '../jobs/signal.js';
import { deliveryJobs, enabledSubscriptionsColumn, enqueueMessages, type OutboxMessage, outboxRow } from '../webhooks/outbox.js';
import * as repo from './events.repository.js';
import type { CheckinBody } from './events.schemas.js';
import { type CheckinTable, TICKET_COLUMNS, type TicketTable } from './events.table.js';
import { presentTicket, type PresentedTicket } from './orders.service.js';

// The door's hot path runs on prepared queries (see db/prepared.ts): a scanner may send thousands a second.
const ticketById = prepared((db: Db, accountId: string, eventId: string, id: string) =>
  new TenantScope(db, accountId).selectFrom('tickets').select(TICKET_COLUMNS).where('eventId', '=', eventId).where('id', '=', id),
);
const ticketByCode = prepared((db: Db, accountId: string, eventId: string, code: string) =>
  new TenantScope(db, accountId).selectFrom('tickets').select(TICKET_COLUMNS).where('eventId', '=', eventId).where('code', '=', code),
);
/** The check-in itself: one conditional update that succeeds only for a valid ticket of the event not yet in. */
const checkInQuery = (by: 'id' | 'code') => (db: Db, accountId: string, eventId: string, value: string, at: number, checkinId: string, now: number) =>
  new TenantScope(db, accountId)
    .updateTable('tickets')
    .set({ checkedInAt: at, checkinId, updatedAt: now })
    .where('eventId', '=', eventId)
    .where(by, '=', value)
    .where('status', '=', 'valid')
    .where('checkedInAt', 'is', null)
    .returning(TICKET_COLUMNS);
const checkInById = prepared(checkInQuery('id'));
const checkInByCode = prepared(checkInQuery('code'));
/**
 * PostgreSQL's door path in two round trips instead of the transactional path's five or six
 * (BEGIN, the check-in, its history row, the outbox message, its delivery jobs when a subscription
 * wants it, COMMIT): on PostgreSQL each statement is a round trip, and a busy door sends thousands
 * a second. The transactional path is left for what this one does not decide, which is rare.
 * First one read: the ticket the scan names, and the account's enabled webhook subscriptions.
 * Then one statement, which PostgreSQL runs as one transaction: the check-in, its history row,
 * its outbox message and the message's delivery jobs, all conditional on the ticket row being
 * exactly as it was read. The message (which holds the ticket) is built from that read, so it
 * holds what the statement commits. The subscriptions are those of the read: one created or
 * removed between the read and the write may miss the message or get a job that its worker then
 * drops, as with any subscription changed while a change commits. A scan whose ticket this read
 * shows refused is refused from it; one whose ticket is not found, or changed before the write,
 * takes the transactional path.
 */
const ticketWithSubscriptions = (by: 'id' | 'code') =>
  prepared((db: Db, accountId: string, eventId: string, value: string) =>
    new TenantScope(db, accountId)
      .selectFrom('tickets')
      .select(TICKET_COLUMNS)
      .select(enabledSubscriptionsColumn('tickets.accountId').as('subscriptions'))
      .where('eventId', '=', eventId)
      .where(by, '=', value),
  );
const ticketWithSubscriptionsById = ticketWithSubscriptions('id');
const ticketWithSubscriptionsByCode = ticketWithSubscriptions('code');

/** A ticket row's values in TICKET_COLUMNS' order. */
type ValuesOf<C extends ReadonlyArray<keyof TicketTable>> = { -readonly [I in keyof C]: TicketTable[C[I] & keyof TicketTable] };
type TicketValues = ValuesOf<typeof TICKET_COLUMNS>;

const writeCheckInAsRead = prepared(
  (
    db: Db,
    at: number,
    checkinId: string,
    now: number,
    gate: string | null,
    keyId: string | null,
    messageId: string,
    eventType: string,
    payload: string,
    // The jobs' arrays, then the ticket as read: each a bound value of its own (db/prepared.ts).
    ...values: [...JobArrays, ...TicketValues]
  ) => {
    const jobs = values.slice(0, JOB_ARRAYS) as JobArrays;
    const read = values.slice(JOB_ARRAYS) as TicketValues;
    return db
      .with('checked', (qc) =>
        qc
          .updateTable('tickets')
          .set({ checkedInAt: at, checkinId, updatedAt: now })
          // By primary key (`is not distinct from` cannot use an index), then every column as read.
          .where('id', '=', read[0])
          .where((eb) => eb.and(TICKET_COLUMNS.map((column, i) => eb(column, 'is not distinct from', read[i] as TicketTable[typeof column]))))
          .returning(['id', 'accountId', 'eventId']),
      )
      .with('recorded', (qc) =>
        qc
          .insertInto('checkins')
          .columns(['id', 'accountId', 'eventId', 'ticketId', 'action', 'gate', 'scannedAt', 'keyId', 'createdAt'])
          .expression((eb) =>
            eb
              .selectFrom('checked')
              .select([
                eb.cast<string>(eb.val(checkinId), 'text').as('id'),
                'checked.accountId',
                'checked.eventId',
                'checked.id',
                eb.cast<string>(eb.val('checkin'), 'text').as('action'),
                eb.cast<string | null>(eb.val(gate), 'text').as('gate'),
                eb.cast<number>(eb.val(at), 'bigint').as('scannedAt'),
                eb.cast<string | null>(eb.val(keyId), 'text').as('keyId'),
                eb.cast<number>(eb.val(now), 'bigint').as('createdAt'),
              ]),
          ),
      )
      .with('message', (qc) =>
        qc
          .insertInto('webhookMessages')
          .columns(['id', 'accountId', 'eventType', 'payload', 'createdAt'])
          .expression((eb) =>
            eb
              .selectFrom('checked')
              .select([
                eb.cast<string>(eb.val(messageId), 'text').as('id'),
                'checked.accountId',
                eb.cast<string>(eb.val(eventType), 'text').as('eventType'),
                eb.cast<string>(eb.val(payload), 'text').as('payload'),
                eb.cast<number>(eb.val(now), 'bigint').as('createdAt'),
              ]),
          ),
      )
      .with('queued', (qc) => insertJobsUnnest(qc, 'checked', jobs))
      .selectFrom('checked')
      .select('checked.id');
  },
);

const recordCheckin = prepared(
  (db: Db, id: string, accountId: string, eventId: string, ticketId: string, action: string, gate: string | null, scannedAt: number, keyId: string | null, createdAt: number) =>
    db.insertInto('checkins').values({ id, accountId, eventId, ticketId, action, gate, scannedAt, keyId, createdAt }),
);

/** How far ahead of the server's clock an offline scanner's own time may be. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Checks a ticket in. Every entry rule lives here, and each admission is one transaction:
 *   1. the event exists (404);
 *   2. the ticket, by id or by code, belongs to this event (404: a ticket of another event, a
 *      transferred ticket's old code and an unknown code look alike);
 *   3. the ticket is not cancelled (409 ticket_cancelled);
 *   4. the ticket is not checked in yet (409 already_checked_in, with the first check-in's time).
 * All four are one conditional update (`event_id = ? and status = 'valid' and checked_in_at is
 * null`), so of any number of concurrent scans of one ticket exactly one succeeds, on SQLite and
 * on PostgreSQL, and an admitted scan costs no lookups. Only a refused scan looks further, to
 * name the first rule, in this order, that refused it. On PostgreSQL a scan first tries the
 * two-round-trip path (checkInAsRead): one read, which may already refuse it by rules 3 and 4, then
 * one statement that holds the same conditions and more (the whole row as read); whatever that
 * path does not decide comes here.
 */
export async function checkIn(scope: TenantScope, eventId: string, input: Static<typeof CheckinBody>, keyId: string | null): Promise<Admission> {
  if ((input.ticketId === undefined) === (input.code === undefined)) {
    throw invalid(input.ticketId === undefined ? '/ticketId' : '/code', 'send exactly one of ticketId and code');
  }
  const now = Date.now();
  const scannedAt = input.checkedInAt === undefined ? now : parseTime(input.checkedInAt, '/checkedInAt');
  if (scannedAt > now + CLOCK_SKEW_MS) throw invalid('/checkedInAt', 'is in the future');
  const scan: Scan = { scannedAt, now, gate: input.gate ?? null, keyId };

  if (onPostgres(scope.db as Db)) {
    const admitted = await checkInAsRead(scope, eventId, input, scan);
    if (admitted) return admitted;
  }
  return scope.transaction(async (tx) => {
    const db = tx.db as Db;
    const checkinId = newId('checkin');
    const [checkedIn] =
      input.ticketId !== undefined
        ? await checkInById(db, scope.accountId, eventId, input.ticketId, scannedAt, checkinId, now)
        : await checkInByCode(db, scope.accountId, eventId, input.code!, scannedAt, checkinId, now);
    if (!checkedIn) return refuseCheckIn(tx, eventId, input);
    await recordCheckin(db, checkinId, scope.accountId, eventId, checkedIn.id, 'checkin', scan.gate, scannedAt, keyId, now);
    const checkin = admission(checkinId, checkedIn, scan);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'checkin.completed', data: checkin }], now);
    return checkin;
  });
}

/** One scan's own facts: when it happened (the scanner's time), when the server saw it, where, by which key. */
interface Scan {
  scannedAt: number;
  now: number;
  gate: string | null;
  keyId: string | null;
}

/** A check-in as the API answers it and the `checkin.completed` message carries it. */
function admission(checkinId: string, ticket: Selectable<TicketTable>, scan: Scan) {
  const presentedTicket = presentTicket(ticket);
  return {
    id: checkinId,
    action: 'checkin' as const,
    eventId: ticket.eventId,
    ticketId: ticket.id,
    checkedInAt: iso(scan.scannedAt),
    gate: scan.gate,
    createdAt: iso(scan.now),
    ticket: presentedTicket,
    attendee: presentedTicket.attendee,
  };
}

export type Admission = ReturnType<typeof admission>;

/**
 * PostgreSQL: admits a ticket that is valid and not checked in yet, in two round trips
 * (writeCheckInAsRead above), or refuses one that this read shows cancelled or checked in.
 * Undefined when the transactional path must decide: no such ticket of the event (which of rules
 * 1 and 2 failed), or the ticket changed between the read and the write.
 */
async function checkInAsRead(scope: TenantScope, eventId: string, input: Static<typeof CheckinBody>, scan: Scan): Promise<Admission | undefined> {
  const db = scope.db as Db;
  const [found] =
    input.ticketId !== undefined
      ? await ticketWithSubscriptionsById(db, scope.accountId, eventId, input.ticketId)
      : await ticketWithSubscriptionsByCode(db, scope.accountId, eventId, input.code!);
  if (!found) return undefined;
  const { subscriptions, ...ticket } = found;
  // A double scan at the door is common: refused from this read, which is as good as any (the
  // ticket of this event exists, so rules 1 and 2 hold).
  if (ticket.status !== 'valid' || ticket.checkedInAt !== null) refuseTicket(ticket);
  const checkinId = newId('checkin');
  const checkin = admission(checkinId, { ...ticket, checkedInAt: scan.scannedAt, checkinId, updatedAt: scan.now }, scan);
  const messages: OutboxMessage[] = [{ event: 'checkin.completed', data: checkin }];
  const message = outboxRow(scope.accountId, messages[0]!, scan.now);
  const jobs = jobRows(deliveryJobs((subscriptions ?? []).map(([id, events]) => ({ id, events })), messages, [message]), scan.now);
  const written = await writeCheckInAsRead(
    db,
    scan.scannedAt,
    checkinId,
    scan.now,
    scan.gate,
    scan.keyId,
    message.id,
    message.eventType,
    message.payload,
    ...jobArrays(jobs),
    ...(TICKET_COLUMNS.map((column) => ticket[column]) as unknown as TicketValues),
  );
  if (written.length === 0) return undefined;
  if (jobs.length > 0) afterCommit(db, jobsQueued);
  return checkin;
}

/** Why a scan was refused: the first of checkIn's rules, in their order, that the ticket breaks. */
async function refuseCheckIn(tx: TenantScope, eventId: string, input: Static<typeof CheckinBody>): Promise<never> {
  await repo.requireEvent(tx, eventId);
  const db = tx.db as Db;
  const [ticket] =
    input.ticketId !== undefined ? await ticketById(db, tx.accountId, eventId, input.ticketId) : await ticketByCode(db, tx.accountId, eventId, input.code!);
  if (!ticket) throw new AppError('not_found', `No ticket ${input.ticketId ?? 'with that code'} for event ${eventId}.`);
  return refuseTicket(ticket);
}

/** Rules 3 and 4 for a ticket of the event (which proves rules 1 and 2) that was not admitted. */
function refuseTicket(ticket: Selectable<TicketTable>): never {
  if (ticket.status === 'cancelled') throw new AppError('ticket_cancelled', `Ticket ${ticket.id} is cancelled.`);
  throw new AppError('already_checked_in', `Ticket ${ticket.id} was checked in at ${iso(ticket.checkedInAt)}.`, {
    ticketId: ticket.id,
    checkedInAt: iso(ticket.checkedInAt),
    checkinId: ticket.checkinId,
  });
}

/** Reverses a check-in (a wrong scan); the history keeps both. 409 not_checked_in otherwise. */
export async function undoCheckIn(scope: TenantScope, eventId: string, ticketId: string, keyId: string | null): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const now = Date.now();
    const undone = await tx
      .updateTable('tickets')
      .set({ checkedInAt: null, checkinId: null, updatedAt: now })
      .where('id', '=', ticketId)
      .where('eventId', '=', eventId)
      .where('status', '=', 'valid')
      .where('checkedInAt', 'is not', null)
      .returningAll()
      .executeTakeFirst();
    if (!undone) {
      const ticket = await repo.findTicket(tx, ticketId);
      if (!ticket || ticket.eventId !== eventId) throw new AppError('not_found', `No ticket ${ticketId} for event ${eventId}.`);
      if (ticket.status === 'cancelled') throw new AppError('ticket_cancelled', `Ticket ${ticketId} is cancelled.`);
      throw new AppError('not_checked_in', `Ticket ${ticketId} is not checked in.`);
    }
    await recordCheckin(tx.db as Db, newId('checkin'), scope.accountId, eventId, ticketId, 'undo', null, now, keyId, now);
    const presented = presentTicket(undone);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'checkin.undone', data: presented }], now);
    return presented;
  });
}

type CheckinRow = Selectable<CheckinTable>;

function presentHistory(row: CheckinRow) {
  return {
    id: row.id,
    action: row.action as 'checkin' | 'undo',
    eventId: row.eventId,
    ticketId: row.ticketId,
    at: iso(row.scannedAt),
    gate: row.gate,
    keyId: row.keyId,
    createdAt: iso(row.createdAt),
  };
}

/** One check-in or undo, with the ticket as it is now. */
export async function getCheckIn(scope: TenantScope, eventId: string, id: string) {
  const row = await scope.selectFrom('checkins').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('check-in', id);
  const ticket = presentTicket((await repo.findTicket(scope, row.ticketId))!);
  return {
    id: row.id,
    action: row.action as 'checkin' | 'undo',
    eventId,
    ticketId: row.ticketId,
    checkedInAt: iso(row.scannedAt),
    gate: row.gate,
    createdAt: iso(row.createdAt),
    ticket,
    attendee: ticket.attendee,
  };
}

/** The door's history: every check-in and undo (who, when, gate), newest first. */
export async function listCheckIns(scope: TenantScope, eventId: string, ticketId: string | undefined, page: PageRequest): Promise<Page<ReturnType<typeof presentHistory>>> {
  await repo.requireEvent(scope, eventId);
  let query = scope.selectFrom('checkins').selectAll().where('eventId', '=', eventId);
  if (ticketId !== undefined) query = query.where('ticketId', '=', ticketId);
  const rows = await keysetPage(query, page, 'checkins.id', 'checkins.id', 'desc').execute();
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentHistory);
}

export const checkinsListTag = (eventId: string, ticketId: string | undefined) => listTag(`checkins:${eventId}`, { ticketId });

import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { keysetPage, listTag, type Page, type PageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { enqueueMessages } from '../webhooks/outbox.js';
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
 * On PostgreSQL the same update and its history row are one statement (a data-modifying CTE):
 * each statement of a transaction is a round trip there, and a busy door sends thousands a second.
 */
const checkInAndRecordWhere = (by: 'id' | 'code') =>
  prepared((db: Db, accountId: string, eventId: string, value: string, at: number, checkinId: string, now: number, gate: string | null, keyId: string | null) =>
    db
      .with('checked', () => checkInQuery(by)(db, accountId, eventId, value, at, checkinId, now))
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
      .selectFrom('checked')
      .select(TICKET_COLUMNS),
  );
const checkInAndRecordById = checkInAndRecordWhere('id');
const checkInAndRecordByCode = checkInAndRecordWhere('code');
const recordCheckin = prepared(
  (db: Db, id: string, accountId: string, eventId: string, ticketId: string, action: string, gate: string | null, scannedAt: number, keyId: string | null, createdAt: number) =>
    db.insertInto('checkins').values({ id, accountId, eventId, ticketId, action, gate, scannedAt, keyId, createdAt }),
);

/** How far ahead of the server's clock an offline scanner's own time may be. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Checks a ticket in. Every entry rule lives here, inside one transaction:
 *   1. the event exists (404);
 *   2. the ticket, by id or by code, belongs to this event (404: a ticket of another event, a
 *      transferred ticket's old code and an unknown code look alike);
 *   3. the ticket is not cancelled (409 ticket_cancelled);
 *   4. the ticket is not checked in yet (409 already_checked_in, with the first check-in's time).
 * All four are one conditional update (`event_id = ? and status = 'valid' and checked_in_at is
 * null`), so of any number of concurrent scans of one ticket exactly one succeeds, on SQLite and
 * on PostgreSQL, and an admitted scan costs no lookups. Only a refused scan looks further, to
 * name the first rule, in this order, that refused it.
 */
export async function checkIn(scope: TenantScope, eventId: string, input: Static<typeof CheckinBody>, keyId: string | null) {
  if ((input.ticketId === undefined) === (input.code === undefined)) {
    throw invalid(input.ticketId === undefined ? '/ticketId' : '/code', 'send exactly one of ticketId and code');
  }
  const now = Date.now();
  const scannedAt = input.checkedInAt === undefined ? now : parseTime(input.checkedInAt, '/checkedInAt');
  if (scannedAt > now + CLOCK_SKEW_MS) throw invalid('/checkedInAt', 'is in the future');

  return scope.transaction(async (tx) => {
    const db = tx.db as Db;
    const checkinId = newId('checkin');
    const gate = input.gate ?? null;
    let checkedIn: Selectable<TicketTable> | undefined;
    if (onPostgres(db)) {
      [checkedIn] =
        input.ticketId !== undefined
          ? await checkInAndRecordById(db, scope.accountId, eventId, input.ticketId, scannedAt, checkinId, now, gate, keyId)
          : await checkInAndRecordByCode(db, scope.accountId, eventId, input.code!, scannedAt, checkinId, now, gate, keyId);
    } else {
      [checkedIn] =
        input.ticketId !== undefined
          ? await checkInById(db, scope.accountId, eventId, input.ticketId, scannedAt, checkinId, now)
          : await checkInByCode(db, scope.accountId, eventId, input.code!, scannedAt, checkinId, now);
      if (checkedIn) await recordCheckin(db, checkinId, scope.accountId, eventId, checkedIn.id, 'checkin', gate, scannedAt, keyId, now);
    }
    if (!checkedIn) return refuseCheckIn(tx, eventId, input);
    const presentedTicket = presentTicket(checkedIn);
    const checkin = {
      id: checkinId,
      action: 'checkin' as const,
      eventId,
      ticketId: checkedIn.id,
      checkedInAt: iso(scannedAt),
      gate,
      createdAt: iso(now),
      ticket: presentedTicket,
      attendee: presentedTicket.attendee,
    };
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'checkin.completed', data: checkin }], now);
    return checkin;
  });
}

/** Why a scan was refused: the first of checkIn's rules, in their order, that the ticket breaks. */
async function refuseCheckIn(tx: TenantScope, eventId: string, input: Static<typeof CheckinBody>): Promise<never> {
  await repo.requireEvent(tx, eventId);
  const db = tx.db as Db;
  const [ticket] =
    input.ticketId !== undefined ? await ticketById(db, tx.accountId, eventId, input.ticketId) : await ticketByCode(db, tx.accountId, eventId, input.code!);
  if (!ticket) throw new AppError('not_found', `No ticket ${input.ticketId ?? 'with that code'} for event ${eventId}.`);
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

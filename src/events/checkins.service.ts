import type { Static } from 'typebox';
import { onPostgres } from '../db/prepared.js';
import type { TenantScope } from '../db/tenant.js';
import { invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { fanOut } from '../webhooks/outbox.js';
import * as repo from './checkins.repository.js';
import { checkInByCode } from './door.service.js';
import { requireEvent } from './events.repository.js';
import type { CheckinBody } from './events.schemas.js';
import { findTicket, type TicketKey, type TicketRow } from './tickets.repository.js';
import { changeTicket, presentTicket, type PresentedTicket, refusal } from './tickets.service.js';

type Scan = repo.Scan;

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
 * name the first rule, in this order, that refused it (tickets.service.ts, changeTicket). On
 * PostgreSQL a scan first tries the two-round-trip path (checkInAsRead): one read, which may
 * already refuse it by rules 3 and 4, then one statement that holds the same conditions and more
 * (the whole row as read); whatever that path does not decide comes here.
 */
export async function checkIn(scope: TenantScope, eventId: string, input: Static<typeof CheckinBody>, keyId: string | null): Promise<Admission> {
  if ((input.ticketId === undefined) === (input.code === undefined)) {
    throw invalid(input.ticketId === undefined ? '/ticketId' : '/code', 'send exactly one of ticketId and code');
  }
  const now = Date.now();
  const scannedAt = input.checkedInAt === undefined ? now : parseTime(input.checkedInAt, '/checkedInAt');
  if (scannedAt > now + CLOCK_SKEW_MS) throw invalid('/checkedInAt', 'is in the future');
  const scan: Scan = { scannedAt, now, gate: input.gate ?? null, keyId };

  const key = ticketKey(input);
  // A signed code (docs/events.md, "Signed ticket codes") is verified first, and a refused one told apart.
  return checkInByCode(scope, eventId, input.code, async () => {
    if (onPostgres(scope.db)) {
      const admitted = await checkInAsRead(scope, eventId, key, scan);
      if (admitted) return admitted;
    }
    return scope.transaction(async (tx) => {
      const checkinId = newId('checkin');
      const checkedIn = await changeTicket(tx, 'checkIn', { ...key, eventId }, () => repo.writeCheckIn(tx, eventId, key, checkinId, scan));
      const checkin = admission(checkinId, checkedIn, scan);
      await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'checkin.completed', data: checkin }], now);
      return checkin;
    });
  });
}

const ticketKey = (input: Static<typeof CheckinBody>): TicketKey => (input.ticketId !== undefined ? { ticketId: input.ticketId } : { code: input.code! });

/** A check-in as the API answers it and the `checkin.completed` message carries it. */
function admission(checkinId: string, ticket: TicketRow, scan: Scan) {
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
    // The event-wide check-in goes through no check-in list (checkin-lists.service.ts).
    listId: null,
    direction: 'entry' as const,
  };
}

export type Admission = ReturnType<typeof admission>;

/**
 * PostgreSQL: admits a ticket that is valid and not checked in yet, in two round trips
 * (readForCheckIn, then writeCheckInAsRead's one statement), or refuses one that this read shows
 * cancelled or checked in. Undefined when the transactional path must decide: no such ticket of
 * the event (which of rules 1 and 2 failed), or the ticket changed between the read and the write.
 */
async function checkInAsRead(scope: TenantScope, eventId: string, key: TicketKey, scan: Scan): Promise<Admission | undefined> {
  const found = await repo.readForCheckIn(scope, eventId, key);
  if (!found) return undefined;
  const { ticket, subscriptions } = found;
  // A double scan at the door is common: refused from this read, which is as good as any (the
  // ticket of this event exists, so rules 1 and 2 hold).
  if (ticket.status !== 'valid' || ticket.checkedInAt !== null) throw refusal('checkIn', ticket);
  const checkinId = newId('checkin');
  const checkin = admission(checkinId, { ...ticket, checkedInAt: scan.scannedAt, checkinId, updatedAt: scan.now }, scan);
  const written = await repo.writeCheckInAsRead(scope, ticket, checkinId, scan, { event: 'checkin.completed', data: checkin }, subscriptions);
  return written ? checkin : undefined;
}

/** Reverses a check-in (a wrong scan); the history keeps both. 409 not_checked_in otherwise. */
export async function undoCheckIn(scope: TenantScope, eventId: string, ticketId: string, keyId: string | null): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const now = Date.now();
    const checkinId = newId('checkin');
    const undone = await changeTicket(tx, 'undoCheckIn', { ticketId, eventId }, () => repo.writeUndoCheckIn(tx, eventId, ticketId, checkinId, keyId, now));
    const presented = presentTicket(undone);
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'checkin.undone', data: { ...presented, listId: null, direction: 'entry' } }], now);
    return presented;
  });
}

function presentHistory(row: repo.CheckinRow) {
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
  const row = await repo.findCheckin(scope, eventId, id);
  if (!row) throw notFound('check-in', id);
  const ticket = presentTicket((await findTicket(scope, row.ticketId))!);
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
export async function listCheckIns(scope: TenantScope, eventId: string, query: { ticketId?: string } & PageParams): Promise<Page<ReturnType<typeof presentHistory>>> {
  const { ticketId } = query;
  const page = pageRequest(query, listTag(`checkins:${eventId}`, { ticketId }));
  await requireEvent(scope, eventId);
  const rows = await repo.pageCheckins(scope, eventId, ticketId, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentHistory);
}


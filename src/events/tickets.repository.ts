import type { ExpressionBuilder, Selectable, Updateable } from 'kysely';
import type { Database, Db } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { TICKET_COLUMNS, type TicketTable } from './events.table.js';
import './checkin-lists.table.js';

export type TicketRow = Selectable<TicketTable>;

/** How a scan or a request names a ticket of an event: by id or by the code in its QR. */
export type TicketKey = { ticketId: string; code?: undefined } | { ticketId?: undefined; code: string };

export function findTicket(scope: TenantScope, id: string): Promise<TicketRow | undefined> {
  return scope.selectFrom('tickets').selectAll().where('id', '=', id).executeTakeFirst();
}

// The door's hot path runs on prepared queries (see db/prepared.ts): a scanner may send thousands a second.
const ticketById = prepared((db: Db, accountId: string, eventId: string, id: string) =>
  new TenantScope(db, accountId).selectFrom('tickets').select(TICKET_COLUMNS).where('eventId', '=', eventId).where('id', '=', id),
);
const ticketByCode = prepared((db: Db, accountId: string, eventId: string, code: string) =>
  new TenantScope(db, accountId).selectFrom('tickets').select(TICKET_COLUMNS).where('eventId', '=', eventId).where('code', '=', code),
);

/** The ticket of the event that `key` names, if there is one. */
export async function findEventTicket(scope: TenantScope, eventId: string, key: TicketKey): Promise<TicketRow | undefined> {
  const db = scope.db as Db;
  const [ticket] = key.ticketId !== undefined ? await ticketById(db, scope.accountId, eventId, key.ticketId) : await ticketByCode(db, scope.accountId, eventId, key.code!);
  return ticket;
}

/** The ticket, locked for the rest of the transaction (PostgreSQL: a row lock; SQLite's transaction holds the write lock). */
export function lockTicket(tx: TenantScope, id: string): Promise<TicketRow | undefined> {
  if (!tx.db.isTransaction) throw new Error('lockTicket needs a transaction');
  const query = tx.selectFrom('tickets').selectAll().where('id', '=', id);
  return (onPostgres(tx.db) ? query.forNoKeyUpdate() : query).executeTakeFirst();
}

/** The tickets of an order, by id. */
export function ticketsOfOrder(scope: TenantScope, orderId: string): Promise<TicketRow[]> {
  return scope.selectFrom('tickets').selectAll().where('orderId', '=', orderId).orderBy('id').execute();
}

/** Whether any ticket of the ticket type was ever issued. */
export async function ticketTypeIssued(scope: TenantScope, ticketTypeId: string): Promise<boolean> {
  const issued = await scope.selectFrom('tickets').select('id').where('ticketTypeId', '=', ticketTypeId).limit(1).executeTakeFirst();
  return issued !== undefined;
}

/**
 * Not admitted through any check-in list of its event: no admitted entry stands on any of them
 * (read through the event's lists, so both indexes serve it). A ticket that entered through a list
 * is checked in as much as one checked in event-wide.
 */
const notAdmittedOnLists = (eb: ExpressionBuilder<Database, 'tickets'>) =>
  eb.not(
    eb.exists(
      eb
        .selectFrom('checkinLists')
        .innerJoin('checkinListTickets', 'checkinListTickets.listId', 'checkinLists.id')
        .select('checkinListTickets.ticketId')
        .whereRef('checkinLists.eventId', '=', 'tickets.eventId')
        .whereRef('checkinListTickets.ticketId', '=', 'tickets.id')
        .where('checkinListTickets.entries', '>', 0),
    ),
  );

/**
 * The ticket's row locked before a change of a valid ticket (PostgreSQL; SQLite's transaction holds
 * the write lock). An admission through a list holds the row `FOR SHARE` until it commits and
 * writes no column of it, so the change waits here for it, and its own statement, run after, sees
 * the entry (a change's statement alone would decide by what it saw when it began).
 */
async function lockForChange(scope: TenantScope, id: string): Promise<void> {
  if (!scope.db.isTransaction) throw new Error('a ticket change needs a transaction');
  if (onPostgres(scope.db)) await scope.selectFrom('tickets').select('id').where('id', '=', id).forUpdate().execute();
}

/**
 * The one way a valid ticket that was not admitted changes (cancel, transfer, retype): its row locked
 * first, so the update's statement sees an admission that committed meanwhile, then `set` only if it
 * is still valid and not checked in (event-wide or on a list); the ticket as it is now, or undefined.
 */
async function changeOpenTicket(scope: TenantScope, id: string, set: Updateable<TicketTable>): Promise<TicketRow | undefined> {
  await lockForChange(scope, id);
  return scope
    .updateTable('tickets')
    .set(set)
    .where('id', '=', id)
    .where('status', '=', 'valid')
    .where('checkedInAt', 'is', null)
    .where(notAdmittedOnLists)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Valid and not checked in (event-wide or on a list) → cancelled, at `price` (its price less what
 * its order still owed of it); the ticket as it is now, or undefined if it was not so. Its refund
 * is recorded when the money went back (refunds.service.ts).
 */
export function cancelOpenTicket(scope: TenantScope, id: string, price: number, now: number): Promise<TicketRow | undefined> {
  return changeOpenTicket(scope, id, { status: 'cancelled', cancelledAt: now, updatedAt: now, price });
}

/** Valid and not checked in (event-wide or on a list) → a new holder and code; the ticket as it is now, or undefined if it was not so. */
export function transferOpenTicket(scope: TenantScope, id: string, holder: { name: string; email: string }, code: string, now: number): Promise<TicketRow | undefined> {
  return changeOpenTicket(scope, id, { attendeeName: holder.name, attendeeEmail: holder.email, code, updatedAt: now });
}

/** Valid and not checked in (event-wide or on a list) → another ticket type, its price and a new code; the ticket as it is now, or undefined if it was not so. */
export function retypeOpenTicket(scope: TenantScope, id: string, change: { ticketTypeId: string; price: number; code: string }, now: number): Promise<TicketRow | undefined> {
  return changeOpenTicket(scope, id, { ticketTypeId: change.ticketTypeId, price: change.price, code: change.code, updatedAt: now });
}

/** A cancelled ticket's place back into its type's and its event's inventory. */
export async function releasePlace(scope: TenantScope, ticket: Pick<TicketRow, 'eventId' | 'ticketTypeId'>, now: number): Promise<void> {
  await scope.updateTable('ticketTypes').set((eb) => ({ sold: eb('sold', '-', 1), updatedAt: now })).where('id', '=', ticket.ticketTypeId).execute();
  await scope.updateTable('events').set((eb) => ({ sold: eb('sold', '-', 1), updatedAt: now })).where('id', '=', ticket.eventId).execute();
}

/** Up to `limit` valid tickets of the event, by id. */
export function validTicketsOfEvent(scope: TenantScope, eventId: string, limit: number): Promise<TicketRow[]> {
  return scope.selectFrom('tickets').selectAll().where('eventId', '=', eventId).where('status', '=', 'valid').orderBy('id').limit(limit).execute();
}

/** These tickets → cancelled (their refunds are recorded on them when the money moved: refunds.repository.ts recordRefund). */
export async function cancelTickets(scope: TenantScope, ids: string[], now: number): Promise<void> {
  await scope
    .updateTable('tickets')
    .set({ status: 'cancelled', cancelledAt: now, updatedAt: now })
    .where('id', 'in', ids)
    .execute();
}

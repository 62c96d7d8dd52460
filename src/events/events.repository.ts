import { type RawBuilder, type Selectable, type SqlBool, sql } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { notFound } from '../errors.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import { EVENT_COLUMNS, type EventTable, type TicketTypeTable } from './events.table.js';

export type EventRow = Selectable<EventTable>;
export type TicketTypeRow = Selectable<TicketTypeTable>;

/** `%text%` for LIKE, with the wildcards of the text itself escaped (its case is folded in SQL: matching). */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Folds the case of `value` for a search for `text`. An ASCII search matches the same rows whatever
 * the folding does to other letters, so it keeps the built-in lower(). Beyond ASCII: on SQLite,
 * whose lower() folds ASCII letters only, `unicode_lower` (database.ts); on PostgreSQL, lower()
 * (it follows the database's LC_CTYPE: a `C` locale folds ASCII only). Either way a final sigma
 * counts as a sigma, so "ΟΔΥΣ" and "οδυσσευς" find "ΟΔΥΣΣΕΥΣ".
 */
function caseFold(db: Db | Tx, text: string): (value: unknown) => RawBuilder<string> {
  if (!/[^\x00-\x7f]/.test(text)) return (value) => sql`lower(${value})`;
  return onPostgres(db) ? (value) => sql`translate(lower(${value}), 'ς', 'σ')` : (value) => sql`unicode_lower(${value})`;
}

/** `q`: rows where any of `columns` contains `text`, ignoring case; both sides are folded alike, in SQL. */
export function matching(db: Db | Tx, text: string, columns: string[]): RawBuilder<SqlBool> {
  const fold = caseFold(db, text);
  const pattern = containing(text);
  return sql<SqlBool>`(${sql.join(
    columns.map((column) => sql`${fold(sql.ref(column))} like ${fold(pattern)} escape '\\'`),
    sql` or `,
  )})`;
}

const eventById = prepared((db: Db, accountId: string, id: string) => new TenantScope(db, accountId).selectFrom('events').select(EVENT_COLUMNS).where('id', '=', id));

export async function findEvent(scope: TenantScope, id: string): Promise<EventRow | undefined> {
  return (await eventById(scope.db as Db, scope.accountId, id))[0];
}

/** The event, or a 404 (for another account's event too). */
export async function requireEvent(scope: TenantScope, id: string): Promise<EventRow> {
  const event = await findEvent(scope, id);
  if (!event) throw notFound('event', id);
  return event;
}

/** The event, locked for the rest of the transaction (see lockEvent), or a 404. */
export async function requireLockedEvent(scope: TenantScope, id: string): Promise<EventRow> {
  const event = await lockEvent(scope, id);
  if (!event) throw notFound('event', id);
  return event;
}

const lockedEventById = prepared((db: Db, accountId: string, id: string) =>
  new TenantScope(db, accountId).selectFrom('events').select(EVENT_COLUMNS).where('id', '=', id).forNoKeyUpdate(),
);

/**
 * The event, locked for the rest of the transaction. On PostgreSQL a row lock, `FOR NO KEY
 * UPDATE`: the lock an UPDATE takes, so it does not hold up the foreign-key checks of rows
 * inserted for the event elsewhere (a check-in's history row), and it writes no row version. A
 * no-op UPDATE would write one for every order, and a selling event's row then grows a chain of
 * dead versions that every read of it walks until vacuum. On SQLite the transaction already
 * holds the database's write lock (BEGIN IMMEDIATE), so a read is enough.
 */
export async function lockEvent(scope: TenantScope, id: string): Promise<EventRow | undefined> {
  if (!scope.db.isTransaction) throw new Error('lockEvent needs a transaction');
  if (onPostgres(scope.db)) return (await lockedEventById(scope.db as Db, scope.accountId, id))[0];
  return findEvent(scope, id);
}

export interface EventFilters {
  status?: string;
  startsAfter?: number;
  startsBefore?: number;
  q?: string;
}

export function listEvents(scope: TenantScope, filters: EventFilters, page: KeysetPage): Promise<EventRow[]> {
  let query = scope.selectFrom('events').selectAll();
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.startsAfter !== undefined) query = query.where('startsAt', '>=', filters.startsAfter);
  if (filters.startsBefore !== undefined) query = query.where('startsAt', '<', filters.startsBefore);
  if (filters.q) query = query.where(matching(scope.db, filters.q, ['name', 'description']));
  return keysetPage(query, page, 'events.id', 'events.id', 'desc').execute();
}

export function listTicketTypes(scope: TenantScope, eventId: string): Promise<TicketTypeRow[]> {
  return scope.selectFrom('ticketTypes').selectAll().where('eventId', '=', eventId).orderBy('id').execute();
}

/** One page of an event's ticket types, oldest first (the order they were created in). */
export function pageTicketTypes(scope: TenantScope, eventId: string, page: KeysetPage): Promise<TicketTypeRow[]> {
  return keysetPage(scope.selectFrom('ticketTypes').selectAll().where('eventId', '=', eventId), page, 'ticketTypes.id', 'ticketTypes.id', 'asc').execute();
}

export function findTicketType(scope: TenantScope, eventId: string, id: string): Promise<TicketTypeRow | undefined> {
  return scope.selectFrom('ticketTypes').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
}

export async function insertEvent(scope: TenantScope, row: EventRow): Promise<void> {
  await scope.db.insertInto('events').values(row).execute();
}

/** The event with `changes` made, as it is now. */
export function updateEvent(scope: TenantScope, id: string, changes: Partial<EventRow>): Promise<EventRow> {
  return scope.updateTable('events').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/**
 * How many of the event's orders a payment could still complete: `pending` ones, and `expired` ones
 * unless `expiredToo` is false (a cancelled event completes nothing). Read under the event's lock,
 * which every writer of an order of the event takes first, so the counts stay true until the
 * transaction ends.
 */
export async function openOrdersOfEvent(scope: TenantScope, eventId: string, expiredToo: boolean): Promise<{ pending: number; expired: number }> {
  const rows = await scope
    .selectFrom('orders')
    .select(['status', (eb) => eb.fn.countAll<number | string | bigint>().as('count')])
    .where('eventId', '=', eventId)
    .where('status', 'in', expiredToo ? ['pending', 'expired'] : ['pending'])
    .groupBy('status')
    .execute();
  const count = (status: string) => Number(rows.find((r) => r.status === status)?.count ?? 0);
  return { pending: count('pending'), expired: count('expired') };
}

/**
 * The event and its ticket types; the rest of what belongs to it (orders that can no longer complete,
 * vouchers, waiting-list entries, signing keys, check-in lists) goes with it through the foreign keys' cascades.
 */
export async function deleteEvent(scope: TenantScope, id: string): Promise<void> {
  await scope.deleteFrom('ticketTypes').where('eventId', '=', id).execute();
  await scope.deleteFrom('events').where('id', '=', id).execute();
}

/** The event cancelled, with nothing sold or held (the caller cancels its tickets and pending orders): as it is now. */
export async function cancelEvent(scope: TenantScope, id: string, now: number): Promise<EventRow> {
  const updated = await scope
    .updateTable('events')
    .set({ status: 'cancelled', cancelledAt: now, updatedAt: now, sold: 0, held: 0 })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await scope.updateTable('ticketTypes').set({ sold: 0, held: 0, updatedAt: now }).where('eventId', '=', id).execute();
  return updated;
}

export async function insertTicketType(scope: TenantScope, row: TicketTypeRow): Promise<void> {
  await scope.db.insertInto('ticketTypes').values(row).execute();
}

/** The ticket type with `changes` made, as it is now. */
export function updateTicketType(scope: TenantScope, id: string, changes: Partial<TicketTypeRow>): Promise<TicketTypeRow> {
  return scope.updateTable('ticketTypes').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

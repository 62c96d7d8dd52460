import { type Selectable, sql } from 'kysely';
import type { Db } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { notFound } from '../errors.js';
import { keysetPage, type PageRequest } from '../http/paging.js';
import { EVENT_COLUMNS, type EventTable, type TicketTable, type TicketTypeTable } from './events.table.js';

export type EventRow = Selectable<EventTable>;
export type TicketTypeRow = Selectable<TicketTypeTable>;
export type TicketRow = Selectable<TicketTable>;

/** `%text%` for LIKE, with the wildcards of the text itself escaped. */
export const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

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

/**
 * Takes the event's row lock (PostgreSQL) for the rest of the transaction; on SQLite the
 * transaction already holds the database's write lock. A no-op write works on both engines.
 */
export async function lockEvent(scope: TenantScope, id: string): Promise<EventRow | undefined> {
  return scope.updateTable('events').set((eb) => ({ updatedAt: eb.ref('updatedAt') })).where('id', '=', id).returningAll().executeTakeFirst();
}

export interface EventFilters {
  status?: string;
  startsAfter?: number;
  startsBefore?: number;
  q?: string;
}

export function listEvents(scope: TenantScope, filters: EventFilters, page: PageRequest): Promise<EventRow[]> {
  let query = scope.selectFrom('events').selectAll();
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.startsAfter !== undefined) query = query.where('startsAt', '>=', filters.startsAfter);
  if (filters.startsBefore !== undefined) query = query.where('startsAt', '<', filters.startsBefore);
  if (filters.q) {
    const pattern = containing(filters.q);
    query = query.where((eb) =>
      eb.or([
        eb(eb.fn('lower', ['name']), 'like', sql<string>`${pattern} escape '\\'`),
        eb(eb.fn('lower', ['description']), 'like', sql<string>`${pattern} escape '\\'`),
      ]),
    );
  }
  return keysetPage(query, page, 'events.id', 'events.id', 'desc').execute();
}

export function listTicketTypes(scope: TenantScope, eventId: string): Promise<TicketTypeRow[]> {
  return scope.selectFrom('ticketTypes').selectAll().where('eventId', '=', eventId).orderBy('id').execute();
}

export function findTicketType(scope: TenantScope, eventId: string, id: string): Promise<TicketTypeRow | undefined> {
  return scope.selectFrom('ticketTypes').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
}

export function findTicket(scope: TenantScope, id: string): Promise<TicketRow | undefined> {
  return scope.selectFrom('tickets').selectAll().where('id', '=', id).executeTakeFirst();
}

import type { Insertable, Selectable } from 'kysely';
import { onPostgres } from '../db/prepared.js';
import type { TenantScope } from '../db/tenant.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import type { CheckinListTable, CheckinListTicketTable, CheckinScanTable } from './checkin-lists.table.js';
import type { TicketRow } from './tickets.repository.js';
import './checkin-lists.table.js';

export type CheckinListRow = Selectable<CheckinListTable>;
export type ListTicketRow = Selectable<CheckinListTicketTable>;
export type ScanRow = Selectable<CheckinScanTable>;

/** Rows per multi-row statement: well under both engines' limits on bound values. */
const CHUNK = 200;
const chunks = <T>(items: T[]): T[][] => Array.from({ length: Math.ceil(items.length / CHUNK) }, (_, i) => items.slice(i * CHUNK, (i + 1) * CHUNK));

export function findList(scope: TenantScope, eventId: string, id: string): Promise<CheckinListRow | undefined> {
  return scope.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
}

/**
 * The event's list of this id, locked for the rest of the transaction to change its settings or
 * delete it. On PostgreSQL a change takes `FOR NO KEY UPDATE`, which scans in flight (they hold the
 * list `FOR KEY SHARE`, listsForScans) do not hold up: they decide by the settings they read, and
 * the change applies to the scans after it. A deletion takes `FOR UPDATE`, so it waits for those
 * scans and then sees whether they recorded any. On SQLite the transaction holds the database's
 * write lock already.
 */
export async function lockList(tx: TenantScope, eventId: string, id: string, purpose: 'change' | 'delete'): Promise<CheckinListRow | undefined> {
  if (!tx.db.isTransaction) throw new Error('lockList needs a transaction');
  const query = tx.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', '=', id);
  if (!onPostgres(tx.db)) return query.executeTakeFirst();
  return (purpose === 'delete' ? query.forUpdate() : query.forNoKeyUpdate()).executeTakeFirst();
}

/**
 * The event's lists of these ids, to scan through them. On PostgreSQL with `FOR KEY SHARE`: the
 * list is not deleted while the scan is decided (lockList), but scans of one list do not wait for
 * each other here: each locks only its tickets' states on the
 * list (lockListTickets) and adds to the list's counts at the very end (addCounts).
 */
export async function listsForScans(tx: TenantScope, eventId: string, ids: string[]): Promise<CheckinListRow[]> {
  if (!tx.db.isTransaction) throw new Error('listsForScans needs a transaction');
  const query = tx.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', 'in', ids).orderBy('id');
  return onPostgres(tx.db) ? query.forKeyShare().execute() : query.execute();
}

export function pageLists(scope: TenantScope, eventId: string, page: KeysetPage): Promise<CheckinListRow[]> {
  return keysetPage(scope.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId), page, 'checkinLists.id', 'checkinLists.id', 'asc').execute();
}

/** Every list of the event, oldest first (analytics; an event has a handful). */
export function listsOfEvent(scope: TenantScope, eventId: string): Promise<CheckinListRow[]> {
  return scope.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).orderBy('id').limit(1000).execute();
}

export async function insertList(scope: TenantScope, row: Insertable<CheckinListTable>): Promise<void> {
  await scope.db.insertInto('checkinLists').values(row).execute();
}

export function updateList(scope: TenantScope, id: string, changes: Partial<CheckinListTable>): Promise<CheckinListRow | undefined> {
  return scope.updateTable('checkinLists').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Deletes the list if no scan was ever recorded on it; whether it did. */
export async function deleteUnusedList(scope: TenantScope, id: string): Promise<boolean> {
  const deleted = await scope.deleteFrom('checkinLists').where('id', '=', id).where('scans', '=', 0).executeTakeFirst();
  return Number(deleted.numDeletedRows) > 0;
}

/** The scans already recorded under these scan ids, on these lists. */
export async function findScans(scope: TenantScope, listIds: string[], scanIds: string[]): Promise<ScanRow[]> {
  const found: ScanRow[] = [];
  for (const part of chunks(scanIds)) {
    found.push(...(await scope.selectFrom('checkinScans').selectAll().where('listId', 'in', listIds).where('scanId', 'in', part).execute()));
  }
  return found;
}

/** The event's tickets named by these ids and codes. */
export async function findTickets(scope: TenantScope, eventId: string, ids: string[], codes: string[]): Promise<TicketRow[]> {
  const found: TicketRow[] = [];
  for (const part of chunks(ids)) found.push(...(await scope.selectFrom('tickets').selectAll().where('eventId', '=', eventId).where('id', 'in', part).execute()));
  for (const part of chunks(codes)) found.push(...(await scope.selectFrom('tickets').selectAll().where('eventId', '=', eventId).where('code', 'in', part).execute()));
  return found;
}

export function ticketTypeNames(scope: TenantScope, eventId: string): Promise<Array<{ id: string; name: string }>> {
  return scope.selectFrom('ticketTypes').select(['id', 'name']).where('eventId', '=', eventId).execute();
}

/** The per-ticket state of these tickets on these lists. */
export async function findListTickets(scope: TenantScope, listIds: string[], ticketIds: string[]): Promise<ListTicketRow[]> {
  const found: ListTicketRow[] = [];
  for (const part of chunks(ticketIds)) {
    found.push(...(await scope.selectFrom('checkinListTickets').selectAll().where('listId', 'in', listIds).where('ticketId', 'in', part).execute()));
  }
  return found;
}

/**
 * The per-ticket state of these (list, ticket) pairs, locked for the rest of the transaction: one
 * upsert that makes a missing state (not inside, no entries) and whose `on conflict do update` locks
 * an existing one on PostgreSQL, returning it as the last commit left it (after waiting for a
 * transaction that holds it). In (list, ticket) order, so two batches never wait on each other in a
 * circle. Scans of one ticket on a list are therefore decided one after the other; scans of other
 * tickets do not wait. On SQLite the transaction holds the database's write lock already.
 */
export async function lockListTickets(tx: TenantScope, pairs: Array<{ listId: string; ticketId: string }>): Promise<ListTicketRow[]> {
  if (!tx.db.isTransaction) throw new Error('lockListTickets needs a transaction');
  const unique = [...new Map(pairs.map((p) => [`${p.listId} ${p.ticketId}`, p])).values()].sort((a, b) =>
    a.listId < b.listId ? -1 : a.listId > b.listId ? 1 : a.ticketId < b.ticketId ? -1 : a.ticketId > b.ticketId ? 1 : 0,
  );
  const found: ListTicketRow[] = [];
  for (const part of chunks(unique)) {
    const rows = part.map((p) => ({ listId: p.listId, ticketId: p.ticketId, accountId: tx.accountId, inside: 0, entries: 0, keptScanId: null, keptScannedAt: null, keptDeviceId: null, keptRowId: null }));
    found.push(
      ...(await tx.db
        .insertInto('checkinListTickets')
        .values(rows)
        .onConflict((oc) => oc.columns(['listId', 'ticketId']).doUpdateSet((eb) => ({ inside: eb.ref('checkinListTickets.inside') })))
        .returningAll()
        .execute()),
    );
  }
  return found;
}

export async function insertScans(scope: TenantScope, rows: Array<Insertable<CheckinScanTable>>): Promise<void> {
  for (const part of chunks(rows)) await scope.db.insertInto('checkinScans').values(part).execute();
}

/** Writes these per-ticket states, new or changed. */
export async function saveListTickets(scope: TenantScope, rows: ListTicketRow[]): Promise<void> {
  for (const part of chunks(rows)) {
    await scope.db
      .insertInto('checkinListTickets')
      .values(part)
      .onConflict((oc) =>
        oc.columns(['listId', 'ticketId']).doUpdateSet((eb) => ({
          inside: eb.ref('excluded.inside'),
          entries: eb.ref('excluded.entries'),
          keptScanId: eb.ref('excluded.keptScanId'),
          keptScannedAt: eb.ref('excluded.keptScannedAt'),
          keptDeviceId: eb.ref('excluded.keptDeviceId'),
          keptRowId: eb.ref('excluded.keptRowId'),
        })),
      )
      .execute();
  }
}

/** An admitted scan that a scan made earlier displaced: it becomes a conflict, naming the kept one. */
export async function markConflict(scope: TenantScope, rowId: string, kept: { scanId: string; scannedAt: number; deviceId: string | null }, now: number): Promise<void> {
  await scope
    .updateTable('checkinScans')
    .set({ outcome: 'conflict', keptScanId: kept.scanId, keptScannedAt: kept.scannedAt, keptDeviceId: kept.deviceId, conflictedAt: now })
    .where('id', '=', rowId)
    .execute();
}

/** Conflicts of the ticket on the list that named `fromScanId` as kept: they name `kept` now (it displaced that one). */
export async function repointConflicts(scope: TenantScope, listId: string, ticketId: string, fromScanId: string, kept: { scanId: string; scannedAt: number; deviceId: string | null }): Promise<void> {
  await scope
    .updateTable('checkinScans')
    .set({ keptScanId: kept.scanId, keptScannedAt: kept.scannedAt, keptDeviceId: kept.deviceId })
    .where('listId', '=', listId)
    .where('ticketId', '=', ticketId)
    .where('outcome', '=', 'conflict')
    .where('keptScanId', '=', fromScanId)
    .execute();
}

/** Exits of these tickets on these lists that a door let through and the server refused not_inside (their entry came later), by time. */
export async function strandedExits(scope: TenantScope, listIds: string[], ticketIds: string[]): Promise<ScanRow[]> {
  const found: ScanRow[] = [];
  for (const part of chunks(ticketIds)) {
    found.push(
      ...(await scope
        .selectFrom('checkinScans')
        .selectAll()
        .where('listId', 'in', listIds)
        .where('ticketId', 'in', part)
        .where('direction', '=', 'exit')
        .where('outcome', '=', 'refused')
        .where('reason', '=', 'not_inside')
        .where('localResult', '=', 'admitted')
        .execute()),
    );
  }
  return found.sort((a, b) => a.scannedAt - b.scannedAt || (a.id < b.id ? -1 : 1));
}

/** Stranded exits (strandedExits) that an entry before them took up: admitted now. */
export async function admitExits(scope: TenantScope, ids: string[]): Promise<void> {
  for (const part of chunks(ids)) await scope.updateTable('checkinScans').set({ outcome: 'admitted', reason: null }).where('id', 'in', part).execute();
}

export async function setOutcome(scope: TenantScope, rowId: string, outcome: string): Promise<void> {
  await scope.updateTable('checkinScans').set({ outcome }).where('id', '=', rowId).execute();
}

export type CountsChange = Pick<CheckinListRow, 'inside' | 'entries' | 'exits' | 'admittedTickets' | 'conflicts' | 'scans'>;

/**
 * Adds to the list's counts in one statement (`entries = entries + ?`, ...), and answers the list
 * as it is then. Its row lock is held until the commit, so a scan makes it its last statement: the
 * only moment at which scans of one list wait for each other.
 */
export function addCounts(scope: TenantScope, listId: string, change: CountsChange, now: number): Promise<CheckinListRow | undefined> {
  return scope
    .updateTable('checkinLists')
    .set((eb) => ({
      inside: eb('inside', '+', change.inside),
      entries: eb('entries', '+', change.entries),
      exits: eb('exits', '+', change.exits),
      admittedTickets: eb('admittedTickets', '+', change.admittedTickets),
      conflicts: eb('conflicts', '+', change.conflicts),
      scans: eb('scans', '+', change.scans),
      updatedAt: now,
    }))
    .where('id', '=', listId)
    .returningAll()
    .executeTakeFirst();
}

/** The ticket's last admitted entry on the list. */
export function lastAdmittedEntry(scope: TenantScope, listId: string, ticketId: string): Promise<ScanRow | undefined> {
  return scope
    .selectFrom('checkinScans')
    .selectAll()
    .where('listId', '=', listId)
    .where('ticketId', '=', ticketId)
    .where('outcome', '=', 'admitted')
    .where('direction', '=', 'entry')
    .orderBy('scannedAt', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** One page of the list's conflicts, newest first (by when each became one). */
export function pageConflicts(scope: TenantScope, listId: string, page: KeysetPage): Promise<ScanRow[]> {
  const query = scope.selectFrom('checkinScans').selectAll().where('listId', '=', listId).where('outcome', '=', 'conflict');
  return keysetPage(query, page, 'checkinScans.conflictedAt', 'checkinScans.id', 'desc').execute();
}

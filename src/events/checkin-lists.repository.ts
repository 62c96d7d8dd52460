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
 * The event's lists of these ids, locked for the rest of the transaction: on PostgreSQL with `FOR
 * UPDATE` (in id order, so two batches naming the same lists never wait on each other in a
 * circle); on SQLite the transaction holds the database's write lock already. Every scan through
 * a list runs under this lock, so its decisions and counts see every scan committed before it.
 */
export async function lockLists(tx: TenantScope, eventId: string, ids: string[]): Promise<CheckinListRow[]> {
  if (!tx.db.isTransaction) throw new Error('lockLists needs a transaction');
  const query = tx.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', 'in', ids).orderBy('id');
  return onPostgres(tx.db) ? query.forUpdate().execute() : query.execute();
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

export async function saveCounts(scope: TenantScope, list: CheckinListRow, now: number): Promise<void> {
  const { inside, entries, exits, admittedTickets, conflicts, scans } = list;
  await scope.updateTable('checkinLists').set({ inside, entries, exits, admittedTickets, conflicts, scans, updatedAt: now }).where('id', '=', list.id).execute();
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

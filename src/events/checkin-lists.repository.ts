import { type Insertable, type Selectable, sql } from 'kysely';
import type { Db } from '../db/database.js';
import { onPostgres, preparedNamed } from '../db/prepared.js';
import type { TenantScope } from '../db/tenant.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import type { CheckinListCountsTable, CheckinListTable, CheckinListTicketTable, CheckinScanTable } from './checkin-lists.table.js';
import type { TicketRow } from './tickets.repository.js';
import './checkin-lists.table.js';

export type ListSettingsRow = Selectable<CheckinListTable>;
/** A list's counts, the one place they are named. */
export const COUNT_COLUMNS = ['inside', 'entries', 'exits', 'admittedTickets', 'conflicts', 'scans'] as const satisfies ReadonlyArray<keyof CheckinListCountsTable>;
export type ListCounts = Pick<CheckinListCountsTable, (typeof COUNT_COLUMNS)[number]>;
/** A list with its counts (summed over its counter rows). */
export type CheckinListRow = ListSettingsRow & ListCounts;
/** A list a transaction scans through: its settings, and what the transaction adds to its counts (addCounts). */
export type ScanListRow = ListSettingsRow & { change: ListCounts };

export const noCounts = (): ListCounts => Object.fromEntries(COUNT_COLUMNS.map((c) => [c, 0])) as ListCounts;
export const NO_COUNTS: Readonly<ListCounts> = Object.freeze(noCounts());
/** A ticket's state on a list before its first scan there. */
export const EMPTY_STATE = Object.freeze({ inside: 0, entries: 0, keptScanId: null, keptScannedAt: null, keptDeviceId: null, keptRowId: null });

/**
 * A list's counts are the sum of its rows in checkin_list_counts. On PostgreSQL each transaction
 * that changes them inserts a row of its own, and about one in FOLD_EVERY of them then folds the
 * list's rows into its row 0 (foldCounts). So a scan never updates a row another scan updates: on
 * PostgreSQL every update of a shared row (the 16 rows of before) leaves a dead version on the same
 * few pages and waits for the row's lock; 50 clients upserting a 16-row table slowed from 3,540 to
 * 2,770 a second within 24 s (pgbench), where plain inserts held 5,900-6,500. A read sums row 0 and
 * the rows since the last fold: about FOLD_EVERY rows. SQLite writes one transaction at a time, so
 * there a scan adds to row 0 itself (addCounts).
 *
 * A row's `slot` is time-ordered (countSlot): the second of the clock times 2²¹ plus a random
 * number below 2²¹, so two scans practically never meet (when they do, the insert adds to the row
 * it met), and the rows since a fold are the top of the list's range of the primary key. Row 0
 * keeps in `folded_through` the highest slot folded so far, and a fold deletes only the slots
 * above that mark less FOLD_MARGIN: the deletions of earlier folds leave dead index entries until a
 * vacuum, and with random slots (1..2³¹−1, before) they were spread over the list's whole range,
 * which every fold read again (about 22,000 entries a fold with autovacuum off); now a fold reads
 * the top of the range, with a plain index scan that marks such entries dead (foldCounts, foldPlan:
 * 522-702 entries a fold in a scratch run where random slots read 14,053-15,872). The margin is for
 * a transaction that took its slot before a fold and committed after it: the next fold still reads
 * it. One that commits more than a minute after taking its slot (or comes from a clock a minute
 * behind, or from a process of the code before these slots during a rolling deploy) stays a row of
 * its own, below the folds' range: still counted, since a read sums every row of the list, and
 * folded by the next sweep: one fold in SWEEP_EVERY reads the list's whole range (foldCounts
 * `sweep`), so such rows, whatever their cause, cannot pile up in what every read sums.
 */
export const FOLD_EVERY = 256;
/** Slots per second of the clock: a counter row's slot is its second times this plus a random number below it (countSlot). */
const SLOTS_PER_SECOND = 2 ** 21;
/** How far below row 0's mark a fold reads: a minute's slots (see FOLD_EVERY). */
const FOLD_MARGIN = 60 * SLOTS_PER_SECOND;
/** One fold in this many sweeps every counter row of the list, stragglers below the mark included (see FOLD_EVERY): one scan in FOLD_EVERY × SWEEP_EVERY. */
export const SWEEP_EVERY = 16;
export type ListTicketRow = Selectable<CheckinListTicketTable>;
export type ScanRow = Selectable<CheckinScanTable>;

/** Rows per multi-row statement: well under both engines' limits on bound values. */
const CHUNK = 200;
const chunks = <T>(items: T[]): T[][] => Array.from({ length: Math.ceil(items.length / CHUNK) }, (_, i) => items.slice(i * CHUNK, (i + 1) * CHUNK));

export async function findList(scope: TenantScope, eventId: string, id: string): Promise<CheckinListRow | undefined> {
  const row = await scope.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
  return row && (await withCounts(scope, [row]))[0];
}

/** These lists with their counts, in one query over their counter rows. */
export async function withCounts(scope: TenantScope, rows: ListSettingsRow[]): Promise<CheckinListRow[]> {
  const sums = new Map<string, ListCounts>();
  for (const part of chunks(rows.map((r) => r.id))) {
    const found = await scope
      .selectFrom('checkinListCounts')
      .select('listId')
      .select((eb) => COUNT_COLUMNS.map((column) => eb.fn.sum<number | string>(column).as(column)))
      .where('listId', 'in', part)
      .groupBy('listId')
      .execute();
    // PostgreSQL sums integers as bigint, which the driver reads as a string.
    for (const f of found) sums.set(f.listId, Object.fromEntries(COUNT_COLUMNS.map((c) => [c, Number(f[c])])) as ListCounts);
  }
  return rows.map((r) => ({ ...r, ...(sums.get(r.id) ?? NO_COUNTS) }));
}

/**
 * The event's list of this id, locked for the rest of the transaction to change its settings or
 * delete it. On PostgreSQL a change takes `FOR NO KEY UPDATE`, which scans in flight (they hold the
 * list `FOR KEY SHARE`, listsForScans) do not hold up: they decide by the settings they read, and
 * the change applies to the scans after it. A deletion takes `FOR UPDATE`, so it waits for those
 * scans and then sees whether they recorded any. Scans never write the list's row (their counts go
 * to its counter rows), so a scan never waits for the list behind a deletion that waits for it:
 * the one lock both take on the list is taken first by each. On SQLite the transaction holds the
 * database's write lock already.
 */
export async function lockList(tx: TenantScope, eventId: string, id: string, purpose: 'change' | 'delete'): Promise<ListSettingsRow | undefined> {
  if (!tx.db.isTransaction) throw new Error('lockList needs a transaction');
  const query = tx.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', '=', id);
  if (!onPostgres(tx.db)) return query.executeTakeFirst();
  return (purpose === 'delete' ? query.forUpdate() : query.forNoKeyUpdate()).executeTakeFirst();
}

/**
 * The event's lists of these ids, to scan through them, each with a change of its counts at zero:
 * what the caller adds to it is its transaction's change (addCounts). On PostgreSQL with `FOR KEY
 * SHARE`: the list is not deleted while the scan is decided (lockList), but scans of one list do not
 * wait for each other here: each locks only its tickets' states on the list (lockListTickets).
 */
export async function listsForScans(tx: TenantScope, eventId: string, ids: string[]): Promise<ScanListRow[]> {
  if (!tx.db.isTransaction) throw new Error('listsForScans needs a transaction');
  const query = tx.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).where('id', 'in', ids).orderBy('id');
  return (await (onPostgres(tx.db) ? query.forKeyShare().execute() : query.execute())).map((row) => ({ ...row, change: noCounts() }));
}

export async function pageLists(scope: TenantScope, eventId: string, page: KeysetPage): Promise<CheckinListRow[]> {
  return withCounts(scope, await keysetPage(scope.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId), page, 'checkinLists.id', 'checkinLists.id', 'asc').execute());
}

/** Every list of the event, oldest first, without counts (an event has a handful). */
export function listSettingsOfEvent(scope: TenantScope, eventId: string): Promise<ListSettingsRow[]> {
  return scope.selectFrom('checkinLists').selectAll().where('eventId', '=', eventId).orderBy('id').limit(1000).execute();
}

/** Every list of the event with its counts, oldest first (analytics). */
export async function listsOfEvent(scope: TenantScope, eventId: string): Promise<CheckinListRow[]> {
  return withCounts(scope, await listSettingsOfEvent(scope, eventId));
}

export async function insertList(scope: TenantScope, row: Insertable<CheckinListTable>): Promise<void> {
  await scope.db.insertInto('checkinLists').values(row).execute();
}

export async function updateList(scope: TenantScope, id: string, changes: Partial<CheckinListTable>): Promise<CheckinListRow | undefined> {
  const row = await scope.updateTable('checkinLists').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  return row && (await withCounts(scope, [row]))[0];
}

/** Deletes the list (and its counter rows) if no scan was ever recorded on it; whether it did. */
export async function deleteUnusedList(scope: TenantScope, id: string): Promise<boolean> {
  const deleted = await scope
    .deleteFrom('checkinLists')
    .where('id', '=', id)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('checkinScans').select('checkinScans.id').whereRef('checkinScans.listId', '=', 'checkinLists.id'))))
    .executeTakeFirst();
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

/**
 * The event's tickets named by these ids and codes, to scan them. On PostgreSQL held `FOR SHARE`
 * until the transaction ends: a cancel, transfer or retype of one waits for the scans' commit and
 * then sees their entries (tickets.repository.ts, lockForChange); one that committed first is read
 * as it left the ticket (a code it replaced names no ticket). Scans share the lock, so they do not
 * wait for each other here. In id order, so that two transactions lock the same rows the same way.
 */
export async function findTickets(tx: TenantScope, eventId: string, ids: string[], codes: string[]): Promise<TicketRow[]> {
  if (!tx.db.isTransaction) throw new Error('findTickets needs a transaction');
  const lock = <Q extends { forShare(): Q }>(query: Q) => (onPostgres(tx.db) ? query.forShare() : query);
  const found: TicketRow[] = [];
  for (const part of chunks(ids)) found.push(...(await lock(tx.selectFrom('tickets').selectAll().where('eventId', '=', eventId).where('id', 'in', part).orderBy('id')).execute()));
  for (const part of chunks(codes)) found.push(...(await lock(tx.selectFrom('tickets').selectAll().where('eventId', '=', eventId).where('code', 'in', part).orderBy('id')).execute()));
  return found;
}

export function ticketTypeNames(scope: TenantScope, eventId: string): Promise<Array<{ id: string; name: string }>> {
  return scope.selectFrom('ticketTypes').select(['id', 'name']).where('eventId', '=', eventId).execute();
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
    const rows = part.map((p) => ({ listId: p.listId, ticketId: p.ticketId, accountId: tx.accountId, ...EMPTY_STATE }));
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

// One row's writes, the online entry's (checkin-lists.service.ts, admitAsRead), are prepared
// statements (db/prepared.ts): built and compiled once, where building a Kysely insert costs more
// than SQLite's running it. Batches of rows (a synced batch) are built as multi-row statements.

const SCAN_COLUMNS = [
  'id', 'accountId', 'eventId', 'listId', 'scanId', 'ticketId', 'direction', 'scannedAt', 'deviceId', 'gate', 'keyId', 'localResult', 'outcome', 'reason',
  'keptScanId', 'keptScannedAt', 'keptDeviceId', 'conflictedAt', 'createdAt',
] as const satisfies ReadonlyArray<keyof CheckinScanTable>;
const insertScan = preparedNamed(SCAN_COLUMNS, (db: Db, row: ScanRow) => db.insertInto('checkinScans').values(row));

export async function insertScans(scope: TenantScope, rows: ScanRow[]): Promise<void> {
  if (rows.length === 1) {
    await insertScan(scope.db as Db, rows[0]!);
    return;
  }
  for (const part of chunks(rows)) await scope.db.insertInto('checkinScans').values(part).execute();
}

const LIST_TICKET_COLUMNS = ['listId', 'ticketId', 'accountId', 'inside', 'entries', 'keptScanId', 'keptScannedAt', 'keptDeviceId', 'keptRowId'] as const satisfies ReadonlyArray<
  keyof CheckinListTicketTable
>;
const saveListTicketsQuery = (db: Db, rows: ListTicketRow[]) =>
  db
    .insertInto('checkinListTickets')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['listId', 'ticketId']).doUpdateSet((eb) => ({
        inside: eb.ref('excluded.inside'),
        entries: eb.ref('excluded.entries'),
        keptScanId: eb.ref('excluded.keptScanId'),
        keptScannedAt: eb.ref('excluded.keptScannedAt'),
        keptDeviceId: eb.ref('excluded.keptDeviceId'),
        keptRowId: eb.ref('excluded.keptRowId'),
      })),
    );
const saveListTicket = preparedNamed(LIST_TICKET_COLUMNS, (db: Db, row: ListTicketRow) => saveListTicketsQuery(db, [row]));

/** Writes these per-ticket states, new or changed. */
export async function saveListTickets(scope: TenantScope, rows: ListTicketRow[]): Promise<void> {
  if (rows.length === 1) {
    await saveListTicket(scope.db as Db, rows[0]!);
    return;
  }
  for (const part of chunks(rows)) await saveListTicketsQuery(scope.db as Db, part).execute();
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

/**
 * A new counter row's slot, time-ordered (see FOLD_EVERY): the whole seconds of `now` times 2²¹
 * plus a random number below 2²¹. Exact in a double until 2106: the seconds stay below 2³², so the
 * slot stays at most 2⁵³−1 (Number.MAX_SAFE_INTEGER). Never 0 (row 0 holds the folded counts): at
 * least 2²¹ from the first second of 1970, and above every slot of before (below 2³¹) from its
 * 18th minute.
 */
export const countSlot = (now = Date.now()) => Math.floor(now / 1000) * SLOTS_PER_SECOND + Math.floor(Math.random() * SLOTS_PER_SECOND);

/**
 * Adds to the list's counts in one statement. On PostgreSQL into a counter row of its own
 * (countSlot), which no concurrent scan writes; about once in FOLD_EVERY calls the list's rows are
 * then folded (foldCounts) in the same transaction. On SQLite, which runs one write transaction at
 * a time, nothing waits on a shared row: the change goes straight into row 0, with no new row to
 * insert and index and none to fold later.
 */
export async function addCounts(scope: TenantScope, listId: string, change: ListCounts): Promise<void> {
  if (!onPostgres(scope.db)) {
    await addToRow(scope, listId, 0, change);
    return;
  }
  await addToRow(scope, listId, countSlot(), change);
  if (foldNow()) await foldCounts(scope, listId, sweepNow());
}

const addToRowStatement = preparedNamed(
  ['listId', 'slot', 'accountId', ...COUNT_COLUMNS] as const,
  (db: Db, row: ListCounts & { listId: string; slot: number; accountId: string }) =>
    db
      .insertInto('checkinListCounts')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['listId', 'slot']).doUpdateSet((eb) => Object.fromEntries(COUNT_COLUMNS.map((column) => [column, eb(eb.ref(`checkinListCounts.${column}`), '+', eb.ref(`excluded.${column}`))]))),
      ),
);

/** Adds `change` to the list's counter row `slot`, made if missing. */
async function addToRow(scope: TenantScope, listId: string, slot: number, change: ListCounts): Promise<void> {
  await addToRowStatement(scope.db as Db, { listId, slot, accountId: scope.accountId, ...change });
}

/** Whether this write of a list's counts also folds them: about one in FOLD_EVERY. */
export const foldNow = () => Math.random() * FOLD_EVERY < 1;

/** Whether a fold also sweeps the rows below its mark (foldCounts `sweep`): about one in SWEEP_EVERY. */
export const sweepNow = () => Math.random() * SWEEP_EVERY < 1;

/**
 * Folds the list's counter rows into its row 0: the rows are deleted and their sums added to row
 * 0. On PostgreSQL in one statement, which reads only the slots above row 0's mark less FOLD_MARGIN
 * (see FOLD_EVERY), or with `sweep` every slot above 0, and raises the mark to the highest slot it
 * deleted (never lowers it). A row
 * another fold deleted first is not counted twice: this delete waits for that fold and then finds
 * it gone; whichever of two folds read the older mark reads a wider range, which is only more rows
 * to find, each deleted (and counted) by one of them. Rows that scans insert meanwhile stay for
 * the next fold. The list is named through checkin_lists (the account's list, or no row at all),
 * so the only index the delete can take is the primary key's range (list, slot); it is read with a
 * plain index scan (foldPlan), which marks the entries of rows deleted before it dead for the
 * scans after, where a bitmap scan would read them again at every fold until a vacuum. On SQLite,
 * which writes one transaction at a time (no scan commits around a fold), every row but 0 is
 * folded, in the caller's transaction or one of its own, and the mark is not used. The counts read
 * are the same before and after.
 */
export async function foldCounts(scope: TenantScope, listId: string, sweep = false): Promise<void> {
  const db = scope.db as Db;
  const sums = COUNT_COLUMNS.map((column) => sql`coalesce(sum(${sql.ref(column)}), 0)`);
  if (onPostgres(db)) {
    const columns = sql.join(COUNT_COLUMNS.map((c) => sql.ref(c)));
    const fold = sql`with gone as (
        delete from checkin_list_counts
        where list_id = (select id from checkin_lists where id = ${listId} and account_id = ${scope.accountId})
          and slot > ${sweep ? sql`0` : sql`greatest(0, coalesce((select folded_through from checkin_list_counts where list_id = ${listId} and slot = 0), 0) - ${FOLD_MARGIN}::bigint)`}
        returning slot, ${columns})
      insert into checkin_list_counts (list_id, slot, account_id, ${columns}, folded_through)
      select ${listId}, 0, ${scope.accountId}, ${sql.join(sums)}, max(slot) from gone having count(*) > 0
      on conflict (list_id, slot) do update set ${sql.join(COUNT_COLUMNS.map((c) => sql`${sql.ref(c)} = checkin_list_counts.${sql.ref(c)} + excluded.${sql.ref(c)}`))},
        folded_through = greatest(checkin_list_counts.folded_through, excluded.folded_through)`;
    await foldPlan(db, (tx) => fold.execute(tx));
    return;
  }
  const fold = async (tx: TenantScope) => {
    const folded = await tx
      .selectFrom('checkinListCounts')
      .select((eb) => eb.fn.countAll<number>().as('rows'))
      .select(COUNT_COLUMNS.map((column) => sql<number>`coalesce(sum(${sql.ref(column)}), 0)`.as(column)))
      .where('listId', '=', listId)
      .where('slot', '<>', 0)
      .executeTakeFirstOrThrow();
    if (Number(folded.rows) === 0) return;
    await tx.deleteFrom('checkinListCounts').where('listId', '=', listId).where('slot', '<>', 0).execute();
    await addToRow(tx, listId, 0, Object.fromEntries(COUNT_COLUMNS.map((c) => [c, Number(folded[c])])) as ListCounts);
  };
  if (db.isTransaction) await fold(scope);
  else await scope.transaction(fold);
}

/**
 * Runs the fold (PostgreSQL) with bitmap and sequential scans off, so that its delete reads the
 * primary key's range with a plain index scan. The planner's own choice, measured on a table
 * analyzed while small and filled after: a bitmap scan of that range once the list had a few
 * thousand rows (a sequential scan with bitmap scans off), which reads every entry in the range,
 * those of rows deleted by earlier folds too; the plain index scan reads such an entry once more
 * and marks it dead. The settings are the transaction's
 * (`set_config(..., true)`): in the caller's transaction they are put back as they were after the
 * fold, else the fold takes a transaction of its own.
 */
async function foldPlan(db: Db, run: (tx: Db) => Promise<unknown>): Promise<void> {
  const off = sql<{ bitmap: string; seq: string }>`with was as materialized (select current_setting('enable_bitmapscan') as bitmap, current_setting('enable_seqscan') as seq)
    select bitmap, seq, set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true) from was`;
  if (!db.isTransaction) {
    await db.transaction().execute(async (tx) => {
      await off.execute(tx);
      await run(tx);
    });
    return;
  }
  const { bitmap, seq } = (await off.execute(db)).rows[0]!;
  await run(db);
  await sql`select set_config('enable_bitmapscan', ${bitmap}, true), set_config('enable_seqscan', ${seq}, true)`.execute(db);
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

/**
 * One page of the list's conflicts, newest first (by when each became one). The outcome is a
 * literal, not a bound value: only then may either engine use the partial index of conflicts
 * (migration 0023), whose condition it must match.
 */
export function pageConflicts(scope: TenantScope, listId: string, page: KeysetPage): Promise<ScanRow[]> {
  const query = scope.selectFrom('checkinScans').selectAll().where('listId', '=', listId).where('outcome', '=', sql.lit('conflict'));
  return keysetPage(query, page, 'checkinScans.conflictedAt', 'checkinScans.id', 'desc').execute();
}

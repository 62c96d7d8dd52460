import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { onPostgres, prepared, preparedNamed } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { fanOut, type OneMessageFanOutValues, type OutboxMessage, type Subscriptions } from '../webhooks/outbox.js';
import { countSlot, foldCounts, foldNow, sweepNow } from './checkin-lists.repository.js';
import { TICKET_COLUMNS } from './events.table.js';
import type { TicketKey, TicketRow } from './tickets.repository.js';
import './checkin-lists.table.js';

// One online entry through a list, decided from one read. On PostgreSQL in two round trips, as the
// check-in without a list (checkins.repository.ts, readForCheckIn and writeCheckInAsRead): the read,
// then one statement that writes the entry only if the ticket's state on the list is still as read.
// On SQLite the caller's transaction holds the write lock from the read to its writes. What this
// path does not decide takes the transactional one (checkin-lists.service.ts, recordScans).
//
// Whether the scan id is taken already is asked by the read on SQLite only. On PostgreSQL the
// statement's insert of the scan meets the unique index of (list, scan id) anyway, which fails it
// with nothing written, and the transactional path then answers as the first scan did. Asked in
// the read, it was a subquery of a named statement, whose plan each connection makes once: one
// made while the list had few scans walked the list's index of (list, ticket) and filtered by scan
// id, so every scan read every scan of the list before it (2,900 index entries a scan after 6,000
// scans, and growing).

/** What the read brings: the list's settings, the ticket, its state on the list, whether the scan id is taken (SQLite; false on PostgreSQL), and the subscriptions. */
export interface OnlineScanRead {
  list: { ticketTypeIds: string; validFrom: number | null; validUntil: number | null; allowMultipleEntries: number; scanExits: number };
  ticket: TicketRow;
  /** The ticket's state on the list as read; null when it has none yet. */
  state: { inside: number; entries: number; keptScanId: string | null; keptScannedAt: number | null; keptDeviceId: string | null; keptRowId: string | null } | null;
  scanRecorded: boolean;
  subscriptions: Subscriptions;
}

const readQuery = (by: 'id' | 'code', engine: 'postgres' | 'sqlite') =>
  // The scan id is an argument on SQLite only (see above).
  prepared((db: Db, accountId: string, eventId: string, listId: string, value: string, scanId?: string) => {
    const query = new TenantScope(db, accountId)
      .selectFrom('checkinLists')
      .innerJoin('tickets', (j) => j.onRef('tickets.eventId', '=', 'checkinLists.eventId').onRef('tickets.accountId', '=', 'checkinLists.accountId').on(`tickets.${by}`, '=', value))
      .leftJoin('checkinListTickets', (j) => j.onRef('checkinListTickets.listId', '=', 'checkinLists.id').onRef('checkinListTickets.ticketId', '=', 'tickets.id'))
      .select(TICKET_COLUMNS.map((column) => `tickets.${column}` as const))
      .select([
        'checkinLists.ticketTypeIds as listTicketTypeIds',
        'checkinLists.validFrom as listValidFrom',
        'checkinLists.validUntil as listValidUntil',
        'checkinLists.allowMultipleEntries as listAllowMultipleEntries',
        'checkinLists.scanExits as listScanExits',
        'checkinListTickets.listId as stateListId',
        'checkinListTickets.inside as stateInside',
        'checkinListTickets.entries as stateEntries',
        'checkinListTickets.keptScanId as stateKeptScanId',
        'checkinListTickets.keptScannedAt as stateKeptScannedAt',
        'checkinListTickets.keptDeviceId as stateKeptDeviceId',
        'checkinListTickets.keptRowId as stateKeptRowId',
      ])
      .where('checkinLists.eventId', '=', eventId)
      .where('checkinLists.id', '=', listId);
    // On SQLite the message is written in the transaction, which reads the subscriptions itself.
    return engine === 'postgres'
      ? query.select(fanOut.subscriptions('checkinLists.accountId').as('subscriptions')).select(sql<number>`0`.as('scanRecorded'))
      : query
          .select(sql<Subscriptions>`null`.as('subscriptions'))
          .select((eb) => eb.exists(eb.selectFrom('checkinScans').select('checkinScans.id').whereRef('checkinScans.listId', '=', 'checkinLists.id').where('checkinScans.scanId', '=', scanId!)).as('scanRecorded'));
  });
const reads = {
  postgres: { id: readQuery('id', 'postgres'), code: readQuery('code', 'postgres') },
  sqlite: { id: readQuery('id', 'sqlite'), code: readQuery('code', 'sqlite') },
};

/** The read of an online scan of `key` through the list; undefined when the list or the ticket is not the event's. */
export async function readOnlineScan(scope: TenantScope, eventId: string, listId: string, key: TicketKey, scanId: string): Promise<OnlineScanRead | undefined> {
  const db = scope.db as Db;
  const engine = onPostgres(db) ? 'postgres' : 'sqlite';
  const read = reads[engine][key.ticketId !== undefined ? 'id' : 'code'];
  const value = key.ticketId ?? key.code!;
  const [row] = await (engine === 'postgres' ? read(db, scope.accountId, eventId, listId, value) : read(db, scope.accountId, eventId, listId, value, scanId));
  if (!row) return undefined;
  const ticket = Object.fromEntries(TICKET_COLUMNS.map((column) => [column, row[column]])) as TicketRow;
  return {
    list: { ticketTypeIds: row.listTicketTypeIds, validFrom: row.listValidFrom, validUntil: row.listValidUntil, allowMultipleEntries: row.listAllowMultipleEntries, scanExits: row.listScanExits },
    ticket,
    state:
      row.stateListId === null
        ? null
        : { inside: row.stateInside!, entries: row.stateEntries!, keptScanId: row.stateKeptScanId, keptScannedAt: row.stateKeptScannedAt, keptDeviceId: row.stateKeptDeviceId, keptRowId: row.stateKeptRowId },
    scanRecorded: Boolean(row.scanRecorded),
    subscriptions: row.subscriptions ?? [],
  };
}

/** admitEntryStatement's named arguments. */
type AdmitEntry = {
  accountId: string;
  eventId: string;
  listId: string;
  ticketId: string;
  /** The ticket's code as read. */
  code: string;
  rowId: string;
  scanId: string;
  at: number;
  gate: string | null;
  keyId: string | null;
  now: number;
  slot: number;
  /** The state as read: -1 when there was none (so that one made since is not overwritten). */
  wasInside: number;
  wasEntries: number;
  wasKeptRowId: string | null;
  /** The state after the entry. */
  inside: number;
  entries: number;
  keptScanId: string | null;
  keptScannedAt: number | null;
  keptDeviceId: string | null;
  keptRowId: string | null;
  /** What the entry adds to the list's counts besides one entry and one scan. */
  addInside: number;
  addAdmitted: number;
} & OneMessageFanOutValues;

const ADMIT_ENTRY = [
  'accountId', 'eventId', 'listId', 'ticketId', 'code', 'rowId', 'scanId', 'at', 'gate', 'keyId', 'now', 'slot', 'wasInside', 'wasEntries', 'wasKeptRowId',
  'inside', 'entries', 'keptScanId', 'keptScannedAt', 'keptDeviceId', 'keptRowId', 'addInside', 'addAdmitted', ...fanOut.oneNames,
] as const satisfies ReadonlyArray<keyof AdmitEntry>;

// Its common table expressions are SQL: inserts of the statement's arguments, each cast as an
// `insert ... select` needs it, read more plainly so than built.
const admitEntryStatement = preparedNamed(ADMIT_ENTRY, (db: Db, p: AdmitEntry) =>
  fanOut
    .into(
      db
        // The ticket still valid under the code read, held until the commit: a cancel, transfer or
        // retype committed since is seen here (no row, nothing below is written), and one after
        // waits for this entry and then sees it (tickets.repository.ts, lockForChange).
        .with('ticket', () =>
          sql`(select id from tickets where id = ${p.ticketId}::text and account_id = ${p.accountId}::text and status = 'valid' and code = ${p.code}::text for share)`,
        )
        // The ticket's state: made, or changed only if it is as read (else no row, and nothing below is written).
        .with('state', () =>
          sql<{ listId: string }>`(insert into checkin_list_tickets (list_id, ticket_id, account_id, inside, entries, kept_scan_id, kept_scanned_at, kept_device_id, kept_row_id)
            select ${p.listId}::text, ticket.id, ${p.accountId}::text, ${p.inside}::integer, ${p.entries}::integer, ${p.keptScanId}::text, ${p.keptScannedAt}::bigint, ${p.keptDeviceId}::text, ${p.keptRowId}::text from ticket
            on conflict (list_id, ticket_id) do update set inside = excluded.inside, entries = excluded.entries, kept_scan_id = excluded.kept_scan_id,
              kept_scanned_at = excluded.kept_scanned_at, kept_device_id = excluded.kept_device_id, kept_row_id = excluded.kept_row_id
            where checkin_list_tickets.account_id = ${p.accountId}::text and checkin_list_tickets.inside = ${p.wasInside}::integer and checkin_list_tickets.entries = ${p.wasEntries}::integer
              and checkin_list_tickets.kept_row_id is not distinct from ${p.wasKeptRowId}::text
            returning list_id)`,
        )
        .with('scan', () =>
          sql`(insert into checkin_scans (id, account_id, event_id, list_id, scan_id, ticket_id, direction, scanned_at, gate, key_id, outcome, created_at)
            select ${p.rowId}::text, ${p.accountId}::text, ${p.eventId}::text, state.list_id, ${p.scanId}::text, ${p.ticketId}::text, 'entry', ${p.at}::bigint,
              ${p.gate}::text, ${p.keyId}::text, 'admitted', ${p.now}::bigint from state)`,
        )
        .with('counted', () =>
          sql`(insert into checkin_list_counts (list_id, slot, account_id, inside, entries, exits, admitted_tickets, conflicts, scans)
            select state.list_id, ${p.slot}::bigint, ${p.accountId}::text, ${p.addInside}::integer, 1, 0, ${p.addAdmitted}::integer, 0, 1 from state
            on conflict (list_id, slot) do update set inside = checkin_list_counts.inside + excluded.inside, entries = checkin_list_counts.entries + excluded.entries,
              admitted_tickets = checkin_list_counts.admitted_tickets + excluded.admitted_tickets, scans = checkin_list_counts.scans + excluded.scans
            where checkin_list_counts.account_id = ${p.accountId}::text)`,
        ),
      'state',
      p,
    )
    .selectFrom('state')
    .select('state.listId'),
);

/** The admission an online entry makes, as decided from the read. */
export interface OnlineEntry {
  read: OnlineScanRead;
  eventId: string;
  listId: string;
  rowId: string;
  scanId: string;
  scannedAt: number;
  gate: string | null;
  keyId: string | null;
  now: number;
  /** The ticket's state after the entry, and what it adds to the list's inside and admitted tickets. */
  state: NonNullable<OnlineScanRead['state']>;
  addInside: number;
  addAdmitted: number;
}

/**
 * PostgreSQL, one statement: the admitted entry (the ticket's state on the list, the scan's row,
 * one counter row of the list, the message and its delivery jobs), written only if the ticket is
 * still valid under the code read and its state on the list is still as read. False, with nothing
 * written, when either changed, the scan id was taken (before the read or since), or the list was
 * deleted meanwhile (the transactional path then decides the scan).
 */
export async function writeOnlineEntry(scope: TenantScope, entry: OnlineEntry, message: OutboxMessage): Promise<boolean> {
  const db = scope.db as Db;
  const fanned = fanOut.oneValues(scope.accountId, message, entry.read.subscriptions, entry.now);
  const was = entry.read.state;
  try {
    const written = await admitEntryStatement(db, {
      accountId: scope.accountId,
      eventId: entry.eventId,
      listId: entry.listId,
      ticketId: entry.read.ticket.id,
      code: entry.read.ticket.code,
      rowId: entry.rowId,
      scanId: entry.scanId,
      at: entry.scannedAt,
      gate: entry.gate,
      keyId: entry.keyId,
      now: entry.now,
      slot: countSlot(),
      wasInside: was ? was.inside : -1,
      wasEntries: was ? was.entries : -1,
      wasKeptRowId: was ? was.keptRowId : null,
      ...entry.state,
      addInside: entry.addInside,
      addAdmitted: entry.addAdmitted,
      ...fanned,
    });
    if (written.length === 0) return false;
  } catch (error) {
    // The scan id recorded before (the read does not ask) or by a concurrent scan (unique), or the
    // list deleted (foreign key): decided again in a transaction.
    const code = (error as { code?: unknown }).code;
    if (code === '23505' || code === '23503') return false;
    throw error;
  }
  fanOut.written(db, fanned);
  if (foldNow()) await foldCounts(scope, entry.listId, sweepNow());
  return true;
}

import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. PostgreSQL: the rows a check-in writes
// no longer check their account and event as foreign keys, only the parent they belong to: a
// check-in's history row its ticket, a scan, a ticket's state on a list and a list's counter row
// their list. On PostgreSQL a foreign key check locks the parent row (FOR KEY SHARE) until the
// commit, and every scan of a door names the same account, event and list rows, so concurrent
// scans shared those locks (a multixact made anew for each new locker): about 20 us of the
// database's CPU per check per row written, measured with 20 connections inserting against one
// parent. The columns stay and are written as before; nothing is deleted differently: these rows
// go with their ticket or list, which go with their event and account (every key below cascades
// the same way). SQLite checks a key by an index lookup and takes no row lock: its tables keep them.
const DROPPED = [
  ['checkins', 'account_id', 'accounts'],
  ['checkins', 'event_id', 'events'],
  ['checkin_scans', 'account_id', 'accounts'],
  ['checkin_scans', 'event_id', 'events'],
  ['checkin_list_tickets', 'account_id', 'accounts'],
  ['checkin_list_counts', 'account_id', 'accounts'],
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const [table, column] of DROPPED) {
    await sql`alter table ${sql.table(table)} drop constraint if exists ${sql.id(`${table}_${column}_fkey`)}`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const [table, column, parent] of DROPPED) {
    await sql`alter table ${sql.table(table)} add constraint ${sql.id(`${table}_${column}_fkey`)} foreign key (${sql.id(column)}) references ${sql.table(parent)} (id) on delete cascade`.execute(db);
  }
}

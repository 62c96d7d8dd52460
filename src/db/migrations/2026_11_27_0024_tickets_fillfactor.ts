import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. PostgreSQL: a ticket's pages keep a
// tenth free. A check-in (and a cancel, a transfer) updates the ticket's row; tickets are written
// an order at a time into full pages, so the new version of a row found no room on its page and
// went to another one, and every index of the table (six) took an entry for it. With room on the
// page the update is a heap-only one: no index is written, and the old version's space is
// reclaimed on the page. Pages written from now on keep the room (existing ones keep theirs until
// the table is rewritten). SQLite has no such setting: nothing to do there.
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter table tickets set (fillfactor = 90)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter table tickets reset (fillfactor)`.execute(db);
}

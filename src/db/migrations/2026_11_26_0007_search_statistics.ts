import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. Attendee searches fold case on both
// sides (`lower(column) like lower(pattern)`). Without statistics on those expressions PostgreSQL
// guesses that a search matches a handful of tickets, so for a common name it filters every ticket
// of the event and sorts the matches, where walking the tickets in page order stops as soon as a
// page is full (100,000 tickets, a name on one in 60: 53 ms against 3 ms). A search that matches
// few tickets is still planned as a scan, which it has to be. Statistics on expressions exist from
// PostgreSQL 14; older servers keep the guess. SQLite plans this page by walking the ticket order.
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  const { rows } = await sql<{ version: number }>`select current_setting('server_version_num')::int as version`.execute(db);
  if (rows[0]!.version < 140000) return;
  await sql`create statistics tickets_lower_attendee_name on (lower(attendee_name)) from tickets`.execute(db);
  await sql`create statistics tickets_lower_attendee_email on (lower(attendee_email)) from tickets`.execute(db);
  // Filled by the next ANALYZE: now, for a database that already holds tickets.
  await sql`analyze tickets`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`drop statistics if exists tickets_lower_attendee_name`.execute(db);
  await sql`drop statistics if exists tickets_lower_attendee_email`.execute(db);
}

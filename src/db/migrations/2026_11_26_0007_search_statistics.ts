import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. Attendee searches fold case on both
// sides: `lower(column) like lower(pattern)`, and for a search beyond ASCII
// `translate(lower(column), 'ς', 'σ')` (events.repository.ts, caseFold). Without statistics on those
// expressions PostgreSQL guesses that a search matches a handful of tickets, so for a common name
// it filters every ticket of the event and sorts the matches, where walking the tickets in page
// order stops as soon as a page is full (100,000 tickets, a name on one in 60: 53 ms against
// 3 ms). A search that matches few tickets is still planned as a scan, which it has to be.
// Statistics on expressions exist from PostgreSQL 14; older servers keep the guess (docs/events.md
// gives the statements to run after an upgrade). SQLite plans this page by walking the ticket order.
const STATISTICS = {
  tickets_lower_attendee_name: sql`lower(attendee_name)`,
  tickets_lower_attendee_email: sql`lower(attendee_email)`,
  tickets_fold_attendee_name: sql`translate(lower(attendee_name), 'ς', 'σ')`,
  tickets_fold_attendee_email: sql`translate(lower(attendee_email), 'ς', 'σ')`,
};

export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  const { rows } = await sql<{ version: number }>`select current_setting('server_version_num')::int as version`.execute(db);
  if (rows[0]!.version < 140000) return;
  // CREATE STATISTICS waits for a vacuum of the table; do not hold every starting process (they
  // queue on the migration lock) behind an anti-wraparound one: fail, and start again later.
  await sql`set local lock_timeout = '60s'`.execute(db);
  for (const [name, expression] of Object.entries(STATISTICS)) {
    await sql`create statistics ${sql.id(name)} on (${expression}) from tickets`.execute(db);
  }
  // Filled by the next ANALYZE: now, for a database that already holds tickets (it samples at
  // most 30,000 rows, however large the table).
  await sql`analyze tickets`.execute(db);
  // The migrations after this one run in the same transaction.
  await sql`set local lock_timeout to default`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const name of Object.keys(STATISTICS)) await sql`drop statistics if exists ${sql.id(name)}`.execute(db);
}

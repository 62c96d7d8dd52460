import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. PostgreSQL checks a foreign key on
// insert with a query of its own (a locking read of the referenced row), about 40 us of server
// CPU each; a first entry through a check-in list inserted three rows that made nine such checks
// (the scan: account, event, list, ticket; the ticket's state on the list: list, ticket, account;
// the counter row: list, account), a check-in without a list three (account, event, ticket). The
// account and event a list row names are the list's own, so one composite key to the list row
// (list, account[, event]) says all that the separate keys said and also that they agree: the
// scan's account and event are its list's. The nine checks become five, the three of a check-in
// without a list two ((event, account) to the event row). Deleting an account or an event still
// removes these rows: it removes the lists (or the check-ins' event), whose keys cascade.
// Each statement runs in the migrator's transaction (PostgreSQL's DDL is transactional): all of it
// or none.
// SQLite is left as it is: its checks are lookups in the writer's own process, not queries.
const LIST_KEYS = [
  { table: 'checkin_scans', columns: ['list_id', 'account_id', 'event_id'], dropped: ['account_id', 'event_id', 'list_id'] },
  { table: 'checkin_list_tickets', columns: ['list_id', 'account_id'], dropped: ['account_id', 'list_id'] },
  { table: 'checkin_list_counts', columns: ['list_id', 'account_id'], dropped: ['account_id', 'list_id'] },
] as const;

const onPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;
const list = (columns: readonly string[]) => sql.raw(columns.join(', '));
const run = async (db: Kysely<any>, statements: ReturnType<typeof sql>[]) => {
  for (const statement of statements) await statement.execute(db);
};
const parent = (column: string) => (column === 'list_id' ? 'checkin_lists' : column === 'event_id' ? 'events' : 'accounts');

export async function up(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  await run(db, [
    sql`alter table checkin_lists add constraint checkin_lists_id_account_event_key unique (id, account_id, event_id)`,
    sql`alter table checkin_lists add constraint checkin_lists_id_account_key unique (id, account_id)`,
    sql`alter table events add constraint events_id_account_key unique (id, account_id)`,
    ...LIST_KEYS.flatMap(({ table, columns, dropped }) => [
      ...dropped.map((column) => sql`alter table ${sql.table(table)} drop constraint ${sql.raw(`${table}_${column}_fkey`)}`),
      sql`alter table ${sql.table(table)} add constraint ${sql.raw(`${table}_list_fkey`)} foreign key (${list(columns)})
        references checkin_lists (${list(columns.map((c) => (c === 'list_id' ? 'id' : c)))}) on delete cascade`,
    ]),
    sql`alter table checkins drop constraint checkins_account_id_fkey`,
    sql`alter table checkins drop constraint checkins_event_id_fkey`,
    sql`alter table checkins add constraint checkins_event_fkey foreign key (event_id, account_id) references events (id, account_id) on delete cascade`,
  ]);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!onPostgres(db)) return;
  const single = (table: string, column: string) =>
    sql`alter table ${sql.table(table)} add constraint ${sql.raw(`${table}_${column}_fkey`)} foreign key (${sql.raw(column)}) references ${sql.table(parent(column))} (id) on delete cascade`;
  await run(db, [
    sql`alter table checkins drop constraint checkins_event_fkey`,
    single('checkins', 'account_id'),
    single('checkins', 'event_id'),
    ...LIST_KEYS.flatMap(({ table, dropped }) => [
      sql`alter table ${sql.table(table)} drop constraint ${sql.raw(`${table}_list_fkey`)}`,
      ...dropped.map((column) => single(table, column)),
    ]),
    sql`alter table events drop constraint events_id_account_key`,
    sql`alter table checkin_lists drop constraint checkin_lists_id_account_key`,
    sql`alter table checkin_lists drop constraint checkin_lists_id_account_event_key`,
  ]);
}

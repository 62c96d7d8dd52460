import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. A check-in list's counter rows take
// time-ordered slots: the second of the scan's clock times 2²¹ plus a random number below 2²¹
// (about 3.7e15 today, below 2⁵³ until 2106), where they took a random one in 1..2³¹−1. The fold
// then reads only the slots since the previous one (the list's row 0 keeps the highest slot it
// folded, `folded_through`), not every entry the list's earlier folds deleted and no vacuum has
// cleared yet. PostgreSQL: `slot` becomes bigint (the table and its indexes are rewritten: a
// handful of rows per list, row 0 and those since the last fold). SQLite's integer is 64-bit
// already, so only the new column is added there. Rows of the old kind keep their counts: their
// slots are all below the new ones and above 0, and row 0's new mark is 0, so the next fold reads
// them with the rest. A process still running the old code (its `::integer` slot) while this
// runs goes on inserting slots below 2³¹, which folds of the new code leave as rows of their own
// once the mark is past them: still counted (a read sums every row of the list), only not folded.
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) await sql`alter table checkin_list_counts alter column slot type bigint`.execute(db);
  await db.schema.alterTable('checkin_list_counts').addColumn('folded_through', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
}

// Back to integer slots: every counter row is folded into its list's row 0 first (their slots do
// not fit in an integer), in the statement that deletes them.
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('checkin_list_counts').dropColumn('folded_through').execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  const columns = ['inside', 'entries', 'exits', 'admitted_tickets', 'conflicts', 'scans'];
  await sql`with gone as (delete from checkin_list_counts where slot <> 0 returning *)
    insert into checkin_list_counts (list_id, slot, account_id, ${sql.raw(columns.join(', '))})
    select list_id, 0, min(account_id), ${sql.raw(columns.map((c) => `sum(${c})`).join(', '))} from gone group by list_id
    on conflict (list_id, slot) do update set ${sql.raw(columns.map((c) => `${c} = checkin_list_counts.${c} + excluded.${c}`).join(', '))}`.execute(db);
  await sql`alter table checkin_list_counts alter column slot type integer`.execute(db);
}

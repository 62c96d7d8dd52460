import { type Kysely, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. A list's conflicts are paged newest
// first by (list_id, conflicted_at, id) among its scans whose outcome is 'conflict'. The index
// held every scan, so each admitted scan wrote an entry that no query reads; it now holds the
// conflicts alone (a partial index, which both engines use for `outcome = 'conflict'`).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('checkin_scans_list_conflicted_at').execute();
  await db.schema
    .createIndex('checkin_scans_list_conflicts')
    .on('checkin_scans')
    .columns(['list_id', 'conflicted_at', 'id'])
    .where(sql.ref('outcome'), '=', sql.lit('conflict'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('checkin_scans_list_conflicts').execute();
  await db.schema.createIndex('checkin_scans_list_conflicted_at').on('checkin_scans').columns(['list_id', 'conflicted_at', 'id']).execute();
}

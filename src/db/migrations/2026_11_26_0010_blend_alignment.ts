import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. A finished blend job keeps how each of
// its frames was aligned (JSON), for its status record; null for jobs without alignment.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('blend_jobs').addColumn('alignment', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('blend_jobs').dropColumn('alignment').execute();
}

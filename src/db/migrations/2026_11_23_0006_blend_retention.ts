import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. The retention sweep finds finished
// blend jobs by when they finished.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('blend_jobs_completed_at').on('blend_jobs').column('completed_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('blend_jobs_completed_at').execute();
}

import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. A blend job keeps how far its worker
// has come (JSON: stage, fraction, frames done and total), for its status record and its event
// stream; and when its owner asked a running job to stop, for the worker running it, which may be
// in another process, to see and honour.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('blend_jobs').addColumn('progress', 'text').execute();
  await db.schema.alterTable('blend_jobs').addColumn('cancel_requested_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('blend_jobs').dropColumn('cancel_requested_at').execute();
  await db.schema.alterTable('blend_jobs').dropColumn('progress').execute();
}

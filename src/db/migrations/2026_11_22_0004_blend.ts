import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('blend_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    // What the client asked for (`auto` included) and what the engine used.
    .addColumn('blend_type', 'text', (c) => c.notNull())
    .addColumn('blend_type_used', 'text')
    .addColumn('images', 'text', (c) => c.notNull())
    .addColumn('options', 'text', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('result_key', 'text')
    .addColumn('result_format', 'text')
    .addColumn('result_bytes', 'integer')
    .addColumn('result_width', 'integer')
    .addColumn('result_height', 'integer')
    // Signs the job's resultUrl; random per job, so a leaked URL says nothing about another job's.
    .addColumn('result_token', 'text', (c) => c.notNull())
    .addColumn('quality_score', 'double precision')
    .addColumn('quality', 'text')
    .addColumn('processing_time_ms', 'integer')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('error_image_index', 'integer')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blend_jobs_account_id').on('blend_jobs').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('blend_jobs_account_project').on('blend_jobs').columns(['account_id', 'project_id', 'id']).execute();
  await db.schema.createIndex('blend_jobs_account_status').on('blend_jobs').columns(['account_id', 'status', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('blend_jobs').execute();
}

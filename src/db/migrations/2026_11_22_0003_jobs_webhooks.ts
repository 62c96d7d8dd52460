import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // Signs deliveries to a blend job's own webhookUrl (which has no subscription, hence no secret of its own).
  await db.schema.alterTable('accounts').addColumn('webhook_secret', 'text').execute();

  // The durable job queue shared by webhook delivery and blending.
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('jobs_status_run_at').on('jobs').columns(['status', 'run_at']).execute();
  await db.schema.createIndex('jobs_status_locked_until').on('jobs').columns(['status', 'locked_until']).execute();

  await db.schema
    .createTable('webhook_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('disabled_at', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('failing_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_subscriptions_account_id').on('webhook_subscriptions').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('subscription_id', 'text')
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('response_snippet', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_subscription_id').on('webhook_attempts').columns(['subscription_id', 'id']).execute();
  await db.schema.createIndex('webhook_attempts_message_id').on('webhook_attempts').column('message_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['webhook_attempts', 'webhook_subscriptions', 'jobs']) await db.schema.dropTable(table).execute();
  await db.schema.alterTable('accounts').dropColumn('webhook_secret').execute();
}

import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Stripe as a payment provider (docs/events.md,
// "Stripe"): each account's own Stripe keys, and the Stripe events its webhook endpoint has acted on,
// so that Stripe's repeated deliveries of one event have no second effect (kept 30 days).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('stripe_accounts')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('secret_key', 'text', (c) => c.notNull())
    .addColumn('webhook_secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('stripe_events')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('stripe_events_pkey', ['account_id', 'event_id'])
    .execute();
  // The clean-up forgets events long past Stripe's retries by age.
  await db.schema.createIndex('stripe_events_created_at').on('stripe_events').column('created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('stripe_events').execute();
  await db.schema.dropTable('stripe_accounts').execute();
}

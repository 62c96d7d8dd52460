import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Webhook signing secrets (the account's,
// and each subscription's) can be rotated: the one replaced keeps signing deliveries, beside the
// new one, until `..._until`, so receivers that still hold it keep verifying meanwhile.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('previous_webhook_secret', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('previous_webhook_secret_until', 'bigint').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('previous_secret', 'text').execute();
  await db.schema.alterTable('webhook_subscriptions').addColumn('previous_secret_until', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_subscriptions').dropColumn('previous_secret_until').execute();
  await db.schema.alterTable('webhook_subscriptions').dropColumn('previous_secret').execute();
  await db.schema.alterTable('accounts').dropColumn('previous_webhook_secret_until').execute();
  await db.schema.alterTable('accounts').dropColumn('previous_webhook_secret').execute();
}

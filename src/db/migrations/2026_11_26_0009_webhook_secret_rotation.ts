import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. The account's webhook signing secret
// can be rotated: the one it replaced keeps signing deliveries (beside the new one) until
// `previous_webhook_secret_until`, so receivers that still hold it keep verifying meanwhile.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('previous_webhook_secret', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('previous_webhook_secret_until', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').dropColumn('previous_webhook_secret_until').execute();
  await db.schema.alterTable('accounts').dropColumn('previous_webhook_secret').execute();
}

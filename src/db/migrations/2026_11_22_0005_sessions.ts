import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Dashboard sign-in sessions; the cookie
// holds a random token and only its SHA-256 is stored, so a copy of the table signs nobody in.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_sessions_account_id').on('dashboard_sessions').column('account_id').execute();
  await db.schema.createIndex('dashboard_sessions_expires_at').on('dashboard_sessions').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('dashboard_sessions').execute();
}

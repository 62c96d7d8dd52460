import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Signed ticket codes (docs/events.md, "At
// the door"): each event's Ed25519 signing keys, and the serials of the codes that no longer admit
// their ticket (cancelled, transferred, reissued), which scanners download as the revocation list.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('signing_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('retired_at', 'bigint')
    .addUniqueConstraint('signing_keys_event_kid', ['event_id', 'kid'])
    .execute();
  await db.schema.createIndex('signing_keys_event_id').on('signing_keys').columns(['event_id', 'id']).execute();

  await db.schema
    .createTable('ticket_revocations')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('serial', 'text', (c) => c.notNull())
    .addColumn('ticket_id', 'text', (c) => c.notNull().references('tickets.id').onDelete('cascade'))
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('ticket_revocations_pkey', ['event_id', 'serial'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ticket_revocations').execute();
  await db.schema.dropTable('signing_keys').execute();
}

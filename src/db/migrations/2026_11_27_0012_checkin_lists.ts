import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Check-in lists: named sets of ticket
// types, each with its own entries, exits and who is inside; every scan through a list, with the
// client's scan id (a repeated scan id has no second effect); per list and ticket, whether it is
// inside and which scan is its kept admission (the earliest, on lists that admit once).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('checkin_lists')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('ticket_type_ids', 'text', (c) => c.notNull())
    .addColumn('valid_from', 'bigint')
    .addColumn('valid_until', 'bigint')
    .addColumn('allow_multiple_entries', 'integer', (c) => c.notNull())
    .addColumn('scan_exits', 'integer', (c) => c.notNull())
    .addColumn('inside', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('entries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('exits', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('admitted_tickets', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('conflicts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('scans', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('checkin_lists_event_id').on('checkin_lists').columns(['event_id', 'id']).execute();

  await db.schema
    .createTable('checkin_list_tickets')
    .addColumn('list_id', 'text', (c) => c.notNull().references('checkin_lists.id').onDelete('cascade'))
    .addColumn('ticket_id', 'text', (c) => c.notNull().references('tickets.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('inside', 'integer', (c) => c.notNull())
    .addColumn('entries', 'integer', (c) => c.notNull())
    .addColumn('kept_scan_id', 'text')
    .addColumn('kept_scanned_at', 'bigint')
    .addColumn('kept_device_id', 'text')
    .addColumn('kept_row_id', 'text')
    .addPrimaryKeyConstraint('checkin_list_tickets_pk', ['list_id', 'ticket_id'])
    .execute();

  await db.schema
    .createTable('checkin_scans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('list_id', 'text', (c) => c.notNull().references('checkin_lists.id').onDelete('cascade'))
    .addColumn('scan_id', 'text', (c) => c.notNull())
    .addColumn('ticket_id', 'text', (c) => c.references('tickets.id').onDelete('cascade'))
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('scanned_at', 'bigint', (c) => c.notNull())
    .addColumn('device_id', 'text')
    .addColumn('gate', 'text')
    .addColumn('key_id', 'text')
    .addColumn('local_result', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('kept_scan_id', 'text')
    .addColumn('kept_scanned_at', 'bigint')
    .addColumn('kept_device_id', 'text')
    .addColumn('conflicted_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('checkin_scans_list_scan_id').on('checkin_scans').columns(['list_id', 'scan_id']).unique().execute();
  await db.schema.createIndex('checkin_scans_list_ticket').on('checkin_scans').columns(['list_id', 'ticket_id']).execute();
  await db.schema.createIndex('checkin_scans_list_conflicted_at').on('checkin_scans').columns(['list_id', 'conflicted_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['checkin_scans', 'checkin_list_tickets', 'checkin_lists']) await db.schema.dropTable(table).execute();
}

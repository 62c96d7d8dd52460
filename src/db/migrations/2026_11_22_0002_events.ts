import { type Kysely, sql } from 'kysely';

// Frozen in time: imports nothing from the app. Times are epoch milliseconds, money integer minor units
// (bigint: an event's revenue passes 2^31 cents).
// Inventory is guarded twice: conditional updates in the order transaction, and CHECK constraints here.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('starts_at', 'bigint', (c) => c.notNull())
    .addColumn('ends_at', 'bigint', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('venue', 'text')
    .addColumn('online_url', 'text')
    .addColumn('capacity', 'integer')
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('sold', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tickets_issued', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('published_at', 'bigint')
    .addColumn('cancelled_at', 'bigint')
    .addCheckConstraint('events_sold_within_capacity', sql`sold >= 0 and (capacity is null or sold <= capacity)`)
    .execute();
  await db.schema.createIndex('events_account_id').on('events').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('events_account_starts_at').on('events').columns(['account_id', 'starts_at']).execute();

  await db.schema
    .createTable('ticket_types')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('price', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('sold', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sales_start_at', 'bigint')
    .addColumn('sales_end_at', 'bigint')
    .addColumn('max_per_order', 'integer')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addCheckConstraint('ticket_types_sold_within_quantity', sql`sold >= 0 and sold <= quantity`)
    .execute();
  await db.schema.createIndex('ticket_types_event_id').on('ticket_types').columns(['event_id', 'id']).execute();

  await db.schema
    .createTable('orders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('buyer_name', 'text', (c) => c.notNull())
    .addColumn('buyer_email', 'text', (c) => c.notNull())
    .addColumn('items', 'text', (c) => c.notNull())
    .addColumn('total', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('orders_event_id').on('orders').columns(['event_id', 'id']).execute();

  await db.schema
    .createTable('tickets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('ticket_type_id', 'text', (c) => c.notNull().references('ticket_types.id').onDelete('cascade'))
    .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attendee_name', 'text', (c) => c.notNull())
    .addColumn('attendee_email', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull().unique())
    .addColumn('price', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('refunded_amount', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('checked_in_at', 'bigint')
    .addColumn('checkin_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('cancelled_at', 'bigint')
    .execute();
  await db.schema.createIndex('tickets_event_id').on('tickets').columns(['event_id', 'id']).execute();
  await db.schema.createIndex('tickets_order_id').on('tickets').column('order_id').execute();
  // The sales series buckets an event's tickets by when they were sold and when cancelled.
  await db.schema.createIndex('tickets_event_created_at').on('tickets').columns(['event_id', 'created_at', 'price']).execute();
  await db.schema.createIndex('tickets_event_cancelled_at').on('tickets').columns(['event_id', 'cancelled_at', 'refunded_amount']).execute();

  await db.schema
    .createTable('checkins')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('ticket_id', 'text', (c) => c.notNull().references('tickets.id').onDelete('cascade'))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('gate', 'text')
    .addColumn('scanned_at', 'bigint', (c) => c.notNull())
    .addColumn('key_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('checkins_event_scanned_at').on('checkins').columns(['event_id', 'scanned_at']).execute();
  await db.schema.createIndex('checkins_ticket_id').on('checkins').column('ticket_id').execute();

  await db.schema
    .createTable('payouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payouts_event_id').on('payouts').columns(['event_id', 'id']).execute();

  // The outbox: webhook messages written in the same transaction as the change they report.
  await db.schema
    .createTable('webhook_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_messages_account_id').on('webhook_messages').columns(['account_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['webhook_messages', 'payouts', 'checkins', 'tickets', 'orders', 'ticket_types', 'events']) {
    await db.schema.dropTable(table).execute();
  }
}

import { type Kysely, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. The box office's vouchers and waiting
// list (docs/events.md, "Vouchers" and "Waiting list").
// - `vouchers`: a code of one event that discounts (percent or fixed per ticket), unlocks a hidden
//   ticket type, or reserves places of one ticket type; `max_uses` places in all, `redeemed` places
//   taken by its pending and completed orders (a pending order that expires or is cancelled gives
//   its places back). A reserving voucher keeps `max_uses - redeemed` places of its type (and of the
//   event's capacity) from everyone else while it is valid; nothing else stores that count.
// - `ticket_types.hidden`: sold only with a voucher that names the type.
// - `orders.voucher_id`, `voucher_code`, `voucher_places`: the voucher an order used (no foreign key:
//   an order keeps its history when an unused voucher is deleted) and how many of its places it gave.
// - `waitlist_entries`: people waiting for a sold-out ticket type, in order of `created_at`, then
//   `id`; an offer is a single-use reserving voucher (`voucher_id`) valid until `offer_expires_at`.
// - `events.waitlist_offer_minutes`: how long an offer stands.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('vouchers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    // Upper case, as the buyer's code is compared after upper-casing it.
    .addColumn('code', 'text', (c) => c.notNull())
    // null: every ticket type of the event (a hidden type is unlocked only by a voucher that names it).
    .addColumn('ticket_type_id', 'text', (c) => c.references('ticket_types.id').onDelete('cascade'))
    // `none` | `percent` | `fixed`
    .addColumn('discount_type', 'text', (c) => c.notNull())
    // percent: 1..100; fixed: minor units off each ticket's price (never below 0); none: 0.
    .addColumn('discount_value', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('max_uses', 'integer', (c) => c.notNull().check(sql`max_uses >= 1`))
    .addColumn('redeemed', 'integer', (c) => c.notNull().defaultTo(0).check(sql`redeemed >= 0 and redeemed <= max_uses`))
    // 0 | 1: keeps `max_uses - redeemed` places of its ticket type while valid (needs ticket_type_id).
    .addColumn('reserve', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('valid_from', 'bigint')
    .addColumn('valid_until', 'bigint')
    .addColumn('comment', 'text')
    // The waiting-list entry this voucher is the offer of; null for an organiser's voucher.
    .addColumn('waitlist_entry_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('vouchers_event_code').on('vouchers').columns(['event_id', 'code']).unique().execute();
  await db.schema.createIndex('vouchers_event_id').on('vouchers').columns(['event_id', 'id']).execute();
  // What the reserving vouchers of a type keep (availability reads it with every order).
  await db.schema.createIndex('vouchers_reserving').on('vouchers').columns(['ticket_type_id']).where(sql<boolean>`reserve = 1`).execute();

  await db.schema.alterTable('ticket_types').addColumn('hidden', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('orders').addColumn('voucher_id', 'text').execute();
  await db.schema.alterTable('orders').addColumn('voucher_code', 'text').execute();
  await db.schema.alterTable('orders').addColumn('voucher_places', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('events').addColumn('waitlist_offer_minutes', 'integer', (c) => c.notNull().defaultTo(1440)).execute();

  await db.schema
    .createTable('waitlist_entries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('ticket_type_id', 'text', (c) => c.notNull().references('ticket_types.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    // `waiting` | `offered` | `redeemed` | `expired` (the offer was not taken) | `removed`
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('voucher_id', 'text')
    .addColumn('offered_at', 'bigint')
    .addColumn('offer_expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // The queue of a type, in order; and one active entry per address and type.
  await db.schema.createIndex('waitlist_entries_queue').on('waitlist_entries').columns(['ticket_type_id', 'status', 'created_at', 'id']).execute();
  await db.schema.createIndex('waitlist_entries_event_id').on('waitlist_entries').columns(['event_id', 'id']).execute();
  await db.schema
    .createIndex('waitlist_entries_active_email')
    .on('waitlist_entries')
    .columns(['ticket_type_id', 'email'])
    .unique()
    .where(sql<boolean>`status in ('waiting', 'offered')`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('waitlist_entries').execute();
  await db.schema.alterTable('events').dropColumn('waitlist_offer_minutes').execute();
  for (const column of ['voucher_id', 'voucher_code', 'voucher_places']) await db.schema.alterTable('orders').dropColumn(column).execute();
  await db.schema.alterTable('ticket_types').dropColumn('hidden').execute();
  await db.schema.dropTable('vouchers').execute();
}

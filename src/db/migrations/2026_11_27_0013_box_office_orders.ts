import { type Kysely, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. The box office's orders: an order may be
// `pending` (its places held until `expires_at`), then `completed`, `expired` or `cancelled`. Events
// and ticket types count held places beside sold ones (`held`); an event says how long a hold lasts
// (`hold_minutes`). A pending order keeps what it needs to issue its tickets at completion
// (`plan`, JSON). `payments`: one row per money movement (a charge, a refund), by provider.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('held', 'integer', (c) => c.notNull().defaultTo(0).check(sql`held >= 0`)).execute();
  await db.schema.alterTable('events').addColumn('hold_minutes', 'integer', (c) => c.notNull().defaultTo(15)).execute();
  await db.schema.alterTable('ticket_types').addColumn('held', 'integer', (c) => c.notNull().defaultTo(0).check(sql`held >= 0`)).execute();

  await db.schema.alterTable('orders').addColumn('expires_at', 'bigint').execute();
  await db.schema.alterTable('orders').addColumn('completed_at', 'bigint').execute();
  await db.schema.alterTable('orders').addColumn('refunded_amount', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  // `manual` | `stripe` | `external` (paid outside Montage) | null (free).
  await db.schema.alterTable('orders').addColumn('provider', 'text').execute();
  // `none` | `pending` | `paid` | `partially_refunded` | `refunded`
  await db.schema.alterTable('orders').addColumn('payment_status', 'text', (c) => c.notNull().defaultTo('none')).execute();
  await db.schema.alterTable('orders').addColumn('payment_reference', 'text').execute();
  await db.schema.alterTable('orders').addColumn('checkout_url', 'text').execute();
  await db.schema.alterTable('orders').addColumn('plan', 'text').execute();
  await db.schema.alterTable('orders').addColumn('updated_at', 'bigint').execute();
  // Orders of before: completed when created; paid ones were paid outside Montage.
  await db
    .updateTable('orders')
    .set({
      completed_at: sql`created_at`,
      updated_at: sql`created_at`,
      provider: sql`case when total > 0 then 'external' else null end`,
      payment_status: sql`case when total > 0 then 'paid' else 'none' end`,
    })
    .execute();
  // What their cancelled tickets refunded.
  await db
    .updateTable('orders')
    .set({ refunded_amount: sql`(select coalesce(sum(t.refunded_amount), 0) from tickets t where t.order_id = orders.id)` })
    .where('total', '>', 0)
    .execute();
  await db
    .updateTable('orders')
    .set({ payment_status: sql`case when refunded_amount >= total then 'refunded' else 'partially_refunded' end` })
    .where('total', '>', 0)
    .where('refunded_amount', '>', 0)
    .execute();
  await db.schema.createIndex('orders_event_status').on('orders').columns(['event_id', 'status', 'id']).execute();

  await db.schema
    .createTable('payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('ticket_id', 'text', (c) => c.references('tickets.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    // `charge` | `refund`
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    // `pending` | `succeeded` | `failed`
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reference', 'text')
    .addColumn('reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payments_order_id').on('payments').columns(['order_id', 'id']).execute();
  await db.schema.createIndex('payments_event_id').on('payments').columns(['event_id', 'id']).execute();
  // A provider's webhook finds the payment it reports by the provider's id.
  await db.schema.createIndex('payments_provider_reference').on('payments').columns(['provider', 'reference']).execute();

  // The charges of the paid orders of before (a payment id from the order's: one per order, stable).
  await sql`insert into payments (id, account_id, event_id, order_id, ticket_id, provider, kind, amount, currency, status, reference, reason, created_at, updated_at)
    select 'pmt_' || substr(o.id, 5), o.account_id, o.event_id, o.id, null, 'external', 'charge', o.total, o.currency, 'succeeded', null, null, o.created_at, o.created_at
    from orders o where o.total > 0`.execute(db);
  // What their cancelled tickets refunded: one succeeded refund per such ticket (its id from the
  // ticket's, stable), so what is left to refund is what was paid less these, as for new orders.
  await sql`insert into payments (id, account_id, event_id, order_id, ticket_id, provider, kind, amount, currency, status, reference, reason, created_at, updated_at)
    select 'pmt_' || substr(t.id, 5), t.account_id, t.event_id, t.order_id, t.id, 'external', 'refund', t.refunded_amount, t.currency, 'succeeded', null, 'ticket cancelled', coalesce(t.cancelled_at, t.updated_at), coalesce(t.cancelled_at, t.updated_at)
    from tickets t where t.refunded_amount > 0`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payments').execute();
  await db.schema.dropIndex('orders_event_status').execute();
  for (const column of ['expires_at', 'completed_at', 'refunded_amount', 'provider', 'payment_status', 'payment_reference', 'checkout_url', 'plan', 'updated_at']) {
    await db.schema.alterTable('orders').dropColumn(column).execute();
  }
  await db.schema.alterTable('ticket_types').dropColumn('held').execute();
  await db.schema.alterTable('events').dropColumn('hold_minutes').execute();
  await db.schema.alterTable('events').dropColumn('held').execute();
}

/**
 * Refunds (docs/events.md, "Refunds and order changes"): whole and partial refunds of an order's
 * money, refunds of cancelled tickets and of order changes through the order's provider, never
 * more than was paid under concurrency, each money movement recorded once and reported once to a
 * real webhook receiver, analytics and payouts following, on every engine of the run.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { type Engine, openDatabase } from '../src/db/database.js';
import { migrateToLatest, migrateUpTo } from '../src/db/migrate.js';
import { TenantScope } from '../src/db/tenant.js';
import { AppError } from '../src/errors.js';
import { isId, newId } from '../src/ids.js';
import { getOrder } from '../src/events/orders.service.js';
import { refundOrder } from '../src/events/refunds.service.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until, FAST_WEBHOOKS as FAST, hookReceiver as receiver, jsonClient as client, type JsonClient as Client } from './helpers.js';

// API bodies are read as loosely typed JSON; the assertions are what type them.
type Json = any;




/** An account with a published event: Standard 3000, VIP 5000, Free 0. */
async function box(t: TestContext, engine: Engine, options: { workers?: boolean } = {}) {
  const api = await startApp(t, await freshStorage(t, engine), FAST, { workers: options.workers ?? false });
  const { key, accountId } = await api.account();
  const c = client(api, key);
  const event = await c.ok('POST', '/v1/events', { name: 'Show', startsAt: '2030-01-01T10:00:00Z', endsAt: '2030-01-01T12:00:00Z', timezone: 'UTC', currency: 'EUR' });
  const standard = await c.ok('POST', `/v1/events/${event.id}/tickets`, { name: 'Standard', price: 3000, quantity: 500 });
  const vip = await c.ok('POST', `/v1/events/${event.id}/tickets`, { name: 'VIP', price: 5000, quantity: 50 });
  const free = await c.ok('POST', `/v1/events/${event.id}/tickets`, { name: 'Free', price: 0, quantity: 50 });
  await c.ok('POST', `/v1/events/${event.id}/publish`);
  return { api, c, accountId, key, event, standard, vip, free };
}

const buyer = { name: 'Ada', email: 'ada@example.com' };

/** A completed order; with `manual`, placed pending and then confirmed (the money taken at the desk). */
async function paidOrder(c: Client, eventId: string, items: Array<{ ticketTypeId: string; quantity: number }>, provider?: 'manual'): Promise<Json> {
  if (!provider) return c.ok('POST', `/v1/events/${eventId}/orders`, { buyer, items });
  const pending = await c.ok('POST', `/v1/events/${eventId}/orders`, { buyer, items, payment: { provider } });
  assert.equal(pending.status, 'pending');
  return c.ok('POST', `/v1/orders/${pending.id}/confirm`, {});
}

async function messagesOf(api: TestApp, accountId: string, event: string): Promise<Json[]> {
  const rows = await api.database.db.selectFrom('webhookMessages').select('payload').where('accountId', '=', accountId).where('eventType', '=', event).orderBy('id').execute();
  return rows.map((row) => JSON.parse(row.payload).data);
}

const refundsOf = (order: Json) => order.payments.filter((p: Json) => p.kind === 'refund');

for (const engine of ENGINES) {
  describe(`refunds (${engine})`, () => {
    test('partial, then the rest, then nothing left: the order, its payments, payment.refunded, analytics and payouts follow', async (t) => {
      const { api, c, accountId, event, standard } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }]);
      assert.equal(order.payment.provider, 'external');

      const first = await c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 1000, reason: 'Late start' });
      assert.equal(first.status, 201);
      const refund = await first.json();
      assert.match(refund.id, /^pmt_/);
      assert.deepEqual(
        { kind: refund.kind, provider: refund.provider, amount: refund.amount, currency: refund.currency, status: refund.status, ticketId: refund.ticketId },
        { kind: 'refund', provider: 'external', amount: 1000, currency: 'EUR', status: 'succeeded', ticketId: null },
      );
      let read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.deepEqual([read.refundedAmount, read.payment.status], [1000, 'partially_refunded']);
      assert.deepEqual(read.tickets.map((x: Json) => [x.status, x.refundedAmount]), [['valid', 0], ['valid', 0]], 'tickets untouched');

      const over = await problem(await c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 5001 }), 409, 'refund_exceeds_paid');
      assert.equal(over.refundable, 5000);
      const rest = await c.ok('POST', `/v1/orders/${order.id}/refunds`, {});
      assert.equal(rest.amount, 5000, 'no amount: all that is left');
      const none = await problem(await c.call('POST', `/v1/orders/${order.id}/refunds`, {}), 409, 'refund_exceeds_paid');
      assert.equal(none.refundable, 0);
      read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.deepEqual([read.refundedAmount, read.payment.status], [6000, 'refunded']);
      assert.deepEqual(refundsOf(read).map((p: Json) => p.amount), [1000, 5000]);

      const sent = await messagesOf(api, accountId, 'payment.refunded');
      assert.deepEqual(sent, [
        { orderId: order.id, ticketId: null, amount: 1000, currency: 'EUR', provider: 'external', paymentId: refund.id },
        { orderId: order.id, ticketId: null, amount: 5000, currency: 'EUR', provider: 'external', paymentId: rest.id },
      ]);

      const analytics = await c.ok('GET', `/v1/events/${event.id}/analytics`);
      assert.deepEqual([analytics.grossRevenue, analytics.refunded, analytics.netRevenue], [6000, 6000, 0]);
      const series = await c.ok('GET', `/v1/events/${event.id}/analytics/sales?interval=day`);
      assert.equal(series.buckets.reduce((sum: number, b: Json) => sum + b.refunded, 0), 6000);
      await problem(await c.call('POST', `/v1/events/${event.id}/payouts`), 409, 'nothing_to_pay_out');
    });

    test('refusals: bad input names its field; an order not completed; a free order; another account; the scope', async (t) => {
      const { api, c, accountId, event, standard, free } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 1 }]);
      const path = `/v1/orders/${order.id}/refunds`;
      const bad: Array<[unknown, string]> = [
        [{ amount: 0 }, '/amount'],
        [{ amount: -5 }, '/amount'],
        [{ amount: 1.5 }, '/amount'],
        [{ amount: '100' }, '/amount'],
        [{ reason: '' }, '/reason'],
        [{ reason: 'x'.repeat(501) }, '/reason'],
        [{ amount: 100, extra: true }, '/extra'],
      ];
      for (const [json, where] of bad) {
        const body = await problem(await c.call('POST', path, json), 400, 'invalid_request');
        assert.equal(body.errors[0].path, where, JSON.stringify(json));
      }
      const pending = await c.ok('POST', `/v1/events/${event.id}/orders`, { buyer, items: [{ ticketTypeId: standard.id, quantity: 1 }], payment: { provider: 'manual' } });
      assert.equal((await problem(await c.call('POST', `/v1/orders/${pending.id}/refunds`, {}), 409, 'order_not_completed')).status, 409);
      await c.ok('POST', `/v1/orders/${pending.id}/cancel`);
      await problem(await c.call('POST', `/v1/orders/${pending.id}/refunds`, { amount: 1 }), 409, 'order_not_completed');
      const rsvp = await paidOrder(c, event.id, [{ ticketTypeId: free.id, quantity: 1 }]);
      await problem(await c.call('POST', `/v1/orders/${rsvp.id}/refunds`, {}), 409, 'refund_exceeds_paid');

      const stranger = client(api, (await api.account()).key);
      await problem(await stranger.call('POST', path, {}), 404, 'not_found');
      await problem(await c.call('POST', '/v1/orders/ord_01m80eg3tperaacsapew6ns732/refunds', {}), 404, 'not_found');
      const reader = client(api, await api.key(accountId, 'business', { scopes: ['events:read'] }));
      await problem(await reader.call('POST', path, {}), 403, 'insufficient_scope');
      assert.equal((await c.ok('GET', `/v1/orders/${order.id}`)).refundedAmount, 0, 'nothing moved');
    });

    test('a manual order: a cancelled ticket is refunded through the order\'s provider, once', async (t) => {
      const { api, c, accountId, event, standard } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }], 'manual');
      assert.deepEqual([order.status, order.payment.provider, order.payment.status], ['completed', 'manual', 'paid']);
      const [gone] = order.tickets as Json[];
      const cancelled = await c.ok('POST', `/v1/tickets/${gone.id}/cancel`);
      assert.deepEqual([cancelled.status, cancelled.refundedAmount], ['cancelled', 3000]);
      await problem(await c.call('POST', `/v1/tickets/${gone.id}/cancel`), 409, 'ticket_cancelled');

      const read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.deepEqual(refundsOf(read).map((p: Json) => [p.provider, p.amount, p.ticketId, p.status]), [['manual', 3000, gone.id, 'succeeded']]);
      assert.deepEqual([read.refundedAmount, read.payment.status], [3000, 'partially_refunded']);
      const sent = await messagesOf(api, accountId, 'payment.refunded');
      assert.deepEqual(sent.map((m) => [m.ticketId, m.amount, m.provider]), [[gone.id, 3000, 'manual']]);
      // What is left of the order's money: the other ticket's 3000.
      assert.equal((await problem(await c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 3001 }), 409, 'refund_exceeds_paid')).refundable, 3000);
      const analytics = await c.ok('GET', `/v1/events/${event.id}/analytics`);
      assert.deepEqual([analytics.grossRevenue, analytics.refunded, analytics.netRevenue], [6000, 3000, 3000]);
    });

    test('a provider that refuses: 502, the refund is failed and its amount free again; the cancel stands', async (t) => {
      const { api, c, accountId, event, standard } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }]);
      // Paid through Stripe, and the account's Stripe is not set up (any more): the provider cannot be reached.
      const paidVia = async (provider: string) => {
        await api.database.db.updateTable('orders').set({ provider }).where('id', '=', order.id).execute();
        await api.database.db.updateTable('payments').set({ provider }).where('orderId', '=', order.id).where('kind', '=', 'charge').execute();
      };
      await paidVia('stripe');
      const failed = await problem(await c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 500 }), 502, 'payment_provider_error');
      assert.equal(failed.failedPaymentIds.length, 1);
      await problem(await c.call('POST', `/v1/tickets/${order.tickets[0].id}/cancel`), 502, 'payment_provider_error');
      const read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.equal(read.tickets[0].status, 'cancelled', 'the cancel is committed');
      assert.deepEqual(refundsOf(read).map((p: Json) => [p.amount, p.status]), [[500, 'failed'], [3000, 'failed']]);
      assert.equal(read.refundedAmount, 0);
      assert.deepEqual(await messagesOf(api, accountId, 'payment.refunded'), []);
      // Failed refunds hold nothing back: once the provider answers, the whole amount can be refunded.
      await paidVia('external');
      assert.equal((await c.ok('POST', `/v1/orders/${order.id}/refunds`, {})).amount, 6000);
    });

    test('refunds split by provider never give back more than the order was paid in all, whatever rows of before say', async (t) => {
      const { api, c, event, standard } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }]);
      // A balance of 1000 paid by hand, and a refund of before the split, 6500, all put on the order's own (external) charge of 6000.
      const row = { eventId: event.id, orderId: order.id, ticketId: null, currency: 'EUR', status: 'succeeded', reference: null, reason: null, createdAt: Date.now(), updatedAt: Date.now() };
      const accountId = (await api.database.db.selectFrom('orders').select('accountId').where('id', '=', order.id).executeTakeFirstOrThrow()).accountId;
      await api.database.db.insertInto('payments').values([
        { ...row, accountId, id: 'pmt_01m8e0aaaaaaaaaaaaaaaaaaa1', provider: 'manual', kind: 'charge', amount: 1000 },
        { ...row, accountId, id: 'pmt_01m8e0aaaaaaaaaaaaaaaaaaa2', provider: 'external', kind: 'refund', amount: 6500 },
      ]).execute();
      // 500 left in all: a cancelled ticket (worth 3000) gets 500 back, not the manual charge's 1000.
      await c.ok('POST', `/v1/tickets/${order.tickets[0].id}/cancel`);
      const read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.deepEqual(refundsOf(read).filter((p: Json) => p.ticketId === order.tickets[0].id).map((p: Json) => [p.provider, p.amount, p.status]), [['manual', 500, 'succeeded']]);
      await problem(await c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 1 }), 409, 'refund_exceeds_paid');
    });

    test('order changes move money: a cheaper type refunds, a dearer one owes a balance that a cancel offsets and confirm settles; refund: false keeps it', async (t) => {
      const { c, event, standard, vip } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: vip.id, quantity: 2 }, { ticketTypeId: standard.id, quantity: 2 }], 'manual');
      const [v1, v2, s1, s2] = order.tickets.slice().sort((a: Json, b: Json) => b.price - a.price || (a.id < b.id ? -1 : 1));
      const changes = `/v1/orders/${order.id}/changes`;

      // VIP → Standard: 2000 back.
      const cheaper = await c.ok('POST', changes, { changeTypes: [{ ticketId: v1.id, ticketTypeId: standard.id }] });
      assert.deepEqual([cheaper.difference, cheaper.balanceDue], [-2000, 0]);
      assert.deepEqual(cheaper.refunds.map((p: Json) => [p.ticketId, p.amount, p.status]), [[v1.id, 2000, 'succeeded']]);
      // Standard → VIP: 2000 owed.
      const dearer = await c.ok('POST', changes, { changeTypes: [{ ticketId: s1.id, ticketTypeId: vip.id }] });
      assert.deepEqual([dearer.difference, dearer.balanceDue, dearer.refunds], [2000, 2000, []]);
      assert.equal(dearer.order.balanceDue, 2000);
      // Cancel a Standard ticket (worth 3000): 2000 pays off the balance, 1000 goes back.
      const cancel = await c.ok('POST', changes, { cancelTickets: [s2.id] });
      assert.deepEqual([cancel.balanceDue, cancel.refunds.map((p: Json) => p.amount)], [0, [1000]]);
      // Another dearer move, then the organiser takes the 2000 at the desk.
      const owing = await c.ok('POST', changes, { changeTypes: [{ ticketId: v1.id, ticketTypeId: vip.id }] });
      assert.equal(owing.balanceDue, 2000);
      const settled = await c.ok('POST', `/v1/orders/${order.id}/confirm`, { reference: 'cash desk 2' });
      assert.equal(settled.balanceDue, 0);
      assert.equal(settled.payments.filter((p: Json) => p.kind === 'charge').length, 2);
      await problem(await c.call('POST', `/v1/orders/${order.id}/confirm`, {}), 409, 'order_not_pending');
      // refund: false: the organiser keeps what a cancel frees.
      const kept = await c.ok('POST', changes, { cancelTickets: [v2.id], refund: false });
      assert.deepEqual(kept.refunds, []);

      const read = await c.ok('GET', `/v1/orders/${order.id}`);
      // Paid 16000 + 2000; refunded 2000 + 1000.
      assert.equal(read.refundedAmount, 3000);
      const analytics = await c.ok('GET', `/v1/events/${event.id}/analytics`);
      assert.equal(analytics.netRevenue, 18000 - 3000);
      assert.equal((await problem(await c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 15001 }), 409, 'refund_exceeds_paid')).refundable, 15000);
    });

    test('ticket cancels and refunds of one order racing: every cancel stands, the money given back is exactly what was paid', async (t) => {
      const { api, c, event, standard } = await box(t, engine);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 10 }]);
      // 10 cancels want 3000 each, 50 refunds 1000 each: 80000 asked of 30000 paid.
      const answers = await Promise.all([
        ...order.tickets.map((x: Json) => c.call('POST', `/v1/tickets/${x.id}/cancel`)),
        ...Array.from({ length: 50 }, () => c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 1000 })),
      ]);
      assert.deepEqual(answers.slice(0, 10).map((r) => r.status), Array(10).fill(200), 'a cancel never waits for money');
      assert.ok(answers.slice(10).every((r) => r.status === 201 || r.status === 409));
      const rows = await api.database.db.selectFrom('payments').selectAll().where('orderId', '=', order.id).where('kind', '=', 'refund').execute();
      assert.equal(rows.reduce((sum, r) => sum + Number(r.amount), 0), 30_000);
      const read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.deepEqual([read.refundedAmount, read.payment.status], [30_000, 'refunded']);
      assert.equal(read.tickets.reduce((sum: number, x: Json) => sum + x.refundedAmount, 0), rows.filter((r) => r.ticketId !== null).reduce((sum, r) => sum + Number(r.amount), 0));
      assert.equal((await c.ok('GET', `/v1/events/${event.id}/tickets`)).data.find((x: Json) => x.id === standard.id).sold, 0);
      const analytics = await c.ok('GET', `/v1/events/${event.id}/analytics`);
      assert.deepEqual([analytics.refunded, analytics.netRevenue], [30_000, 0]);
    });

    test('100 concurrent refunds of one order never give back more than was paid; each is recorded and reported once', async (t) => {
      const { api, c, accountId, key, event, standard } = await box(t, engine, { workers: true });
      const hook = await receiver(t);
      const sub = await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: hook.url, events: ['payment.refunded'] } });
      assert.equal(sub.status, 201);
      const order = await paidOrder(c, event.id, [{ ticketTypeId: standard.id, quantity: 2 }]);

      // 100 refunds of 70 for 6000 paid: 85 fit (5950), 15 do not.
      const answers = await Promise.all(Array.from({ length: 100 }, () => c.call('POST', `/v1/orders/${order.id}/refunds`, { amount: 70 })));
      const statuses = answers.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 201).length, 85, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 409).length, 15);
      // Then 100 asking for all that is left (50): exactly one gets it.
      const rest = await Promise.all(Array.from({ length: 100 }, () => c.call('POST', `/v1/orders/${order.id}/refunds`, {})));
      assert.equal(rest.filter((r) => r.status === 201).length, 1);
      assert.equal(rest.filter((r) => r.status === 409).length, 99);

      const rows = await api.database.db.selectFrom('payments').selectAll().where('orderId', '=', order.id).where('kind', '=', 'refund').execute();
      assert.equal(rows.length, 86, 'each money movement recorded once');
      assert.ok(rows.every((r) => r.status === 'succeeded'));
      assert.equal(rows.reduce((sum, r) => sum + Number(r.amount), 0), 6000);
      const read = await c.ok('GET', `/v1/orders/${order.id}`);
      assert.deepEqual([read.refundedAmount, read.payment.status], [6000, 'refunded']);

      await until(() => hook.got.length >= 86, 20_000, 'every payment.refunded delivered');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(hook.got.length, 86, 'one payment.refunded per refund, no more');
      assert.deepEqual(new Set(hook.got.map((m) => m.data.paymentId)), new Set(rows.map((r) => r.id)));
      assert.equal((await messagesOf(api, accountId, 'payment.refunded')).length, 86);
    });

    test('orders of before the box office: their cancelled tickets\' refunds are payment rows after the migration, so only what is left can be refunded', async (t) => {
      const storage = await freshStorage(t, engine);
      const handle = openDatabase(loadConfig({ ...storage.env, MONTAGE_LOG_LEVEL: 'silent' }));
      onCleanup(t, () => handle.close());
      await migrateUpTo(handle, '2026_11_27_0012_checkin_lists');
      const now = Date.now();
      const [accountId, eventId, typeId, orderId] = [newId('account'), newId('event'), newId('ticketType'), newId('order')];
      const [kept, refunded, free] = [newId('ticket'), newId('ticket'), newId('ticket')];
      await sql`insert into accounts (id, email, plan, created_at, updated_at) values (${accountId}, 'old@example.com', 'business', ${now}, ${now})`.execute(handle.db);
      await sql`insert into events (id, account_id, name, starts_at, ends_at, timezone, currency, status, metadata, sold, created_at, updated_at)
        values (${eventId}, ${accountId}, 'Old show', ${now + 86_400_000}, ${now + 90_000_000}, 'UTC', 'EUR', 'published', '{}', 1, ${now}, ${now})`.execute(handle.db);
      await sql`insert into ticket_types (id, account_id, event_id, name, price, currency, quantity, sold, created_at, updated_at)
        values (${typeId}, ${accountId}, ${eventId}, 'Standard', 3000, 'EUR', 10, 1, ${now}, ${now})`.execute(handle.db);
      await sql`insert into orders (id, account_id, event_id, buyer_name, buyer_email, items, total, currency, status, created_at)
        values (${orderId}, ${accountId}, ${eventId}, 'Ada', 'ada@example.com', '[]', 6000, 'EUR', 'completed', ${now})`.execute(handle.db);
      const ticket = (id: string, status: string, price: number, refundedAmount: number, cancelledAt: number | null) =>
        sql`insert into tickets (id, account_id, event_id, ticket_type_id, order_id, status, attendee_name, attendee_email, code, price, currency, refunded_amount, created_at, updated_at, cancelled_at)
          values (${id}, ${accountId}, ${eventId}, ${typeId}, ${orderId}, ${status}, 'Ada', 'ada@example.com', ${`code-${id}`}, ${price}, 'EUR', ${refundedAmount}, ${now}, ${cancelledAt ?? now}, ${cancelledAt})`.execute(handle.db);
      await ticket(kept, 'valid', 3000, 0, null);
      await ticket(refunded, 'cancelled', 3000, 3000, now + 1000);
      await ticket(free, 'cancelled', 0, 0, now + 2000);
      await migrateToLatest(handle);

      const scope = new TenantScope(handle.db, accountId);
      const order = await getOrder(scope, orderId);
      assert.deepEqual([order.refundedAmount, order.payment.status], [3000, 'partially_refunded']);
      assert.deepEqual(
        order.payments.map((p) => [p.kind, p.provider, p.amount, p.status, p.ticketId]),
        [
          ['charge', 'external', 6000, 'succeeded', null],
          ['refund', 'external', 3000, 'succeeded', refunded],
        ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
      assert.ok(order.payments.every((p) => isId('payment', p.id)), 'ids of the payment kind, derived from the order\'s and the ticket\'s');
      await assert.rejects(refundOrder(scope, orderId, { amount: 3001 }), (err: unknown) => err instanceof AppError && err.code === 'refund_exceeds_paid' && (err.extensions as Json).refundable === 3000);
      const rest = await refundOrder(scope, orderId, {});
      assert.deepEqual([rest.amount, rest.status], [3000, 'succeeded']);
    });
  });
}

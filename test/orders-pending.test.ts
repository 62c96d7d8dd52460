/**
 * Pending orders (docs/events.md, "Orders and payments"): an order paid through a provider holds its
 * places until it is paid, expires or is cancelled; the manual provider's confirmation; completion
 * by a provider's report (completeOrder); the expiry job with workers; and the oversell guarantee
 * with orders, holds, confirmations and expiries racing. On every engine of the run.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { TenantScope } from '../src/db/tenant.js';
import { OVERDUE_MARGIN_MS, PLAN_KEPT_MS, sweepPendingOrders } from '../src/events/orders.job.js';
import { completeOrder, expireOrder } from '../src/events/orders.service.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until } from './helpers.js';

/** The sweeps' log: a failing row is written there; these tests have none. */
const quiet = { warn() {} };

type Json = any;

const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');

/** `montage worker` in a process of its own, resolved once it works the queue; stopped when the test ends. */
function workerProcess(t: TestContext, env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'worker'], { env: { ...process.env, ...env, MONTAGE_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  onCleanup(t, () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    return new Promise((r) => child.once('exit', r));
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('Montage worker running')) resolve();
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`worker exited (${code}): ${out}`)));
  });
}

const buyer = { name: 'Ada Lovelace', email: 'Ada@Example.com' };

/** A published event with the given ticket types (name → quantity and price), ready to sell. */
async function onSale(api: TestApp, key: string, types: Record<string, { quantity: number; price?: number }>, event: Record<string, unknown> = {}) {
  const created = await expect(api, key, 201, 'POST', '/events', {
    name: 'Launch',
    startsAt: '2030-05-01T18:00:00Z',
    endsAt: '2030-05-01T23:00:00Z',
    timezone: 'UTC',
    currency: 'EUR',
    ...event,
  });
  const ids: Record<string, string> = {};
  for (const [name, { quantity, price = 1000 }] of Object.entries(types)) ids[name] = (await expect(api, key, 201, 'POST', `/events/${created.id}/tickets`, { name, price, quantity })).id;
  await expect(api, key, 200, 'POST', `/events/${created.id}/publish`);
  return { eventId: created.id as string, ids };
}

async function expect(api: TestApp, key: string, status: number, method: string, path: string, json?: unknown): Promise<Json> {
  const res = await api.fetch(`/v1${path}`, { method, key, json });
  const text = await res.text();
  assert.equal(res.status, status, `${method} ${path} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

/** The outbox messages of the account's order, oldest first: [event, data]. */
async function messagesOf(api: TestApp, orderId: string): Promise<Array<[string, Json]>> {
  const rows = await api.database.db.selectFrom('webhookMessages').select(['eventType', 'payload']).orderBy('id').execute();
  return rows
    .map((r): [string, Json] => [r.eventType, JSON.parse(r.payload).data])
    .filter(([, data]) => data.orderId === orderId || data.id === orderId);
}

/** The event's and its ticket types' counters beside what its tickets and pending orders say they should be. */
async function inventory(api: TestApp, eventId: string) {
  const db = api.database.db;
  const event = await db.selectFrom('events').select(['sold', 'held', 'capacity']).where('id', '=', eventId).executeTakeFirstOrThrow();
  const types = await db.selectFrom('ticketTypes').select(['id', 'sold', 'held', 'quantity']).where('eventId', '=', eventId).execute();
  const valid = await db.selectFrom('tickets').select(['ticketTypeId']).where('eventId', '=', eventId).where('status', '=', 'valid').execute();
  const pending = await db.selectFrom('orders').select(['items']).where('eventId', '=', eventId).where('status', '=', 'pending').execute();
  const heldOf = new Map<string, number>();
  for (const order of pending) for (const item of JSON.parse(order.items)) heldOf.set(item.ticketTypeId, (heldOf.get(item.ticketTypeId) ?? 0) + item.quantity);
  return { event, types, valid, heldOf };
}

/** sold and held of the event and of each type are what its tickets and pending orders hold, and within capacity and quantity. */
async function assertConsistent(api: TestApp, eventId: string) {
  const { event, types, valid, heldOf } = await inventory(api, eventId);
  assert.equal(event.sold, valid.length, 'event.sold is its valid tickets');
  assert.equal(event.held, [...heldOf.values()].reduce((a, b) => a + b, 0), 'event.held is what its pending orders hold');
  if (event.capacity !== null) assert.ok(event.sold + event.held <= event.capacity, `sold ${event.sold} + held ${event.held} within capacity ${event.capacity}`);
  for (const type of types) {
    assert.equal(type.sold, valid.filter((t) => t.ticketTypeId === type.id).length, `sold of ${type.id}`);
    assert.equal(type.held, heldOf.get(type.id) ?? 0, `held of ${type.id}`);
    assert.ok(type.sold + type.held <= type.quantity, `sold + held of ${type.id} within quantity`);
  }
  return { event, types };
}

for (const engine of ENGINES) {
  describe(`pending orders (${engine})`, () => {
    test('a manual order holds its places until confirmed; confirmation issues its tickets and reports the payment', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5, price: 1500 } }, { capacity: 10, holdMinutes: 5 });

      const before = Date.now();
      const order = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, {
        buyer,
        items: [{ ticketTypeId: ids.GA, quantity: 2, attendees: [{ name: 'Charles Babbage', email: 'Charles@Example.com' }] }],
        payment: { provider: 'manual' },
      });
      assert.equal(order.status, 'pending');
      assert.deepEqual(order.tickets, [], 'a pending order issues no ticket');
      assert.deepEqual(order.payment, { provider: 'manual', status: 'pending', checkoutUrl: null });
      assert.deepEqual(order.payments, []);
      assert.equal(order.completedAt, null);
      assert.equal(order.total, 3000);
      const expiresAt = Date.parse(order.expiresAt);
      assert.ok(expiresAt >= before + 5 * 60_000 && expiresAt <= Date.now() + 5 * 60_000, 'held for the event’s holdMinutes');

      const type = await expect(api, key, 200, 'GET', `/events/${eventId}/tickets/${ids.GA}`);
      assert.deepEqual([type.sold, type.held, type.available], [0, 2, 3]);
      assert.equal((await expect(api, key, 200, 'GET', `/events/${eventId}`)).ticketsHeld, 2);
      const analytics = await expect(api, key, 200, 'GET', `/events/${eventId}/analytics`);
      assert.deepEqual([analytics.ticketsHeld, analytics.ordersPending, analytics.byTicketType[0].ticketsHeld, analytics.ticketsSold], [2, 1, 2, 0]);
      assert.deepEqual(await messagesOf(api, order.id), [], 'nothing is reported while it is pending');
      assert.deepEqual(await expect(api, key, 200, 'GET', `/orders/${order.id}`), order);

      const confirmed = await expect(api, key, 200, 'POST', `/orders/${order.id}/confirm`, { reference: 'transfer 4711' });
      assert.equal(confirmed.status, 'completed');
      assert.equal(confirmed.expiresAt, null);
      assert.ok(confirmed.completedAt);
      assert.deepEqual(confirmed.payment, { provider: 'manual', status: 'paid', checkoutUrl: null });
      assert.deepEqual(
        confirmed.payments.map((p: Json) => [p.kind, p.provider, p.amount, p.currency, p.status, p.reference, p.ticketId]),
        [['charge', 'manual', 3000, 'EUR', 'succeeded', 'transfer 4711', null]],
      );
      assert.match(confirmed.payments[0].id, /^pmt_/);
      assert.deepEqual(confirmed.tickets.map((tk: Json) => tk.attendee), [{ name: 'Charles Babbage', email: 'charles@example.com' }, { name: 'Ada Lovelace', email: 'ada@example.com' }]);
      assert.deepEqual(await expect(api, key, 200, 'GET', `/orders/${order.id}`), confirmed);
      const after = await expect(api, key, 200, 'GET', `/events/${eventId}/tickets/${ids.GA}`);
      assert.deepEqual([after.sold, after.held, after.available], [2, 0, 3]);

      const messages = await messagesOf(api, order.id);
      assert.deepEqual(messages.map(([event]) => event), ['ticket.purchased', 'ticket.purchased', 'payment.completed']);
      const paid = messages[2]![1];
      assert.equal(paid.amount, 3000);
      assert.equal(paid.provider, 'manual');
      assert.equal(paid.status, 'completed');
      assert.equal(paid.tickets.length, 2);

      await problem(await api.fetch(`/v1/orders/${order.id}/confirm`, { method: 'POST', key, json: {} }), 409, 'order_not_pending');
      await problem(await api.fetch(`/v1/orders/${order.id}/cancel`, { method: 'POST', key }), 409, 'order_not_pending');
      await assertConsistent(api, eventId);
    });

    test('free orders and paid orders without payment complete at once, as before', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { Free: { quantity: 5, price: 0 }, Paid: { quantity: 5, price: 700 } });

      const rsvp = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.Free, quantity: 1 }], payment: { provider: 'stripe' } });
      assert.equal(rsvp.status, 'completed', 'a free order completes whatever payment says');
      assert.deepEqual(rsvp.payment, { provider: null, status: 'none', checkoutUrl: null });
      assert.deepEqual(rsvp.payments, []);
      assert.deepEqual((await messagesOf(api, rsvp.id)).map(([event]) => event), ['ticket.purchased', 'rsvp.submitted']);

      const external = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.Paid, quantity: 2 }] });
      assert.equal(external.status, 'completed');
      assert.equal(external.tickets.length, 2);
      assert.deepEqual(external.payment, { provider: 'external', status: 'paid', checkoutUrl: null });
      assert.deepEqual(external.payments.map((p: Json) => [p.kind, p.provider, p.amount, p.status]), [['charge', 'external', 1400, 'succeeded']]);
      assert.equal(external.refundedAmount, 0);
      const [, paid] = (await messagesOf(api, external.id)).at(-1)!;
      assert.deepEqual([paid.amount, paid.provider], [1400, 'external']);
      assert.deepEqual(await expect(api, key, 200, 'GET', `/orders/${external.id}`), external);
      await problem(await api.fetch(`/v1/orders/${external.id}/confirm`, { method: 'POST', key, json: {} }), 409, 'order_not_manual');
      await assertConsistent(api, eventId);
    });

    test('a provider the account has not set up is refused before anything is held', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5 } });
      const body = await problem(
        await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }], payment: { provider: 'stripe' } } }),
        422,
        'payment_provider_not_configured',
      );
      assert.equal(body.provider, 'stripe');
      const type = await expect(api, key, 200, 'GET', `/events/${eventId}/tickets/${ids.GA}`);
      assert.deepEqual([type.sold, type.held], [0, 0]);
      assert.equal((await expect(api, key, 200, 'GET', `/events/${eventId}/orders`)).data.length, 0);
      await problem(
        await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }], payment: { provider: 'paypal' } } }),
        400,
        'invalid_request',
      );
    });

    test('cancelling a pending order returns its places and reports order.cancelled; holds count against inventory', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 3 } });
      const held = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 2 }], payment: { provider: 'manual' } });
      const refused = await problem(await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.GA, quantity: 2 }] } }), 409, 'sold_out');
      assert.equal(refused.available, 1, 'held places are not available');
      await problem(await api.fetch(`/v1/events/${eventId}/tickets/${ids.GA}`, { method: 'PATCH', key, json: { quantity: 1 } }), 409, 'quantity_below_sold');

      const cancelled = await expect(api, key, 200, 'POST', `/orders/${held.id}/cancel`);
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(cancelled.expiresAt, null);
      assert.deepEqual(cancelled.payment, { provider: 'manual', status: 'none', checkoutUrl: null });
      assert.deepEqual((await messagesOf(api, held.id)).map(([event, data]) => [event, data.status]), [['order.cancelled', 'cancelled']]);
      const type = await expect(api, key, 200, 'GET', `/events/${eventId}/tickets/${ids.GA}`);
      assert.deepEqual([type.held, type.available], [0, 3]);
      await problem(await api.fetch(`/v1/orders/${held.id}/cancel`, { method: 'POST', key }), 409, 'order_not_pending');
      await problem(await api.fetch(`/v1/orders/${held.id}/confirm`, { method: 'POST', key, json: {} }), 409, 'order_not_pending');

      // Another account sees none of it.
      const other = await api.account();
      await problem(await api.fetch(`/v1/orders/${held.id}/cancel`, { method: 'POST', key: other.key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/orders/${held.id}/confirm`, { method: 'POST', key: other.key, json: {} }), 404, 'not_found');
      await problem(await api.fetch(`/v1/events/${eventId}/orders`, { key: other.key }), 404, 'not_found');
      await assertConsistent(api, eventId);
    });

    test("cancelling the event cancels its pending orders; confirmation needs no body", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5 } }, { capacity: 5 });
      const confirmedWithoutBody = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }], payment: { provider: 'manual' } });
      const res = await api.fetch(`/v1/orders/${confirmedWithoutBody.id}/confirm`, { method: 'POST', key });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal((await res.json()).status, 'completed');

      const pending = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 2 }], payment: { provider: 'manual' } });
      const cancelledEvent = await expect(api, key, 200, 'POST', `/events/${eventId}/cancel`);
      assert.deepEqual([cancelledEvent.ticketsSold, cancelledEvent.ticketsHeld], [0, 0]);
      const order = await expect(api, key, 200, 'GET', `/orders/${pending.id}`);
      assert.equal(order.status, 'cancelled');
      assert.deepEqual((await messagesOf(api, pending.id)).map(([event, data]) => [event, data.status]), [['order.cancelled', 'cancelled']]);
      await problem(await api.fetch(`/v1/orders/${pending.id}/confirm`, { method: 'POST', key, json: {} }), 409, 'order_not_pending');
      await assert.rejects(completeOrder(new TenantScope(api.database.db, accountId), pending.id, { provider: 'manual', reference: null, amount: pending.total }), { code: 'order_expired' });
      assert.equal(await expireOrder(api.database.db, { accountId, eventId, orderId: pending.id }, Date.now() + 86_400_000), 0);
      await assertConsistent(api, eventId);
    });

    test("the workers' sweep expires a pending order whose expiry job gave up, once, and later forgets the plan of ended orders", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 5 } }, { holdMinutes: 5 });
      const place = () => expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 2, attendees: [{ name: 'Grace Hopper', email: 'grace@example.com' }] }], payment: { provider: 'manual' } });
      const [stuck, cancelled] = [await place(), await place()];
      await expect(api, key, 200, 'POST', `/orders/${cancelled.id}/cancel`);
      // The expiry job ran out of attempts: the queue gave it up, the order is still pending and holds its places.
      await api.database.db.updateTable('jobs').set({ status: 'failed' }).where('kind', '=', 'order.expire').execute();
      const expiresAt = Date.parse(stuck.expiresAt);
      const plans = async () => (await api.database.db.selectFrom('orders').select(['id', 'plan']).orderBy('id').execute()).map((o) => [o.id, o.plan === null]);

      assert.equal(await sweepPendingOrders(api.database.db, expiresAt + OVERDUE_MARGIN_MS - 1000, quiet), 0, 'within the margin: left to its job');
      assert.equal((await expect(api, key, 200, 'GET', `/orders/${stuck.id}`)).status, 'pending');
      assert.equal(await sweepPendingOrders(api.database.db, expiresAt + OVERDUE_MARGIN_MS + 1000, quiet), 1);
      assert.equal((await expect(api, key, 200, 'GET', `/orders/${stuck.id}`)).status, 'expired');
      assert.equal(await sweepPendingOrders(api.database.db, expiresAt + OVERDUE_MARGIN_MS + 2000, quiet), 0, 'once');
      assert.deepEqual((await messagesOf(api, stuck.id)).map(([event]) => event), ['order.expired']);
      await assertConsistent(api, eventId);
      assert.deepEqual(await plans(), [[stuck.id, false], [cancelled.id, false]].sort(), 'kept while a late payment may still be honoured');

      // A day later no payment can come for them any more: the attendees' names and e-mails go.
      await sweepPendingOrders(api.database.db, Date.now() + PLAN_KEPT_MS + 1000, quiet);
      assert.deepEqual(await plans(), [[stuck.id, true], [cancelled.id, true]].sort());
    });

    test('holdMinutes is set on create and PATCH, 1 to 1440', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const base = { name: 'E', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' };
      const event = await expect(api, key, 201, 'POST', '/events', base);
      assert.deepEqual([event.holdMinutes, event.ticketsHeld], [15, 0]);
      assert.equal((await expect(api, key, 200, 'PATCH', `/events/${event.id}`, { holdMinutes: 30 })).holdMinutes, 30);
      for (const holdMinutes of [0, 1441, 2.5]) {
        const body = await problem(await api.fetch('/v1/events', { method: 'POST', key, json: { ...base, holdMinutes } }), 400, 'invalid_request');
        assert.equal(body.errors[0].path, '/holdMinutes');
      }
    });

    test('the expiry job returns the places within 2 s of expiresAt, with workers running; a late payment is honoured while places are free', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), {}, { workers: true });
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 2 } });
      const db = api.database.db;
      const order = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 2 }], payment: { provider: 'manual' } });
      // The hold ends in 300 ms instead of the event's 15 minutes: the order's expiresAt and its job's runAt, as a shorter hold would have set them.
      const expiresAt = Date.now() + 300;
      await db.updateTable('orders').set({ expiresAt }).where('id', '=', order.id).execute();
      await db.updateTable('jobs').set({ runAt: expiresAt }).where('kind', '=', 'order.expire').where('status', '=', 'queued').execute();
      const expired = await until(async () => {
        const read = await expect(api, key, 200, 'GET', `/orders/${order.id}`);
        return read.status === 'expired' ? read : null;
      }, 5000, 'the order to expire');
      const late = Date.now() - expiresAt;
      assert.ok(late < 2000, `expired ${late} ms after expiresAt`);
      assert.equal(expired.expiresAt, null);
      const type = await expect(api, key, 200, 'GET', `/events/${eventId}/tickets/${ids.GA}`);
      assert.deepEqual([type.held, type.available], [0, 2]);
      assert.deepEqual((await messagesOf(api, order.id)).map(([event, data]) => [event, data.status]), [['order.expired', 'expired']]);
      await assertConsistent(api, eventId);

      // The transfer arrived after all and the places are still free: the order completes.
      const honoured = await expect(api, key, 200, 'POST', `/orders/${order.id}/confirm`, {});
      assert.equal(honoured.status, 'completed');
      assert.equal(honoured.tickets.length, 2);
      await assertConsistent(api, eventId);

      // An expired order whose places were sold since cannot complete: the caller gives the money back.
      const second = await expect(api, key, 201, 'POST', `/events/${eventId}/tickets`, { name: 'Late', price: 500, quantity: 1 });
      const pending = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: second.id, quantity: 1 }], payment: { provider: 'manual' } });
      assert.equal(await expireOrder(db, { accountId: (await db.selectFrom('orders').select('accountId').where('id', '=', pending.id).executeTakeFirstOrThrow()).accountId, eventId, orderId: pending.id }, Date.now() + 86_400_000), 0);
      await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: second.id, quantity: 1 }] });
      const body = await problem(await api.fetch(`/v1/orders/${pending.id}/confirm`, { method: 'POST', key, json: {} }), 409, 'order_expired');
      assert.equal(body.orderStatus, 'expired');
      assert.equal((await expect(api, key, 200, 'GET', `/orders/${pending.id}`)).status, 'expired');
      await assertConsistent(api, eventId);
    });

    test('with two worker processes and no worker in the API, every hold ends within 2 s of its expiresAt', async (t) => {
      const storage = await freshStorage(t, engine);
      const api = await startApp(t, storage);
      await Promise.all([workerProcess(t, storage.env), workerProcess(t, storage.env)]);
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 100 } });
      const db = api.database.db;
      const orders = await Promise.all(
        Array.from({ length: 20 }, () => expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 2 }], payment: { provider: 'manual' } })),
      );
      // Holds that end over the next second, as short holds would have set them.
      const start = Date.now() + 500;
      for (const [i, order] of orders.entries()) {
        const expiresAt = start + i * 50;
        await db.updateTable('orders').set({ expiresAt }).where('id', '=', order.id).execute();
        await db.updateTable('jobs').set({ runAt: expiresAt }).where('kind', '=', 'order.expire').where('payload', 'like', `%${order.id}%`).execute();
      }
      const orderIds = orders.map((o) => o.id);
      const ended = await until(async () => {
        const rows = await db.selectFrom('orders').select(['status', 'expiresAt', 'updatedAt']).where('id', 'in', orderIds).execute();
        return rows.every((r) => r.status === 'expired') ? rows : null;
      }, 10_000, 'every hold to end');
      const late = ended!.map((r) => r.updatedAt! - r.expiresAt!);
      assert.ok(Math.min(...late) >= 0, 'none before its time');
      assert.ok(Math.max(...late) < 2000, `ended ${Math.min(...late)} to ${Math.max(...late)} ms after expiresAt`);
      const { event } = await assertConsistent(api, eventId);
      assert.equal(event.held, 0);
      assert.equal((await db.selectFrom('webhookMessages').select('id').where('eventType', '=', 'order.expired').execute()).length, 20, 'one order.expired each');
    });

    test('completeOrder: idempotent, the amount must be the total, an early expiry job waits', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 4, price: 1200 } });
      const order = await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }], payment: { provider: 'manual' } });
      const scope = new TenantScope(api.database.db, accountId);

      // Not yet due: the job is told how long to wait, and nothing changes.
      const wait = await expireOrder(api.database.db, { accountId, eventId, orderId: order.id });
      assert.ok(wait > 14 * 60_000 && wait <= 15 * 60_000, `waits ${wait} ms`);

      await assert.rejects(completeOrder(scope, order.id, { provider: 'manual', reference: 'r1', amount: 1000 }), { code: 'payment_amount_mismatch' });
      assert.equal((await expect(api, key, 200, 'GET', `/orders/${order.id}`)).status, 'pending');
      const first = await completeOrder(scope, order.id, { provider: 'manual', reference: 'r1', amount: 1200 });
      const again = await completeOrder(scope, order.id, { provider: 'manual', reference: 'r1', amount: 1200 });
      assert.deepEqual(again, first);
      assert.deepEqual((await messagesOf(api, order.id)).map(([event]) => event), ['ticket.purchased', 'payment.completed'], 'one report, not two');
      await assert.rejects(completeOrder(new TenantScope(api.database.db, (await api.account()).accountId), order.id, { provider: 'manual', reference: null, amount: 1200 }), { code: 'not_found' });
      assert.equal(await expireOrder(api.database.db, { accountId, eventId, orderId: order.id }, Date.now() + 86_400_000), 0, 'a completed order does not expire');
      await assertConsistent(api, eventId);
    });

    test("an event's orders list pages, newest first, filtered by state", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const { eventId, ids } = await onSale(api, key, { GA: { quantity: 20 } });
      const placed: Json[] = [];
      for (let i = 0; i < 5; i++) {
        placed.push(await expect(api, key, 201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: ids.GA, quantity: 1 }], ...(i % 2 === 0 ? { payment: { provider: 'manual' } } : {}) }));
      }
      const first = await expect(api, key, 200, 'GET', `/events/${eventId}/orders?limit=2`);
      assert.equal(first.hasMore, true);
      const second = await expect(api, key, 200, 'GET', `/events/${eventId}/orders?limit=10&cursor=${first.nextCursor}`);
      assert.deepEqual([...first.data, ...second.data].map((o: Json) => o.id), placed.map((o) => o.id).reverse());
      assert.deepEqual(second.data.at(-1), placed[0]);
      const pending = await expect(api, key, 200, 'GET', `/events/${eventId}/orders?status=pending`);
      assert.deepEqual(pending.data.map((o: Json) => o.id), [placed[4].id, placed[2].id, placed[0].id]);
      const completed = await expect(api, key, 200, 'GET', `/events/${eventId}/orders?status=completed`);
      assert.deepEqual(completed.data.map((o: Json) => o.tickets.length), [1, 1]);
      await problem(await api.fetch(`/v1/events/${eventId}/orders?status=completed&cursor=${first.nextCursor}`, { key }), 400, 'invalid_request');
    });

    test('300 concurrent orders, holds, confirmations, cancellations and expiries never take more than there is', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const { eventId, ids } = await onSale(api, key, { A: { quantity: 30 }, B: { quantity: 30 } }, { capacity: 50 });
      const db = api.database.db;
      const expireSoon = (orderId: string) => expireOrder(db, { accountId, eventId, orderId }, Date.now() + 86_400_000);

      const placeAll = (n: number, offset: number) =>
        Promise.all(
          Array.from({ length: n }, async (_, i) => {
            const k = i + offset;
            const items = k % 5 === 0 ? [{ ticketTypeId: ids.A, quantity: 1 }, { ticketTypeId: ids.B, quantity: 1 }] : [{ ticketTypeId: k % 2 ? ids.A : ids.B, quantity: 1 + (k % 3 === 0 ? 1 : 0) }];
            const res = await api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items, ...(k % 3 !== 1 ? { payment: { provider: 'manual' } } : {}) } });
            const body = await res.json();
            if (res.status === 409) {
              assert.equal(body.code, 'sold_out');
              return null;
            }
            assert.equal(res.status, 201, JSON.stringify(body));
            // Pending ones are, by turns, confirmed, cancelled, expired or left pending, racing the orders still coming.
            if (body.status === 'pending') {
              const fate = k % 4;
              if (fate === 0) {
                const confirmed = await api.fetch(`/v1/orders/${body.id}/confirm`, { method: 'POST', key, json: {} });
                assert.equal(confirmed.status, 200, await confirmed.text());
              } else if (fate === 1) {
                assert.equal((await api.fetch(`/v1/orders/${body.id}/cancel`, { method: 'POST', key })).status, 200);
              } else if (fate === 2) {
                assert.equal(await expireSoon(body.id), 0);
              }
            }
            return body;
          }),
        );

      const placed = (await Promise.all([placeAll(150, 0), placeAll(150, 150)])).flat().filter(Boolean);
      assert.ok(placed.length > 0);
      const { event } = await assertConsistent(api, eventId);
      // Cancellations and expiries that finished after the last order free places again: full or not, nothing is over.
      assert.ok(event.sold > 0 && event.sold + event.held <= 50);
      assert.ok(placed.length < 300, 'some orders were refused: the race was for scarce places');

      // Late confirmations of expired orders race fresh orders for whatever the expiries freed.
      const expired = await db.selectFrom('orders').select('id').where('eventId', '=', eventId).where('status', '=', 'expired').execute();
      const stillPending = await db.selectFrom('orders').select('id').where('eventId', '=', eventId).where('status', '=', 'pending').execute();
      const race = await Promise.all([
        ...expired.map((o) => api.fetch(`/v1/orders/${o.id}/confirm`, { method: 'POST', key, json: {} }).then((r) => r.status)),
        ...stillPending.map((o) => expireSoon(o.id).then(() => 0)),
        ...Array.from({ length: 40 }, () => api.fetch(`/v1/events/${eventId}/orders`, { method: 'POST', key, json: { buyer, items: [{ ticketTypeId: ids.A, quantity: 1 }] } }).then((r) => r.status)),
      ]);
      assert.deepEqual([...new Set(race)].filter((s) => ![0, 200, 201, 409].includes(s)), [], 'only completions, sales and conflicts');
      const final = await assertConsistent(api, eventId);
      assert.equal(final.event.held, 0, 'every hold ended');
      const states = await db.selectFrom('orders').select(['id', 'status']).where('eventId', '=', eventId).execute();
      assert.ok(states.every((o) => o.status !== 'pending'));

      // One message per change of state, never two: each order expired or cancelled once says so once.
      const ended = async (event: string) =>
        (await db.selectFrom('webhookMessages').select('payload').where('accountId', '=', accountId).where('eventType', '=', event).execute()).map((m) => JSON.parse(m.payload).data.id as string);
      const [expiredMessages, cancelledMessages] = [await ended('order.expired'), await ended('order.cancelled')];
      assert.equal(new Set(expiredMessages).size, expiredMessages.length, 'no order.expired twice for one order');
      assert.equal(new Set(cancelledMessages).size, cancelledMessages.length, 'no order.cancelled twice for one order');
      const statusOf = new Map(states.map((o) => [o.id, o.status]));
      const now = (status: string) => states.filter((o) => o.status === status).map((o) => o.id).sort();
      // Every order now cancelled was cancelled once (confirming a cancelled order here found its places gone or took them: then it is completed).
      assert.deepEqual(cancelledMessages.filter((id) => statusOf.get(id) === 'cancelled').sort(), now('cancelled'));
      assert.deepEqual(expiredMessages.filter((id) => statusOf.get(id) === 'expired').sort(), now('expired'));
      // A message of an order that is no longer in that state: it was completed after all (a late confirmation).
      for (const id of [...expiredMessages, ...cancelledMessages]) assert.ok(['expired', 'cancelled', 'completed'].includes(statusOf.get(id)!), `${id} is ${statusOf.get(id)}`);
      for (const id of expiredMessages.filter((id) => statusOf.get(id) !== 'expired')) assert.equal(statusOf.get(id), 'completed');
      for (const id of cancelledMessages.filter((id) => statusOf.get(id) !== 'cancelled')) assert.equal(statusOf.get(id), 'completed');
    });
  });
}

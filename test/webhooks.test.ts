import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { expireOrder } from '../src/events/orders.service.js';
import { expireOffer, offerPlaces } from '../src/events/waitlist.service.js';
import { enqueueMessages, WEBHOOK_EVENTS } from '../src/webhooks/outbox.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until } from './helpers.js';

interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { id: string; event: string; timestamp: string; data: any; jobId?: string };
}

/** A webhook receiver on loopback that answers with `answer()` and records what it got. */
async function receiver(t: TestContext, answer: (n: number) => number = () => 200, port = 0) {
  const got: Delivery[] = [];
  let calls = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      calls++;
      got.push({ headers: req.headers, body, json: JSON.parse(body) });
      res.writeHead(answer(calls), { 'content-type': 'text/plain' }).end(`thanks ${calls}`);
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const close = () => new Promise<void>((r) => server.close(() => r()));
  onCleanup(t, () => (server.listening ? close() : undefined));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, close, port: (server.address() as AddressInfo).port };
}

async function subscribe(api: TestApp, key: string, url: string, events: string[]) {
  const res = await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url, events } });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as { id: string; secret: string };
}

const FAST = { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms' };

/** Drives the API through every event-area operation once; returns the event names it caused. */
async function everyOperation(api: TestApp, key: string) {
  const post = async (path: string, json?: unknown) => {
    const res = await api.fetch(path, { method: 'POST', key, ...(json ? { json } : {}) });
    assert.ok(res.status < 300, `${path}: ${res.status} ${await res.clone().text()}`);
    return res.json();
  };
  const event = await post('/v1/events', { name: 'Show', startsAt: '2030-01-01T10:00:00Z', endsAt: '2030-01-01T12:00:00Z', timezone: 'UTC', currency: 'EUR' });
  const paid = await post(`/v1/events/${event.id}/tickets`, { name: 'Paid', price: 1500, quantity: 10 });
  const free = await post(`/v1/events/${event.id}/tickets`, { name: 'Free', price: 0, quantity: 10 });
  await post(`/v1/events/${event.id}/publish`);
  const order = await post(`/v1/events/${event.id}/orders`, { buyer: { name: 'B', email: 'b@example.com' }, items: [{ ticketTypeId: paid.id, quantity: 2 }] });
  await post(`/v1/events/${event.id}/orders`, { buyer: { name: 'R', email: 'r@example.com' }, items: [{ ticketTypeId: free.id, quantity: 1 }] });
  // Pending orders: one cancelled, one whose hold runs out (its expiry run with a clock a day ahead).
  const held = { buyer: { name: 'H', email: 'h@example.com' }, items: [{ ticketTypeId: paid.id, quantity: 1 }], payment: { provider: 'manual' } };
  await post(`/v1/orders/${(await post(`/v1/events/${event.id}/orders`, held)).id}/cancel`);
  const lapsing = await post(`/v1/events/${event.id}/orders`, held);
  const accountId = (await (await api.fetch('/v1/account', { key })).json()).id;
  assert.equal(await expireOrder(api.database.db, { accountId, eventId: event.id, orderId: lapsing.id }, Date.now() + 86_400_000), 0);
  await post(`/v1/tickets/${order.tickets[0].id}/transfer`, { attendee: { name: 'T', email: 't@example.com' } });
  await post(`/v1/events/${event.id}/checkin`, { ticketId: order.tickets[1].id });
  assert.equal((await api.fetch(`/v1/events/${event.id}/checkin/${order.tickets[1].id}`, { method: 'DELETE', key })).status, 200);
  await post(`/v1/tickets/${order.tickets[0].id}/cancel`);
  await post(`/v1/orders/${order.id}/changes`, { changeTypes: [{ ticketId: order.tickets[1].id, ticketTypeId: free.id }], refund: false });
  await post(`/v1/events/${event.id}/payouts`);
  // The waiting list: the free type sold out, a person waits, one more place is offered, the offer runs out unanswered.
  const patch = async (path: string, json: unknown) => assert.equal((await api.fetch(path, { method: 'PATCH', key, json })).status, 200);
  const { sold } = await (await api.fetch(`/v1/events/${event.id}/tickets/${free.id}`, { key })).json();
  await patch(`/v1/events/${event.id}/tickets/${free.id}`, { quantity: sold });
  const waiting = await post(`/v1/events/${event.id}/waitlist`, { ticketTypeId: free.id, name: 'W', email: 'w@example.com' });
  await patch(`/v1/events/${event.id}/tickets/${free.id}`, { quantity: sold + 1 });
  // Offered by the job the change queued, or by this run, whichever takes the event's lock first: once.
  await offerPlaces(api.database.db, { accountId, eventId: event.id });
  assert.equal(await expireOffer(api.database.db, { accountId, eventId: event.id, entryId: waiting.id }, Date.now() + 2 * 86_400_000), 0);
  await post(`/v1/events/${event.id}/cancel`);
  await enqueueMessages(api.database.db, (await (await api.fetch('/v1/account', { key })).json()).id, [
    { event: 'blend.started', jobId: 'job_01m80eg3tperaacsapew6ns732', data: { jobId: 'job_01m80eg3tperaacsapew6ns732', status: 'processing' } },
    { event: 'blend.completed', jobId: 'job_01m80eg3tperaacsapew6ns732', data: { resultUrl: 'http://127.0.0.1/r.jpg', processingTime: 812, qualityScore: 0.91 } },
    { event: 'blend.failed', jobId: 'job_01m80eg3tperaacsapew6ns733', data: { jobId: 'job_01m80eg3tperaacsapew6ns733', error: { code: 'alignment_failed', message: 'Image 2 could not be aligned.' } } },
    { event: 'blend.cancelled', jobId: 'job_01m80eg3tperaacsapew6ns734', data: { jobId: 'job_01m80eg3tperaacsapew6ns734', status: 'cancelled' } },
  ]);
  return event.id as string;
}

for (const engine of ENGINES) {
  describe(`webhooks (${engine})`, () => {
    test('subscriptions: create shows the secret once; validation; list, read, delete; scope and tenant isolation', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      const created = await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: 'https://hooks.example.com/a', events: ['ticket.purchased', 'blend.completed'], description: 'crm' } });
      assert.equal(created.status, 201);
      const sub = await created.json();
      assert.match(sub.id, /^wh_/);
      assert.match(sub.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.equal(created.headers.get('location'), `/v1/webhooks/${sub.id}`);
      assert.equal(sub.status, 'enabled');

      const read = await (await api.fetch(`/v1/webhooks/${sub.id}`, { key })).json();
      assert.equal(read.secret, undefined);
      const list = await (await api.fetch('/v1/webhooks', { key })).json();
      assert.deepEqual(list.data.map((s: { id: string }) => s.id), [sub.id]);
      assert.equal(list.data[0].secret, undefined);

      const bad: Array<[unknown, string]> = [
        [{ url: 'https://x.example/h', events: ['ticket.bought'] }, '/events/0'],
        [{ url: 'https://x.example/h', events: ['*', 'ticket.purchased'] }, '/events'],
        [{ url: 'ftp://x.example/h', events: ['*'] }, '/url'],
        [{ url: 'https://user:pw@x.example/h', events: ['*'] }, '/url'],
        [{ url: 'https://x.example:0/h', events: ['*'] }, '/url'],
        [{ url: 'http://127.0.0.1:9/h', events: ['*'] }, '/url'],
        [{ url: 'http://localhost./h', events: ['*'] }, '/url'],
        [{ url: `https://x.example/${'a'.repeat(2100)}`, events: ['*'] }, '/url'],
        [{ url: 'https://x.example/h', events: [] }, '/events'],
      ];
      for (const [json, path] of bad) {
        const body = await problem(await api.fetch('/v1/webhooks', { method: 'POST', key, json }), 400, 'invalid_request');
        assert.equal(body.errors[0].path, path, JSON.stringify(json).slice(0, 80));
      }

      const other = await api.account();
      await problem(await api.fetch(`/v1/webhooks/${sub.id}`, { key: other.key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key: other.key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/webhooks/${sub.id}`, { method: 'DELETE', key: other.key }), 404, 'not_found');
      const scanner = await api.key(accountId, 'business', { scopes: ['checkin'] });
      await problem(await api.fetch('/v1/webhooks', { key: scanner }), 403, 'insufficient_scope');

      assert.equal((await api.fetch(`/v1/webhooks/${sub.id}`, { method: 'DELETE', key })).status, 204);
      await problem(await api.fetch(`/v1/webhooks/${sub.id}`, { key }), 404, 'not_found');

      for (let i = 0; i < 20; i++) await subscribe(api, key, `https://hooks.example.com/${i}`, ['*']);
      await problem(await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: 'https://hooks.example.com/21', events: ['*'] } }), 409, 'too_many_subscriptions');
      assert.equal(created.headers.get('cache-control'), 'no-store', 'the secret is not cached');
    });

    test('each of the 20 events reaches its subscribers, signed, and no one else', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST, { workers: true });
      const { key } = await api.account();
      const all = await receiver(t);
      const perEvent = await receiver(t);
      const none = await receiver(t);
      const theirs = await receiver(t);
      const allSub = await subscribe(api, key, all.url, ['*']);
      const picky = await subscribe(api, key, perEvent.url, ['ticket.purchased', 'checkin.undone', 'blend.completed']);
      const other = await api.account();
      await subscribe(api, other.key, theirs.url, ['*']);
      const deleted = await subscribe(api, key, none.url, ['*']);
      assert.equal((await api.fetch(`/v1/webhooks/${deleted.id}`, { method: 'DELETE', key })).status, 204);

      const eventId = await everyOperation(api, key);
      const expected = [
        'event.created', 'event.published', 'ticket.purchased', 'ticket.purchased', 'payment.completed', 'ticket.purchased', 'rsvp.submitted',
        'order.cancelled', 'order.expired', 'ticket.transferred', 'checkin.completed', 'checkin.undone', 'ticket.cancelled', 'payment.refunded', 'order.changed', 'payout.processed',
        'waitlist.offered', 'waitlist.offer_expired',
        // An event's cancellation: its tickets cancelled, then each paid one's refund once the money moved.
        'event.cancelled', 'ticket.cancelled', 'ticket.cancelled', 'payment.refunded',
        'blend.started', 'blend.completed', 'blend.failed', 'blend.cancelled',
      ];
      await until(() => all.got.length >= expected.length, 10_000, 'every message delivered');
      const outbox = await api.database.db.selectFrom('webhookMessages').select(['id', 'eventType']).where('accountId', '=', (await (await api.fetch('/v1/account', { key })).json()).id).orderBy('id').execute();
      assert.deepEqual(outbox.map((m) => m.eventType), expected);
      assert.deepEqual(new Set(expected), new Set(WEBHOOK_EVENTS), 'all 21 event names occur');
      assert.deepEqual([...all.got.map((d) => d.json.id)].sort(), outbox.map((m) => m.id), 'each message once to the * subscriber');

      const verifier = new Webhook(allSub.secret);
      for (const d of all.got) {
        const verified = verifier.verify(d.body, d.headers as Record<string, string>) as Delivery['json'];
        assert.equal(verified.id, d.headers['webhook-id']);
        assert.match(d.json.timestamp, /Z$/);
        assert.equal(d.headers['content-type'], 'application/json');
      }
      assert.throws(() => new Webhook(picky.secret).verify(all.got[0]!.body, all.got[0]!.headers as Record<string, string>), 'another secret does not verify');

      const byEvent = (name: string) => all.got.filter((d) => d.json.event === name).map((d) => d.json);
      assert.equal(byEvent('event.created')[0]!.data.id, eventId);
      assert.equal(byEvent('payment.completed')[0]!.data.total, 3000);
      assert.deepEqual(Object.keys(byEvent('payment.refunded')[0]!.data).sort(), ['amount', 'currency', 'orderId', 'paymentId', 'provider', 'ticketId']);
      assert.equal(byEvent('order.changed')[0]!.data.tickets[1].ticketTypeId, byEvent('rsvp.submitted')[0]!.data.tickets[0].ticketTypeId, 'order.changed carries the order after the change');
      const completed = byEvent('blend.completed')[0]!;
      assert.equal(completed.jobId, 'job_01m80eg3tperaacsapew6ns732');
      assert.deepEqual(completed.data, { resultUrl: 'http://127.0.0.1/r.jpg', processingTime: 812, qualityScore: 0.91 });

      await until(() => perEvent.got.length >= 5, 5000, 'picky deliveries');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(perEvent.got.map((d) => d.json.event).sort(), ['blend.completed', 'checkin.undone', 'ticket.purchased', 'ticket.purchased', 'ticket.purchased']);
      new Webhook(picky.secret).verify(perEvent.got[0]!.body, perEvent.got[0]!.headers as Record<string, string>);
      assert.equal(none.got.length, 0, 'a deleted subscription gets nothing');
      assert.equal(theirs.got.length, 0, "another account's subscriber gets nothing");

      const deliveries = await (await api.fetch(`/v1/webhooks/${allSub.id}/deliveries?limit=100`, { key })).json();
      assert.equal(deliveries.data.length, expected.length);
      assert.ok(deliveries.data.every((a: { succeeded: boolean; statusCode: number; attempt: number }) => a.succeeded && a.statusCode === 200 && a.attempt === 1));
    });

    test("a blend job's own webhookUrl gets its events, signed with the account's secret", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST, { workers: true });
      const { key, accountId } = await api.account();
      const target = await receiver(t);
      const secretRes = await api.fetch('/v1/account/webhook-secret', { key });
      assert.equal(secretRes.status, 200);
      const { secret } = await secretRes.json();
      assert.match(secret, /^whsec_/);
      assert.equal((await (await api.fetch('/v1/account/webhook-secret', { key })).json()).secret, secret, 'stable');
      const jobId = 'job_01m80eg3tperaacsapew6ns732';
      await enqueueMessages(api.database.db, accountId, [
        { event: 'blend.started', jobId, webhookUrl: target.url, data: { jobId, status: 'processing' } },
        { event: 'blend.completed', jobId, webhookUrl: target.url, data: { resultUrl: 'http://127.0.0.1/r.jpg', processingTime: 640, qualityScore: 0.88 } },
      ]);
      await until(() => target.got.length === 2, 5000, 'both deliveries');
      const verifier = new Webhook(secret);
      for (const d of target.got) verifier.verify(d.body, d.headers as Record<string, string>);
      assert.deepEqual(target.got.map((d) => [d.json.event, d.json.jobId]).sort(), [['blend.completed', jobId], ['blend.started', jobId]]);
      const other = await api.account();
      assert.notEqual((await (await api.fetch('/v1/account/webhook-secret', { key: other.key })).json()).secret, secret);
    });

    test('500, 500, then 200: delivered on the third attempt with one webhook-id; every attempt readable', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), FAST, { workers: true });
      const { key, accountId } = await api.account();
      const flaky = await receiver(t, (n) => (n <= 2 ? 500 : 200));
      const sub = await subscribe(api, key, flaky.url, ['event.created']);
      await enqueueMessages(api.database.db, accountId, [{ event: 'event.created', data: { id: 'evt_x' } }]);
      await until(() => flaky.got.length === 3, 5000, 'three attempts');
      assert.equal(new Set(flaky.got.map((d) => d.headers['webhook-id'])).size, 1, 'the same webhook-id on every retry');
      await until(async () => (await (await api.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data.length === 3, 2000, 'attempts recorded');
      const all = (await (await api.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data;
      assert.deepEqual(all.map((a: { attempt: number; statusCode: number }) => [a.attempt, a.statusCode]), [[3, 200], [2, 500], [1, 500]]);
      assert.equal(all[2].responseSnippet, 'thanks 1');
    });

    test('a receiver that is down, then up, gets the message', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { ...FAST, MONTAGE_WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms,400ms,500ms' }, { workers: true });
      const { key, accountId } = await api.account();
      const first = await receiver(t);
      const sub = await subscribe(api, key, first.url, ['*']);
      await first.close();
      await enqueueMessages(api.database.db, accountId, [{ event: 'payout.processed', data: { id: 'pay_x' } }]);
      await until(async () => (await (await api.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data.length >= 1, 3000, 'a refused attempt');
      const refused = (await (await api.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data[0];
      assert.equal(refused.statusCode, null);
      assert.match(refused.error, /ECONNREFUSED/);
      const again = await receiver(t, () => 200, first.port);
      await until(() => again.got.length === 1, 5000, 'delivery after the receiver came back');
      assert.equal(again.got[0]!.json.event, 'payout.processed');
    });

    test('410 Gone disables the subscription at once; failing for the configured span disables it too', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { ...FAST, MONTAGE_WEBHOOK_RETRY_SCHEDULE: '30ms,30ms,30ms,30ms,30ms,30ms,30ms,30ms,30ms,30ms', MONTAGE_WEBHOOK_DISABLE_AFTER: '150ms' }, { workers: true });
      const { key, accountId } = await api.account();
      const gone = await receiver(t, () => 410);
      const broken = await receiver(t, () => 503);
      const goneSub = await subscribe(api, key, gone.url, ['*']);
      const brokenSub = await subscribe(api, key, broken.url, ['*']);
      await enqueueMessages(api.database.db, accountId, [{ event: 'event.created', data: {} }, { event: 'event.published', data: {} }]);
      await until(async () => (await (await api.fetch(`/v1/webhooks/${goneSub.id}`, { key })).json()).status === 'disabled', 3000, '410 disables');
      const read = await (await api.fetch(`/v1/webhooks/${goneSub.id}`, { key })).json();
      assert.equal(read.disabledReason, 'gone');
      await until(async () => (await (await api.fetch(`/v1/webhooks/${brokenSub.id}`, { key })).json()).status === 'disabled', 5000, 'failing span disables');
      assert.equal((await (await api.fetch(`/v1/webhooks/${brokenSub.id}`, { key })).json()).disabledReason, 'failing');
      await new Promise((r) => setTimeout(r, 200));
      const goneCount = gone.got.length;
      const brokenCount = broken.got.length;
      await enqueueMessages(api.database.db, accountId, [{ event: 'event.cancelled', data: {} }]);
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(gone.got.length, goneCount, 'a disabled subscription gets nothing more');
      assert.equal(broken.got.length, brokenCount);
      assert.ok(goneCount <= 2, 'no retry after 410');
    });

    test('with private networks disallowed, a delivery to loopback is refused and the receiver gets nothing', async (t) => {
      const storage = await freshStorage(t, engine);
      const open = await startApp(t, storage, FAST);
      const { key, accountId } = await open.account();
      const target = await receiver(t);
      // Subscribed while private networks were allowed; delivered by a worker that refuses them.
      const sub = await subscribe(open, key, target.url.replace('127.0.0.1', 'localhost'), ['*']);
      const strict = await startApp(t, storage, { MONTAGE_WEBHOOK_RETRY_SCHEDULE: '50ms' }, { workers: true });
      await enqueueMessages(strict.database.db, accountId, [{ event: 'event.created', data: {} }]);
      await until(async () => (await (await strict.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data.length === 2, 5000, 'two refused attempts');
      const attempts = (await (await strict.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data;
      assert.ok(attempts.every((a: { error: string }) => /^blocked_address/.test(a.error)), JSON.stringify(attempts));
      assert.equal(target.got.length, 0);
    });
  });
}

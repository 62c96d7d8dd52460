/**
 * What the event area refuses to lose or store wrongly (docs/events.md, "Deleting an event",
 * "Currencies", "Time zones", "Publishing"; docs/api.md, "Names"): an event with orders a payment
 * could still complete is not deleted, not even by a delete racing new orders; currencies are ISO
 * 4217 codes in use; names have a visible character; time zones are stored as given, their case as
 * the time-zone database spells it; an event that has ended is not published. Over real HTTP, on every engine of the run.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expireOrder } from '../src/events/orders.service.js';
import { AccountClient as Client, ENGINES, problem, sharedServer, type TestApp } from './helpers.js';

type Json = any;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

let sequence = 0;
const eventInput = (overrides: Record<string, unknown> = {}) => {
  const startsAt = Date.now() + 30 * DAY;
  return { name: `Event ${++sequence}`, startsAt: iso(startsAt), endsAt: iso(startsAt + 3 * HOUR), timezone: 'Europe/Berlin', currency: 'EUR', ...overrides };
};

/** A published event with one ticket type of price 1000. */
async function onSale(c: Client, overrides: Record<string, unknown> = {}): Promise<{ eventId: string; typeId: string }> {
  const event = await c.expect(201, 'POST', '/events', eventInput(overrides));
  const type = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'General', price: 1000, quantity: 100 });
  await c.expect(200, 'POST', `/events/${event.id}/publish`);
  return { eventId: event.id, typeId: type.id };
}

const buyer = { name: 'Ada Lovelace', email: 'ada@example.com' };
const manualOrder = (typeId: string, quantity = 1) => ({ buyer, items: [{ ticketTypeId: typeId, quantity }], payment: { provider: 'manual' } });

/** The 400 names `path` among its errors, with `message` if given. */
async function invalidAt(response: Awaited<ReturnType<Client['send']>>, path: string, message?: string): Promise<void> {
  const body = await problem(response, 400, 'invalid_request');
  const at = body.errors.filter((e: { path: string }) => e.path === path);
  assert.ok(at.length > 0, `expected an error at ${path}, got ${JSON.stringify(body.errors)}`);
  if (message !== undefined) assert.ok(at.some((e: { message: string }) => e.message === message), `expected "${message}" at ${path}, got ${JSON.stringify(at)}`);
}

const ordersOfEvent = (api: TestApp, eventId: string) => api.database.db.selectFrom('orders').select(['id', 'status']).where('eventId', '=', eventId).execute();

for (const engine of ENGINES) {
  describe(`event integrity (${engine})`, () => {
    const server = sharedServer(engine);
    const client = () => Client.create(server());

    describe('DELETE /events/:id and open orders', () => {
      test('a pending order blocks the delete (409 event_has_orders); the order stays and is confirmed after; then the tickets block it', async () => {
        const c = await client();
        const { eventId, typeId } = await onSale(c);
        const order = await c.expect(201, 'POST', `/events/${eventId}/orders`, manualOrder(typeId, 2));
        assert.equal(order.status, 'pending');

        const refused = await problem(await c.delete(`/events/${eventId}`), 409, 'event_has_orders');
        assert.equal(refused.pendingOrders, 1);
        assert.equal(refused.expiredOrders, 0);
        assert.match(refused.detail, /POST \/v1\/orders\/:id\/cancel/, 'a pending order can be cancelled on its own');
        assert.match(refused.detail, new RegExp(`POST /v1/events/${eventId}/cancel`));

        const still = await c.expect(200, 'GET', `/orders/${order.id}`);
        assert.equal(still.status, 'pending');
        const event = await c.expect(200, 'GET', `/events/${eventId}`);
        assert.equal(event.ticketsHeld, 2, 'its places are still held');

        const confirmed = await c.expect(200, 'POST', `/orders/${order.id}/confirm`, {});
        assert.equal(confirmed.status, 'completed');
        assert.equal(confirmed.tickets.length, 2);
        await problem(await c.delete(`/events/${eventId}`), 409, 'event_has_tickets');
      });

      test('once its only pending order is cancelled the event can be deleted, and the order goes with it', async () => {
        const c = await client();
        const { eventId, typeId } = await onSale(c);
        const order = await c.expect(201, 'POST', `/events/${eventId}/orders`, manualOrder(typeId));
        await problem(await c.delete(`/events/${eventId}`), 409, 'event_has_orders');
        await c.expect(200, 'POST', `/orders/${order.id}/cancel`);
        assert.equal((await c.delete(`/events/${eventId}`)).status, 204);
        await problem(await c.get(`/events/${eventId}`), 404, 'not_found');
        await problem(await c.get(`/orders/${order.id}`), 404, 'not_found');
      });

      test('an expired order blocks the delete while a confirmation could still complete it; cancelling the event ends that, then the delete works', async () => {
        const c = await client();
        const api = server();
        const { eventId, typeId } = await onSale(c);
        const first = await c.expect(201, 'POST', `/events/${eventId}/orders`, manualOrder(typeId));
        const second = await c.expect(201, 'POST', `/events/${eventId}/orders`, manualOrder(typeId));
        for (const order of [first, second]) {
          assert.equal(await expireOrder(api.database.db, { accountId: c.accountId, eventId, orderId: order.id }, Date.parse(order.expiresAt) + 1), 0);
          assert.equal((await c.expect(200, 'GET', `/orders/${order.id}`)).status, 'expired');
        }
        const refused = await problem(await c.delete(`/events/${eventId}`), 409, 'event_has_orders');
        assert.deepEqual([refused.pendingOrders, refused.expiredOrders], [0, 2]);
        assert.match(refused.detail, new RegExp(`cancel the event first \\(POST /v1/events/${eventId}/cancel\\)`));

        // Why it blocks: an expired manual order is still confirmed while its places are free.
        const late = await c.expect(200, 'POST', `/orders/${first.id}/confirm`, {});
        assert.equal(late.status, 'completed');
        await problem(await c.delete(`/events/${eventId}`), 409, 'event_has_tickets');

        // Without tickets: cancelling the event leaves nothing that could complete.
        const other = await onSale(c);
        const stale = await c.expect(201, 'POST', `/events/${other.eventId}/orders`, manualOrder(other.typeId));
        await expireOrder(api.database.db, { accountId: c.accountId, eventId: other.eventId, orderId: stale.id }, Date.parse(stale.expiresAt) + 1);
        await problem(await c.delete(`/events/${other.eventId}`), 409, 'event_has_orders');
        await c.expect(200, 'POST', `/events/${other.eventId}/cancel`);
        await problem(await c.post(`/orders/${stale.id}/confirm`, {}), 409, 'order_expired');
        assert.equal((await c.delete(`/events/${other.eventId}`)).status, 204);
        await problem(await c.get(`/orders/${stale.id}`), 404, 'not_found');
      });

      test('cancelling the event cancels its pending orders; then it can be deleted', async () => {
        const c = await client();
        const { eventId, typeId } = await onSale(c);
        const order = await c.expect(201, 'POST', `/events/${eventId}/orders`, manualOrder(typeId));
        await c.expect(200, 'POST', `/events/${eventId}/cancel`);
        assert.equal((await c.expect(200, 'GET', `/orders/${order.id}`)).status, 'cancelled');
        assert.equal((await c.delete(`/events/${eventId}`)).status, 204);
        assert.deepEqual(await ordersOfEvent(server(), eventId), []);
      });

      test('vouchers and waiting-list entries do not block the delete; they go with the event', async () => {
        const c = await client();
        const event = await c.expect(201, 'POST', '/events', eventInput());
        const type = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'Few', price: 1000, quantity: 1 });
        await c.expect(201, 'POST', `/events/${event.id}/vouchers`, { code: 'FRIENDS', ticketTypeId: type.id, maxUses: 1, reserve: true, discountType: 'percent', discountValue: 10 });
        await c.expect(200, 'POST', `/events/${event.id}/publish`);
        // The voucher keeps the only place, so the type is sold out to everyone else: they may wait.
        await c.expect(201, 'POST', `/events/${event.id}/waitlist`, { ticketTypeId: type.id, name: 'Grace Hopper', email: 'grace@example.com' });
        assert.equal((await c.delete(`/events/${event.id}`)).status, 204);
        const db = server().database.db;
        assert.deepEqual(await db.selectFrom('vouchers').select('id').where('eventId', '=', event.id).execute(), []);
        assert.deepEqual(await db.selectFrom('waitlistEntries').select('id').where('eventId', '=', event.id).execute(), []);
      });

      test('orders racing a delete: either the delete is refused and every order placed stays, or it goes through and no order was placed', async () => {
        const c = await client();
        const api = server();
        const outcomes = { deleted: 0, refused: 0 };
        for (let round = 0; round < 8; round++) {
          const { eventId, typeId } = await onSale(c);
          const orders = Array.from({ length: 4 }, () => c.post(`/events/${eventId}/orders`, manualOrder(typeId)));
          // The delete starts in the middle of the orders, sometimes before all of them reach the server.
          const deleted = c.delete(`/events/${eventId}`);
          const more = Array.from({ length: 2 }, () => c.post(`/events/${eventId}/orders`, manualOrder(typeId)));
          const [del, ...answers] = await Promise.all([deleted, ...orders, ...more]);
          const placed: string[] = [];
          for (const res of answers) {
            if (res.status === 201) placed.push((await res.json()).id);
            else await problem(res, 404, 'not_found');
          }
          const stored = await ordersOfEvent(api, eventId);
          if (del.status === 204) {
            outcomes.deleted++;
            assert.deepEqual(placed, [], `round ${round}: no order was placed for an event that was deleted`);
            assert.deepEqual(stored, []);
            await problem(await c.get(`/events/${eventId}`), 404, 'not_found');
          } else {
            outcomes.refused++;
            const body = await problem(del, 409, 'event_has_orders');
            assert.ok(body.pendingOrders >= 1 && body.pendingOrders <= placed.length, `round ${round}: ${body.pendingOrders} of ${placed.length}`);
            assert.deepEqual(stored.map((o) => o.id).sort(), [...placed].sort(), `round ${round}: every order placed is stored`);
            assert.ok(stored.every((o) => o.status === 'pending'));
            const event = await c.expect(200, 'GET', `/events/${eventId}`);
            assert.equal(event.ticketsHeld, placed.length, `round ${round}: the event holds every placed order's place`);
          }
        }
        assert.equal(outcomes.deleted + outcomes.refused, 8);
      });
    });

    describe('currencies', () => {
      test('only ISO 4217 codes of currencies in use: QQQ, XXX, XAU and the withdrawn HRK are 400 at /currency; EUR, JPY, USD and VED are fine', async () => {
        const c = await client();
        const message = 'must be the ISO 4217 code of a currency in use, such as EUR, USD or JPY';
        for (const currency of ['QQQ', 'XXX', 'XAU', 'HRK', 'ZZZ']) await invalidAt(await c.post('/events', eventInput({ currency })), '/currency', message);
        assert.deepEqual((await c.expect(200, 'GET', '/events')).data, [], 'nothing was created');
        for (const currency of ['EUR', 'JPY', 'USD', 'VED', 'XOF']) assert.equal((await c.expect(201, 'POST', '/events', eventInput({ currency }))).currency, currency);

        const draft = await c.expect(201, 'POST', '/events', eventInput());
        await invalidAt(await c.patch(`/events/${draft.id}`, { currency: 'QQQ' }), '/currency', message);
        assert.equal((await c.expect(200, 'PATCH', `/events/${draft.id}`, { currency: 'JPY' })).currency, 'JPY');
        await invalidAt(await c.post(`/events/${draft.id}/tickets`, { name: 'General', price: 1000, quantity: 1, currency: 'QQQ' }), '/currency', message);
        assert.equal((await c.expect(200, 'GET', `/events/${draft.id}`)).currency, 'JPY');
      });
    });

    describe('names', () => {
      const VISIBLE = 'must contain a visible character';
      const blanks = ['   ', '\t\n', '\u00a0\u3000', '\u200b\u200d', '\ufeff'];

      test('events, venues and ticket types: a name without a visible character is 400 at its path; a name is kept as given', async () => {
        const c = await client();
        for (const name of blanks) await invalidAt(await c.post('/events', eventInput({ name })), '/name', VISIBLE);
        await invalidAt(await c.post('/events', eventInput({ venue: { name: '  ' } })), '/venue/name', VISIBLE);
        await invalidAt(await c.post('/events', eventInput({ name: '' })), '/name');
        assert.deepEqual((await c.expect(200, 'GET', '/events')).data, [], 'nothing was created');

        const event = await c.expect(201, 'POST', '/events', eventInput({ name: '  Launch night ', venue: { name: 'Hall 7' } }));
        assert.equal(event.name, '  Launch night ', 'kept as given, spaces included');
        assert.equal((await c.expect(201, 'POST', '/events', eventInput({ name: '漢字' }))).name, '漢字');
        for (const name of blanks) await invalidAt(await c.patch(`/events/${event.id}`, { name }), '/name', VISIBLE);
        await invalidAt(await c.patch(`/events/${event.id}`, { venue: { name: ' ' } }), '/venue/name', VISIBLE);
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).name, '  Launch night ');

        await invalidAt(await c.post(`/events/${event.id}/tickets`, { name: ' ', price: 0, quantity: 1 }), '/name', VISIBLE);
        const type = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'General', price: 0, quantity: 10 });
        await invalidAt(await c.patch(`/events/${event.id}/tickets/${type.id}`, { name: '\u200b' }), '/name', VISIBLE);
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}/tickets/${type.id}`)).name, 'General');
      });

      test('buyers, attendees, transfers, waiting lists, check-in lists and API keys: blank names are 400 at their path', async () => {
        const c = await client();
        const { eventId, typeId } = await onSale(c);
        const blank = { name: '   ', email: 'x@example.com' };
        await invalidAt(await c.post(`/events/${eventId}/orders`, { buyer: blank, items: [{ ticketTypeId: typeId, quantity: 1 }] }), '/buyer/name', VISIBLE);
        await invalidAt(await c.post(`/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: typeId, quantity: 1, attendees: [blank] }] }), '/items/0/attendees/0/name', VISIBLE);
        assert.equal((await c.expect(200, 'GET', `/events/${eventId}`)).ticketsSold, 0, 'nothing was sold');

        const order = await c.expect(201, 'POST', `/events/${eventId}/orders`, { buyer, items: [{ ticketTypeId: typeId, quantity: 1 }] });
        await invalidAt(await c.post(`/tickets/${order.tickets[0].id}/transfer`, { attendee: blank }), '/attendee/name', VISIBLE);
        assert.equal((await c.expect(200, 'GET', `/tickets/${order.tickets[0].id}`)).attendee.name, buyer.name);

        await invalidAt(await c.post(`/events/${eventId}/waitlist`, { ticketTypeId: typeId, name: '\u3000', email: 'grace@example.com' }), '/name', VISIBLE);
        await invalidAt(await c.post(`/events/${eventId}/checkin-lists`, { name: ' ' }), '/name', VISIBLE);
        await invalidAt(await c.post('/keys', { name: '  ' }), '/name', VISIBLE);
        // API keys alone trim their names (the key service does, for the command line too).
        assert.equal((await c.expect(201, 'POST', '/keys', { name: ' Door ' })).name, 'Door');
      });
    });

    describe('time zones', () => {
      test('stored as given, in the database\'s spelling where they differ in case alone, on create and on update; unknown ones stay 400', async () => {
        const c = await client();
        const cases: Array<[string, string]> = [
          ['utc', 'UTC'],
          ['Europe/berlin', 'Europe/Berlin'],
          ['europe/berlin', 'Europe/Berlin'],
          ['AMERICA/NEW_YORK', 'America/New_York'],
          // a name the database files under another is kept as written (ICU files Kyiv under Kiev)
          ['US/Pacific', 'US/Pacific'],
          ['Europe/Kyiv', 'Europe/Kyiv'],
          ['Asia/Kolkata', 'Asia/Kolkata'],
          ['Etc/UTC', 'Etc/UTC'],
          ['Europe/Berlin', 'Europe/Berlin'],
        ];
        for (const [given, stored] of cases) {
          const event = await c.expect(201, 'POST', '/events', eventInput({ timezone: given }));
          assert.equal(event.timezone, stored, given);
          assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).timezone, stored);
        }
        const event = await c.expect(201, 'POST', '/events', eventInput());
        assert.equal((await c.expect(200, 'PATCH', `/events/${event.id}`, { timezone: 'asia/tokyo' })).timezone, 'Asia/Tokyo');
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).timezone, 'Asia/Tokyo');
        for (const timezone of ['Mars/Olympus', ' UTC', '+01:00', 'local']) {
          await invalidAt(await c.post('/events', eventInput({ timezone })), '/timezone', 'must be an IANA time zone such as Europe/Berlin');
          await invalidAt(await c.patch(`/events/${event.id}`, { timezone }), '/timezone');
        }
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).timezone, 'Asia/Tokyo');
      });
    });

    describe('publishing', () => {
      test('an event that has ended is not published (409 event_ended) and stays a draft; moved later it is; an ended published event publishes as a no-op', async () => {
        const c = await client();
        const past = Date.now() - 2 * DAY;
        const event = await c.expect(201, 'POST', '/events', eventInput({ startsAt: iso(past), endsAt: iso(past + 3 * HOUR) }));
        await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'General', price: 1000, quantity: 10 });
        const refused = await problem(await c.post(`/events/${event.id}/publish`), 409, 'event_ended');
        assert.equal(refused.endsAt, iso(past + 3 * HOUR));
        const still = await c.expect(200, 'GET', `/events/${event.id}`);
        assert.deepEqual([still.status, still.publishedAt], ['draft', null]);

        // Still running (started, not ended): published.
        await c.expect(200, 'PATCH', `/events/${event.id}`, { endsAt: iso(Date.now() + HOUR) });
        const published = await c.expect(200, 'POST', `/events/${event.id}/publish`);
        assert.equal(published.status, 'published');

        // It ends (moved into the past): publishing again changes nothing, as for any published event.
        await c.expect(200, 'PATCH', `/events/${event.id}`, { endsAt: iso(past + 3 * HOUR) });
        const again = await c.expect(200, 'POST', `/events/${event.id}/publish`);
        assert.deepEqual([again.status, again.publishedAt], ['published', published.publishedAt]);
      });
    });
  });
}

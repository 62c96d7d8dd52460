/**
 * What the event area refuses to lose or store wrongly (docs/events.md, "Deleting an event",
 * "Currencies", "Time zones", "Publishing"; docs/api.md, "Names"): an event with orders a payment
 * could still complete is not deleted, not even by a delete racing new orders; currencies are ISO
 * 4217 codes in use; names have a visible character; time zones are stored by their canonical
 * IANA name; an event that has ended is not published. Over real HTTP, on every engine of the run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Engine } from '../src/db/database.js';
import { AccountClient as Client, ENGINES, freshStorage, problem, startApp, type TestApp } from './helpers.js';

type Json = any;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

/** One server for the enclosing describe block, stopped (and its storage dropped) after it. */
function sharedServer(engine: Engine): () => TestApp {
  let api: TestApp | undefined;
  const cleanups: Array<() => unknown> = [];
  const context = { after: (fn: () => unknown) => void cleanups.push(fn) } as unknown as TestContext;
  before(async () => {
    api = await startApp(context, await freshStorage(context, engine));
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => api!;
}

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
      test('stored by their canonical IANA name, on create and on update; unknown ones stay 400', async () => {
        const c = await client();
        const cases: Array<[string, string]> = [
          ['utc', 'UTC'],
          ['Europe/berlin', 'Europe/Berlin'],
          ['europe/berlin', 'Europe/Berlin'],
          ['AMERICA/NEW_YORK', 'America/New_York'],
          ['US/Pacific', 'America/Los_Angeles'],
          ['Etc/UTC', 'UTC'],
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
  });
}

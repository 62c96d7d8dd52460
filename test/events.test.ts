/**
 * The event area end to end (docs/events.md; docs/api.md on IDs, errors, paging and idempotency): events, ticket types, orders,
 * tickets, check-in, attendees and their export, analytics, payouts, the webhook outbox,
 * tenant isolation and wrong-shaped ids, on every engine of the run.
 *
 * One server per engine serves the whole file (starting one costs about half a second); every
 * test makes its own account, so tests neither see nor disturb each other's data.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse as parseCsvWith } from 'csv-parse/sync';
import { AccountClient as Client, type ApiResponse, ENGINES, problem, sharedServer } from './helpers.js';

// API bodies are read as loosely typed JSON; the assertions are what type them.
type Json = any;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const iso = (ms: number) => new Date(ms).toISOString();
const floorTo = (ms: number, size: number) => Math.floor(ms / size) * size;
const omit = (value: Record<string, unknown>, keys: string[]) => Object.fromEntries(Object.entries(value).filter(([k]) => !keys.includes(k)));
const sum = (items: Json[], key: string) => items.reduce((total: number, item: Json) => total + item[key], 0);

// ---------------------------------------------------------------------------------------------
// Domain helpers
// ---------------------------------------------------------------------------------------------

let sequence = 0;

/** A valid create-event body: a three-hour event a month from now, overridable field by field. */
function eventInput(overrides: Record<string, unknown> = {}) {
  const startsAt = Date.now() + 30 * DAY;
  return { name: `Event ${++sequence}`, startsAt: iso(startsAt), endsAt: iso(startsAt + 3 * HOUR), timezone: 'Europe/Berlin', currency: 'EUR', ...overrides };
}

const createEvent = (c: Client, overrides: Record<string, unknown> = {}) => c.expect(201, 'POST', '/events', eventInput(overrides));

const addTicketType = (c: Client, eventId: string, overrides: Record<string, unknown> = {}) =>
  c.expect(201, 'POST', `/events/${eventId}/tickets`, { name: 'General', price: 2500, quantity: 100, ...overrides });

/** Creates an event with the given ticket types (one default type unless told) and publishes it. */
async function publishedEvent(c: Client, options: { event?: Record<string, unknown>; types?: Array<Record<string, unknown>> } = {}) {
  const draft = await createEvent(c, options.event);
  const types: Json[] = [];
  for (const type of options.types ?? [{}]) types.push(await addTicketType(c, draft.id, type));
  const event = await c.expect(200, 'POST', `/events/${draft.id}/publish`);
  return { event, types };
}

const person = (name: string) => ({ name, email: `${name.toLowerCase().replace(/[^a-z]+/g, '.')}@example.com` });

interface Item {
  ticketTypeId: string;
  quantity?: number;
  attendees?: Array<{ name: string; email: string }>;
}

const orderBody = (items: Item[], buyer = person('Ada Lovelace')) => ({ buyer, items: items.map((item) => ({ quantity: 1, ...item })) });

/** Places an order that must succeed (201) and returns it. */
const buy = (c: Client, eventId: string, items: Item[], buyer = person('Ada Lovelace')) => c.expect(201, 'POST', `/events/${eventId}/orders`, orderBody(items, buyer));

const listTypes = async (c: Client, eventId: string): Promise<Json[]> => (await c.expect(200, 'GET', `/events/${eventId}/tickets`)).data;

async function typeOf(c: Client, eventId: string, typeId: string): Promise<Json> {
  const type = (await listTypes(c, eventId)).find((t) => t.id === typeId);
  assert.ok(type, `ticket type ${typeId} listed`);
  return type;
}

const checkIn = (c: Client, eventId: string, body: Record<string, unknown>) => c.expect(201, 'POST', `/events/${eventId}/checkin`, body);

const ticketCount = async (c: Client) =>
  Number((await c.api.database.db.selectFrom('tickets').select((eb) => eb.fn.countAll().as('n')).where('accountId', '=', c.accountId).executeTakeFirstOrThrow()).n);

/** Every event-area route that takes an id in its path, with `id` in the place of one of them and valid bodies. */
function routesWithId(id: string, eventId: string, typeId: string, ticketId: string): Array<[string, string, unknown?]> {
  return [
    ['GET', `/events/${id}`],
    ['PATCH', `/events/${id}`, { name: 'X' }],
    ['DELETE', `/events/${id}`],
    ['POST', `/events/${id}/publish`],
    ['POST', `/events/${id}/cancel`],
    ['GET', `/events/${id}/tickets`],
    ['POST', `/events/${id}/tickets`, { name: 'X', price: 0, quantity: 1 }],
    ['PATCH', `/events/${id}/tickets/${typeId}`, { name: 'X' }],
    ['PATCH', `/events/${eventId}/tickets/${id}`, { name: 'X' }],
    ['POST', `/events/${id}/orders`, orderBody([{ ticketTypeId: typeId }])],
    ['GET', `/orders/${id}`],
    ['GET', `/tickets/${id}`],
    ['POST', `/tickets/${id}/cancel`],
    ['POST', `/tickets/${id}/transfer`, { attendee: person('Bob Stone') }],
    ['GET', `/events/${id}/attendees`],
    ['GET', `/events/${id}/attendees/export`],
    ['POST', `/events/${id}/checkin`, { ticketId }],
    ['DELETE', `/events/${id}/checkin/${ticketId}`],
    ['DELETE', `/events/${eventId}/checkin/${id}`],
    ['GET', `/events/${id}/analytics`],
    ['GET', `/events/${id}/analytics/sales`],
    ['GET', `/events/${id}/analytics/checkins`],
    ['POST', `/events/${id}/payouts`],
    ['GET', `/events/${id}/payouts`],
  ];
}

// ---------------------------------------------------------------------------------------------
// Outbox
// ---------------------------------------------------------------------------------------------

interface Message {
  id: string;
  event: string;
  timestamp: string;
  data: Json;
}

/** The account's webhook messages in the order they were written; each one's envelope is checked. */
async function messages(c: Client): Promise<Message[]> {
  const rows = await c.api.database.db.selectFrom('webhookMessages').selectAll().where('accountId', '=', c.accountId).orderBy('id').execute();
  return rows.map((row) => {
    const body = JSON.parse(row.payload) as Message;
    assert.deepEqual(Object.keys(body).sort(), ['data', 'event', 'id', 'timestamp'], row.payload);
    assert.match(row.id, /^msg_[0-9a-z]{26}$/);
    assert.equal(body.id, row.id, 'the payload id is the row id');
    assert.equal(body.event, row.eventType);
    assert.match(body.timestamp, ISO_UTC);
    return body;
  });
}

/** Remembers the outbox's length; the function returned gives the messages written since. */
async function watchOutbox(c: Client): Promise<() => Promise<Message[]>> {
  const seen = (await messages(c)).length;
  return async () => (await messages(c)).slice(seen);
}

const names = (list: Message[]) => list.map((m) => m.event);

/** `payment.completed` / `rsvp.submitted` carry the order as the API returned it, plus its amount and provider. */
function assertOrderData(message: Message | undefined, order: Json) {
  assert.ok(message);
  const { amount, provider, ...rest } = message.data;
  assert.deepEqual(rest, order);
  assert.equal(amount, order.total);
  assert.equal(provider, order.payment.provider);
}

// ---------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------

/** RFC 4180 records (quoted cells may hold commas, doubled quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      record.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      record.push(cell);
      records.push(record);
      record = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  assert.equal(cell + record.join(''), '', 'the CSV ends with a line break');
  return records;
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

for (const engine of ENGINES) {
  describe(`event area (${engine})`, () => {
    const server = sharedServer(engine);
    const client = () => Client.create(server());

    describe('events', () => {
      test('POST /events: 201, Location, a draft with defaults, times in UTC; GET reads it; event.created', async () => {
        const c = await client();
        const sent = await watchOutbox(c);
        const res = await c.post('/events', {
          name: 'Launch',
          startsAt: '2030-05-01T12:00:00+02:00',
          endsAt: '2030-05-01T14:30:00+02:00',
          timezone: 'Europe/Berlin',
          currency: 'EUR',
        });
        assert.equal(res.status, 201);
        const event = await res.json();
        assert.match(event.id, /^evt_[0-9a-z]{26}$/);
        assert.equal(res.headers.get('location'), `/v1/events/${event.id}`);
        assert.deepEqual(omit(event, ['id', 'createdAt', 'updatedAt']), {
          name: 'Launch',
          description: null,
          startsAt: '2030-05-01T10:00:00.000Z',
          endsAt: '2030-05-01T12:30:00.000Z',
          timezone: 'Europe/Berlin',
          venue: null,
          onlineUrl: null,
          capacity: null,
          currency: 'EUR',
          status: 'draft',
          metadata: {},
          ticketsSold: 0,
          ticketsHeld: 0,
          holdMinutes: 15,
          waitlistOfferMinutes: 1440,
          publishedAt: null,
          cancelledAt: null,
        });
        assert.match(event.createdAt, ISO_UTC);
        assert.equal(event.updatedAt, event.createdAt);
        assert.deepEqual(await c.expect(200, 'GET', `/events/${event.id}`), event);
        assert.deepEqual(await (await c.api.fetch(`/api/v1/events/${event.id}`, { key: c.key })).json(), event, 'the /api/v1 prefix reads the same');

        const full = eventInput({
          description: 'All day',
          venue: { name: 'Hall 1', address: 'Main St 1', city: 'Berlin', country: 'DE' },
          onlineUrl: 'https://example.com/live',
          capacity: 250,
          currency: 'USD',
          timezone: 'America/New_York',
          metadata: { crmId: '4711', 'source.v2': 'import' },
        });
        const second = await c.expect(201, 'POST', '/events', full);
        assert.deepEqual(omit(second, ['id', 'createdAt', 'updatedAt', 'status', 'ticketsSold', 'ticketsHeld', 'holdMinutes', 'waitlistOfferMinutes', 'publishedAt', 'cancelledAt']), full);

        const outbox = await sent();
        assert.deepEqual(names(outbox), ['event.created', 'event.created']);
        assert.deepEqual(outbox[0]!.data, event);
        assert.deepEqual(outbox[1]!.data, second);
      });

      test('POST /events: 400 for a bad window, time zone, currency, metadata or unknown property, and nothing is created', async () => {
        const c = await client();
        const start = Date.now() + DAY;
        const metadata = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${i}`, 'v']));
        const cases: Array<[string, Record<string, unknown>, string]> = [
          ['endsAt equal to startsAt', { startsAt: iso(start), endsAt: iso(start) }, '/endsAt'],
          ['endsAt before startsAt', { startsAt: iso(start), endsAt: iso(start - HOUR) }, '/endsAt'],
          ['unknown time zone', { timezone: 'Mars/Olympus' }, '/timezone'],
          ['unknown property', { colour: 'red' }, '/colour'],
          ['lower-case currency', { currency: 'eur' }, '/currency'],
          ['51 metadata keys', { metadata: metadata(51) }, '/metadata'],
          ['metadata value not a string', { metadata: { a: 1 } }, '/metadata/a'],
          ['missing name', { name: undefined }, '/name'],
          ['capacity 0', { capacity: 0 }, '/capacity'],
          ['onlineUrl not http(s)', { onlineUrl: 'ftp://example.com/x' }, '/onlineUrl'],
          ['startsAt without a time', { startsAt: '2030-01-01' }, '/startsAt'],
          ['venue with an unknown property', { venue: { name: 'Hall', floor: 2 } }, '/venue/floor'],
        ];
        for (const [what, overrides, path] of cases) {
          const body = await problem(await c.post('/events', eventInput(overrides)), 400, 'invalid_request');
          assert.ok(
            body.errors.some((e: { path: string }) => e.path === path),
            `${what}: expected an error at ${path}, got ${JSON.stringify(body.errors)}`,
          );
        }
        assert.deepEqual((await c.expect(200, 'GET', '/events')).data, [], 'no event was created');
        const fifty = await createEvent(c, { metadata: metadata(50) });
        assert.equal(Object.keys(fifty.metadata).length, 50, '50 metadata keys are fine');
      });

      test('GET /events filters by status, startsAfter, startsBefore and q (case-insensitive; % and _ literal)', async () => {
        const c = await client();
        const now = Date.now();
        const at = (days: number) => ({ startsAt: iso(now + days * DAY), endsAt: iso(now + days * DAY + HOUR) });
        const jazz = await createEvent(c, { name: 'Jazz Night', description: 'Smooth evening', ...at(10) });
        const rock = await createEvent(c, { name: 'Rock Gala', description: 'Loud JAZZ-rock', ...at(20) });
        await addTicketType(c, rock.id);
        await c.expect(200, 'POST', `/events/${rock.id}/publish`);
        const percent = await createEvent(c, { name: '100% Pure_Fun', ...at(30) });
        await c.expect(200, 'POST', `/events/${percent.id}/cancel`);
        const plain = await createEvent(c, { name: '100 Pure Fun', ...at(5) });

        const ids = async (query: Record<string, string>) => {
          const page = await c.expect(200, 'GET', `/events?${new URLSearchParams(query)}`);
          return page.data.map((e: { id: string }) => e.id);
        };
        assert.deepEqual(await ids({}), [plain.id, percent.id, rock.id, jazz.id], 'newest first');
        assert.deepEqual(await ids({ status: 'draft' }), [plain.id, jazz.id]);
        assert.deepEqual(await ids({ status: 'published' }), [rock.id]);
        assert.deepEqual(await ids({ status: 'cancelled' }), [percent.id]);
        assert.deepEqual(await ids({ startsAfter: iso(now + 15 * DAY) }), [percent.id, rock.id]);
        assert.deepEqual(await ids({ startsAfter: iso(now + 20 * DAY) }), [percent.id, rock.id], 'startsAfter includes its own instant');
        assert.deepEqual(await ids({ startsBefore: iso(now + 15 * DAY) }), [plain.id, jazz.id]);
        assert.deepEqual(await ids({ startsAfter: iso(now + 7 * DAY), startsBefore: iso(now + 25 * DAY) }), [rock.id, jazz.id]);
        assert.deepEqual(await ids({ q: 'jazz' }), [rock.id, jazz.id], 'name or description');
        assert.deepEqual(await ids({ q: 'JAZZ NIGHT' }), [jazz.id], 'case-insensitive');
        assert.deepEqual(await ids({ q: 'smooth' }), [jazz.id], 'description');
        assert.deepEqual(await ids({ q: '%' }), [percent.id], '% is literal');
        assert.deepEqual(await ids({ q: '0%' }), [percent.id], '% is literal');
        assert.deepEqual(await ids({ q: 'e_f' }), [percent.id], '_ is literal');
        assert.deepEqual(await ids({ q: '\\' }), [], 'a backslash matches nothing here');
        assert.deepEqual(await ids({ q: 'jazz', status: 'draft' }), [jazz.id]);
        assert.deepEqual(await ids({ q: 'opera' }), []);

        for (const query of ['status=open', 'startsAfter=tomorrow', 'startsBefore=2030-01-01', 'q=', 'colour=red']) {
          await problem(await c.get(`/events?${query}`), 400, 'invalid_request');
        }
      });

      test('GET /events pages with limit and cursor; a cursor only continues its own filters', async () => {
        const c = await client();
        const created: string[] = [];
        for (let i = 0; i < 5; i++) created.push((await createEvent(c)).id);

        const seen: string[] = [];
        let url = '/v1/events?limit=2';
        for (let pages = 1; ; pages++) {
          const res = await c.api.fetch(url, { key: c.key });
          assert.equal(res.status, 200);
          const page = await res.json();
          seen.push(...page.data.map((e: { id: string }) => e.id));
          if (!page.hasMore) {
            assert.equal(pages, 3);
            assert.equal(page.nextCursor, null);
            assert.equal(res.headers.get('link'), null);
            break;
          }
          assert.equal(page.data.length, 2);
          assert.equal(res.headers.get('link'), `</v1/events?limit=2&cursor=${page.nextCursor}>; rel="next"`);
          url = `/v1/events?limit=2&cursor=${page.nextCursor}`;
        }
        assert.deepEqual(seen, [...created].reverse(), 'every event once, newest first');

        for (const limit of ['0', '101', '1.5', 'x']) {
          const body = await problem(await c.get(`/events?limit=${limit}`), 400, 'invalid_request');
          assert.equal(body.errors[0].path, '/query/limit');
        }
        const drafts = await c.expect(200, 'GET', '/events?limit=2&status=draft');
        assert.ok(drafts.nextCursor);
        const next = await c.expect(200, 'GET', `/events?limit=3&status=draft&cursor=${drafts.nextCursor}`);
        assert.deepEqual(next.data.map((e: { id: string }) => e.id), [...created].reverse().slice(2), 'another limit may continue');
        for (const filters of ['status=published', '', 'status=draft&q=Event', `status=draft&startsAfter=${encodeURIComponent(iso(Date.now()))}`]) {
          const body = await problem(await c.get(`/events?limit=2&${filters}&cursor=${drafts.nextCursor}`), 400, 'invalid_request');
          assert.equal(body.errors[0].path, '/query/cursor', filters);
        }
        await problem(await c.get('/events?cursor=not-a-cursor'), 400, 'invalid_request');
      });

      test('PATCH /events/:id changes only what it is sent; 400 for a bad window, zone, body or unknown field', async () => {
        const c = await client();
        const event = await createEvent(c, { description: 'Old', venue: { name: 'Hall 1', city: 'Berlin' }, capacity: 100, metadata: { a: '1' } });
        const renamed = await c.expect(200, 'PATCH', `/events/${event.id}`, { name: 'New name' });
        assert.deepEqual(omit(renamed, ['updatedAt']), { ...omit(event, ['updatedAt']), name: 'New name' });
        assert.ok(renamed.updatedAt >= event.updatedAt);
        assert.deepEqual(await c.expect(200, 'GET', `/events/${event.id}`), renamed);

        const changes = { description: null, venue: null, onlineUrl: 'https://example.com/live', metadata: { b: '2' }, capacity: null, timezone: 'Asia/Tokyo' };
        const changed = await c.expect(200, 'PATCH', `/events/${event.id}`, changes);
        assert.deepEqual(omit(changed, ['updatedAt']), { ...omit(renamed, ['updatedAt']), ...changes });

        const later = Date.parse(event.endsAt) + DAY;
        const moved = await c.expect(200, 'PATCH', `/events/${event.id}`, { startsAt: iso(later), endsAt: iso(later + HOUR) });
        assert.deepEqual([moved.startsAt, moved.endsAt], [iso(later), iso(later + HOUR)]);

        const cases: Array<[Record<string, unknown>, string]> = [
          [{ endsAt: iso(later - HOUR) }, '/endsAt'],
          [{ endsAt: iso(later) }, '/endsAt'],
          [{ startsAt: iso(later + 2 * HOUR) }, '/endsAt'],
          [{ timezone: 'Mars/Olympus' }, '/timezone'],
          [{ status: 'published' }, '/status'],
          [{ currency: 'eur' }, '/currency'],
          [{ capacity: 0 }, '/capacity'],
        ];
        for (const [body, path] of cases) {
          const res = await problem(await c.patch(`/events/${event.id}`, body), 400, 'invalid_request');
          assert.ok(res.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(body)}: ${JSON.stringify(res.errors)}`);
        }
        await problem(await c.patch(`/events/${event.id}`, {}), 400, 'invalid_request');
        assert.deepEqual(await c.expect(200, 'GET', `/events/${event.id}`), moved, 'the refused patches changed nothing');
      });

      test('PATCH /events/:id: 409 for capacity below sold, currency once ticket types exist, and any change of a cancelled event', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { event: { capacity: 10 } });
        await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: 3 }]);
        await problem(await c.patch(`/events/${event.id}`, { capacity: 2 }), 409, 'capacity_below_sold');
        assert.equal((await c.expect(200, 'PATCH', `/events/${event.id}`, { capacity: 3 })).capacity, 3, 'capacity may equal sold');
        assert.equal((await c.expect(200, 'PATCH', `/events/${event.id}`, { capacity: null })).capacity, null);

        await problem(await c.patch(`/events/${event.id}`, { currency: 'USD' }), 409, 'event_has_tickets');
        assert.equal((await c.expect(200, 'PATCH', `/events/${event.id}`, { currency: 'EUR' })).currency, 'EUR', 'the same currency is fine');

        const draft = await createEvent(c);
        assert.equal((await c.expect(200, 'PATCH', `/events/${draft.id}`, { currency: 'USD' })).currency, 'USD', 'no ticket type yet');
        assert.equal((await addTicketType(c, draft.id)).currency, 'USD');
        await problem(await c.patch(`/events/${draft.id}`, { currency: 'GBP' }), 409, 'event_has_tickets');

        const cancelled = await c.expect(200, 'POST', `/events/${event.id}/cancel`);
        for (const body of [{ name: 'Renamed' }, { capacity: 50 }, { metadata: {} }]) {
          await problem(await c.patch(`/events/${event.id}`, body), 409, 'event_cancelled');
        }
        assert.deepEqual(await c.expect(200, 'GET', `/events/${event.id}`), cancelled);
      });

      test('DELETE /events/:id: 204 while no ticket was ever issued, then 404; otherwise 409 event_has_tickets, even after the ticket is cancelled', async () => {
        const c = await client();
        const draft = await createEvent(c);
        await addTicketType(c, draft.id);
        const res = await c.delete(`/events/${draft.id}`);
        assert.equal(res.status, 204);
        assert.equal(await res.text(), '');
        await problem(await c.get(`/events/${draft.id}`), 404, 'not_found');
        await problem(await c.get(`/events/${draft.id}/tickets`), 404, 'not_found');
        await problem(await c.delete(`/events/${draft.id}`), 404, 'not_found');

        const unsold = await publishedEvent(c);
        assert.equal((await c.delete(`/events/${unsold.event.id}`)).status, 204, 'a published event that sold nothing can go');

        const { event, types } = await publishedEvent(c);
        const order = await buy(c, event.id, [{ ticketTypeId: types[0].id }]);
        await problem(await c.delete(`/events/${event.id}`), 409, 'event_has_tickets');
        await c.expect(200, 'POST', `/tickets/${order.tickets[0].id}/cancel`);
        await problem(await c.delete(`/events/${event.id}`), 409, 'event_has_tickets');
        await c.expect(200, 'POST', `/events/${event.id}/cancel`);
        await problem(await c.delete(`/events/${event.id}`), 409, 'event_has_tickets');
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).status, 'cancelled');
      });

      test('POST /events/:id/publish: 409 without a ticket type; 200; again 200 with no second event.published', async () => {
        const c = await client();
        const draft = await createEvent(c);
        await problem(await c.post(`/events/${draft.id}/publish`), 409, 'event_has_no_ticket_types');
        assert.equal((await c.expect(200, 'GET', `/events/${draft.id}`)).status, 'draft');

        await addTicketType(c, draft.id);
        const sent = await watchOutbox(c);
        const published = await c.expect(200, 'POST', `/events/${draft.id}/publish`);
        assert.equal(published.status, 'published');
        assert.match(published.publishedAt, ISO_UTC);
        assert.equal(published.updatedAt, published.publishedAt);
        const again = await c.expect(200, 'POST', `/events/${draft.id}/publish`);
        assert.deepEqual(again, published, 'publishing again changes nothing');
        assert.deepEqual(await c.expect(200, 'GET', `/events/${draft.id}`), published);
        const outbox = await sent();
        assert.deepEqual(names(outbox), ['event.published']);
        assert.deepEqual(outbox[0]!.data, published);

        const cancelledDraft = await createEvent(c);
        await addTicketType(c, cancelledDraft.id);
        await c.expect(200, 'POST', `/events/${cancelledDraft.id}/cancel`);
        await problem(await c.post(`/events/${cancelledDraft.id}/publish`), 409, 'event_cancelled');
      });

      test('POST /events/:id/cancel cancels every valid ticket and refunds the paid ones; then 409 event_cancelled', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { event: { capacity: 10 }, types: [{ name: 'Paid', price: 1500 }, { name: 'Free', price: 0 }] });
        const [paid, free] = types;
        const first = await buy(c, event.id, [{ ticketTypeId: paid.id, quantity: 2 }, { ticketTypeId: free.id }]);
        const second = await buy(c, event.id, [{ ticketTypeId: paid.id }]);
        const [p1, p2, f1] = first.tickets;
        const [earlier] = second.tickets;
        await c.expect(200, 'POST', `/tickets/${earlier.id}/cancel`);
        await checkIn(c, event.id, { ticketId: p2.id });

        const sent = await watchOutbox(c);
        const cancelled = await c.expect(200, 'POST', `/events/${event.id}/cancel`);
        assert.deepEqual(omit(cancelled, ['updatedAt', 'cancelledAt', 'ticketsSold']), { ...omit(event, ['updatedAt', 'cancelledAt', 'ticketsSold']), status: 'cancelled' });
        assert.match(cancelled.cancelledAt, ISO_UTC);
        assert.equal(cancelled.ticketsSold, 0);
        assert.deepEqual(await c.expect(200, 'GET', `/events/${event.id}`), cancelled);

        const tickets = await Promise.all([p1, p2, f1, earlier].map((t: Json) => c.expect(200, 'GET', `/tickets/${t.id}`)));
        assert.deepEqual(
          tickets.map((t) => [t.status, t.refundedAmount]),
          [
            ['cancelled', 1500],
            ['cancelled', 1500],
            ['cancelled', 0],
            ['cancelled', 1500],
          ],
        );
        assert.deepEqual(tickets.slice(0, 3).map((t) => t.cancelledAt), [cancelled.cancelledAt, cancelled.cancelledAt, cancelled.cancelledAt]);
        for (const type of await listTypes(c, event.id)) assert.equal(type.sold, 0, type.name);
        assert.deepEqual((await c.expect(200, 'GET', `/events/${event.id}/attendees`)).data, []);

        const outbox = await sent();
        assert.deepEqual(names(outbox), ['event.cancelled', 'ticket.cancelled', 'ticket.cancelled', 'ticket.cancelled', 'payment.refunded', 'payment.refunded']);
        assert.deepEqual(outbox[0]!.data, cancelled);
        // Cancelled before the money moved: each refund is recorded on its ticket when it succeeded.
        assert.deepEqual([outbox[1]!.data, outbox[2]!.data, outbox[3]!.data], tickets.slice(0, 3).map((t) => ({ ...t, refundedAmount: 0 })));
        // Refunded as an organiser's refund is: a payment row each, through the order's provider (`external`: nothing to call).
        const refunds = (await c.expect(200, 'GET', `/orders/${first.id}`)).payments.filter((p: Json) => p.kind === 'refund');
        assert.deepEqual(refunds.map((p: Json) => [p.ticketId, p.amount, p.status, p.provider]).sort(), [[p1.id, 1500, 'succeeded', 'external'], [p2.id, 1500, 'succeeded', 'external']].sort());
        assert.deepEqual(outbox.slice(4).map((m) => m.data).sort((a: Json, b: Json) => a.ticketId.localeCompare(b.ticketId)), refunds.map((p: Json) => ({ orderId: first.id, ticketId: p.ticketId, amount: 1500, currency: 'EUR', provider: 'external', paymentId: p.id })).sort((a: Json, b: Json) => a.ticketId.localeCompare(b.ticketId)));
        await problem(await c.post(`/orders/${first.id}/refunds`, {}), 409, 'refund_exceeds_paid');

        const refusedSent = await watchOutbox(c);
        await problem(await c.post(`/events/${event.id}/cancel`), 409, 'event_cancelled');
        await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: paid.id }])), 409, 'event_cancelled');
        await problem(await c.post(`/events/${event.id}/tickets`, { name: 'Late', price: 0, quantity: 1 }), 409, 'event_cancelled');
        await problem(await c.patch(`/events/${event.id}/tickets/${paid.id}`, { name: 'Late' }), 409, 'event_cancelled');
        assert.deepEqual(await refusedSent(), [], 'a second cancel sends nothing');

        const draft = await createEvent(c);
        const cancelledDraft = await c.expect(200, 'POST', `/events/${draft.id}/cancel`);
        assert.deepEqual([cancelledDraft.status, cancelledDraft.publishedAt], ['cancelled', null], 'a draft can be cancelled');
      });
    });

    describe('ticket types', () => {
      test('POST /events/:id/tickets: 201 with inventory; currency is the event\'s; 400 for another currency or a bad sales window', async () => {
        const c = await client();
        const event = await createEvent(c);
        const res = await c.post(`/events/${event.id}/tickets`, { name: 'Early bird', description: 'First 50', price: 1900, quantity: 50, maxPerOrder: 4 });
        assert.equal(res.status, 201);
        const type = await res.json();
        assert.match(type.id, /^tt_[0-9a-z]{26}$/);
        assert.ok(res.headers.get('location')?.includes(type.id), 'a Location (where it leads: see the Location test below)');
        assert.deepEqual(omit(type, ['id', 'createdAt', 'updatedAt']), {
          eventId: event.id,
          name: 'Early bird',
          description: 'First 50',
          price: 1900,
          currency: 'EUR',
          quantity: 50,
          sold: 0,
          held: 0,
          available: 50,
          salesStartAt: null,
          salesEndAt: null,
          maxPerOrder: 4,
          hidden: false,
        });
        const start = Date.now() + DAY;
        const windowed = await addTicketType(c, event.id, { currency: 'EUR', salesStartAt: iso(start), salesEndAt: iso(start + DAY) });
        assert.deepEqual([windowed.currency, windowed.salesStartAt, windowed.salesEndAt, windowed.maxPerOrder, windowed.description], ['EUR', iso(start), iso(start + DAY), null, null]);

        const cases: Array<[Record<string, unknown>, string]> = [
          [{ currency: 'USD' }, '/currency'],
          [{ salesStartAt: iso(start), salesEndAt: iso(start) }, '/salesEndAt'],
          [{ salesStartAt: iso(start), salesEndAt: iso(start - HOUR) }, '/salesEndAt'],
          [{ price: -1 }, '/price'],
          [{ price: 12.5 }, '/price'],
          [{ quantity: 0 }, '/quantity'],
          [{ maxPerOrder: 0 }, '/maxPerOrder'],
          [{ colour: 'red' }, '/colour'],
        ];
        for (const [overrides, path] of cases) {
          const body = await problem(await c.post(`/events/${event.id}/tickets`, { name: 'X', price: 100, quantity: 10, ...overrides }), 400, 'invalid_request');
          assert.ok(body.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(overrides)}: ${JSON.stringify(body.errors)}`);
        }
        assert.deepEqual((await listTypes(c, event.id)).map((t) => t.id), [type.id, windowed.id], 'the refused ones were not created');
      });

      test('GET /events/:id/tickets lists quantity, sold and available, within the event capacity', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { event: { capacity: 5 }, types: [{ name: 'A', quantity: 4 }, { name: 'B', quantity: 10 }] });
        const [a, b] = types;
        assert.deepEqual([a.available, b.available], [4, 5]);
        await buy(c, event.id, [{ ticketTypeId: a.id, quantity: 3 }]);
        const listed = await listTypes(c, event.id);
        assert.deepEqual(
          listed.map((t) => [t.name, t.quantity, t.sold, t.available]),
          [
            ['A', 4, 3, 1],
            ['B', 10, 0, 2],
          ],
        );
        assert.deepEqual(omit(listed[0], ['sold', 'available', 'updatedAt']), omit(a, ['sold', 'available', 'updatedAt']));
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).ticketsSold, 3);
        await c.expect(200, 'PATCH', `/events/${event.id}`, { capacity: null });
        assert.deepEqual((await listTypes(c, event.id)).map((t) => t.available), [1, 10], 'no capacity: each type its own stock');
      });

      test('PATCH /events/:id/tickets/:typeId: name changes; quantity not below sold; price not after a sale', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { types: [{ name: 'Sold', price: 1000, quantity: 10 }, { name: 'Unsold', price: 1000, quantity: 10 }] });
        const [sold, unsold] = types;
        await buy(c, event.id, [{ ticketTypeId: sold.id, quantity: 4 }]);

        const renamed = await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${sold.id}`, { name: 'Renamed', description: 'Now with a description', maxPerOrder: 2 });
        assert.deepEqual(
          omit(renamed, ['updatedAt']),
          { ...omit(sold, ['updatedAt']), name: 'Renamed', description: 'Now with a description', maxPerOrder: 2, sold: 4, available: 6 },
        );
        await problem(await c.patch(`/events/${event.id}/tickets/${sold.id}`, { quantity: 3 }), 409, 'quantity_below_sold');
        const exhausted = await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${sold.id}`, { quantity: 4 });
        assert.deepEqual([exhausted.quantity, exhausted.available], [4, 0], 'quantity may equal sold');
        await problem(await c.patch(`/events/${event.id}/tickets/${sold.id}`, { price: 1200 }), 409, 'price_locked');
        assert.equal((await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${sold.id}`, { price: 1000 })).price, 1000, 'the same price is no change');
        assert.equal((await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${unsold.id}`, { price: 1200 })).price, 1200, 'nothing sold yet');

        const start = Date.now() + DAY;
        const windowed = await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${unsold.id}`, { salesStartAt: iso(start), salesEndAt: iso(start + HOUR) });
        assert.deepEqual([windowed.salesStartAt, windowed.salesEndAt], [iso(start), iso(start + HOUR)]);
        await problem(await c.patch(`/events/${event.id}/tickets/${unsold.id}`, { salesEndAt: iso(start - HOUR) }), 400, 'invalid_request');
        const cleared = await c.expect(200, 'PATCH', `/events/${event.id}/tickets/${unsold.id}`, { salesStartAt: null, salesEndAt: null, maxPerOrder: null });
        assert.deepEqual([cleared.salesStartAt, cleared.salesEndAt, cleared.maxPerOrder], [null, null, null]);

        await problem(await c.patch(`/events/${event.id}/tickets/${sold.id}`, {}), 400, 'invalid_request');
        await problem(await c.patch(`/events/${event.id}/tickets/${sold.id}`, { currency: 'USD' }), 400, 'invalid_request');
        await problem(await c.patch(`/events/${event.id}/tickets/${sold.id}`, { quantity: 0 }), 400, 'invalid_request');
        const other = await publishedEvent(c);
        await problem(await c.patch(`/events/${other.event.id}/tickets/${sold.id}`, { name: 'X' }), 404, 'not_found');
        await problem(await c.patch(`/events/${event.id}/tickets/tt_${'0'.repeat(26)}`, { name: 'X' }), 404, 'not_found');
      });
    });

    describe('orders', () => {
      test('POST /events/:id/orders: 201 with items, total and a coded ticket each; attendees past the list are the buyer', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, {
          types: [
            { name: 'VIP', price: 9900, quantity: 10, maxPerOrder: 4 },
            { name: 'Standard', price: 2500, quantity: 100 },
          ],
        });
        const [vip, standard] = types;
        const sent = await watchOutbox(c);
        const grace = person('Grace Hopper');
        const res = await c.post(
          `/events/${event.id}/orders`,
          orderBody([{ ticketTypeId: vip.id, quantity: 3, attendees: [grace] }, { ticketTypeId: standard.id }]),
        );
        assert.equal(res.status, 201);
        const order = await res.json();
        assert.match(order.id, /^ord_[0-9a-z]{26}$/);
        assert.deepEqual(omit(order, ['id', 'tickets', 'payments', 'createdAt', 'completedAt']), {
          eventId: event.id,
          status: 'completed',
          buyer: person('Ada Lovelace'),
          items: [
            { ticketTypeId: vip.id, quantity: 3, unitPrice: 9900, discount: 0, amount: 29700 },
            { ticketTypeId: standard.id, quantity: 1, unitPrice: 2500, discount: 0, amount: 2500 },
          ],
          total: 32200,
          currency: 'EUR',
          refundedAmount: 0,
          balanceDue: 0,
          payment: { provider: 'external', status: 'paid', checkoutUrl: null },
          voucher: null,
          expiresAt: null,
        });
        assert.match(order.createdAt, ISO_UTC);
        assert.equal(order.completedAt, order.createdAt);
        assert.deepEqual(order.payments.map((p: Json) => [p.kind, p.provider, p.amount, p.status]), [['charge', 'external', 32200, 'succeeded']]);
        assert.equal(order.tickets.length, 4);
        assert.deepEqual(
          order.tickets.map((t: Json) => [t.ticketTypeId, t.attendee.name, t.price]),
          [
            [vip.id, 'Grace Hopper', 9900],
            [vip.id, 'Ada Lovelace', 9900],
            [vip.id, 'Ada Lovelace', 9900],
            [standard.id, 'Ada Lovelace', 2500],
          ],
        );
        for (const ticket of order.tickets) {
          assert.match(ticket.id, /^tkt_[0-9a-z]{26}$/);
          assert.ok(typeof ticket.code === 'string' && ticket.code.length >= 16, 'each ticket carries its code');
          assert.deepEqual(ticket.links, { qrSvg: `/v1/tickets/${ticket.id}/qr.svg`, qrPng: `/v1/tickets/${ticket.id}/qr.png`, pdf: `/v1/tickets/${ticket.id}/pdf` });
          assert.deepEqual(omit(ticket, ['id', 'ticketTypeId', 'attendee', 'code', 'price', 'links']), {
            eventId: event.id,
            orderId: order.id,
            status: 'valid',
            currency: 'EUR',
            refundedAmount: 0,
            checkedIn: false,
            checkedInAt: null,
            createdAt: order.createdAt,
            cancelledAt: null,
          });
          assert.deepEqual(await c.expect(200, 'GET', `/tickets/${ticket.id}`), ticket);
        }
        assert.equal(new Set(order.tickets.map((t: Json) => t.code)).size, 4, 'codes are unique');
        assert.deepEqual(await c.expect(200, 'GET', `/orders/${order.id}`), order, 'GET /orders/:id reads it back');
        assert.deepEqual((await listTypes(c, event.id)).map((t) => t.sold), [3, 1]);
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).ticketsSold, 4);

        const outbox = await sent();
        assert.deepEqual(names(outbox), ['ticket.purchased', 'ticket.purchased', 'ticket.purchased', 'ticket.purchased', 'payment.completed']);
        assert.deepEqual(outbox.slice(0, 4).map((m) => m.data), order.tickets);
        assertOrderData(outbox[4], order);
      });

      test('POST /events/:id/orders refuses a draft event (409) and bad items (400), selling nothing', async () => {
        const c = await client();
        const draft = await createEvent(c);
        const draftType = await addTicketType(c, draft.id);
        await problem(await c.post(`/events/${draft.id}/orders`, orderBody([{ ticketTypeId: draftType.id }])), 409, 'event_not_published');

        const { event, types } = await publishedEvent(c, { types: [{ name: 'Limited', maxPerOrder: 2 }, { name: 'Other' }] });
        const [limited, other] = types;
        const elsewhere = await publishedEvent(c);
        const sent = await watchOutbox(c);
        const cases: Array<[string, unknown, string]> = [
          ['unknown ticket type', orderBody([{ ticketTypeId: `tt_${'0'.repeat(26)}` }]), '/items/0/ticketTypeId'],
          ['not an id at all', orderBody([{ ticketTypeId: 'nope' }]), '/items/0/ticketTypeId'],
          ['a type of another event', orderBody([{ ticketTypeId: other.id }, { ticketTypeId: elsewhere.types[0].id }]), '/items/1/ticketTypeId'],
          ['above maxPerOrder', orderBody([{ ticketTypeId: limited.id, quantity: 3 }]), '/items/0/quantity'],
          ['more attendees than tickets', orderBody([{ ticketTypeId: other.id, quantity: 1, attendees: [person('A B'), person('C D')] }]), '/items/0/attendees'],
          ['the same type twice', orderBody([{ ticketTypeId: other.id }, { ticketTypeId: other.id }]), '/items/1/ticketTypeId'],
          ['quantity 0', orderBody([{ ticketTypeId: other.id, quantity: 0 }]), '/items/0/quantity'],
          ['no items', { buyer: person('Ada Lovelace'), items: [] }, '/items'],
          ['no buyer', { items: [{ ticketTypeId: other.id, quantity: 1 }] }, '/buyer'],
          ['a bad email', orderBody([{ ticketTypeId: other.id }], { name: 'Ada', email: 'not-an-email' }), '/buyer/email'],
          ['an unknown property', { ...orderBody([{ ticketTypeId: other.id }]), coupon: 'FREE' }, '/coupon'],
        ];
        for (const [what, body, path] of cases) {
          const res = await problem(await c.post(`/events/${event.id}/orders`, body), 400, 'invalid_request');
          assert.equal(res.errors?.[0]?.path, path, `${what}: ${JSON.stringify(res.errors)}`);
        }
        assert.deepEqual((await listTypes(c, event.id)).map((t) => t.sold), [0, 0]);
        assert.deepEqual(await sent(), [], 'no message for a refused order');
        assert.equal(await ticketCount(c), 0);
      });

      test('POST /events/:id/orders: 409 sales_closed before the sales window, after it, and after the event', async () => {
        const c = await client();
        const now = Date.now();
        const { event, types } = await publishedEvent(c, {
          types: [
            { name: 'Not yet', salesStartAt: iso(now + DAY) },
            { name: 'Over', salesStartAt: iso(now - 2 * DAY), salesEndAt: iso(now - DAY) },
            { name: 'Open', salesStartAt: iso(now - HOUR), salesEndAt: iso(now + HOUR) },
          ],
        });
        const [notYet, over, open] = types;
        const early = await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: notYet.id }])), 409, 'sales_closed');
        assert.equal(early.ticketTypeId, notYet.id);
        await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: over.id }])), 409, 'sales_closed');
        await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: open.id }, { ticketTypeId: over.id }])), 409, 'sales_closed');
        assert.deepEqual((await listTypes(c, event.id)).map((t) => t.sold), [0, 0, 0]);
        await buy(c, event.id, [{ ticketTypeId: open.id }]);

        // An ended event is not published (event_ended): this one is published while it runs, then it ends.
        const past = await publishedEvent(c, { event: { startsAt: iso(now - 3 * HOUR), endsAt: iso(now + HOUR) } });
        await c.expect(200, 'PATCH', `/events/${past.event.id}`, { endsAt: iso(now - HOUR) });
        await problem(await c.post(`/events/${past.event.id}/orders`, orderBody([{ ticketTypeId: past.types[0].id }])), 409, 'sales_closed');
      });

      test('POST /events/:id/orders: 409 sold_out when a type runs out, all or nothing across items, and under concurrency', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { types: [{ name: 'Plenty', quantity: 10 }, { name: 'Scarce', quantity: 3 }] });
        const [plenty, scarce] = types;
        await buy(c, event.id, [{ ticketTypeId: scarce.id, quantity: 2 }]);
        const body = await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: scarce.id, quantity: 2 }])), 409, 'sold_out');
        assert.equal(body.available, 1);
        const before = await ticketCount(c);
        for (const items of [
          [{ ticketTypeId: plenty.id, quantity: 2 }, { ticketTypeId: scarce.id, quantity: 2 }],
          [{ ticketTypeId: scarce.id, quantity: 2 }, { ticketTypeId: plenty.id, quantity: 2 }],
        ]) {
          const refused = await problem(await c.post(`/events/${event.id}/orders`, orderBody(items)), 409, 'sold_out');
          assert.deepEqual([refused.ticketTypeId, refused.available], [scarce.id, 1], 'the type that ran out, whatever the order of the items');
          assert.deepEqual((await listTypes(c, event.id)).map((t) => t.sold), [0, 2], 'the first item was not sold either');
        }
        assert.equal(await ticketCount(c), before, 'no ticket issued');
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).ticketsSold, 2);
        await buy(c, event.id, [{ ticketTypeId: scarce.id }]);
        await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: scarce.id }])), 409, 'sold_out');

        // Eight buyers race for five places: exactly five get one.
        const race = await publishedEvent(c, { types: [{ quantity: 5 }] });
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) => c.post(`/events/${race.event.id}/orders`, orderBody([{ ticketTypeId: race.types[0].id }], person(`Racer ${String.fromCharCode(97 + i)}`)))),
        );
        const statuses = answers.map((r) => r.status).sort();
        assert.deepEqual(statuses, [201, 201, 201, 201, 201, 409, 409, 409]);
        for (const answer of answers) if (answer.status === 409) assert.equal((await answer.json()).code, 'sold_out');
        assert.equal((await typeOf(c, race.event.id, race.types[0].id)).sold, 5);
      });

      test('POST /events/:id/orders: 409 sold_out when the event capacity runs out across ticket types', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { event: { capacity: 3 }, types: [{ name: 'A', quantity: 5 }, { name: 'B', quantity: 5 }] });
        const [a, b] = types;
        await buy(c, event.id, [{ ticketTypeId: a.id, quantity: 2 }]);
        const body = await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: b.id, quantity: 2 }])), 409, 'sold_out');
        assert.equal(body.available, 1);
        assert.deepEqual((await listTypes(c, event.id)).map((t) => [t.sold, t.available]), [
          [2, 1],
          [0, 1],
        ]);
        const order = await buy(c, event.id, [{ ticketTypeId: b.id }]);
        assert.deepEqual((await listTypes(c, event.id)).map((t) => t.available), [0, 0]);
        await problem(await c.post(`/events/${event.id}/orders`, orderBody([{ ticketTypeId: a.id }])), 409, 'sold_out');
        await c.expect(200, 'POST', `/tickets/${order.tickets[0].id}/cancel`);
        await buy(c, event.id, [{ ticketTypeId: a.id }]);
      });

      test('a free order is an RSVP: rsvp.submitted, not payment.completed', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { types: [{ name: 'Free', price: 0 }] });
        const sent = await watchOutbox(c);
        const order = await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: 2 }]);
        assert.equal(order.total, 0);
        const outbox = await sent();
        assert.deepEqual(names(outbox), ['ticket.purchased', 'ticket.purchased', 'rsvp.submitted']);
        assertOrderData(outbox[2], order);
      });

      test('an Idempotency-Key retry of a purchase returns the same order and issues no more tickets', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const body = orderBody([{ ticketTypeId: types[0].id, quantity: 2 }]);
        const send = (json: unknown) => c.send('POST', `/events/${event.id}/orders`, json, { 'idempotency-key': 'checkout-42' });
        const first = await send(body);
        assert.equal(first.status, 201);
        const firstText = await first.text();
        const sent = await watchOutbox(c);

        const retry = await send(body);
        assert.equal(retry.status, 201);
        assert.equal(await retry.text(), firstText, 'the same order');
        assert.equal(retry.headers.get('location'), first.headers.get('location'));
        assert.equal((await typeOf(c, event.id, types[0].id)).sold, 2);
        assert.equal(await ticketCount(c), 2);
        assert.deepEqual(await sent(), []);
        await problem(await send(orderBody([{ ticketTypeId: types[0].id, quantity: 3 }])), 409, 'idempotency_key_reused');
        assert.equal(await ticketCount(c), 2);
      });
    });

    describe('tickets', () => {
      test('GET /tickets/:id; cancel: 200, refunded, inventory back; again 409 ticket_cancelled; a checked-in ticket 409 ticket_checked_in', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { types: [{ name: 'Paid', price: 4200, quantity: 10 }, { name: 'Free', price: 0, quantity: 10 }] });
        const [paid, free] = types;
        const order = await buy(c, event.id, [{ ticketTypeId: paid.id, quantity: 3 }, { ticketTypeId: free.id }]);
        const [ticket, checkedIn, , freeTicket] = order.tickets;
        assert.deepEqual(await c.expect(200, 'GET', `/tickets/${ticket.id}`), ticket);

        const sent = await watchOutbox(c);
        const cancelled = await c.expect(200, 'POST', `/tickets/${ticket.id}/cancel`);
        assert.match(cancelled.cancelledAt, ISO_UTC);
        assert.deepEqual(cancelled, { ...ticket, status: 'cancelled', refundedAmount: 4200, cancelledAt: cancelled.cancelledAt });
        assert.deepEqual(await c.expect(200, 'GET', `/tickets/${ticket.id}`), cancelled);
        assert.equal((await typeOf(c, event.id, paid.id)).sold, 2);
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}`)).ticketsSold, 3);
        const outbox = await sent();
        assert.deepEqual(names(outbox), ['ticket.cancelled', 'payment.refunded']);
        // ticket.cancelled is written with the cancel; payment.refunded once the money went back (through the order's provider).
        assert.deepEqual(outbox[0]!.data, { ...cancelled, refundedAmount: 0 });
        const { paymentId, ...refund } = outbox[1]!.data;
        assert.deepEqual(refund, { orderId: order.id, ticketId: ticket.id, amount: 4200, currency: 'EUR', provider: 'external' });
        assert.deepEqual((await c.expect(200, 'GET', `/orders/${order.id}`)).payments.filter((p: Json) => p.kind === 'refund').map((p: Json) => [p.id, p.amount, p.status]), [[paymentId, 4200, 'succeeded']]);

        await problem(await c.post(`/tickets/${ticket.id}/cancel`), 409, 'ticket_cancelled');
        const current = await c.expect(200, 'GET', `/orders/${order.id}`);
        assert.deepEqual(current.tickets[0], cancelled, 'GET /orders/:id shows its tickets as they are now');
        const money = ['tickets', 'payments', 'refundedAmount', 'payment'];
        assert.deepEqual(omit(current, money), omit(order, money));
        assert.deepEqual([current.refundedAmount, current.payment.status], [4200, 'partially_refunded'], 'the order shows the refund');

        const freeSent = await watchOutbox(c);
        const freeCancelled = await c.expect(200, 'POST', `/tickets/${freeTicket.id}/cancel`);
        assert.equal(freeCancelled.refundedAmount, 0);
        assert.deepEqual(names(await freeSent()), ['ticket.cancelled'], 'nothing to refund');

        await checkIn(c, event.id, { ticketId: checkedIn.id });
        const refused = await problem(await c.post(`/tickets/${checkedIn.id}/cancel`), 409, 'ticket_checked_in');
        assert.match(refused.checkedInAt, ISO_UTC);
        assert.equal((await c.expect(200, 'GET', `/tickets/${checkedIn.id}`)).status, 'valid');
        assert.equal((await typeOf(c, event.id, paid.id)).sold, 2);
      });

      test('POST /tickets/:id/transfer: new holder and code, same id; the old code stops working; 409 once checked in or cancelled', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const order = await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: 3 }]);
        const [ticket, toCheckIn, toCancel] = order.tickets;
        const sent = await watchOutbox(c);
        const transferred = await c.expect(200, 'POST', `/tickets/${ticket.id}/transfer`, { attendee: person('Grace Hopper') });
        assert.equal(transferred.id, ticket.id);
        assert.deepEqual(transferred.attendee, person('Grace Hopper'));
        assert.notEqual(transferred.code, ticket.code);
        assert.deepEqual(omit(transferred, ['attendee', 'code']), omit(ticket, ['attendee', 'code']));
        assert.deepEqual(await c.expect(200, 'GET', `/tickets/${ticket.id}`), transferred);
        const outbox = await sent();
        assert.deepEqual(names(outbox), ['ticket.transferred']);
        assert.deepEqual(outbox[0]!.data, transferred);

        // The old code is signed and verifies, but its serial is on the revocation list (docs/events.md, At the door).
        const revoked = await problem(await c.post(`/events/${event.id}/checkin`, { code: ticket.code }), 409, 'ticket_revoked');
        assert.equal(revoked.ticketId, ticket.id);
        const admitted = await checkIn(c, event.id, { code: transferred.code });
        assert.deepEqual(admitted.attendee, person('Grace Hopper'));

        await checkIn(c, event.id, { ticketId: toCheckIn.id });
        await problem(await c.post(`/tickets/${toCheckIn.id}/transfer`, { attendee: person('Bob') }), 409, 'ticket_checked_in');
        await c.expect(200, 'POST', `/tickets/${toCancel.id}/cancel`);
        await problem(await c.post(`/tickets/${toCancel.id}/transfer`, { attendee: person('Bob') }), 409, 'ticket_cancelled');
        await problem(await c.post(`/tickets/${ticket.id}/transfer`, { attendee: { name: 'Bob', email: 'nope' } }), 400, 'invalid_request');
        await problem(await c.post(`/tickets/${ticket.id}/transfer`, { attendee: person('Bob'), note: 'hi' }), 400, 'invalid_request');
        await problem(await c.post(`/tickets/${ticket.id}/transfer`, {}), 400, 'invalid_request');
      });
    });

    describe('check-in', () => {
      test('POST /events/:id/checkin by code and by ticketId: 201 with the check-in, ticket and attendee; checkin.completed', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const order = await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: 2, attendees: [person('Grace Hopper')] }]);
        const [byCode, byId] = order.tickets;
        const sent = await watchOutbox(c);

        const res = await c.post(`/events/${event.id}/checkin`, { code: byCode.code, gate: 'North' });
        assert.equal(res.status, 201);
        const first = await res.json();
        assert.match(first.id, /^chk_[0-9a-z]{26}$/);
        assert.match(first.checkedInAt, ISO_UTC);
        assert.ok(Math.abs(Date.parse(first.checkedInAt) - Date.now()) < MINUTE);
        assert.deepEqual(omit(first, ['id', 'checkedInAt', 'createdAt']), {
          action: 'checkin',
          eventId: event.id,
          ticketId: byCode.id,
          gate: 'North',
          ticket: { ...byCode, checkedIn: true, checkedInAt: first.checkedInAt },
          attendee: person('Grace Hopper'),
          listId: null,
          direction: 'entry',
        });
        assert.deepEqual(await c.expect(200, 'GET', `/tickets/${byCode.id}`), first.ticket);

        const second = await checkIn(c, event.id, { ticketId: byId.id });
        assert.deepEqual([second.ticketId, second.gate, second.ticket.checkedIn, second.attendee], [byId.id, null, true, person('Ada Lovelace')]);

        const outbox = await sent();
        assert.deepEqual(names(outbox), ['checkin.completed', 'checkin.completed']);
        assert.deepEqual(outbox.map((m) => m.data), [first, second]);
      });

      test('check-in: 400 for both or neither of ticketId and code or a far-future time; 404 for unknown or other-event tickets', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const other = await publishedEvent(c);
        const [ticket] = (await buy(c, event.id, [{ ticketTypeId: types[0].id }])).tickets;
        const [foreign] = (await buy(c, other.event.id, [{ ticketTypeId: other.types[0].id }])).tickets;

        for (const body of [{}, { gate: 'North' }, { ticketId: ticket.id, code: ticket.code }, { ticketId: ticket.id, colour: 'red' }, { code: '' }]) {
          await problem(await c.post(`/events/${event.id}/checkin`, body), 400, 'invalid_request');
        }
        const future = await problem(await c.post(`/events/${event.id}/checkin`, { ticketId: ticket.id, checkedInAt: iso(Date.now() + DAY) }), 400, 'invalid_request');
        assert.equal(future.errors[0].path, '/checkedInAt');
        await problem(await c.post(`/events/${event.id}/checkin`, { ticketId: ticket.id, checkedInAt: 'yesterday' }), 400, 'invalid_request');

        await problem(await c.post(`/events/${event.id}/checkin`, { ticketId: foreign.id }), 404, 'not_found');
        await problem(await c.post(`/events/${event.id}/checkin`, { code: foreign.code }), 404, 'not_found');
        await problem(await c.post(`/events/${event.id}/checkin`, { code: 'no-such-code' }), 404, 'not_found');
        await problem(await c.post(`/events/${event.id}/checkin`, { ticketId: `tkt_${'0'.repeat(26)}` }), 404, 'not_found');
        await problem(await c.post(`/events/${event.id}/checkin`, { ticketId: 'nope' }), 404, 'not_found');
        assert.equal((await c.expect(200, 'GET', `/tickets/${ticket.id}`)).checkedIn, false, 'nothing was checked in');
        assert.equal((await c.expect(200, 'GET', `/tickets/${foreign.id}`)).checkedIn, false);
      });

      test('a second check-in is 409 already_checked_in with the first checkedInAt and checkinId; a cancelled ticket 409 ticket_cancelled', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const [ticket, cancelled] = (await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: 2 }])).tickets;
        const first = await checkIn(c, event.id, { ticketId: ticket.id });
        await c.expect(200, 'POST', `/tickets/${cancelled.id}/cancel`);
        const sent = await watchOutbox(c);
        for (const body of [{ ticketId: ticket.id }, { code: ticket.code }]) {
          const again = await problem(await c.post(`/events/${event.id}/checkin`, body), 409, 'already_checked_in');
          assert.equal(again.checkedInAt, first.checkedInAt);
          assert.equal(again.checkinId, first.id);
        }
        await problem(await c.post(`/events/${event.id}/checkin`, { ticketId: cancelled.id }), 409, 'ticket_cancelled');
        await problem(await c.post(`/events/${event.id}/checkin`, { code: cancelled.code }), 409, 'ticket_cancelled');
        assert.deepEqual(await sent(), [], 'refused scans send nothing');
      });

      test('an offline scan keeps its checkedInAt; DELETE undoes a check-in (200), after which the ticket checks in again; 409 not_checked_in', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const [offline, plain] = (await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: 2 }])).tickets;
        const scannedAt = floorTo(Date.now() - 2 * HOUR, 1000) + 123;
        const scan = await checkIn(c, event.id, { ticketId: offline.id, checkedInAt: new Date(scannedAt + 2 * HOUR).toISOString().replace('Z', '+02:00'), gate: 'B' });
        assert.equal(scan.checkedInAt, iso(scannedAt), 'kept as given, in UTC');
        assert.equal(scan.ticket.checkedInAt, iso(scannedAt));
        assert.equal((await c.expect(200, 'GET', `/tickets/${offline.id}`)).checkedInAt, iso(scannedAt));
        const soon = await checkIn(c, event.id, { ticketId: plain.id, checkedInAt: iso(Date.now() + MINUTE) });
        assert.ok(soon.checkedInAt, 'a scanner clock a minute ahead is tolerated');

        const sent = await watchOutbox(c);
        const undone = await c.expect(200, 'DELETE', `/events/${event.id}/checkin/${offline.id}`);
        assert.deepEqual(undone, { ...offline, checkedIn: false, checkedInAt: null });
        assert.deepEqual(await c.expect(200, 'GET', `/tickets/${offline.id}`), undone);
        const outbox = await sent();
        assert.deepEqual(names(outbox), ['checkin.undone']);
        assert.deepEqual(outbox[0]!.data, { ...undone, listId: null, direction: 'entry' });

        await problem(await c.delete(`/events/${event.id}/checkin/${offline.id}`), 409, 'not_checked_in');
        const again = await checkIn(c, event.id, { code: offline.code });
        assert.notEqual(again.id, scan.id, 'a new check-in');
        assert.equal(again.ticket.checkedIn, true);

        const other = await publishedEvent(c);
        await problem(await c.delete(`/events/${other.event.id}/checkin/${offline.id}`), 404, 'not_found');
        await problem(await c.delete(`/events/${event.id}/checkin/tkt_${'0'.repeat(26)}`), 404, 'not_found');
        assert.equal((await c.expect(200, 'GET', `/tickets/${offline.id}`)).checkedIn, true);
      });

      test('a key with only the checkin scope checks in and undoes, and gets 403 insufficient_scope elsewhere', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const [ticket] = (await buy(c, event.id, [{ ticketTypeId: types[0].id }])).tickets;
        const scanner = await c.withScopes(['checkin']);
        await checkIn(scanner, event.id, { code: ticket.code });
        await scanner.expect(200, 'DELETE', `/events/${event.id}/checkin/${ticket.id}`);
        await checkIn(scanner, event.id, { ticketId: ticket.id });

        const refusals: Array<[string, string, unknown?]> = [
          ['GET', '/events'],
          ['GET', `/events/${event.id}`],
          ['GET', `/events/${event.id}/attendees`],
          ['GET', `/events/${event.id}/attendees/export`],
          ['POST', '/events', eventInput()],
          ['POST', `/events/${event.id}/orders`, orderBody([{ ticketTypeId: types[0].id }])],
          ['POST', `/tickets/${ticket.id}/cancel`],
        ];
        for (const [method, path, json] of refusals) {
          await problem(await scanner.send(method, path, json), 403, 'insufficient_scope');
        }
        const reader = await c.withScopes(['events:read']);
        await problem(await reader.post(`/events/${event.id}/checkin`, { ticketId: ticket.id }), 403, 'insufficient_scope');
        await problem(await reader.delete(`/events/${event.id}/checkin/${ticket.id}`), 403, 'insufficient_scope');
        assert.equal((await reader.expect(200, 'GET', `/events/${event.id}/attendees`)).data.length, 1);
      });
    });

    describe('attendees', () => {
      /** Ada (A, checked in), Bob (B), Carol (A, corporate email), Dan (A, cancelled). */
      async function crowd(c: Client) {
        const { event, types } = await publishedEvent(c, { types: [{ name: 'Type A' }, { name: 'Type B' }] });
        const [a, b] = types;
        const ada = (await buy(c, event.id, [{ ticketTypeId: a.id }], person('Ada Lovelace'))).tickets[0];
        const bob = (await buy(c, event.id, [{ ticketTypeId: b.id }], person('Bob Stone'))).tickets[0];
        const carol = (await buy(c, event.id, [{ ticketTypeId: a.id }], { name: 'Carol King', email: 'carol@corp.example' })).tickets[0];
        const dan = (await buy(c, event.id, [{ ticketTypeId: a.id }], person('Dan Brown'))).tickets[0];
        const checkin = await checkIn(c, event.id, { ticketId: ada.id });
        await c.expect(200, 'POST', `/tickets/${dan.id}/cancel`);
        return { event, a, b, ada, bob, carol, dan, checkin };
      }

      test('GET /events/:id/attendees: one row per valid ticket, filtered by checkedIn, ticketTypeId and q, paged', async () => {
        const c = await client();
        const { event, a, b, ada, bob, carol, checkin } = await crowd(c);
        const list = await c.expect(200, 'GET', `/events/${event.id}/attendees`);
        assert.equal(list.hasMore, false);
        assert.deepEqual(list.data, [
          { ticketId: ada.id, orderId: ada.orderId, name: 'Ada Lovelace', email: 'ada.lovelace@example.com', ticketTypeId: a.id, ticketTypeName: 'Type A', checkedIn: true, checkedInAt: checkin.checkedInAt, answers: [], orderAnswers: [] },
          { ticketId: bob.id, orderId: bob.orderId, name: 'Bob Stone', email: 'bob.stone@example.com', ticketTypeId: b.id, ticketTypeName: 'Type B', checkedIn: false, checkedInAt: null, answers: [], orderAnswers: [] },
          { ticketId: carol.id, orderId: carol.orderId, name: 'Carol King', email: 'carol@corp.example', ticketTypeId: a.id, ticketTypeName: 'Type A', checkedIn: false, checkedInAt: null, answers: [], orderAnswers: [] },
        ], 'the cancelled ticket is not an attendee');

        const namesOf = async (query: string) => (await c.expect(200, 'GET', `/events/${event.id}/attendees?${query}`)).data.map((r: { name: string }) => r.name);
        assert.deepEqual(await namesOf('checkedIn=true'), ['Ada Lovelace']);
        assert.deepEqual(await namesOf('checkedIn=false'), ['Bob Stone', 'Carol King']);
        assert.deepEqual(await namesOf(`ticketTypeId=${a.id}`), ['Ada Lovelace', 'Carol King']);
        assert.deepEqual(await namesOf(`ticketTypeId=${b.id}&checkedIn=true`), []);
        assert.deepEqual(await namesOf('q=LOVELACE'), ['Ada Lovelace'], 'name, case-insensitive');
        assert.deepEqual(await namesOf('q=corp.example'), ['Carol King'], 'email');
        assert.deepEqual(await namesOf('q=dan'), [], 'cancelled tickets are not found either');
        assert.deepEqual(await namesOf('q=%25'), [], '% is literal');

        const first = await c.expect(200, 'GET', `/events/${event.id}/attendees?limit=2`);
        assert.deepEqual([first.data.length, first.hasMore], [2, true]);
        const rest = await c.expect(200, 'GET', `/events/${event.id}/attendees?limit=2&cursor=${first.nextCursor}`);
        assert.deepEqual([...first.data, ...rest.data], list.data);
        assert.equal(rest.hasMore, false);
        await problem(await c.get(`/events/${event.id}/attendees?limit=2&checkedIn=false&cursor=${first.nextCursor}`), 400, 'invalid_request');
        await problem(await c.get(`/events/${event.id}/attendees?checkedIn=maybe`), 400, 'invalid_request');
        await problem(await c.get(`/events/${event.id}/attendees?limit=0`), 400, 'invalid_request');
      });

      test('q matches letters beyond ASCII case-insensitively, in attendees and in events', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { event: { name: 'ÉTÉ FESTIVAL' } });
        const names = ['ÉMILE ZOLA', 'Jürgen Müller', 'Ωmega Σ', 'Zoë Ölund', 'ΟΔΥΣΣΕΥΣ'];
        await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: names.length, attendees: names.map((name, i) => ({ name, email: `guest${i}@example.com` })) }]);
        const namesOf = async (q: string) =>
          (await c.expect(200, 'GET', `/events/${event.id}/attendees?q=${encodeURIComponent(q)}`)).data.map((r: { name: string }) => r.name).sort();
        assert.deepEqual(await namesOf('émile'), ['ÉMILE ZOLA']);
        assert.deepEqual(await namesOf('MÜLLER'), ['Jürgen Müller']);
        assert.deepEqual(await namesOf('ωmega σ'), ['Ωmega Σ']);
        assert.deepEqual(await namesOf('ÖLUND'), ['Zoë Ölund']);
        assert.deepEqual(await namesOf('zo'), ['Zoë Ölund', 'ÉMILE ZOLA'].sort(), 'an ASCII search');
        assert.deepEqual(await namesOf('MILE'), ['ÉMILE ZOLA'], 'an ASCII search of a name with more than ASCII');
        for (const q of ['ΟΔΥΣ', 'οδυσσευς', 'ΟΔΥΣΣΕΥΣ', 'Οδυσσεύς'.normalize('NFC').replace('ύ', 'υ')]) {
          assert.deepEqual(await namesOf(q), ['ΟΔΥΣΣΕΥΣ'], `a final sigma is a sigma: ${q}`);
        }
        assert.deepEqual(await namesOf('é%'), [], '% stays literal beyond ASCII');
        const found = await c.expect(200, 'GET', `/events?q=${encodeURIComponent('été')}`);
        assert.deepEqual(found.data.map((e: { id: string }) => e.id), [event.id]);
      });

      test('export as CSV: attachment, a header line, quoting of , " and line breaks, and formula cells neutralised', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const tricky = ['Smith, "Jo"\nJr', '=HYPERLINK("http://evil.example")', '+1 234', '-2', '@SUM(A1)', 'Plain Name'];
        const order = await buy(c, event.id, [
          { ticketTypeId: types[0].id, quantity: tricky.length, attendees: tricky.map((name, i) => ({ name, email: `guest${i}@example.com` })) },
        ]);
        const cancelled = (await buy(c, event.id, [{ ticketTypeId: types[0].id }], person('Gone Guest'))).tickets[0];
        await c.expect(200, 'POST', `/tickets/${cancelled.id}/cancel`);
        await checkIn(c, event.id, { ticketId: order.tickets[5].id });

        const res = await c.get(`/events/${event.id}/attendees/export`);
        assert.equal(res.status, 200);
        assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
        assert.match(res.headers.get('content-disposition') ?? '', /^attachment; filename=".+\.csv"$/);
        const text = await res.text();
        const lines = text.split('\r\n');
        assert.equal(lines[0], 'ticketId,orderId,name,email,ticketTypeId,ticketTypeName,checkedIn,checkedInAt');
        assert.ok(text.includes('"Smith, ""Jo""\nJr"'), 'a cell with a comma, a quote and a line break is quoted, quotes doubled');
        assert.ok(text.includes(`,"'=HYPERLINK(""http://evil.example"")",`));

        const [header, ...rows] = parseCsv(text);
        assert.equal(header!.length, 8);
        assert.equal(rows.length, tricky.length, 'one row per valid ticket');
        assert.deepEqual(rows.map((r) => r[2]), ['Smith, "Jo"\nJr', `'=HYPERLINK("http://evil.example")`, `'+1 234`, `'-2`, `'@SUM(A1)`, 'Plain Name']);
        assert.deepEqual(rows[0], [order.tickets[0].id, order.id, 'Smith, "Jo"\nJr', 'guest0@example.com', types[0].id, 'General', 'false', '']);
        assert.deepEqual(rows[5]!.slice(6, 7), ['true']);
        assert.match(rows[5]![7]!, ISO_UTC);

        const checkedIn = await c.get(`/events/${event.id}/attendees/export?checkedIn=true&format=csv`);
        assert.deepEqual(parseCsv(await checkedIn.text()).slice(1).map((r) => r[2]), ['Plain Name'], 'filters apply to the export');
      });

      test('export as CSV: every cell quoted, and a formula after any separator neutralised (a spreadsheet splitting on ; sees no formula)', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c, { types: [{ name: 'VIP;=1+1' }] });
        // [name as sent, name as exported]: each piece that a split on , ; | tab or a line break would make a cell of its own.
        const names: Array<[string, string]> = [
          ['Müller;=HYPERLINK("http://evil.example")', `Müller;'=HYPERLINK("http://evil.example")`],
          ['Jo; +1 555', `Jo;' +1 555`],
          ['x;"=cmd"', `x;'"=cmd"`],
          ['a|@SUM(A1)', `a|'@SUM(A1)`],
          ['tab\t-2', `tab\t'-2`],
          ['line\n=3', `line\n'=3`],
          ['comma,@x', `comma,'@x`],
          ['=start;=again', `'=start;'=again`],
          ['Smith-Jones', 'Smith-Jones'],
          ["Zoë O'Brien, Jr.", "Zoë O'Brien, Jr."],
          ['a;b', 'a;b'],
        ];
        await buy(c, event.id, [{ ticketTypeId: types[0].id, quantity: names.length, attendees: names.map(([name], i) => ({ name, email: `guest${i}@example.com` })) }]);
        const text = await (await c.get(`/events/${event.id}/attendees/export`)).text();

        const [header, ...rows] = parseCsvWith(text, { relax_column_count: false }) as string[][];
        assert.equal(header!.join(','), 'ticketId,orderId,name,email,ticketTypeId,ticketTypeName,checkedIn,checkedInAt');
        assert.deepEqual(rows.map((r) => r[2]), names.map(([, exported]) => exported));
        assert.ok(rows.every((r) => r[5] === "VIP;'=1+1"), 'every column gets the rule');
        for (const line of text.split('\r\n').slice(1, -1)) assert.match(line, /^"[^]*"$/, 'every data cell is quoted');
        assert.ok(text.includes(',"false",""\r\n'), 'booleans and empty cells are quoted too');

        // What a spreadsheet sees when it splits on another delimiter, or on every line break, ignoring quotes.
        for (const delimiter of [';', ',', '\t', '|']) {
          const cells = (parseCsvWith(text, { delimiter, quote: false, relax_column_count: true, record_delimiter: ['\r\n', '\n', '\r'] }) as string[][]).flat();
          const formulas = cells.filter((cell) => /^[=+\-@\t\r]/.test(cell.replace(/^[ "]+/, '')));
          assert.deepEqual(formulas, [], `split on ${JSON.stringify(delimiter)}: no cell starts a formula`);
        }
      });

      test('export as format=json is NDJSON: one attendee object per line', async () => {
        const c = await client();
        const { event } = await crowd(c);
        const res = await c.get(`/events/${event.id}/attendees/export?format=json`);
        assert.equal(res.status, 200);
        assert.match(res.headers.get('content-type') ?? '', /^application\/x-ndjson/);
        assert.match(res.headers.get('content-disposition') ?? '', /^attachment; filename=".+"$/);
        const text = await res.text();
        assert.ok(text.endsWith('\n'));
        const lines = text.trimEnd().split('\n');
        const list = await c.expect(200, 'GET', `/events/${event.id}/attendees`);
        assert.deepEqual(lines.map((line) => JSON.parse(line)), list.data);
        const filtered = await (await c.get(`/events/${event.id}/attendees/export?format=json&q=carol`)).text();
        assert.deepEqual(filtered.trimEnd().split('\n').map((line) => JSON.parse(line).name), ['Carol King']);
        await problem(await c.get(`/events/${event.id}/attendees/export?format=xlsx`), 400, 'invalid_request');
        await problem(await c.get(`/events/${event.id}/attendees/export?limit=5`), 400, 'invalid_request');
      });
    });

    describe('analytics and payouts', () => {
      /**
       * Five tickets (three paid at 10.00, two free), one paid cancelled, three check-ins of which
       * one is undone, and one offline check-in two hours ago.
       */
      async function history(c: Client) {
        const { event, types } = await publishedEvent(c, { types: [{ name: 'Paid', price: 1000, quantity: 10 }, { name: 'Free', price: 0, quantity: 10 }] });
        const [paid, free] = types;
        const order = await buy(c, event.id, [{ ticketTypeId: paid.id, quantity: 3 }, { ticketTypeId: free.id, quantity: 2 }]);
        const [p1, p2, p3, f1, f2] = order.tickets;
        await c.expect(200, 'POST', `/tickets/${p3.id}/cancel`);
        const offlineAt = Date.now() - 2 * HOUR;
        await checkIn(c, event.id, { ticketId: p1.id, checkedInAt: iso(offlineAt) });
        await checkIn(c, event.id, { ticketId: f1.id });
        await checkIn(c, event.id, { ticketId: f2.id });
        await c.expect(200, 'DELETE', `/events/${event.id}/checkin/${f2.id}`);
        return { event, paid, free, order, p2, offlineAt };
      }

      test('GET /events/:id/analytics: totals after orders, a cancellation, check-ins and an undo', async () => {
        const c = await client();
        const { event, paid, free } = await history(c);
        const totals = await c.expect(200, 'GET', `/events/${event.id}/analytics`);
        assert.deepEqual(totals, {
          eventId: event.id,
          currency: 'EUR',
          ticketsSold: 4,
          ticketsHeld: 0,
          ordersPending: 0,
          ticketsCancelled: 1,
          grossRevenue: 3000,
          refunded: 1000,
          netRevenue: 2000,
          paidOut: 0,
          checkedIn: 2,
          checkInRate: 0.5,
          byTicketType: [
            { ticketTypeId: paid.id, name: 'Paid', quantity: 10, ticketsSold: 2, ticketsHeld: 0, ticketsCancelled: 1, grossRevenue: 3000, refunded: 1000, checkedIn: 1 },
            { ticketTypeId: free.id, name: 'Free', quantity: 10, ticketsSold: 2, ticketsHeld: 0, ticketsCancelled: 0, grossRevenue: 0, refunded: 0, checkedIn: 1 },
          ],
          checkinLists: [],
        });
        const empty = await publishedEvent(c);
        const none = await c.expect(200, 'GET', `/events/${empty.event.id}/analytics`);
        assert.deepEqual([none.ticketsSold, none.checkInRate, none.netRevenue, none.byTicketType[0].ticketsSold], [0, 0, 0, 0]);
      });

      test('analytics series: sales and check-ins per minute, hour and day, zero-filled, with from and to', async () => {
        const c = await client();
        const { event, offlineAt } = await history(c);
        const now = Date.now();
        const path = (kind: string, query: Record<string, string>) => `/events/${event.id}/analytics/${kind}?${new URLSearchParams(query)}`;

        const hourly = await c.expect(200, 'GET', path('sales', { interval: 'hour', from: iso(now - 5 * HOUR), to: iso(now + HOUR) }));
        assert.equal(hourly.interval, 'hour');
        assert.equal(hourly.from, iso(floorTo(now - 5 * HOUR, HOUR)));
        assert.equal(hourly.to, iso(floorTo(now + HOUR, HOUR) + (now % HOUR === 0 ? 0 : HOUR)));
        assert.equal(hourly.buckets.length, (Date.parse(hourly.to) - Date.parse(hourly.from)) / HOUR);
        hourly.buckets.forEach((bucket: Json, i: number) => {
          assert.deepEqual(Object.keys(bucket).sort(), ['grossRevenue', 'refunded', 'start', 'ticketsCancelled', 'ticketsSold']);
          assert.equal(bucket.start, iso(Date.parse(hourly.from) + i * HOUR));
        });
        assert.deepEqual(['ticketsSold', 'ticketsCancelled', 'grossRevenue', 'refunded'].map((k) => sum(hourly.buckets, k)), [5, 1, 3000, 1000]);
        const busy = hourly.buckets.filter((b: Json) => b.ticketsSold > 0);
        assert.ok(busy.length >= 1 && busy.length <= 2, 'the sales fall in the current hour');
        assert.ok(hourly.buckets.slice(0, 4).every((b: Json) => b.ticketsSold === 0 && b.grossRevenue === 0), 'empty hours are zeros');

        const minutes = await c.expect(200, 'GET', path('sales', { interval: 'minute', from: iso(now - 30 * MINUTE), to: iso(now + 30 * MINUTE) }));
        assert.ok(minutes.buckets.length === 60 || minutes.buckets.length === 61);
        assert.equal(sum(minutes.buckets, 'ticketsSold'), 5);
        const daily = await c.expect(200, 'GET', path('sales', { interval: 'day', from: iso(now - 10 * DAY) }));
        assert.equal(daily.from, iso(floorTo(now - 10 * DAY, DAY)));
        assert.ok(daily.buckets.length === 10 || daily.buckets.length === 11);
        assert.equal(sum(daily.buckets, 'grossRevenue'), 3000);
        const before = await c.expect(200, 'GET', path('sales', { interval: 'day', from: iso(now - 10 * DAY), to: iso(now - 5 * DAY) }));
        assert.equal(sum(before.buckets, 'ticketsSold'), 0, 'to bounds the range');

        const byDefault = await c.expect(200, 'GET', `/events/${event.id}/analytics/sales`);
        assert.equal(byDefault.interval, 'day');
        assert.equal(byDefault.from, iso(floorTo(Date.parse(event.createdAt), DAY)), 'from the event creation');
        assert.equal(sum(byDefault.buckets, 'ticketsSold'), 5);

        const checkins = await c.expect(200, 'GET', path('checkins', { interval: 'hour', from: iso(now - 5 * HOUR), to: iso(now + HOUR) }));
        hourly.buckets.forEach((_: Json, i: number) => assert.deepEqual(Object.keys(checkins.buckets[i]).sort(), ['checkIns', 'start', 'undos']));
        assert.deepEqual([sum(checkins.buckets, 'checkIns'), sum(checkins.buckets, 'undos')], [3, 1]);
        const offlineBucket = checkins.buckets.find((b: Json) => b.start === iso(floorTo(offlineAt, HOUR)));
        assert.deepEqual(offlineBucket && [offlineBucket.checkIns, offlineBucket.undos], [1, 0], 'the offline scan counts at its own time');
        const checkinsByMinute = await c.expect(200, 'GET', path('checkins', { interval: 'minute', from: iso(now - 10 * MINUTE), to: iso(now + 10 * MINUTE) }));
        assert.deepEqual([sum(checkinsByMinute.buckets, 'checkIns'), sum(checkinsByMinute.buckets, 'undos')], [2, 1]);
        const checkinsByDay = await c.expect(200, 'GET', path('checkins', { interval: 'day', from: iso(now - 2 * DAY), to: iso(now + DAY) }));
        assert.equal(sum(checkinsByDay.buckets, 'checkIns'), 3);
      });

      test('analytics series: 400 for more than 1000 buckets, to not after from, or a bad interval or time', async () => {
        const c = await client();
        const { event } = await publishedEvent(c);
        const start = floorTo(Date.now() - 30 * DAY, DAY);
        for (const kind of ['sales', 'checkins']) {
          const path = (query: Record<string, string>) => `/events/${event.id}/analytics/${kind}?${new URLSearchParams(query)}`;
          const exactly = await c.expect(200, 'GET', path({ interval: 'minute', from: iso(start), to: iso(start + 1000 * MINUTE) }));
          assert.equal(exactly.buckets.length, 1000);
          const bad: Array<Record<string, string>> = [
            { interval: 'minute', from: iso(start), to: iso(start + 1001 * MINUTE) },
            { interval: 'minute', from: iso(Date.now() - 2 * DAY) },
            { interval: 'hour', from: iso(start - 60 * DAY), to: iso(start) },
            { interval: 'day', from: iso(start), to: iso(start - DAY) },
            { interval: 'day', from: iso(start), to: iso(start) },
            { interval: 'week' },
            { from: 'yesterday' },
            { colour: 'red' },
          ];
          for (const query of bad) await problem(await c.get(path(query)), 400, 'invalid_request');
        }
      });

      test('POST /events/:id/payouts pays out the net revenue (201), then 409 nothing_to_pay_out; GET lists them; payout.processed', async () => {
        const c = await client();
        const { event, paid } = await history(c);
        const sent = await watchOutbox(c);
        const res = await c.post(`/events/${event.id}/payouts`);
        assert.equal(res.status, 201);
        const payout = await res.json();
        assert.match(payout.id, /^pay_[0-9a-z]{26}$/);
        assert.deepEqual(omit(payout, ['id', 'createdAt']), { eventId: event.id, amount: 2000, currency: 'EUR' });
        assert.match(payout.createdAt, ISO_UTC);
        await problem(await c.post(`/events/${event.id}/payouts`), 409, 'nothing_to_pay_out');
        const outbox = await sent();
        assert.deepEqual(names(outbox), ['payout.processed']);
        assert.deepEqual(outbox[0]!.data, payout);
        assert.equal((await c.expect(200, 'GET', `/events/${event.id}/analytics`)).paidOut, 2000);

        await buy(c, event.id, [{ ticketTypeId: paid.id, quantity: 2 }]);
        const second = await c.expect(201, 'POST', `/events/${event.id}/payouts`);
        assert.equal(second.amount, 2000, 'only what was not paid out yet');
        const list = await c.expect(200, 'GET', `/events/${event.id}/payouts`);
        assert.deepEqual(list, { data: [second, payout], hasMore: false, nextCursor: null }, 'newest first');
        const page = await c.expect(200, 'GET', `/events/${event.id}/payouts?limit=1`);
        assert.deepEqual([page.data, page.hasMore], [[second], true]);
        assert.deepEqual((await c.expect(200, 'GET', `/events/${event.id}/payouts?limit=1&cursor=${page.nextCursor}`)).data, [payout]);
        await problem(await c.get(`/events/${event.id}/payouts?limit=101`), 400, 'invalid_request');

        const free = await publishedEvent(c, { types: [{ price: 0 }] });
        await buy(c, free.event.id, [{ ticketTypeId: free.types[0].id }]);
        await problem(await c.post(`/events/${free.event.id}/payouts`), 409, 'nothing_to_pay_out');
        assert.deepEqual((await c.expect(200, 'GET', `/events/${free.event.id}/payouts`)).data, []);
      });
    });

    describe('webhook outbox', () => {
      test('a whole event lifecycle writes the messages of docs/events.md (Webhook messages), in order, each carrying the resource as returned', async () => {
        const c = await client();
        const event = await createEvent(c);
        const type = await addTicketType(c, event.id, { price: 3000 });
        const published = await c.expect(200, 'POST', `/events/${event.id}/publish`);
        const order = await buy(c, event.id, [{ ticketTypeId: type.id, quantity: 2 }]);
        const [kept, dropped] = order.tickets;
        const transferred = await c.expect(200, 'POST', `/tickets/${kept.id}/transfer`, { attendee: person('Grace Hopper') });
        const checkin = await checkIn(c, event.id, { code: transferred.code });
        const undone = await c.expect(200, 'DELETE', `/events/${event.id}/checkin/${kept.id}`);
        const cancelledTicket = await c.expect(200, 'POST', `/tickets/${dropped.id}/cancel`);
        const payout = await c.expect(201, 'POST', `/events/${event.id}/payouts`);
        const cancelledEvent = await c.expect(200, 'POST', `/events/${event.id}/cancel`);
        const finalTicket = await c.expect(200, 'GET', `/tickets/${kept.id}`);

        const outbox = await messages(c);
        assert.deepEqual(
          outbox.map((m) => [m.event, m.data]),
          [
            ['event.created', event],
            ['event.published', published],
            ['ticket.purchased', kept],
            ['ticket.purchased', dropped],
            ['payment.completed', { ...order, amount: 6000, provider: 'external' }],
            ['ticket.transferred', transferred],
            ['checkin.completed', checkin],
            ['checkin.undone', { ...undone, listId: null, direction: 'entry' }],
            ['ticket.cancelled', { ...cancelledTicket, refundedAmount: 0 }],
            ['payment.refunded', { orderId: order.id, ticketId: dropped.id, amount: 3000, currency: 'EUR', provider: 'external', paymentId: outbox[9]?.data.paymentId }],
            ['payout.processed', payout],
            ['event.cancelled', cancelledEvent],
            ['ticket.cancelled', { ...finalTicket, refundedAmount: 0 }],
            ['payment.refunded', { orderId: order.id, ticketId: kept.id, amount: 3000, currency: 'EUR', provider: 'external', paymentId: outbox[13]?.data.paymentId }],
          ],
        );
        assert.equal(new Set(outbox.map((m) => m.id)).size, outbox.length, 'every message has its own id');
        const timestamps = outbox.map((m) => m.timestamp);
        assert.deepEqual([...timestamps].sort(), timestamps, 'timestamps in order');
        assert.equal(outbox[0]!.timestamp, event.createdAt);
        // The cancellation's messages carry its time; its refund's, when the money moved after the commit.
        assert.equal(outbox.at(-2)!.timestamp, cancelledEvent.cancelledAt);
        assert.ok(outbox.at(-1)!.timestamp >= cancelledEvent.cancelledAt);
      });
    });

    describe('tenant isolation and ids', () => {
      test('another account gets 404 on every route of an event, its tickets and its check-ins, and changes nothing', async () => {
        const owner = await client();
        const stranger = await client();
        const { event, types } = await publishedEvent(owner, { types: [{ price: 1000 }] });
        const order = await buy(owner, event.id, [{ ticketTypeId: types[0].id, quantity: 2 }]);
        const [ticket, checkedIn] = order.tickets;
        await checkIn(owner, event.id, { ticketId: checkedIn.id });
        const ownerOutbox = await watchOutbox(owner);
        const e = `/events/${event.id}`;
        const routes: Array<[string, string, unknown?]> = [
          ['GET', e],
          ['PATCH', e, { name: 'Mine now' }],
          ['DELETE', e],
          ['POST', `${e}/publish`],
          ['POST', `${e}/cancel`],
          ['GET', `${e}/tickets`],
          ['POST', `${e}/tickets`, { name: 'Extra', price: 0, quantity: 5 }],
          ['PATCH', `${e}/tickets/${types[0].id}`, { name: 'Mine now' }],
          ['POST', `${e}/orders`, orderBody([{ ticketTypeId: types[0].id }])],
          ['GET', `/orders/${order.id}`],
          ['GET', `/tickets/${ticket.id}`],
          ['POST', `/tickets/${ticket.id}/cancel`],
          ['POST', `/tickets/${ticket.id}/transfer`, { attendee: person('Mallory') }],
          ['GET', `${e}/attendees`],
          ['GET', `${e}/attendees/export`],
          ['GET', `${e}/attendees/export?format=json`],
          ['POST', `${e}/checkin`, { ticketId: ticket.id }],
          ['POST', `${e}/checkin`, { code: ticket.code }],
          ['DELETE', `${e}/checkin/${checkedIn.id}`],
          ['GET', `${e}/analytics`],
          ['GET', `${e}/analytics/sales`],
          ['GET', `${e}/analytics/checkins`],
          ['POST', `${e}/payouts`],
          ['GET', `${e}/payouts`],
        ];
        for (const [method, path, json] of routes) {
          const res = await stranger.send(method, path, json);
          await problem(res, 404, 'not_found').catch((err: Error) => assert.fail(`${method} ${path}: ${err.message}`));
        }
        // The stranger's own event does not reach the owner's tickets either.
        const own = await publishedEvent(stranger);
        await problem(await stranger.post(`/events/${own.event.id}/checkin`, { ticketId: ticket.id }), 404, 'not_found');
        await problem(await stranger.post(`/events/${own.event.id}/checkin`, { code: ticket.code }), 404, 'not_found');
        await problem(await stranger.delete(`/events/${own.event.id}/checkin/${checkedIn.id}`), 404, 'not_found');
        await problem(await stranger.post(`/events/${own.event.id}/orders`, orderBody([{ ticketTypeId: types[0].id }])), 400, 'invalid_request');
        assert.deepEqual((await stranger.expect(200, 'GET', '/events')).data.map((x: { id: string }) => x.id), [own.event.id]);

        const after = await owner.expect(200, 'GET', e);
        assert.deepEqual([after.name, after.status, after.ticketsSold], [event.name, 'published', 2]);
        assert.deepEqual(await owner.expect(200, 'GET', `/tickets/${ticket.id}`), ticket);
        assert.equal((await owner.expect(200, 'GET', `/tickets/${checkedIn.id}`)).checkedIn, true);
        assert.deepEqual((await listTypes(owner, event.id)).map((t) => [t.name, t.sold]), [['General', 2]]);
        assert.deepEqual((await owner.expect(200, 'GET', `${e}/payouts`)).data, []);
        assert.deepEqual(await ownerOutbox(), [], "nothing happened to the owner's data");
      });

      test('ids of the wrong shape in a path are 404, never 500', async () => {
        const c = await client();
        const { event, types } = await publishedEvent(c);
        const [ticket] = (await buy(c, event.id, [{ ticketTypeId: types[0].id }])).tickets;
        const wrong = ['nope', 'evt_', `evt_${'0'.repeat(26)}`, `tkt_${'z'.repeat(26)}`, "evt_' or 1=1 --", 'x'.repeat(150), 'caf%C3%A9', '%E2%80%AE', '..%2Fsecret'];
        for (const id of wrong) {
          for (const [method, path, json] of routesWithId(id, event.id, types[0].id, ticket.id)) {
            const res = await c.send(method, path, json);
            await problem(res, 404, 'not_found').catch((err: Error) => assert.fail(`${method} ${path}: ${err.message}`));
          }
        }
      });

      test(
        'a NUL character in an id, a filter or a text field is a 4xx, never a 500',
        async () => {
          const c = await client();
          const { event, types } = await publishedEvent(c);
          const [ticket] = (await buy(c, event.id, [{ ticketTypeId: types[0].id }])).tickets;
          const failures: string[] = [];
          const expect = async (statuses: number[], method: string, path: string, json?: unknown) => {
            const res = await c.send(method, path, json);
            if (!statuses.includes(res.status)) failures.push(`${method} ${path} ${json ? JSON.stringify(json) : ''}: ${res.status} ${(await res.json()).code}`);
          };
          for (const [method, path, json] of routesWithId('%00', event.id, types[0].id, ticket.id)) await expect([404], method, path, json);
          for (const id of ['evt_%00', `${event.id}%00`]) await expect([404], 'GET', `/events/${id}`);
          await expect([400, 404], 'POST', `/events/${event.id}/checkin`, { code: 'abc\u0000' });
          await expect([400, 404], 'POST', `/events/${event.id}/checkin`, { ticketId: `${ticket.id}\u0000` });
          await expect([400], 'POST', `/events/${event.id}/orders`, orderBody([{ ticketTypeId: `${types[0].id}\u0000` }]));
          await expect([200, 400], 'GET', '/events?q=a%00');
          await expect([200, 400], 'GET', `/events/${event.id}/attendees?q=a%00`);
          await expect([200, 400], 'GET', `/events/${event.id}/attendees?ticketTypeId=tt_%00`);
          await expect([201, 400], 'POST', '/events', eventInput({ name: 'Nul\u0000Night' }));
          await expect([200, 400], 'POST', `/tickets/${ticket.id}/transfer`, { attendee: { name: 'Nul\u0000', email: 'nul@example.com' } });
          assert.deepEqual(failures, []);
        },
      );

      test(
        'an over-long id in a path is a 404 problem too, not a bare 414',
        async () => {
          const c = await client();
          const { event, types } = await publishedEvent(c);
          const [ticket] = (await buy(c, event.id, [{ ticketTypeId: types[0].id }])).tickets;
          const failures: string[] = [];
          for (const [method, path, json] of routesWithId('x'.repeat(250), event.id, types[0].id, ticket.id)) {
            const res = await c.send(method, path, json);
            const type = res.headers.get('content-type') ?? '';
            const body = await res.text();
            if (res.status !== 404 || !type.startsWith('application/problem+json')) failures.push(`${method} ${path.replace(/x{250}/, 'x…(250)')}: ${res.status} ${type} ${body.slice(0, 60)}…`);
          }
          assert.deepEqual(failures, []);
        },
      );

      test(
        'every 201 of the event area carries a Location that leads to the created resource',
        async () => {
          const c = await client();
          const created: Array<[string, ApiResponse, Json]> = [];
          const create = async (what: string, path: string, json?: unknown) => {
            const res = await c.post(path, json);
            const body = await res.json();
            assert.equal(res.status, 201, `${what}: ${JSON.stringify(body)}`);
            created.push([what, res, body]);
            return body;
          };
          const event = await create('event', '/events', eventInput());
          const type = await create('ticket type', `/events/${event.id}/tickets`, { name: 'General', price: 100, quantity: 10 });
          await c.expect(200, 'POST', `/events/${event.id}/publish`);
          const order = await create('order', `/events/${event.id}/orders`, orderBody([{ ticketTypeId: type.id }]));
          await create('check-in', `/events/${event.id}/checkin`, { ticketId: order.tickets[0].id });
          await create('payout', `/events/${event.id}/payouts`);
          const failures: string[] = [];
          for (const [what, res, body] of created) {
            const location = res.headers.get('location');
            if (!location) {
              failures.push(`${what}: no Location`);
              continue;
            }
            const target = await c.api.fetch(location, { key: c.key });
            if (target.status !== 200) failures.push(`${what}: GET ${location} answered ${target.status}`);
            else assert.equal((await target.json()).id, body.id, what);
          }
          assert.deepEqual(failures, []);
        },
      );
    });
  });
}

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import sharp from 'sharp';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until } from './helpers.js';

type Json = Record<string, any>;

/** How many items of each list the world below makes (at least; some lists hold a few more). */
const N = 5;
const LIMIT = 2;

/** A webhook receiver on loopback that answers 204 to everything. */
async function receiver(t: TestContext): Promise<string> {
  const server = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

/** Follows `$ref`s into components. */
function resolve(doc: Json, schema: Json | undefined): Json | undefined {
  let s = schema;
  for (let i = 0; s?.$ref && i < 10; i++) s = s.$ref.replace(/^#\//, '').split('/').reduce((o: Json, k: string) => o?.[k], doc);
  return s;
}

/**
 * Every list operation of the document: a GET whose 200 JSON holds a `data` array. (Each must then
 * be a page, `{ data, hasMore, nextCursor }`: a list that answers everything at once is what this catches.)
 */
function listOperations(doc: Json): Array<{ path: string; op: Json; body: Json }> {
  const lists: Array<{ path: string; op: Json; body: Json }> = [];
  for (const [path, ops] of Object.entries<Json>(doc.paths)) {
    const op = ops.get;
    const body = resolve(doc, op?.responses?.['200']?.content?.['application/json']?.schema);
    const data = resolve(doc, body?.properties?.data);
    if (data?.type === 'array') lists.push({ path, op, body: body! });
  }
  return lists;
}

const itemId = (item: Json): string => item.id ?? item.jobId ?? item.ticketId ?? item.kid;

/**
 * The world every list is walked in: for each list path of the document, the concrete path of a
 * list holding at least N items. A list the document gains without an entry here fails the test.
 */
async function makeWorld(t: TestContext, api: TestApp): Promise<Record<string, { path: string; key: string }>> {
  const hook = await receiver(t);
  const { key } = await api.account();
  const call = async (method: string, path: string, json?: unknown, withKey = key) => {
    const res = await api.fetch(`/v1${path}`, { method, key: withKey, json });
    assert.ok(res.status < 300, `${method} ${path} → ${res.status} ${await res.clone().text()}`);
    return res.status === 204 ? null : ((await res.json()) as Json);
  };
  const startsAt = Date.now() + 30 * 86_400_000;
  const eventBody = (i: number) => ({ name: `Event ${i}`, startsAt: new Date(startsAt).toISOString(), endsAt: new Date(startsAt + 3_600_000).toISOString(), timezone: 'Europe/Berlin', currency: 'EUR' });

  for (let i = 1; i < N; i++) await call('POST', '/keys', { name: `key ${i}` });
  const events = [];
  for (let i = 0; i < N; i++) events.push(await call('POST', '/events', eventBody(i)));
  const event = events[0]!;
  const types = [];
  for (let i = 0; i < N; i++) types.push(await call('POST', `/events/${event.id}/tickets`, { name: `Type ${i}`, price: 1000, quantity: 100 }));
  await call('POST', `/events/${event.id}/publish`);
  for (let i = 1; i < N; i++) await call('POST', `/events/${event.id}/signing-keys/rotate`);
  const tickets = [];
  for (let i = 0; i < N; i++) {
    const order = await call('POST', `/events/${event.id}/orders`, { buyer: { name: `Buyer ${i}`, email: `buyer${i}@example.com` }, items: [{ ticketTypeId: types[i]!.id, quantity: 1 }] });
    tickets.push(...order!.tickets);
    await call('POST', `/events/${event.id}/payouts`);
  }
  for (const ticket of tickets) await call('POST', `/events/${event.id}/checkin`, { ticketId: ticket.id });
  const checkinLists: Json[] = [];
  for (let i = 0; i < N; i++) checkinLists.push((await call('POST', `/events/${event.id}/checkin-lists`, { name: `List ${i}` })) as Json);
  for (let i = 0; i < N; i++) await call('POST', `/events/${event.id}/questions`, { label: `Question ${i}`, kind: 'text' });
  // A sold-out ticket type and N people waiting for it.
  const scarce = await call('POST', `/events/${event.id}/tickets`, { name: 'Scarce', price: 0, quantity: 1 });
  await call('POST', `/events/${event.id}/orders`, { buyer: { name: 'First', email: 'first@example.com' }, items: [{ ticketTypeId: scarce!.id, quantity: 1 }] });
  for (let i = 0; i < N; i++) await call('POST', `/events/${event.id}/waitlist`, { ticketTypeId: scarce!.id, name: `Waiting ${i}`, email: `waiting${i}@example.com` });
  await call('POST', `/events/${event.id}/vouchers/bulk`, { count: N, codePrefix: 'LIST-' });
  // Two doors admitted every ticket through the first list: one conflict per ticket.
  const scans = tickets.flatMap((ticket, i) => [0, 1].map((door) => ({ scanId: `s${i}-${door}`, ticketId: ticket.id, listId: checkinLists[0]!.id, scannedAt: new Date(Date.now() - 60_000 + door * 1000).toISOString(), localResult: 'admitted' })));
  await call('POST', `/events/${event.id}/checkin/sync`, { deviceId: 'door', scans });
  for (let i = 0; i < N; i++) await call('POST', '/blend/start', { projectId: 'lists', images: [`${hook}/${i}/1.png`, `${hook}/${i}/2.png`] });
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#404040' } }).png().toBuffer();
  for (let i = 0; i < N; i++) {
    const form = new FormData();
    form.append('file', new Blob([png]), `${i}.png`);
    assert.equal((await api.fetch('/v1/blend/uploads', { method: 'POST', key, body: form })).status, 201);
  }

  // Deliveries in an account of their own, so that their number settles at N.
  const other = await api.account();
  const subscriptions = [];
  for (let i = 0; i < N; i++) subscriptions.push(await call('POST', '/webhooks', { url: hook, events: i === 0 ? ['event.created'] : ['payout.processed'] }, other.key));
  for (let i = 0; i < N; i++) await call('POST', '/events', eventBody(i), other.key);
  const deliveries = `/v1/webhooks/${subscriptions[0]!.id}/deliveries`;
  await until(async () => (await (await api.fetch(`${deliveries}?limit=100`, { key: other.key })).json()).data?.length === N, 20_000, 'the deliveries');

  return {
    '/v1/keys': { path: '/v1/keys', key },
    '/v1/events': { path: '/v1/events', key },
    '/v1/events/{id}/tickets': { path: `/v1/events/${event.id}/tickets`, key },
    '/v1/events/{id}/attendees': { path: `/v1/events/${event.id}/attendees`, key },
    '/v1/events/{id}/checkins': { path: `/v1/events/${event.id}/checkins`, key },
    '/v1/events/{id}/payouts': { path: `/v1/events/${event.id}/payouts`, key },
    '/v1/events/{id}/signing-keys': { path: `/v1/events/${event.id}/signing-keys`, key },
    '/v1/events/{id}/checkin-lists': { path: `/v1/events/${event.id}/checkin-lists`, key },
    '/v1/events/{id}/checkin-lists/{listId}/conflicts': { path: `/v1/events/${event.id}/checkin-lists/${checkinLists[0]!.id}/conflicts`, key },
    '/v1/events/{id}/questions': { path: `/v1/events/${event.id}/questions`, key },
    '/v1/events/{id}/vouchers': { path: `/v1/events/${event.id}/vouchers`, key },
    '/v1/events/{id}/orders': { path: `/v1/events/${event.id}/orders`, key },
    '/v1/events/{id}/waitlist': { path: `/v1/events/${event.id}/waitlist`, key },
    '/v1/webhooks': { path: '/v1/webhooks', key: other.key },
    '/v1/webhooks/{id}/deliveries': { path: deliveries, key: other.key },
    '/v1/blend/jobs': { path: '/v1/blend/jobs', key },
    '/v1/blend/uploads': { path: '/v1/blend/uploads', key },
  };
}

for (const engine of ENGINES) {
  describe(`every list of the OpenAPI document pages (${engine})`, () => {
    test('limit 1..100 and cursor, refused outside, walked page by page by nextCursor and Link', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
      const doc = (await (await api.fetch('/openapi.json')).json()) as Json;
      const lists = listOperations(doc);
      assert.ok(lists.length > 0, 'the document has lists');
      const world = await makeWorld(t, api);

      for (const { path: pattern, op, body: pageSchema } of lists) {
        assert.deepEqual(Object.keys(pageSchema.properties).sort(), ['data', 'hasMore', 'nextCursor'], `${pattern} answers a page`);
        assert.ok(world[pattern], `the test has no way to fill the list ${pattern}: add it to makeWorld`);
        const { path, key } = world[pattern];

        const params = (op.parameters ?? []) as Json[];
        const limit = params.find((p) => p.in === 'query' && p.name === 'limit');
        const cursor = params.find((p) => p.in === 'query' && p.name === 'cursor');
        assert.ok(limit && cursor, `${pattern} declares limit and cursor`);
        assert.equal(limit.schema.type, 'integer', pattern);
        assert.deepEqual([limit.schema.minimum, limit.schema.maximum], [1, 100], pattern);
        assert.equal(cursor.schema.type, 'string', pattern);

        for (const bad of ['0', '101']) {
          const body = await problem(await api.fetch(`${path}?limit=${bad}`, { key }), 400, 'invalid_request');
          assert.equal(body.errors?.[0]?.path, '/query/limit', `${pattern} limit=${bad}`);
        }

        const everything = (await (await api.fetch(`${path}?limit=100`, { key })).json()) as Json;
        assert.equal(everything.hasMore, false, pattern);
        const all = (everything.data as Json[]).map(itemId);
        assert.ok(all.length >= N, `${pattern} holds ${all.length} items`);

        const walked: string[] = [];
        let next: string | null = `${path}?limit=${LIMIT}`;
        let pages = 0;
        while (next) {
          const res = await api.fetch(next, { key });
          assert.equal(res.status, 200, `${next}: ${await res.clone().text()}`);
          const page = (await res.json()) as Json;
          pages++;
          assert.ok(page.data.length <= LIMIT && page.data.length > 0, `${pattern} page ${pages} has ${page.data.length} items`);
          walked.push(...page.data.map(itemId));
          const link = res.headers.get('link');
          if (page.hasMore) {
            assert.ok(page.nextCursor, `${pattern} page ${pages}: hasMore with a cursor`);
            const target = /^<([^>]+)>; rel="next"$/.exec(link ?? '')?.[1];
            assert.ok(target, `${pattern} page ${pages}: Link ${link}`);
            assert.equal(new URL(target, api.url).searchParams.get('cursor'), page.nextCursor, `${pattern}: the Link goes where nextCursor does`);
            assert.equal(new URL(target, api.url).searchParams.get('limit'), String(LIMIT), `${pattern}: the Link keeps the query`);
            next = target;
          } else {
            assert.equal(page.nextCursor, null, pattern);
            assert.equal(link, null, `${pattern}: no Link on the last page`);
            next = null;
          }
          assert.ok(pages <= 100, `${pattern}: the walk ends`);
        }
        assert.ok(pages > 1, `${pattern}: more than one page`);
        assert.equal(new Set(walked).size, walked.length, `${pattern}: no item twice`);
        assert.deepEqual(walked, all, `${pattern}: the pages together are the whole list, in order`);
      }
    });
  });
}

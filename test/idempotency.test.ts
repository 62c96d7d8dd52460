import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../src/errors.js';
import { ENGINES, freshStorage, problem, startApp } from './helpers.js';

/** Routes that count how often their work really runs. */
function countingRoutes() {
  const runs = { create: 0, flaky: 0, conflict: 0 };
  let release: () => void = () => {};
  const routes: FastifyPluginAsyncTypebox = async (app) => {
    const body = Type.Object({ name: Type.String(), n: Type.Optional(Type.Integer()) }, { additionalProperties: false });
    app.post('/test/things', { schema: { body } }, async (request, reply) => {
      runs.create++;
      return reply.code(201).header('Location', `/v1/test/things/${runs.create}`).send({ id: runs.create, ...request.body });
    });
    app.post('/test/slow', async () => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { done: true };
    });
    app.post('/test/flaky', async () => {
      runs.flaky++;
      if (runs.flaky === 1) throw new Error('database went away');
      return { attempt: runs.flaky };
    });
    app.post('/test/conflict', async () => {
      runs.conflict++;
      throw new AppError('sold_out', 'Nothing left.');
    });
  };
  return { runs, routes, release: () => release() };
}

for (const engine of ENGINES) {
  describe(`Idempotency-Key (${engine})`, () => {
    test('a retry with the same body replays the first response and changes nothing', async (t) => {
      const { runs, routes } = countingRoutes();
      const api = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      const { key } = await api.account();
      const send = (path: string, json: unknown, idem = 'order-123') =>
        api.fetch(path, { method: 'POST', key, json, headers: { 'idempotency-key': idem } });

      const first = await send('/v1/test/things', { name: 'a', n: 1 });
      assert.equal(first.status, 201);
      const firstBody = await first.text();
      assert.equal(first.headers.get('idempotent-replayed'), null);

      // Same body with keys in another order, through the /api/v1 alias: the same request.
      const again = await send('/api/v1/test/things', { n: 1, name: 'a' });
      assert.equal(again.status, 201);
      assert.equal(await again.text(), firstBody);
      assert.equal(again.headers.get('location'), first.headers.get('location'));
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(runs.create, 1);

      await problem(await send('/v1/test/things', { name: 'b', n: 1 }), 409, 'idempotency_key_reused');
      assert.equal(runs.create, 1);

      // Keys are scoped to account, method and path.
      const other = await api.account();
      const theirs = await api.fetch('/v1/test/things', { method: 'POST', key: other.key, json: { name: 'a', n: 1 }, headers: { 'idempotency-key': 'order-123' } });
      assert.equal(theirs.status, 201);
      assert.equal(runs.create, 2);
      assert.equal((await send('/v1/test/things', { name: 'a' }, 'order-124')).status, 201);
      assert.equal(runs.create, 3);
      // Without the header nothing is stored.
      assert.equal((await api.fetch('/v1/test/things', { method: 'POST', key, json: { name: 'a', n: 1 } })).status, 201);
      assert.equal(runs.create, 4);
    });

    test('4xx answers are stored and replayed; 5xx are not, so the retry runs again', async (t) => {
      const { runs, routes } = countingRoutes();
      const api = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      const { key } = await api.account();
      const send = (path: string) => api.fetch(path, { method: 'POST', key, headers: { 'idempotency-key': 'k1' } });

      await problem(await send('/v1/test/conflict'), 409, 'sold_out');
      const replayed = await send('/v1/test/conflict');
      assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
      assert.match(replayed.headers.get('content-type') ?? '', /problem\+json/);
      assert.equal((await replayed.json()).code, 'sold_out');
      assert.equal(runs.conflict, 1);

      await problem(await send('/v1/test/flaky'), 500, 'internal_error');
      const retried = await send('/v1/test/flaky');
      assert.equal(retried.status, 200);
      assert.deepEqual(await retried.json(), { attempt: 2 });
      assert.equal(runs.flaky, 2);
    });

    test('a retry while the first request runs is refused; a key is bound to its first body until it expires (24 h)', async (t) => {
      const { routes, release } = countingRoutes();
      const api = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      const { key, accountId } = await api.account();
      const send = () => api.fetch('/v1/test/slow', { method: 'POST', key, headers: { 'idempotency-key': 'slow-1' } });

      const first = send();
      for (let i = 0; i < 100; i++) {
        const row = await api.database.db.selectFrom('idempotencyKeys').select('state').where('accountId', '=', accountId).executeTakeFirst();
        if (row) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      await problem(await send(), 409, 'idempotency_request_in_progress');
      release();
      assert.equal((await first).status, 200);
      assert.equal((await send()).headers.get('idempotent-replayed'), 'true');

      // A holder whose process died leaves an in-progress row; once its lock lapses, a retry proceeds.
      await api.database.db
        .insertInto('idempotencyKeys')
        .values({
          accountId,
          method: 'POST',
          path: '/v1/test/things',
          idempotencyKey: 'orphan',
          requestHash: 'ea5c4bc1bc7c21b1d2b9b5e3fd7d0a8b2b1e2e6b9f0b0a4e4f1e3c6e1f7b1a2c',
          state: 'in_progress',
          responseStatus: null,
          responseHeaders: null,
          responseBody: null,
          createdAt: Date.now() - 120_000,
          lockedUntil: Date.now() - 60_000,
        })
        .execute();
      const orphan = await api.fetch('/v1/test/things', { method: 'POST', key, json: { name: 'x' }, headers: { 'idempotency-key': 'orphan' } });
      // Another body than the orphan's: still refused, since the key is bound to its first body.
      await problem(orphan, 409, 'idempotency_key_reused');
      await api.database.db.updateTable('idempotencyKeys').set({ createdAt: Date.now() - 25 * 3_600_000 }).where('idempotencyKey', '=', 'orphan').execute();
      const afterExpiry = await api.fetch('/v1/test/things', { method: 'POST', key, json: { name: 'x' }, headers: { 'idempotency-key': 'orphan' } });
      assert.equal(afterExpiry.status, 201, 'a key older than 24 h is free again');
    });

    test('a takeover: the same body after the holder died proceeds', async (t) => {
      const { runs, routes } = countingRoutes();
      const api = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      const { key, accountId } = await api.account();
      const first = await api.fetch('/v1/test/things', { method: 'POST', key, json: { name: 'y' }, headers: { 'idempotency-key': 'dead' } });
      assert.equal(first.status, 201);
      // Make the stored row look like a holder that died mid-request.
      await api.database.db
        .updateTable('idempotencyKeys')
        .set({ state: 'in_progress', responseStatus: null, responseBody: null, lockedUntil: Date.now() - 1 })
        .where('accountId', '=', accountId)
        .execute();
      const retry = await api.fetch('/v1/test/things', { method: 'POST', key, json: { name: 'y' }, headers: { 'idempotency-key': 'dead' } });
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get('idempotent-replayed'), null);
      assert.equal(runs.create, 2);
    });

    test('a malformed Idempotency-Key is a 400', async (t) => {
      const { routes } = countingRoutes();
      const api = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      const { key } = await api.account();
      const body = await problem(
        await api.fetch('/v1/test/things', { method: 'POST', key, json: { name: 'z' }, headers: { 'idempotency-key': 'x'.repeat(300) } }),
        400,
        'invalid_request',
      );
      assert.equal(body.errors[0].path, '/headers/idempotency-key');
    });

    test('a key belongs to the route and its decoded IDs: a percent-encoded spelling of the same order path replays', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const post = async (path: string, json: unknown) => {
        const res = await api.fetch(path, { method: 'POST', key, json });
        assert.ok(res.status < 300, `${path}: ${res.status} ${await res.clone().text()}`);
        return res.json();
      };
      const startsAt = Date.now() + 30 * 86_400_000;
      const event = await post('/v1/events', { name: 'Idempotent', startsAt: new Date(startsAt).toISOString(), endsAt: new Date(startsAt + 3_600_000).toISOString(), timezone: 'UTC', currency: 'EUR' });
      const type = await post(`/v1/events/${event.id}/tickets`, { name: 'General', price: 2500, quantity: 10 });
      await post(`/v1/events/${event.id}/publish`, undefined);
      const order = JSON.stringify({ buyer: { name: 'Ada', email: 'ada@example.com' }, items: [{ ticketTypeId: type.id, quantity: 1 }] });

      // Raw request lines, exactly as written: fetch would keep them too, but this leaves no doubt.
      const raw = (path: string) =>
        new Promise<{ status: number; replayed: string | undefined; body: string }>((resolve, reject) => {
          const req = http.request(`${api.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'order-once' } }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, replayed: res.headers['idempotent-replayed'] as string | undefined, body }));
          });
          req.on('error', reject);
          req.end(order);
        });
      const encodedId = `%${event.id.charCodeAt(0).toString(16)}${event.id.slice(1)}`; // evt_... with its "e" percent-encoded
      const first = await raw(`/v1/events/${event.id}/orders`);
      assert.equal(first.status, 201, first.body);
      for (const path of [`/v1/events/${encodedId}/orders`, `/api/v1/events/${encodedId}/orders`, `/v1/%65vents/${event.id}/orders`, `/v1/events/${encodedId.replace('_', '%5F')}/orders`]) {
        const again = await raw(path);
        assert.equal(again.status, 201, `${path}: ${again.body}`);
        assert.equal(again.replayed, 'true', path);
        assert.equal(again.body, first.body, path);
      }
      const orders = await (await api.fetch(`/v1/events/${event.id}/attendees`, { key })).json();
      assert.equal(orders.data.length, 1, 'one order, one ticket');
    });
  });
}

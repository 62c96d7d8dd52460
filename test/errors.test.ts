import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { Type } from 'typebox';
import { AppError } from '../src/errors.js';
import { type ApiResponse, ENGINES, freshStorage, problem, startApp } from './helpers.js';

/** Sends bytes no HTTP client library would send, on a connection of its own, and reads the answer. */
async function rawRequest(url: string, request: string): Promise<ApiResponse> {
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {}); // a refusal may close the connection before the whole request is written
  socket.write(request);
  await new Promise((resolve) => socket.on('close', resolve));
  const text = Buffer.concat(chunks).toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers = new Headers(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string]));
  return new Response(text.slice(end + 4), { status: Number(statusLine.split(' ')[1]), headers });
}

for (const engine of ENGINES) {
  describe(`errors as problem details (${engine})`, () => {
    test('413, 415 and malformed JSON each have their problem', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BODY_LIMIT: '2048' });
      const { key } = await api.account();
      const big = JSON.stringify({ name: 'x'.repeat(4000) });
      await problem(await api.fetch('/v1/keys', { method: 'POST', key, body: big, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
      await problem(await api.fetch('/v1/keys', { method: 'POST', key, body: 'name=x', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
      await problem(
        await api.fetch('/v1/keys', { method: 'POST', key, body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
        415,
        'unsupported_media_type',
      );
      await problem(await api.fetch('/v1/keys', { method: 'POST', key, body: '{"name": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
      await problem(
        await api.fetch('/v1/keys', { method: 'POST', key, body: '{"__proto__": {"admin": true}}', headers: { 'content-type': 'application/json' } }),
        400,
        'invalid_request',
      );
    });

    test('validation errors list every failing path; unknown properties are refused', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const body = await problem(
        await api.fetch('/v1/keys', { method: 'POST', key, json: { name: '', scopes: ['bogus'], nmae: 'typo' } }),
        400,
        'invalid_request',
      );
      const paths = body.errors.map((e: { path: string }) => e.path);
      for (const expected of ['/name', '/scopes/0', '/nmae']) assert.ok(paths.includes(expected), `${expected} in ${paths}`);
      assert.ok(body.errors.every((e: { message: string }) => typeof e.message === 'string' && e.message.length > 0));

      const query = await problem(await api.fetch('/v1/keys?limit=abc&colour=red', { key }), 400, 'invalid_request');
      const queryPaths = query.errors.map((e: { path: string }) => e.path);
      assert.ok(queryPaths.includes('/query/limit') && queryPaths.includes('/query/colour'), String(queryPaths));
    });

    test('unknown query parameters, bodies where none belongs, deep nesting and clockless times are 400s', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const unknown = await problem(await api.fetch('/v1/account?nmae=1', { key }), 400, 'invalid_request');
      assert.equal(unknown.errors[0].path, '/query/nmae');
      const keyId = (await (await api.fetch('/v1/account', { key })).json()).key.id;
      await problem(await api.fetch(`/v1/keys/${keyId}/revoke`, { method: 'POST', key, json: { force: true } }), 400, 'invalid_request');
      assert.equal((await api.fetch(`/v1/keys/${keyId}/revoke`, { method: 'POST', key: (await api.account()).key })).status, 404, 'no body: fine');
      const deep = '['.repeat(5000) + ']'.repeat(5000);
      await problem(await api.fetch('/v1/keys', { method: 'POST', key, body: deep, headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
      const leap = await problem(await api.fetch('/v1/keys', { method: 'POST', key, json: { expiresAt: '2030-12-31T23:59:60Z' } }), 400, 'invalid_request');
      assert.equal(leap.errors[0].path, '/expiresAt');
      const event = await (await api.fetch('/v1/events', { method: 'POST', key, json: { name: 'E', startsAt: '2030-01-01T10:00:00Z', endsAt: '2030-01-01T12:00:00Z', timezone: 'UTC', currency: 'EUR' } })).json();
      await problem(await api.fetch(`/v1/events/${event.id}/publish`, { method: 'POST', key, json: { force: true } }), 400, 'invalid_request');
      await problem(await api.fetch(`/v1/events/${event.id}/analytics/sales?from=2026-06-30T23:59:60Z`, { key }), 400, 'invalid_request');
      await problem(await api.fetch('/v1/events?startsAfter=2026-06-30T23:59:60Z', { key }), 400, 'invalid_request');
      const big = await api.fetch(`/v1/events/${event.id}/tickets`, { method: 'POST', key, json: { name: 'Gala', price: 3_000_000_000, quantity: 2 } });
      assert.equal(big.status, 201, 'money beyond 2^31 cents fits');
    });

    test('a lone surrogate, a control character, a number not written in decimal or a compressed body is a 4xx, and nothing is stored', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const event = (name: string) => JSON.stringify({ name, startsAt: '2030-01-01T10:00:00Z', endsAt: '2030-01-01T12:00:00Z', timezone: 'UTC', currency: 'EUR' });
      const post = (body: string, headers: Record<string, string> = {}) => api.fetch('/v1/events', { method: 'POST', key, body, headers: { 'content-type': 'application/json', ...headers } });
      // JSON.stringify writes a lone surrogate as the escape \ud800, which is how a client sends one.
      const cases: Array<[string, string]> = [
        ['Gala \ud800', 'lone UTF-16 surrogate'],
        ['\udc00 Gala', 'lone UTF-16 surrogate'],
        ['Gala \u0007', 'control character'],
        ['\u001b[31mGala', 'control character'],
        ['Gala \u0085', 'control character'],
      ];
      for (const [name, reason] of cases) {
        const body = await problem(await post(event(name)), 400, 'invalid_request');
        assert.equal(body.errors[0].path, '/name', name);
        assert.ok(body.errors[0].message.includes(reason), body.errors[0].message);
      }
      const key_ = await problem(await post('{"name":"E","metadata":{"a\\ud800":"x"}}'), 400, 'invalid_request');
      assert.match(key_.errors[0].message, /its name must be well-formed Unicode/);
      // A pair of surrogates is one character; tab, line feed and carriage return are text.
      assert.equal((await post(event('Gala 😀'))).status, 201);
      assert.equal((await post(JSON.stringify({ ...JSON.parse(event('Gala')), description: 'Doors open\tat 7\r\nBar at 8' }))).status, 201);
      await problem(await api.fetch('/v1/events?q=a%07', { key }), 400, 'invalid_request');
      await problem(await api.fetch('/v1/events?q=a%1B', { key }), 400, 'invalid_request');

      // Text numbers are read as written in decimal digits, not as JavaScript would read them.
      for (const limit of ['0x10', '1e2', '%205', '5%20', '1.0', '+5', '']) {
        const body = await problem(await api.fetch(`/v1/events?limit=${limit}`, { key }), 400, 'invalid_request');
        assert.equal(body.errors[0].path, '/query/limit', limit);
      }
      const both = await problem(await api.fetch('/v1/events?limit=0x10&colour=red', { key }), 400, 'invalid_request');
      assert.deepEqual(both.errors.map((e: { path: string }) => e.path).sort(), ['/query/colour', '/query/limit']);
      const page = await api.fetch('/v1/events?limit=2', { key });
      assert.equal(page.status, 200);
      assert.equal((await page.json()).data.length, 2);

      // A compressed body is refused before it is read (it would be parsed as its compressed bytes).
      const gzip = await problem(await post(event('Zipped'), { 'content-encoding': 'gzip' }), 415, 'unsupported_media_type');
      assert.match(gzip.detail, /Content-Encoding "gzip"/);
      // a request without a body is not judged by the header
      assert.equal((await api.fetch('/v1/events?limit=1', { key, headers: { 'content-encoding': 'gzip' } })).status, 200);
      assert.equal((await post(event('Plain'), { 'content-encoding': 'identity' })).status, 201);
      const names = (await (await api.fetch('/v1/events?limit=100', { key })).json()).data.map((e: { name: string }) => e.name).sort();
      assert.deepEqual(names, ['Gala', 'Gala 😀', 'Plain']);
    });

    test('unknown routes, and errors we did not expect, never leak internals', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), {}, {
        extraRoutes: async (app) => {
          app.get('/test/boom', async () => {
            throw new Error('select * from accounts where secret at /work/main/src/app.ts:12');
          });
          app.get('/test/conflict', async () => {
            throw new AppError('sold_out', 'Ticket type tt_x has 0 of 100 left.', { available: 0 });
          });
          app.get('/test/echo/:id', { schema: { params: Type.Object({ id: Type.String() }) } }, async (request) => request.params);
        },
      });
      const { key } = await api.account();
      await problem(await api.fetch('/v1/nothing-here', { key }), 404, 'not_found');
      await problem(await api.fetch('/nothing-here'), 404, 'not_found');
      const boom = await problem(await api.fetch('/v1/test/boom', { key }), 500, 'internal_error');
      assert.ok(!JSON.stringify(boom).includes('select'));
      const conflict = await problem(await api.fetch('/v1/test/conflict', { key }), 409, 'sold_out');
      assert.equal(conflict.available, 0, 'extension members reach the client');
      assert.ok(conflict.headers === undefined);
    });

    test('what is refused before any route runs is a problem too', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const send = (line: string, ...headers: string[]) => rawRequest(api.url, [line, ...headers, `Authorization: Bearer ${key}`, 'Connection: close', '', ''].join('\r\n'));
      // Found by the fuzzer (test/fuzz.test.ts): each of these was Fastify's or Node's own bare answer.
      await problem(await send('GET /v1/events/%zz HTTP/1.1', 'Host: x'), 400, 'invalid_request');
      await problem(await send('GET /v1/events/%E0%A4%A/tickets HTTP/1.1', 'Host: x'), 400, 'invalid_request');
      await problem(await send(`GET /v1/account?pad=${'q'.repeat(20_000)} HTTP/1.1`, 'Host: x'), 431, 'headers_too_large');
      await problem(await send('G@T /v1/account HTTP/1.1', 'Host: x'), 400, 'invalid_request');
      await problem(await send('GET /v1/account HTTP/1.1'), 400, 'invalid_request');
      await problem(await send('GET /v1/account HTTP/1.1', 'Host: x', 'Expect: teapot'), 417, 'expectation_failed');
      assert.equal((await send('GET /v1/account HTTP/1.0')).status, 200, 'HTTP/1.0 needs no Host');
    });

    test('every response carries X-Request-Id; a sane caller id is kept', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      for (const path of ['/healthz', '/v1/account', '/v1/missing', '/openapi.json']) {
        const res = await api.fetch(path, { key });
        assert.match(res.headers.get('x-request-id') ?? '', /^req_[0-9a-z]{26}$/, path);
      }
      const mine = await api.fetch('/v1/account', { key, headers: { 'x-request-id': 'trace-42.a:b' } });
      assert.equal(mine.headers.get('x-request-id'), 'trace-42.a:b');
      const hostile = await api.fetch('/v1/account', { key, headers: { 'x-request-id': '<script>' } });
      assert.match(hostile.headers.get('x-request-id') ?? '', /^req_/);
    });
  });
}

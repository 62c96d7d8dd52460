import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test, type TestContext } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { ConfigError, loadConfig } from '../src/config.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp } from './helpers.js';

const DOOR = 'https://door.example.com';
const APP = 'https://app.example.com';
const ORIGINS = { MONTAGE_CORS_ORIGINS: `${DOOR}, ${APP}` };

const preflight = (origin: string, method = 'POST', headers = 'authorization,content-type,idempotency-key') => ({
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
});

const list = (value: string | null) => (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

test('MONTAGE_CORS_ORIGINS takes origins, or * alone; anything else stops the start', () => {
  assert.deepEqual(loadConfig({}).corsOrigins, []);
  assert.deepEqual(loadConfig(ORIGINS).corsOrigins, [DOOR, APP]);
  assert.deepEqual(loadConfig({ MONTAGE_CORS_ORIGINS: '*' }).corsOrigins, ['*']);
  assert.deepEqual(loadConfig({ MONTAGE_CORS_ORIGINS: 'http://127.0.0.1:5173' }).corsOrigins, ['http://127.0.0.1:5173']);
  for (const bad of ['https://door.example.com/', 'door.example.com', 'https://door.example.com/scan', '*,https://door.example.com', 'ftp://door.example.com', 'https://door.example.com:443', 'https://Door.example.com', 'https://door.example.com,']) {
    assert.throws(() => loadConfig({ MONTAGE_CORS_ORIGINS: bad }), (e: unknown) => e instanceof ConfigError && e.variable === 'MONTAGE_CORS_ORIGINS' && /origin/.test(e.message), bad);
  }
});

for (const engine of ENGINES) {
  describe(`CORS (${engine})`, () => {
    test('off by default: OPTIONS is a 404 problem and no answer names an origin', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      await problem(await api.fetch('/v1/account', preflight(DOOR, 'GET')), 404, 'not_found');
      const res = await api.fetch('/v1/account', { key, headers: { origin: DOOR } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('access-control-allow-origin'), null);
    });

    test('configured origins: preflight without a key or a rate limit, answers a browser may read, other origins not named', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), ORIGINS);
      const { key } = await api.account('business', { scopes: ['checkin'] });

      for (const path of ['/v1/events/evt_01m8zzzzzzzzzzzzzzzzzzzzzz/checkin', '/api/v1/account']) {
        const res = await api.fetch(path, preflight(DOOR));
        assert.equal(res.status, 204, path);
        assert.equal(await res.text(), '');
        assert.equal(res.headers.get('access-control-allow-origin'), DOOR);
        assert.equal(res.headers.get('access-control-allow-credentials'), null, 'never credentials');
        for (const m of ['get', 'post', 'delete', 'patch']) assert.ok(list(res.headers.get('access-control-allow-methods')).includes(m), m);
        for (const h of ['authorization', 'content-type', 'idempotency-key', 'x-request-id']) assert.ok(list(res.headers.get('access-control-allow-headers')).includes(h), h);
        assert.equal(res.headers.get('access-control-max-age'), '600');
        assert.ok(list(res.headers.get('vary')).includes('origin'));
        assert.equal(res.headers.get('x-ratelimit-remaining'), null, 'a preflight spends nothing');
      }

      // Preflights do not count against the rate limits.
      const remaining = async () => Number((await api.fetch('/v1/account', { key, headers: { origin: DOOR } })).headers.get('x-ratelimit-remaining'));
      const before = await remaining();
      for (let i = 0; i < 5; i++) assert.equal((await api.fetch('/v1/account', preflight(APP, 'GET'))).status, 204);
      assert.equal(await remaining(), before - 1);

      // The request itself, and its errors, carry what the browser needs to read them.
      const ok = await api.fetch('/v1/account', { key, headers: { origin: APP } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('access-control-allow-origin'), APP);
      const exposed = list(ok.headers.get('access-control-expose-headers'));
      for (const h of ['link', 'location', 'retry-after', 'x-request-id', 'ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) assert.ok(exposed.includes(h), h);
      const refused = await api.fetch('/v1/account', { headers: { origin: DOOR } });
      assert.equal(refused.headers.get('access-control-allow-origin'), DOOR);
      await problem(refused, 401, 'unauthorized');

      // Another origin: answered as before, but not named, so its browser keeps the answer from the page.
      const other = await api.fetch('/v1/account', { key, headers: { origin: 'https://evil.example.com' } });
      assert.equal(other.status, 200);
      assert.equal(other.headers.get('access-control-allow-origin'), null);
      const otherPreflight = await api.fetch('/v1/account', preflight('https://evil.example.com', 'GET'));
      assert.equal(otherPreflight.headers.get('access-control-allow-origin'), null);

      // Not the dashboard: it is same-origin and signs in with a cookie.
      await problem(await api.fetch('/dashboard/api/session', preflight(DOOR, 'GET')), 404, 'not_found');
      assert.equal((await api.fetch('/dashboard/api/session', { headers: { origin: DOOR } })).headers.get('access-control-allow-origin'), null);
    });

    test('* names any origin, never with credentials', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_CORS_ORIGINS: '*' });
      const { key } = await api.account();
      const res = await api.fetch('/v1/account', { key, headers: { origin: 'https://anywhere.example' } });
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      assert.equal(res.headers.get('access-control-allow-credentials'), null);
      const pre = await api.fetch('/v1/account', preflight('https://anywhere.example', 'GET', 'authorization'));
      assert.equal(pre.status, 204);
      assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    });
  });
}

/** A page server on a loopback port of its own: another origin than the API's. */
async function pageServer(t: TestContext): Promise<string> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>door scanner</title>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('CORS in Chromium', () => {
  let browser: Browser;
  before(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });
  after(() => browser?.close());

  test('a page on another port calls the API with a bearer key; a page of an origin not configured cannot read it', async (t) => {
    const page = await pageServer(t);
    const api = await startApp(t, await freshStorage(t, ENGINES[0]!), { MONTAGE_CORS_ORIGINS: page });
    const { key } = await api.account('business', { scopes: ['checkin', 'events:read'] });
    const context = await browser.newContext();
    onCleanup(t, () => context.close());
    const tab = await context.newPage();

    const call = (origin: string) =>
      tab.goto(origin).then(() =>
        tab.evaluate(
          async ({ url, key }) => {
            try {
              // Authorization and Idempotency-Key make this a preflighted request.
              const res = await fetch(`${url}/v1/events?limit=1`, { headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'k' } });
              return { status: res.status, body: await res.json(), requestId: res.headers.get('x-request-id'), rateLimit: res.headers.get('ratelimit') };
            } catch (err) {
              return { error: String(err) };
            }
          },
          { url: api.url, key },
        ),
      );

    const allowed = (await call(page)) as { status: number; body: { data: unknown[] }; requestId: string | null; rateLimit: string | null };
    assert.equal(allowed.status, 200, JSON.stringify(allowed));
    assert.deepEqual(allowed.body.data, []);
    assert.match(allowed.requestId ?? '', /^req_/, 'X-Request-Id is readable');
    assert.match(allowed.rateLimit ?? '', /;r=\d+;t=\d+/, 'RateLimit is readable');

    // The same page served under another origin (localhost is not 127.0.0.1 to a browser).
    const other = page.replace('127.0.0.1', 'localhost');
    const refused = (await call(other)) as { error?: string };
    assert.match(refused.error ?? '', /TypeError: Failed to fetch/, JSON.stringify(refused));
  });
});

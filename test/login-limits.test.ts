/**
 * Dashboard sign-in limits: wrong passwords lock out the address that sent them, for that email,
 * not the owner signing in from elsewhere; one address across many emails, and one email from many
 * addresses, stay bounded. In memory and in Redis.
 *
 * The server sees the socket's address (no proxy is trusted), and every 127.x.y.z is loopback on
 * Linux: each test binds its client sockets to addresses of its own, so runs never share counters.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createAccount } from '../src/accounts/accounts.service.js';
import { loadConfig } from '../src/config.js';
import { EMAIL_BURST, EMAIL_STEADY_SECONDS, LoginLimits, PER_ADDRESS, PER_EMAIL_AND_ADDRESS, sourceOf } from '../src/dashboard/login-limits.js';
import { AppError } from '../src/errors.js';
import { ENGINES, freshStorage, onCleanup, startApp, type TestApp } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
const REDIS_URL = 'redis://127.0.0.1:6379';
const WINDOW_SECONDS = 15 * 60;

const byte = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
/** A loopback address no other test run is likely to use. */
const loopback = () => `127.${byte(1, 254)}.${byte(0, 255)}.${byte(1, 254)}`;
const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

interface Answer {
  status: number;
  retryAfter: number | null;
  body: Record<string, any> | null;
}

/** POST /dashboard/api/login from a socket bound to `address`. */
function loginFrom(api: TestApp, address: string, email: string, password: string): Promise<Answer> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${api.url}/dashboard/api/login`,
      { method: 'POST', localAddress: address, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode!, retryAfter: retryAfter === undefined ? null : Number(retryAfter), body: text ? JSON.parse(text) : null });
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const VARIANTS = [
  { name: 'memory', env: {} as Record<string, string> },
  { name: 'Redis', env: { REDIS_URL } },
];

for (const engine of ENGINES) {
  for (const variant of VARIANTS) {
    describe(`dashboard sign-in limits over HTTP (${engine}, ${variant.name})`, () => {
      test('ten wrong passwords from one address lock that address out; the owner signs in from another', async (t) => {
        const api = await startApp(t, await freshStorage(t, engine), variant.env);
        const email = `owner-${unique()}@example.com`;
        const account = await createAccount(api.database.db, { email, password: PASSWORD });
        const [attacker, owner] = [loopback(), loopback()];
        assert.notEqual(attacker, owner);

        const guesses = await Promise.all(Array.from({ length: PER_EMAIL_AND_ADDRESS }, (_, i) => loginFrom(api, attacker, email, `guess ${i}`)));
        assert.deepEqual(guesses.map((g) => g.status), Array(PER_EMAIL_AND_ADDRESS).fill(401));
        const locked = await loginFrom(api, attacker, email, PASSWORD);
        assert.equal(locked.status, 429, 'even the right password, from the address that guessed');
        assert.equal(locked.body!.code, 'rate_limited');
        assert.ok(locked.retryAfter! > 60 && locked.retryAfter! <= WINDOW_SECONDS, `locked for the window: Retry-After ${locked.retryAfter}`);

        const signedIn = await loginFrom(api, owner, email, PASSWORD);
        assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
        assert.equal(signedIn.body!.accountId, account.id);
        assert.equal((await loginFrom(api, attacker, email, PASSWORD)).status, 429, 'the owner signing in does not unlock the attacker');
      });
    });
  }
}

for (const variant of VARIANTS) {
  describe(`dashboard sign-in limits, the budgets (${variant.name})`, () => {
    /** A LoginLimits of its own (in Redis: under a key prefix of its own, removed afterwards). */
    function limits(t: Parameters<typeof onCleanup>[0]) {
      const keyPrefix = `montage-test:login:${process.pid}:${unique()}`;
      const limiter = new LoginLimits(loadConfig({ PORT: '0', ...variant.env }), { keyPrefix });
      onCleanup(t, async () => {
        await limiter.close();
        if (!variant.env.REDIS_URL) return;
        const redis = new Redis(REDIS_URL);
        const keys = await redis.keys(`${keyPrefix}:*`);
        if (keys.length > 0) await redis.del(...keys);
        await redis.quit();
      });
      return limiter;
    }

    /** Whether the attempt was allowed, and the Retry-After it would carry if not. */
    async function attempt(limiter: LoginLimits, email: string, address: string): Promise<{ allowed: boolean; retryAfter: number | null }> {
      let retryAfter: number | null = null;
      try {
        await limiter.attempt(email, address, (seconds) => (retryAfter = seconds));
        return { allowed: true, retryAfter };
      } catch (err) {
        assert.ok(err instanceof AppError && err.code === 'rate_limited', String(err));
        return { allowed: false, retryAfter };
      }
    }

    test('an address locked out of one email keeps its budget for others', async (t) => {
      const limiter = limits(t);
      const [address, email] = [loopback(), `locked-${unique()}@example.com`];
      for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) assert.ok((await attempt(limiter, email, address)).allowed);
      assert.equal((await attempt(limiter, email, address)).allowed, false);
      assert.ok((await attempt(limiter, `other-${unique()}@example.com`, address)).allowed);
      await limiter.succeeded(email, address);
      assert.ok((await attempt(limiter, email, address)).allowed, 'a successful sign-in from the address clears its count');
    });

    test(`one address is bounded across emails: ${PER_ADDRESS} attempts in 15 minutes`, async (t) => {
      const limiter = limits(t);
      const address = loopback();
      for (let i = 0; i < PER_ADDRESS; i++) assert.ok((await attempt(limiter, `user${i}-${unique()}@example.com`, address)).allowed, `attempt ${i + 1}`);
      const refused = await attempt(limiter, `one-more-${unique()}@example.com`, address);
      assert.equal(refused.allowed, false);
      assert.ok(refused.retryAfter! > 60, `Retry-After ${refused.retryAfter}`);
      assert.ok((await attempt(limiter, `someone-${unique()}@example.com`, loopback())).allowed, 'other addresses are not affected');
    });

    test('one email from many addresses is slowed, not locked: a burst, then one attempt per few seconds', async (t) => {
      const limiter = limits(t);
      const email = `target-${unique()}@example.com`;
      let allowed = 0;
      let last: { allowed: boolean; retryAfter: number | null } | undefined;
      // Guesses from 20 addresses, 10 each: far more than the email's shared budget.
      for (let a = 0; a < 20; a++) {
        const address = loopback();
        for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) {
          last = await attempt(limiter, email, address);
          if (last.allowed) allowed++;
        }
      }
      assert.equal(allowed, 1 + EMAIL_BURST, 'one steady attempt and the burst');
      assert.equal(last!.allowed, false);
      assert.ok(last!.retryAfter! >= 1 && last!.retryAfter! <= EMAIL_STEADY_SECONDS, `slowed: Retry-After ${last!.retryAfter}`);

      // The owner, from an address of their own, waits as told and gets through.
      const owner = loopback();
      const slowed = await attempt(limiter, email, owner);
      if (!slowed.allowed) {
        assert.ok(slowed.retryAfter! <= EMAIL_STEADY_SECONDS);
        await sleep(slowed.retryAfter! * 1000 + 100);
        assert.ok((await attempt(limiter, email, owner)).allowed, 'after Retry-After the owner gets an attempt');
      }
    });
  });
}

/** POST /dashboard/api/login through a proxy on this machine that names the client in X-Forwarded-For. */
function loginForwarded(api: TestApp, client: string, email: string, password: string): Promise<Answer> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${api.url}/dashboard/api/login`,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-forwarded-for': client },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: null, body: text ? JSON.parse(text) : null }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

for (const engine of ENGINES) {
  describe(`sign-in limits behind a proxy (MONTAGE_TRUST_PROXY, ${engine})`, () => {
    test('with the proxy trusted, its clients are counted apart: a guesser locks out itself, not the owner', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_TRUST_PROXY: '127.0.0.1' });
      const email = `proxied-${unique()}@example.com`;
      await createAccount(api.database.db, { email, password: PASSWORD });
      for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) assert.equal((await loginForwarded(api, '203.0.113.7', email, `guess ${i}`)).status, 401);
      assert.equal((await loginForwarded(api, '203.0.113.7', email, PASSWORD)).status, 429, 'the guesser is locked out');
      assert.equal((await loginForwarded(api, '198.51.100.20', email, PASSWORD)).status, 200, 'the owner, through the same proxy, is not');
    });

    test('without it, X-Forwarded-For is not believed: a guesser cannot dodge the lock by naming other clients', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const email = `spoofer-${unique()}@example.com`;
      await createAccount(api.database.db, { email, password: PASSWORD });
      const from = loopback();
      // Every guess names another client, but comes from one socket address: one budget.
      for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) assert.equal((await loginFrom(api, from, email, `guess ${i}`)).status, 401);
      assert.equal((await loginForwardedFrom(api, from, `192.0.2.${byte(1, 254)}`, email, PASSWORD)).status, 429);
    });
  });
}

/** As loginForwarded, from a socket bound to `address`. */
async function loginForwardedFrom(api: TestApp, address: string, client: string, email: string, password: string): Promise<Answer> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${api.url}/dashboard/api/login`,
      { method: 'POST', localAddress: address, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-forwarded-for': client } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: null, body: null }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

test('an IPv6 client is counted by its /64, which one host commonly holds whole', () => {
  assert.equal(sourceOf('2001:db8:1:2:aaaa::1'), sourceOf('2001:db8:1:2:ffff:1:2:3'));
  assert.equal(sourceOf('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.notEqual(sourceOf('2001:db8:1:3::1'), sourceOf('2001:db8:1:2::1'));
  assert.equal(sourceOf('::ffff:192.0.2.1'), '192.0.2.1', 'an IPv4-mapped client is its IPv4 address');
  assert.equal(sourceOf('192.0.2.1'), '192.0.2.1');
});

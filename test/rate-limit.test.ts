import assert from 'node:assert/strict';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { describe, test } from 'node:test';
import { ENGINES, freshStorage, problem, startApp, type TestApp } from './helpers.js';

const blendRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/test/blend-area', { config: { area: 'blend', scope: 'blend' } }, async () => ({ ok: true }));
};

async function usage(api: TestApp, accountId: string) {
  const windows = await api.app.rateLimits.usage(accountId, 'business');
  return Object.fromEntries(windows.map((w) => [w.name, w.remaining]));
}

for (const engine of ENGINES) {
  describe(`rate limits (${engine})`, () => {
    test('headers on every authenticated response; the minute window refuses with 429 and Retry-After', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), {
        MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=3,eventsPerDay=100,blendPerHour=50',
      });
      const { key, accountId } = await api.account();
      for (let i = 1; i <= 3; i++) {
        const res = await api.fetch('/v1/account', { key });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-ratelimit-limit'), '3');
        assert.equal(res.headers.get('x-ratelimit-remaining'), String(3 - i));
        const reset = Number(res.headers.get('x-ratelimit-reset'));
        assert.ok(reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 61, `reset ${reset} is Unix seconds within the minute`);
        assert.equal(res.headers.get('ratelimit-policy'), '"events-minute";q=3;w=60, "events-day";q=100;w=86400');
        assert.match(res.headers.get('ratelimit') ?? '', new RegExp(`^"events-minute";r=${3 - i};t=\\d+$`));
      }
      const refused = await api.fetch('/v1/account', { key });
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
      await problem(refused, 429, 'rate_limited');
      // Refused requests cost nothing: the day window spent exactly the 3 answered ones.
      await problem(await api.fetch('/v1/account', { key }), 429, 'rate_limited');
      assert.deepEqual(await usage(api, accountId), { 'events-minute': 0, 'events-day': 97, 'blend-hour': 50 });

      // Counted per account: another account is untouched.
      const other = await api.account();
      assert.equal((await api.fetch('/v1/account', { key: other.key })).status, 200);
    });

    test('the day window is enforced at once with the minute window, and names itself', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), {
        MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=100,eventsPerDay=2,blendPerHour=50',
      });
      const { key, accountId } = await api.account();
      const first = await api.fetch('/v1/account', { key });
      assert.equal(first.headers.get('x-ratelimit-limit'), '2', 'the window closest to exhaustion is reported');
      assert.match(first.headers.get('ratelimit') ?? '', /^"events-day";r=1;t=\d+$/);
      assert.equal((await api.fetch('/v1/account', { key })).status, 200);
      const refused = await api.fetch('/v1/account', { key });
      assert.match(refused.headers.get('ratelimit') ?? '', /^"events-day";r=0;t=\d+$/);
      assert.ok(Number(refused.headers.get('retry-after')) > 60, 'the day window resets in hours, not seconds');
      await problem(refused, 429, 'rate_limited');
      // The minute window got its point back when the day window refused.
      assert.deepEqual(await usage(api, accountId), { 'events-minute': 98, 'events-day': 0, 'blend-hour': 50 });
    });

    test('the blend area has its own hourly budget', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=100,eventsPerDay=100,blendPerHour=2' }, { extraRoutes: blendRoute });
      const { key, accountId } = await api.account();
      const res = await api.fetch('/v1/test/blend-area', { key });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit-policy'), '"blend-hour";q=2;w=3600');
      assert.equal((await api.fetch('/v1/test/blend-area', { key })).status, 200);
      await problem(await api.fetch('/v1/test/blend-area', { key }), 429, 'rate_limited');
      assert.equal((await api.fetch('/v1/account', { key })).status, 200, 'the event area is a separate budget');
      assert.deepEqual(await usage(api, accountId), { 'events-minute': 99, 'events-day': 99, 'blend-hour': 0 });
    });

    test('two server instances share one budget through Redis (each has its own memory)', async (t) => {
      const storage = await freshStorage(t, engine);
      const env = { REDIS_URL: 'redis://127.0.0.1:6379', MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=5,eventsPerDay=1000,blendPerHour=10' };
      const one = await startApp(t, storage, env);
      const two = await startApp(t, storage, env);
      const { key } = await one.account();
      const seen: string[] = [];
      for (const api of [one, two, one, two, one]) {
        const res = await api.fetch('/v1/account', { key });
        assert.equal(res.status, 200);
        seen.push(res.headers.get('x-ratelimit-remaining')!);
      }
      assert.deepEqual(seen, ['4', '3', '2', '1', '0']);
      await problem(await two.fetch('/v1/account', { key }), 429, 'rate_limited');
      await problem(await one.fetch('/v1/account', { key }), 429, 'rate_limited');
    });
  });
}

for (const engine of ENGINES) {
  describe(`RateLimit reset (${engine})`, () => {
    test('the seconds left that RateLimit reports never exceed the window, at any moment within a second', async (t) => {
      const blendArea: FastifyPluginAsyncTypebox = async (app) => {
        app.get('/test/blend-window', { config: { area: 'blend', scope: 'blend' } }, async () => ({ ok: true }));
      };
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=1000,eventsPerDay=100000,blendPerHour=1000' }, { extraRoutes: blendArea });
      const windows: Record<string, number> = { 'events-minute': 60, 'events-day': 86400, 'blend-hour': 3600 };
      // Fresh accounts open fresh windows at different points within a wall-clock second.
      for (let i = 0; i < 8; i++) {
        const { key } = await api.account();
        for (const path of ['/v1/account', '/v1/test/blend-window']) {
          const res = await api.fetch(path, { key });
          assert.equal(res.status, 200);
          const [, name, t] = /^"([\w-]+)";r=\d+;t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '') ?? [];
          assert.ok(name && windows[name], `RateLimit ${res.headers.get('ratelimit')}`);
          assert.ok(Number(t) <= windows[name]!, `t=${t} for the ${windows[name]}-second window ${name}`);
          assert.ok(Number(t) >= windows[name]! - 2, `t=${t}: a window opened just now has (almost) all of it left`);
        }
        await new Promise((r) => setTimeout(r, 1000 / 8 + 7));
      }
    });
  });
}

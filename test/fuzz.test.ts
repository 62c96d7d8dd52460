import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { fuzz } from '../scripts/fuzz/fuzz.js';
import { ENGINES, freshStorage, startApp } from './helpers.js';

const REQUESTS = 1500;
const SEED = 20261122;

for (const engine of ENGINES) {
  describe(`bad-input fuzzing of every route (${engine})`, () => {
    test(`${REQUESTS} generated requests: no 5xx, no hang, every error a problem`, async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), {
        MONTAGE_ALLOW_PRIVATE_NETWORK: '1',
        MONTAGE_DASHBOARD_SIGNUP: '1',
        MONTAGE_LIMITS_BUSINESS: 'blendPerHour=100000000,eventsPerMinute=100000000,eventsPerDay=1000000000',
      });
      const { accountId, key } = await api.account();
      // The API makes no key that expires within a minute: age one in the database instead.
      const expiredKey = await api.key(accountId, 'business');
      const keyHash = createHash('sha256').update(expiredKey).digest('hex');
      await api.database.db.updateTable('apiKeys').set({ expiresAt: Date.now() - 1000 }).where('keyHash', '=', keyHash).execute();
      // One request at a time: with a fixed seed, the same sequence of requests on every run (the ids aside).
      const report = await fuzz({ baseUrl: api.url, key, expiredKey, requests: REQUESTS, seed: SEED, concurrency: 1 });

      const listed = report.violations.slice(0, 20).map((v) =>
        [`#${v.index} ${v.operation} -> ${v.status ?? 'no answer'}: ${v.problems.join('; ')}`, `  ${v.request.method} ${v.request.path.slice(0, 300)} [${v.request.notes.join(', ')}]`, `  body: ${v.snippet.slice(0, 300)}`, `  ${v.curl.slice(0, 1000)}`].join('\n'),
      );
      assert.equal(report.violationCount, 0, `${report.violationCount} violations (seed ${SEED}), the first 20:\n${listed.join('\n')}`);
      assert.ok(report.requests >= REQUESTS, `${report.requests} requests sent`);
      const silent = report.operations.filter((o) => o.requests === 0).map((o) => o.operation);
      assert.deepEqual(silent, [], 'every operation was fuzzed');
      const reachedHandlers = report.operations.filter((o) => Object.keys(o.statuses).some((s) => Number(s) >= 200 && Number(s) < 300)).length;
      assert.ok(reachedHandlers >= report.operations.length / 2, `only ${reachedHandlers} operations ever answered 2xx: the seeding or the generator is off`);
    });
  });
}

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loggableUrl } from '../src/http/log-url.js';
import { databaseWithAccount, ENGINES, freePort, freshStorage, serveProcess, until } from './helpers.js';

test('a URL loses the secrets in its query and path, and keeps everything else', () => {
  const cases: Array<[string, string]> = [
    ['/v1/events?limit=10&cursor=abc', '/v1/events?limit=10&cursor=abc'],
    ['/v1/account?api_key=mtg_abc', '/v1/account?api_key=[redacted]'],
    ['/v1/account?api%5Fkey=mtg%5Fabc', '/v1/account?api%5Fkey=[redacted]'],
    ['/v1/blend/results/job_1.jpg?expires=1795312800&signature=Zm9vYmFy', '/v1/blend/results/job_1.jpg?expires=1795312800&signature=[redacted]'],
    ['/v1/x?token=t&access_token=u&password=p&q=ok', '/v1/x?token=[redacted]&access_token=[redacted]&password=[redacted]&q=ok'],
    ['/v1/x?q=mtg_abc', '/v1/x?q=[redacted]'],
    ['/v1/x?mtg_abc', '/v1/x?[redacted]'],
    ['/v1/mtg_abc/account', '/v1/[redacted]/account'],
    ['/v1/%6Dtg_abc', '/v1/[redacted]'],
    ['/v1/x?whsec_abc=1', '/v1/x?[redacted]'],
    ['/v1/x?bad=%E0%A4%A', '/v1/x?bad=%E0%A4%A'],
  ];
  for (const [raw, logged] of cases) assert.equal(loggableUrl(raw), logged, raw);
});

for (const engine of ENGINES) {
  describe(`the request log (${engine})`, () => {
    test('holds no key sent in a URL and no result URL signature, and still names each request', async (t) => {
      const storage = await freshStorage(t, engine);
      const { key } = await databaseWithAccount(t, storage.env);
      const port = await freePort();
      const server = await serveProcess(t, { ...storage.env, PORT: String(port), HOST: '127.0.0.1', MONTAGE_LOG_LEVEL: 'info' });
      let log = '';
      server.stdout!.on('data', (d) => (log += d));
      server.stderr!.on('data', (d) => (log += d));
      const base = `http://127.0.0.1:${port}`;

      const signature = 'kZ3m8Qx1vN7pL2sT9wY4bR6cD0eF5gH8jK1mN3pQ7rS';
      const requests = [
        `/v1/account?api_key=${key}`, // refused (unknown query parameter), rightly; it must not be logged either
        `/api/v1/account?access_token=${key}`,
        `/v1/account?api%5Fkey=${encodeURIComponent(key)}`,
        `/v1/blend/results/job_01m8zzzzzzzzzzzzzzzzzzzzzz.jpg?expires=1795312800&signature=${signature}`,
        `/v1/${key}`,
      ];
      for (const path of requests) {
        const res = await fetch(`${base}${path}`);
        assert.ok(res.status >= 400, `${path}: ${res.status}`);
        await res.arrayBuffer();
      }
      // A request with the key where it belongs, so that the log has a line of an authenticated request.
      assert.equal((await fetch(`${base}/v1/account`, { headers: { authorization: `Bearer ${key}` } })).status, 200);

      await until(() => (log.match(/"msg":"request"/g) ?? []).length >= requests.length + 1, 5000, 'every request line');
      const secret = key.slice('mtg_'.length);
      assert.ok(!log.includes(secret), 'the API key is nowhere in the log');
      assert.ok(!log.includes(signature), 'the signature is nowhere in the log');
      assert.match(log, /"url":"\/v1\/account\?api_key=\[redacted\]"/);
      assert.match(log, /"url":"\/v1\/blend\/results\/job_01m8z+\.jpg\?expires=1795312800&signature=\[redacted\]"/);
    });
  });
}

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { enqueueMessages } from '../src/webhooks/outbox.js';
import { databaseWithAccount, ENGINES, freePort, freshStorage, onCleanup, serveProcess, until } from './helpers.js';

for (const engine of ENGINES) {
  describe(`webhook delivery survives a crash (${engine})`, () => {
    test('SIGKILL with messages pending and in flight: after a restart every message arrives, with its own webhook-id', async (t: TestContext) => {
      const storage = await freshStorage(t, engine);
      const port = await freePort();
      const env = {
        ...storage.env,
        PORT: String(port),
        MONTAGE_LOG_LEVEL: 'silent',
        MONTAGE_ALLOW_PRIVATE_NETWORK: '1',
        MONTAGE_JOB_LEASE: '1s',
        MONTAGE_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms',
      };

      // A slow receiver: deliveries are in flight when the server dies.
      const received: Array<{ headerId: string; bodyId: string }> = [];
      const receiver = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () =>
          setTimeout(() => {
            received.push({ headerId: String(req.headers['webhook-id']), bodyId: JSON.parse(body).id });
            res.end('ok');
          }, 150),
        );
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      onCleanup(t, () => new Promise<void>((r) => receiver.close(() => r())));

      const { database, account, key } = await databaseWithAccount(t, env);
      let server = await serveProcess(t, env);
      const hook = await fetch(`http://127.0.0.1:${port}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['*'] }),
      });
      assert.equal(hook.status, 201);

      const ids = await enqueueMessages(
        database.db,
        account.id,
        Array.from({ length: 150 }, (_, i) => ({ event: 'event.created' as const, data: { n: i } })),
      );
      await until(() => received.length >= 10, 10_000, 'the first deliveries');
      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      const beforeRestart = new Set(received.map((r) => r.bodyId)).size;
      assert.ok(beforeRestart < ids.length, `the crash left work undone (${beforeRestart} of ${ids.length} delivered)`);

      server = await serveProcess(t, env);
      await until(() => new Set(received.map((r) => r.bodyId)).size === ids.length, 30_000, 'every message after the restart');
      assert.deepEqual([...new Set(received.map((r) => r.bodyId))].sort(), [...ids].sort(), 'none lost');
      assert.ok(received.every((r) => r.headerId === r.bodyId), 'the same webhook-id, whatever the attempt');
    });
  });
}

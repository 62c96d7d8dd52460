import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { DELIVER_KIND } from '../src/webhooks/delivery.js';
import { enqueueMessages } from '../src/webhooks/outbox.js';
import { databaseWithAccount, ENGINES, freePort, freshStorage, onCleanup, serveProcess, type Storage, until } from './helpers.js';

/** Resolves with the exit code, and how long after `since` the process ended. */
const exited = (child: ChildProcess, since: number) =>
  new Promise<{ code: number | null; ms: number }>((resolve) => child.once('exit', (code) => resolve({ code, ms: Date.now() - since })));

/** Whether a new TCP connection to the port is refused. */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(true));
  });

/** A POST whose body arrives in two parts: in flight until `finish()` is called. */
function slowPost(port: number, path: string, key: string, body: unknown) {
  const text = JSON.stringify(body);
  const request = http.request({
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
  });
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    request.once('error', reject);
    request.once('response', (res) => {
      let data = '';
      res.on('data', (c) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(data) }));
    });
  });
  request.write(text.slice(0, 10));
  return { response, finish: () => request.end(text.slice(10)) };
}

/** A request whose headers are still arriving: its route's hooks run once `finish()` sends the rest. */
function slowHeaders(port: number, path: string) {
  const socket = net.connect(port, '127.0.0.1');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
  let raw = '';
  socket.on('data', (c) => (raw += c));
  const response = new Promise<string>((resolve) => socket.once('close', () => resolve(raw)));
  return { response, finish: () => socket.write('\r\n') };
}

async function setUp(t: TestContext, storage: Storage, env: Record<string, string>) {
  const port = await freePort();
  const serverEnv = { ...storage.env, ...env, PORT: String(port), MONTAGE_LOG_LEVEL: 'silent', MONTAGE_ALLOW_PRIVATE_NETWORK: '1' };
  const { database, account, key } = await databaseWithAccount(t, serverEnv);
  const server = await serveProcess(t, serverEnv);
  return { port, database, account, key, server };
}

const EVENT = { name: 'Stopping', startsAt: '2031-01-01T18:00:00Z', endsAt: '2031-01-01T22:00:00Z', timezone: 'UTC', currency: 'EUR' };

for (const engine of ENGINES) {
  describe(`graceful shutdown (${engine})`, () => {
    test('SIGTERM: no new connections, the request in flight finishes, a delivery in flight is handed back, exit 0 in time', async (t) => {
      const storage = await freshStorage(t, engine);
      // A receiver that holds every delivery far longer than the shutdown may take.
      const held: http.ServerResponse[] = [];
      const receiver = http.createServer((req, res) => {
        req.resume();
        held.push(res);
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      onCleanup(t, () => {
        for (const res of held) res.destroy();
        return new Promise<void>((r) => receiver.close(() => r()));
      });
      const { port, database, account, key, server } = await setUp(t, storage, { MONTAGE_SHUTDOWN_TIMEOUT: '3s' });

      const hook = await fetch(`http://127.0.0.1:${port}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['payout.processed'] }),
      });
      assert.equal(hook.status, 201);
      await enqueueMessages(database.db, account.id, [{ event: 'payout.processed', data: { n: 1 } }]);
      await until(() => held.length === 1, 10_000, 'the delivery to be in flight');

      const post = slowPost(port, '/v1/events', key, EVENT);
      const late = slowHeaders(port, '/v1/account');
      await new Promise((r) => setTimeout(r, 100));
      const since = Date.now();
      const exit = exited(server, since);
      server.kill('SIGTERM');
      await until(() => refused(port), 2000, 'the listener to close');

      post.finish();
      const created = await post.response;
      assert.equal(created.status, 201, 'the request in flight is answered');
      late.finish();
      const answer = await late.response;
      assert.match(answer, /^HTTP\/1.1 503 /, 'a request begun after the shutdown is sent elsewhere');
      assert.match(answer, /content-type: application\/problem\+json/i);
      assert.match(answer, /connection: close/i);
      assert.match(answer, /retry-after: 1/i);
      assert.match(answer, /"code":"unavailable"/);
      const { code, ms } = await exit;
      assert.equal(code, 0);
      assert.ok(ms < 3000 + 1000, `exited within the shutdown timeout (${ms} ms)`);

      const event = await database.db.selectFrom('events').select('id').where('id', '=', created.body.id).executeTakeFirst();
      assert.ok(event, 'the event the request created is stored');
      const delivery = await database.db.selectFrom('jobs').selectAll().where('kind', '=', DELIVER_KIND).executeTakeFirstOrThrow();
      assert.equal(delivery.status, 'queued', 'the delivery in flight is handed back');
      assert.equal(delivery.lockedBy, null);
      assert.equal(Number(delivery.attempts), 0, 'the interrupted attempt is not counted against it');
    });

    test('a request that never finishes cannot hold the process past MONTAGE_SHUTDOWN_TIMEOUT', async (t) => {
      const storage = await freshStorage(t, engine);
      const { port, key, server } = await setUp(t, storage, { MONTAGE_SHUTDOWN_TIMEOUT: '1s' });
      const post = slowPost(port, '/v1/events', key, EVENT);
      post.response.catch(() => {}); // its connection dies with the process
      await new Promise((r) => setTimeout(r, 100));
      const since = Date.now();
      const exit = exited(server, since);
      server.kill('SIGTERM');
      const { code, ms } = await exit;
      assert.equal(code, 1, 'an unfinished shutdown exits 1');
      assert.ok(ms >= 900 && ms < 3000, `exited at the deadline (${ms} ms)`);
    });
  });
}

import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { isDatabaseUnavailable, openDatabase } from '../src/db/database.js';
import { ENGINES, freePort, freshStorage, onCleanup, serveProcess } from './helpers.js';

test('a lost or refused database connection is told apart from a failing query (503, not 500)', () => {
  const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
  for (const err of [
    withCode('terminating connection due to administrator command', '57P01'),
    withCode('the database system is starting up', '57P03'),
    withCode('connection failure', '08006'),
    withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
    new Error('Connection terminated unexpectedly'),
    new Error('Client has encountered a connection error and is not queryable'),
    new Error('timeout exceeded when trying to connect'),
  ]) {
    assert.equal(isDatabaseUnavailable(err), true, err.message);
  }
  for (const err of [withCode('duplicate key value violates unique constraint', '23505'), withCode('syntax error', '42601'), new Error('boom'), 'text', null]) {
    assert.equal(isDatabaseUnavailable(err), false, String(err));
  }
});

test(
  'a PostgreSQL connection terminated while a request holds it fails that request, not the process, and the pool recovers',
  { skip: ENGINES.includes('postgres') ? false : 'needs PostgreSQL' },
  async (t) => {
    const url = process.env.TEST_DATABASE_URL!;
    const handle = openDatabase(loadConfig({ DATABASE_URL: url, MONTAGE_LOG_LEVEL: 'silent' }));
    onCleanup(t, () => handle.close());
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    onCleanup(t, () => admin.end());

    const failed = handle.db.transaction().execute(async (tx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx);
      await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      // The server's goodbye arrives while no query runs: pg-pool leaves a checked-out client
      // without an 'error' listener, and an unhandled 'error' event would end the process here.
      await new Promise((r) => setTimeout(r, 200));
      await sql`select 1`.execute(tx);
    });
    await assert.rejects(failed, (err) => isDatabaseUnavailable(err));
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
    assert.equal(rows[0]!.one, 1);
  },
);

test(
  'serve waits for a PostgreSQL that is not reachable yet (MONTAGE_DATABASE_WAIT), and gives up after it',
  { skip: ENGINES.includes('postgres') ? false : 'needs PostgreSQL' },
  async (t) => {
    const storage = await freshStorage(t, 'postgres');
    const real = new URL(storage.env.DATABASE_URL!);
    const port = await freePort();
    const viaProxy = new URL(real);
    viaProxy.port = String(port);
    // A database that comes up late: nothing listens on `port` until this proxy starts forwarding.
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(real.port || 5432), real.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => (client.destroy(), upstream.destroy()));
      }
      client.pipe(upstream).pipe(client);
    });
    onCleanup(t, () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => proxy.close(() => r()));
    });
    const env = { ...storage.env, DATABASE_URL: viaProxy.toString(), PORT: String(await freePort()), MONTAGE_LOG_LEVEL: 'silent', MONTAGE_DATABASE_WAIT: '20s' };

    let running = false;
    const started = serveProcess(t, env).then((child) => ((running = true), child));
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(running, false, 'not running without its database');
    await new Promise<void>((r) => proxy.listen(port, '127.0.0.1', r));
    await started;
    assert.equal((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status, 200);

    const since = Date.now();
    const unreachable = { ...env, DATABASE_URL: Object.assign(new URL(viaProxy), { port: String(await freePort()) }).toString(), PORT: String(await freePort()), MONTAGE_DATABASE_WAIT: '1s' };
    await assert.rejects(serveProcess(t, unreachable), /server exited \(1\)/);
    assert.ok(Date.now() - since < 10_000, 'it gives up once MONTAGE_DATABASE_WAIT is over');
  },
);

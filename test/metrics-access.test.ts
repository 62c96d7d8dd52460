import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { isLoopbackHost } from '../src/net/addresses.js';
import { ENGINES, freePort, freshStorage, problem, startApp, type ApiResponse } from './helpers.js';

const PROMETHEUS = /^# HELP montage_http_requests_total/m;

test('which HOST values count as loopback only', () => {
  for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', 'LOCALHOST', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']) assert.equal(isLoopbackHost(host), true, host);
  for (const host of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'example.com', 'montage.internal', '']) assert.equal(isLoopbackHost(host), false, host);
});

test('MONTAGE_METRICS_PORT and MONTAGE_METRICS_HOST are checked at start', () => {
  const variable = (name: string) => (e: unknown) => e instanceof ConfigError && e.variable === name;
  assert.throws(() => loadConfig({ MONTAGE_METRICS_PORT: 'nine' }), variable('MONTAGE_METRICS_PORT'));
  assert.throws(() => loadConfig({ MONTAGE_METRICS_PORT: '0' }), variable('MONTAGE_METRICS_PORT'));
  assert.throws(() => loadConfig({ PORT: '9100', MONTAGE_METRICS_PORT: '9100' }), variable('MONTAGE_METRICS_PORT'));
  assert.throws(() => loadConfig({ MONTAGE_METRICS_HOST: '0.0.0.0' }), variable('MONTAGE_METRICS_HOST'));
  assert.deepEqual(
    (({ metricsPort, metricsHost }) => ({ metricsPort, metricsHost }))(loadConfig({ MONTAGE_METRICS_PORT: '9464' })),
    { metricsPort: 9464, metricsHost: '127.0.0.1' },
  );
  assert.equal(loadConfig({}).metricsPort, null);
});

for (const engine of ENGINES) {
  describe(`who may read /metrics (${engine})`, () => {
    test('closed when the server listens beyond loopback without a token; the token opens it; loopback alone is open', async (t) => {
      const storage = await freshStorage(t, engine);
      const exposed = await startApp(t, storage, { HOST: '0.0.0.0' });
      const closed = await problem(await exposed.fetch('/metrics'), 401, 'unauthorized');
      assert.match(closed.detail, /MONTAGE_METRICS_TOKEN/);
      await problem(await exposed.fetch('/metrics', { headers: { authorization: 'Bearer anything' } }), 401, 'unauthorized');

      const tokened = await startApp(t, storage, { HOST: '0.0.0.0', MONTAGE_METRICS_TOKEN: 'm3trics' });
      await problem(await tokened.fetch('/metrics'), 401, 'unauthorized');
      const read = await tokened.fetch('/metrics', { headers: { authorization: 'Bearer m3trics' } });
      assert.equal(read.status, 200);
      assert.match(await read.text(), PROMETHEUS);

      for (const host of ['127.0.0.1', 'localhost', '::1']) {
        const local = await startApp(t, storage, { HOST: host });
        const res = await local.fetch('/metrics');
        assert.equal(res.status, 200, host);
        assert.match(await res.text(), PROMETHEUS);
      }
      // A proxy on this machine (docs/deploy.md's nginx) forwards strangers from a loopback socket:
      // what it forwarded needs the token.
      const local = await startApp(t, storage, { HOST: '127.0.0.1' });
      for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
        await problem(await local.fetch('/metrics', { headers: { [header]: header === 'forwarded' ? 'for=203.0.113.9' : '203.0.113.9' } }), 401, 'unauthorized');
      }
    });

    test('MONTAGE_METRICS_PORT: a listener of its own (loopback by default), and none on the API port', async (t) => {
      const port = await freePort();
      const api = await startApp(t, await freshStorage(t, engine), { HOST: '0.0.0.0', MONTAGE_METRICS_PORT: String(port) });
      await problem(await api.fetch('/metrics'), 404, 'not_found');
      await api.fetch('/healthz');
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, PROMETHEUS);
      assert.match(text, /montage_http_requests_total\{method="GET",route="\/healthz",status="200"\} 1/, 'the API port\'s requests are counted');
      await problem((await fetch(`http://127.0.0.1:${port}/v1/account`)) as ApiResponse, 404, 'not_found');

      // With a token, the listener of its own asks for it too.
      const tokenPort = await freePort();
      await startApp(t, await freshStorage(t, engine), { MONTAGE_METRICS_PORT: String(tokenPort), MONTAGE_METRICS_TOKEN: 'm3trics' });
      await problem((await fetch(`http://127.0.0.1:${tokenPort}/metrics`)) as ApiResponse, 401, 'unauthorized');
      assert.equal((await fetch(`http://127.0.0.1:${tokenPort}/metrics`, { headers: { authorization: 'Bearer m3trics' } })).status, 200);
    });

    test('a metrics port in use stops the start with a clear error', async (t) => {
      const port = await freePort();
      const first = await startApp(t, await freshStorage(t, engine), { MONTAGE_METRICS_PORT: String(port) });
      const second = await buildApp(first.config, { database: first.database, logger: false });
      try {
        await assert.rejects(second.listen({ port: 0, host: '127.0.0.1' }), /is in use; set MONTAGE_METRICS_PORT to another port/);
      } finally {
        await second.close();
      }
    });
  });
}

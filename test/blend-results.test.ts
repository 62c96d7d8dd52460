import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { ENGINES, fixtureFrames, freshStorage, startApp, type TestApp, until } from './helpers.js';

/** One request on its own connection, and the response exactly as it came off the wire. */
function rawRequest(api: TestApp, pathAndQuery: string, headers: Record<string, string>): Promise<string> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
    const lines = [`GET ${pathAndQuery} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

for (const engine of ENGINES) {
  describe(`blend result URLs over HTTP (${engine})`, () => {
    test('304 Not Modified carries no body, no Content-Type and no Content-Length', async (t) => {
      const images = await fixtureFrames(t);
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
      const { key } = await api.account();
      const started = await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'etag', images, options: { blendType: 'mean', align: false } } });
      assert.equal(started.status, 202);
      const { jobId } = await started.json();
      const job = await until(async () => {
        const body = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
        return body.status === 'completed' || body.status === 'failed' ? body : null;
      }, 60_000, 'the blend job');
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      const url = new URL(job.resultUrl);
      const target = `${url.pathname}${url.search}`;

      const full = await rawRequest(api, target, {});
      assert.match(full, /^HTTP\/1\.1 200 /);
      const etag = /\r\netag: ("[^"\r\n]+")\r\n/i.exec(full)?.[1];
      assert.ok(etag, full.slice(0, 500));

      const notModified = await rawRequest(api, target, { 'If-None-Match': etag });
      const [head, body] = notModified.split('\r\n\r\n');
      assert.match(head!, /^HTTP\/1\.1 304 /);
      assert.equal(body, '', 'nothing after the headers');
      assert.doesNotMatch(head!, /\r\ncontent-type:/i);
      assert.doesNotMatch(head!, /\r\ncontent-length:/i);
      assert.doesNotMatch(head!, /\r\ntransfer-encoding:/i);
      assert.match(head!, new RegExp(`\\r\\netag: ${etag}`, 'i'), 'the validator is repeated');
      assert.match(head!, /\r\ncache-control: private, max-age=\d+, immutable/i);
    });
  });
}

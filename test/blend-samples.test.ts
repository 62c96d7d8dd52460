import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { loadConfig } from '../src/config.js';
import { addressPolicy } from '../src/net/safe-http.js';
import { BlendFailure } from '../src/blend/failures.js';
import { fetchImage } from '../src/blend/fetcher.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, until } from './helpers.js';

const SAMPLES = path.resolve(import.meta.dirname, '../samples');
/** No resolver knows this name (RFC 6761): a job naming it completes only if nothing is fetched. */
const PUBLIC_URL = 'http://montage.invalid:8080';

for (const engine of ENGINES) {
  describe(`blend samples (${engine})`, () => {
    test('GET /samples/ lists the shipped images with their absolute URLs; each is served publicly and cacheable', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { PUBLIC_URL });
      const list = await api.fetch('/samples/');
      assert.equal(list.status, 200);
      assert.match(list.headers.get('cache-control') ?? '', /^public, max-age=\d+/);
      const { data } = await list.json();
      const files = fs.readdirSync(SAMPLES).filter((f) => f.endsWith('.jpg'));
      assert.deepEqual(
        data.map((s: { name: string }) => s.name),
        files.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })),
      );
      assert.ok(data.length >= 3);
      for (const sample of data) {
        assert.equal(sample.url, `${PUBLIC_URL}/samples/${sample.name}`);
        const res = await api.fetch(`/samples/${sample.name}`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), 'image/jpeg');
        assert.match(res.headers.get('cache-control') ?? '', /^public, max-age=\d+/);
        const bytes = Buffer.from(await res.arrayBuffer());
        assert.equal(bytes.length, sample.bytes);
        assert.ok(bytes.equals(fs.readFileSync(path.join(SAMPLES, sample.name))));
      }
      // Only the images: not the folder's README, nothing outside it.
      for (const pathname of ['/samples/README.md', '/samples/nope.jpg', '/samples/..%2Fpackage.json', '/samples/%2e%2e/package.json']) {
        const res = await api.fetch(pathname);
        assert.equal(res.status, 404, pathname);
      }
    });

    test('a job naming the samples by the server address completes with no network and no private-network switch', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { PUBLIC_URL }, { workers: true });
      assert.equal(api.config.allowPrivateNetwork, false);
      const { key } = await api.account();
      const images = [1, 2, 3, 4, 5, 6, 7].map((i) => `${PUBLIC_URL}/samples/crowd-${i}.jpg`);
      const started = await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'plaza', images, options: { blendType: 'median' } } });
      assert.equal(started.status, 202, await started.clone().text());
      const { jobId } = await started.json();
      const job = await until(
        async () => {
          const j = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
          return j.status === 'completed' || j.status === 'failed' ? j : null;
        },
        60_000,
        'the sample job',
      );
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      assert.deepEqual([job.width, job.height], [416, 277]);
      const url = new URL(job.resultUrl);
      assert.equal(url.origin, new URL(PUBLIC_URL).origin);
      const result = await api.fetch(`${url.pathname}${url.search}`);
      assert.equal(result.status, 200);
      const meta = await sharp(Buffer.from(await result.arrayBuffer())).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 416, 277]);
    });

    test('a sample address that names no sample is refused; a private address points to MONTAGE_ALLOW_PRIVATE_NETWORK', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { PUBLIC_URL });
      const { key } = await api.account();
      const start = (images: string[]) => api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'p', images } });
      const sample = `${PUBLIC_URL}/samples/crowd-1.jpg`;
      for (const bad of [`${PUBLIC_URL}/samples/README.md`, `${PUBLIC_URL}/samples/x/../../samples/README.md`, `${PUBLIC_URL}/samples/crowd-1.jpg/x`, `${PUBLIC_URL}/samples/nope.jpg`]) {
        const body = await problem(await start([sample, bad]), 400, 'invalid_request');
        assert.match(body.errors[0].path, /\/images\/1$/, bad);
        assert.match(body.errors[0].message, /no such sample/);
      }
      // The samples' path on another host is an ordinary URL: a private one stays refused, and says how to allow it.
      const body = await problem(await start([sample, 'http://127.0.0.1:8080/samples/crowd-2.jpg']), 400, 'invalid_request');
      assert.match(body.errors[0].path, /\/images\/1$/);
      assert.match(body.errors[0].message, /MONTAGE_ALLOW_PRIVATE_NETWORK=1/);
      assert.doesNotMatch(JSON.stringify(body), /montage\.invalid.*refused/);
    });
  });
}

describe('blend fetcher', () => {
  test('an address the fetcher refuses points to MONTAGE_ALLOW_PRIVATE_NETWORK', async (t) => {
    const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/jpeg' }).end(fs.readFileSync(path.join(SAMPLES, 'crowd-1.jpg'))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x.jpg`;
    const { blend } = loadConfig({});
    const refused = await fetchImage(url, 2, blend, addressPolicy(false), PUBLIC_URL).then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(refused instanceof BlendFailure);
    assert.equal(refused.code, 'image_fetch_failed');
    assert.equal(refused.imageIndex, 2);
    assert.match(refused.message, /MONTAGE_ALLOW_PRIVATE_NETWORK=1/);
    // The same server, allowed, answers: the refusal was the policy's.
    const bytes = await fetchImage(url, 2, blend, addressPolicy(true), PUBLIC_URL);
    assert.ok(bytes.length > 0);
  });
});

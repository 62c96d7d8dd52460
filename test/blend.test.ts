import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import sharp from 'sharp';
import { Webhook } from 'standardwebhooks';
import { claimJobs } from '../src/jobs/queue.js';
import { BLEND_KIND } from '../src/blend/blend.service.js';
import { BLEND_TYPES, resolveBlendType } from '../src/blend/engine/registry.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until, settledJob } from './helpers.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');

/** Serves the fixture sets over loopback, plus images that fail in each way a job can. */
async function imageServer(t: TestContext) {
  const hits = new Map<string, number>();
  const noise = await sharp(Buffer.from(Array.from({ length: 416 * 277 * 3 }, (_, i) => (i * 7919 + ((i * i) % 251)) % 256)), { raw: { width: 416, height: 277, channels: 3 } })
    .png()
    .toBuffer();
  // an animation of two frames: decoding would take its first frame alone
  const still = (background: string) => sharp({ create: { width: 416, height: 277, channels: 3, background } }).png().toBuffer();
  const animation = await sharp([await still('#c04020'), await still('#2040c0')], { join: { animated: true } }).gif().toBuffer();
  // the crowd set's second frame with an alpha channel: opaque everywhere, then with its right half transparent (magenta under it)
  const crowd = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'median-crowd', 'manifest.json'), 'utf8')) as { images: string[] };
  const second = await sharp(path.join(FIXTURES, 'median-crowd', crowd.images[1]!)).raw().toBuffer({ resolveWithObject: true });
  const rgba = (transparentFrom: number) => {
    const { width, height } = second.info;
    const out = Buffer.alloc(width * height * 4);
    for (let i = 0; i < width * height; i++) {
      const hidden = i % width >= transparentFrom;
      // 251 of 255: within the 2 % a pixel may lack of full opacity and count as opaque (media.ts OPAQUE)
      out.set(hidden ? [255, 0, 255, 0] : [second.data[i * 3]!, second.data[i * 3 + 1]!, second.data[i * 3 + 2]!, 251], i * 4);
    }
    return sharp(out, { raw: { width, height, channels: 4 } }).png().toBuffer();
  };
  const [opaqueAlpha, transparent] = [await rgba(second.info.width), await rgba(second.info.width >> 1)];
  // the same frame as a tiled pyramid TIFF: three pages, the first full size, the others reduced copies
  const pyramid = await sharp(second.data, { raw: { width: second.info.width, height: second.info.height, channels: 3 } }).tiff({ tile: true, pyramid: true, tileWidth: 64, tileHeight: 64, compression: 'lzw' }).toBuffer();
  // opaque, as a 12-bit AVIF: its lossy alpha reads back at 64,864 of 65,535, not full
  const deepAvif = await sharp(second.data, { raw: { width: second.info.width, height: second.info.height, channels: 3 } }).ensureAlpha(1).avif({ bitdepth: 12 }).toBuffer();
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    hits.set(url, (hits.get(url) ?? 0) + 1);
    if (url.startsWith('/fixtures/')) {
      const file = path.join(FIXTURES, url.slice('/fixtures/'.length));
      if (!file.startsWith(FIXTURES) || !fs.existsSync(file)) return res.writeHead(404).end();
      return res.writeHead(200, { 'content-type': file.endsWith('.png') ? 'image/png' : 'image/jpeg' }).end(fs.readFileSync(file));
    }
    if (url === '/noise.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(noise);
    if (url === '/deep.avif') return res.writeHead(200, { 'content-type': 'image/avif' }).end(deepAvif);
    if (url === '/pyramid.tiff') return res.writeHead(200, { 'content-type': 'image/tiff' }).end(pyramid);
    if (url === '/opaque-alpha.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(opaqueAlpha);
    if (url === '/transparent.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(transparent);
    if (url === '/animation.gif') return res.writeHead(200, { 'content-type': 'image/gif' }).end(animation);
    if (url === '/text.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end('this is not an image at all');
    if (url.startsWith('/flaky/')) {
      if (hits.get(url) === 1) return res.writeHead(503).end('try later');
      return res.writeHead(200, { 'content-type': 'image/png' }).end(fs.readFileSync(path.join(FIXTURES, url.slice('/flaky/'.length))));
    }
    res.writeHead(404).end('no such image');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const set = (name: string, ext = 'png') => {
    const manifest = JSON.parse(fs.readFileSync(path.join(FIXTURES, name, 'manifest.json'), 'utf8')) as { images: string[]; imagesJpeg: string[] };
    return (ext === 'png' ? manifest.images : manifest.imagesJpeg).map((f) => `${base}/fixtures/${name}/${f}`);
  };
  return { base, set, hits };
}

const ENV = { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_BLEND_CONCURRENCY: '2', MONTAGE_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms' };

/** The result URL on this test server (its PUBLIC_URL names port 0: the port is chosen at listen). */
function local(api: TestApp, resultUrl: string): string {
  const url = new URL(resultUrl);
  return `${api.url}${url.pathname}${url.search}`;
}

async function start(api: TestApp, key: string, body: unknown) {
  const res = await api.fetch('/v1/blend/start', { method: 'POST', key, json: body });
  assert.equal(res.status, 202, await res.clone().text());
  const job = await res.json();
  assert.equal(res.headers.get('location'), `/v1/blend/status/${job.jobId}`);
  return job as { jobId: string; status: string };
}

const settled = (api: TestApp, key: string, jobId: string, timeoutMs = 30_000) => settledJob(api, key, jobId, timeoutMs);

for (const engine of ENGINES) {
  describe(`blend area (${engine})`, () => {
    test('validation: every bad field is a 400 naming its path', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_MAX_IMAGES: '4' });
      const { key } = await api.account();
      const good = { projectId: 'p1', images: ['https://example.com/1.jpg', 'https://example.com/2.jpg'] };
      const cases: Array<[unknown, string]> = [
        [{ images: good.images }, '/projectId'],
        [{ ...good, projectId: 'has space' }, '/projectId'],
        [{ ...good, projectId: 'x'.repeat(129) }, '/projectId'],
        [{ ...good, images: ['https://example.com/1.jpg'] }, '/images'],
        [{ ...good, images: Array(5).fill('https://example.com/1.jpg') }, '/images'],
        [{ ...good, images: ['ftp://example.com/1.jpg', 'https://example.com/2.jpg'] }, '/images/0'],
        [{ ...good, images: ['https://example.com/1.jpg', 'https://user:pw@example.com/2.jpg'] }, '/images/1'],
        [{ ...good, images: ['https://example.com/1.jpg', 'http://127.0.0.1/2.jpg'] }, '/images/1'],
        [{ ...good, images: ['https://example.com/1.jpg', 'not a url'] }, '/images/1'],
        [{ ...good, options: { blendType: 'sharpen' } }, '/options/blendType'],
        [{ ...good, options: { qualityThreshold: 1.5 } }, '/options/qualityThreshold'],
        [{ ...good, options: { preserveBackground: 'yes' } }, '/options/preserveBackground'],
        [{ ...good, options: { outputFormat: 'bmp' } }, '/options/outputFormat'],
        [{ ...good, options: { colour: 'red' } }, '/options'],
        [{ ...good, webhookUrl: 'http://10.0.0.1/hook' }, '/webhookUrl'],
      ];
      for (const [body, pathName] of cases) {
        const res = await api.fetch('/v1/blend/start', { method: 'POST', key, json: body });
        const p = await problem(res, 400, 'invalid_request');
        assert.ok(
          p.errors.some((e: { path: string }) => e.path === pathName || e.path.startsWith(`${pathName}/`)),
          `${JSON.stringify(body)} → ${JSON.stringify(p.errors)}`,
        );
      }
      // Nothing was queued by the refused requests.
      const list = await (await api.fetch('/v1/blend/jobs', { key })).json();
      assert.equal(list.data.length, 0);
    });

    test('every blend type completes, and the result is served by its signed URL alone', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const types = BLEND_TYPES;
      const jobs = [];
      for (const blendType of types) {
        jobs.push(await start(api, key, { projectId: 'all-types', images: images.set('median-crowd').slice(0, 3), options: { blendType, outputFormat: blendType === 'median' ? 'png' : 'jpeg' } }));
      }
      for (const [i, queued] of jobs.entries()) {
        const job = await settled(api, key, queued.jobId, 60_000);
        assert.equal(job.status, 'completed', `${types[i]}: ${JSON.stringify(job.error)}`);
        assert.equal(job.requestedBlendType, types[i]);
        assert.equal(job.blendType, types[i] === 'auto' ? 'median' : resolveBlendType(types[i]!));
        assert.ok(job.qualityScore >= 0 && job.qualityScore <= 1);
        assert.ok(Number.isInteger(job.processingTime) && job.processingTime >= 0);
        assert.deepEqual([job.width, job.height], [416, 277]);
        assert.ok(job.startedAt && job.completedAt);
        const image = await fetch(local(api, job.resultUrl));
        assert.equal(image.status, 200);
        assert.equal(image.headers.get('content-type'), types[i] === 'median' ? 'image/png' : 'image/jpeg');
        assert.match(image.headers.get('cache-control') ?? '', /max-age=\d+/);
        const meta = await sharp(Buffer.from(await image.arrayBuffer())).metadata();
        assert.deepEqual([meta.width, meta.height, meta.format], [416, 277, types[i] === 'median' ? 'png' : 'jpeg']);
        const again = await fetch(local(api, job.resultUrl), { headers: { 'if-none-match': image.headers.get('etag')! } });
        assert.equal(again.status, 304);
      }
    });

    test('median of the crowd set is exact, and the list filters by project and status', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const queued = await start(api, key, { projectId: 'crowd', images: images.set('median-crowd'), options: { blendType: 'median', outputFormat: 'png' } });
      const job = await settled(api, key, queued.jobId);
      assert.equal(job.status, 'completed');
      // The status record tells how each frame was aligned: this tripod set is left as it is.
      assert.deepEqual(
        job.alignment.map((a: { index: number; method: string; shiftPx: number }) => [a.index, a.method, a.shiftPx]),
        [[0, 'reference', 0], ...[1, 2, 3, 4, 5, 6].map((i) => [i, 'identity', 0])],
      );
      for (const a of job.alignment) assert.ok(a.confidence >= 0.1 && a.confidence <= 1, JSON.stringify(a));
      const result = await sharp(Buffer.from(await (await fetch(local(api, job.resultUrl))).arrayBuffer())).raw().toBuffer();
      const truth = await sharp(path.join(FIXTURES, 'median-crowd/gt.png')).removeAlpha().raw().toBuffer();
      assert.ok(result.equals(truth), 'median of 7 frames equals the ground truth');
      await start(api, key, { projectId: 'other', images: images.set('median-crowd').slice(0, 2), options: { blendType: 'mean' } });
      const crowd = await (await api.fetch('/v1/blend/jobs?projectId=crowd', { key })).json();
      assert.deepEqual(crowd.data.map((j: { jobId: string }) => j.jobId), [queued.jobId]);
      const completed = await (await api.fetch('/v1/blend/jobs?status=completed&projectId=crowd', { key })).json();
      assert.equal(completed.data.length, 1);
      await problem(await api.fetch('/v1/blend/jobs?status=done', { key }), 400, 'invalid_request');
    });

    test('failure codes name the image at fault; what can never succeed is not retried', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const tiny = await startApp(t, await freshStorage(t, engine), { ...ENV, MONTAGE_BLEND_MAX_PIXELS: '100000' }, { workers: true });
      const tinyKey = (await tiny.account()).key;
      const [one, two] = images.set('median-crowd');
      const small = await startApp(t, await freshStorage(t, engine), { ...ENV, MONTAGE_BLEND_MAX_IMAGE_BYTES: '20000' }, { workers: true });
      const smallKey = (await small.account()).key;
      const cases: Array<[TestApp, string, unknown, string, number | null]> = [
        [api, key, { images: [one, `${images.base}/missing.png`] }, 'image_fetch_failed', 1],
        [api, key, { images: [`${images.base}/text.jpg`, two] }, 'unsupported_image', 0],
        [api, key, { images: [one, `${images.base}/animation.gif`] }, 'unsupported_image', 1],
        [api, key, { images: [one, `${images.base}/transparent.png`] }, 'unsupported_image', 1],
        [small, smallKey, { images: [one, two] }, 'image_too_large', 0],
        [api, key, { images: [one, `${images.base}/noise.png`], options: { blendType: 'mean' } }, 'alignment_failed', 1],
        [api, key, { images: images.set('noise-mean'), options: { blendType: 'mean', qualityThreshold: 0.999 } }, 'quality_below_threshold', null],
      ];
      for (const [target, k, body, code, index] of cases) {
        const queued = await start(target, k, { projectId: 'failures', ...(body as object) });
        const job = await settled(target, k, queued.jobId);
        assert.equal(job.status, 'failed', JSON.stringify(job));
        assert.equal(job.error.code, code, JSON.stringify(job.error));
        assert.equal(job.error.imageIndex, index);
        assert.ok(job.error.message.length > 0);
        assert.equal(job.attempts, 1, `${code} is not retried`);
        assert.equal(job.resultUrl, undefined);
        if (code === 'unsupported_image' && index === 1) assert.match(job.error.message, /holds 2 frames|has transparent pixels/);
        if (code === 'quality_below_threshold') assert.ok(job.qualityScore > 0 && job.qualityScore < 0.999, 'the score is still reported');
      }
      // An alpha channel opaque everywhere is dropped: the frame blends as the same frame without it.
      const withAlpha = await settled(api, key, (await start(api, key, { projectId: 'failures', images: [one, `${images.base}/opaque-alpha.png`] })).jobId);
      const without = await settled(api, key, (await start(api, key, { projectId: 'failures', images: [one, two] })).jobId);
      // A TIFF's reduced copies of itself are not frames of an animation: its first page is the frame.
      const tiff = await settled(api, key, (await start(api, key, { projectId: 'failures', images: [one, `${images.base}/pyramid.tiff`] })).jobId);
      const avif = await settled(api, key, (await start(api, key, { projectId: 'failures', images: [one, `${images.base}/deep.avif`] })).jobId);
      assert.deepEqual(
        [withAlpha.status, without.status, tiff.status, avif.status],
        ['completed', 'completed', 'completed', 'completed'],
        JSON.stringify([withAlpha.error, tiff.error, avif.error]),
      );
      assert.equal(withAlpha.qualityScore, without.qualityScore);
      assert.equal(tiff.qualityScore, without.qualityScore);
      // Bigger than the pixel limit (the fixtures are 416×277 > 100,000 pixels).
      const big = await settled(tiny, tinyKey, (await start(tiny, tinyKey, { projectId: 'failures', images: [one, two] })).jobId);
      assert.deepEqual([big.error.code, big.error.imageIndex], ['image_too_large', 0]);
    });

    test('a server error while fetching is retried, and the job then completes', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const [one] = images.set('median-crowd');
      const queued = await start(api, key, { projectId: 'retry', images: [one, `${images.base}/flaky/median-crowd/2.png`], options: { blendType: 'mean' } });
      const job = await settled(api, key, queued.jobId);
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      assert.equal(job.attempts, 2);
    });

    test('a job longer than its time limit fails with job_timeout, once', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), { ...ENV, MONTAGE_BLEND_JOB_TIMEOUT: '1ms' }, { workers: true });
      const { key } = await api.account();
      const job = await settled(api, key, (await start(api, key, { projectId: 'slow', images: images.set('median-crowd').slice(0, 2) })).jobId);
      assert.deepEqual([job.status, job.error.code, job.attempts], ['failed', 'job_timeout', 1]);
    });

    test('a job whose worker died is taken over; past its attempts it fails with internal_error', async (t) => {
      const images = await imageServer(t);
      const storage = await freshStorage(t, engine);
      // A worker that claims and then dies: its lease (1 ms) lapses at once.
      const dead = async (api: TestApp) => {
        const claimed = await claimJobs(api.database.db, api.database.engine, [BLEND_KIND], 'dead-worker', 10, 1);
        assert.equal(claimed.length, 1);
        await new Promise((r) => setTimeout(r, 5));
      };
      const queued = await startApp(t, storage, ENV);
      const { key } = await queued.account();
      const retried = await start(queued, key, { projectId: 'crash', images: images.set('median-crowd').slice(0, 2), options: { blendType: 'mean' } });
      await dead(queued);
      const live = await startApp(t, storage, ENV, { workers: true });
      const done = await settled(live, key, retried.jobId);
      assert.deepEqual([done.status, done.attempts], ['completed', 2]);

      const oneAttempt = { ...ENV, MONTAGE_BLEND_MAX_ATTEMPTS: '1' };
      const other = await freshStorage(t, engine);
      const once = await startApp(t, other, oneAttempt);
      const onceKey = (await once.account()).key;
      const lost = await start(once, onceKey, { projectId: 'crash', images: images.set('median-crowd').slice(0, 2) });
      await dead(once);
      const survivor = await startApp(t, other, oneAttempt, { workers: true });
      const failed = await settled(survivor, onceKey, lost.jobId);
      assert.deepEqual([failed.status, failed.error.code], ['failed', 'internal_error']);
    });

    test('signed result URLs: tampered is 403, expired is 410, another account sees 404', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const other = await api.account();
      const queued = await start(api, key, { projectId: 'mine', images: images.set('median-crowd').slice(0, 2), options: { blendType: 'mean' } });
      const job = await settled(api, key, queued.jobId);
      assert.equal(job.status, 'completed');
      const url = new URL(job.resultUrl);
      assert.equal(url.origin, api.config.publicUrl);
      const tampered = new URL(local(api, job.resultUrl));
      tampered.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
      await problem((await fetch(tampered)) as never, 403, 'invalid_signature');
      const { createHmac } = await import('node:crypto');
      const row = await api.database.db.selectFrom('blendJobs').select('resultToken').where('id', '=', job.jobId).executeTakeFirstOrThrow();
      const file = url.pathname.split('/').pop()!;
      const past = Math.floor(Date.now() / 1000) - 10;
      const expired = `${api.url}/v1/blend/results/${file}?expires=${past}&signature=${createHmac('sha256', row.resultToken).update(`${file}:${past}`).digest('base64url')}`;
      await problem((await fetch(expired)) as never, 410, 'result_url_expired');
      await problem((await api.fetch(`/v1/blend/status/${job.jobId}`, { key: other.key })) as never, 404, 'not_found');
      assert.equal((await (await api.fetch('/v1/blend/jobs', { key: other.key })).json()).data.length, 0);
      await problem(await api.fetch('/v1/blend/status/job_01m80eg3tperaacsapew6ns732', { key }), 404, 'not_found');
      // The scope and the plan rules of every route apply.
      const eventsOnly = await api.key(other.accountId, 'business', { scopes: ['events:read'] });
      await problem(await api.fetch('/v1/blend/jobs', { key: eventsOnly }), 403, 'insufficient_scope');
    });

    test('finished jobs and their result images are removed after MONTAGE_BLEND_RETENTION; others stay', async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), { ...ENV, MONTAGE_BLEND_RETENTION: '1h' }, { workers: true });
      const { key } = await api.account();
      const done = await settled(api, key, (await start(api, key, { projectId: 'old', images: images.set('median-crowd').slice(0, 2), options: { blendType: 'mean' } })).jobId);
      assert.equal(done.status, 'completed');
      const resultFile = path.join(api.config.dataDir, 'results', (await api.database.db.selectFrom('blendJobs').select('resultKey').where('id', '=', done.jobId).executeTakeFirstOrThrow()).resultKey!);
      assert.ok(fs.existsSync(resultFile));
      const failed = await settled(api, key, (await start(api, key, { projectId: 'old', images: [`${images.base}/missing.png`, `${images.base}/missing2.png`] })).jobId);
      assert.equal(failed.status, 'failed');
      const store = (await import('../src/blend/storage.js')).createResultStore(api.config);
      const { purgeExpiredBlendJobs } = await import('../src/blend/blend.service.js');

      assert.equal(await purgeExpiredBlendJobs(api.database.db, store, api.config.blend.retentionMs), 0, 'nothing is due yet');
      const later = Date.now() + api.config.blend.retentionMs + 1000;
      // A job still queued when the sweep runs is kept, however old.
      await api.database.db.insertInto('blendJobs').values({ ...(await api.database.db.selectFrom('blendJobs').selectAll().where('id', '=', done.jobId).executeTakeFirstOrThrow()), id: 'job_01m80eg3tperaacsapew6ns7qq', status: 'queued', completedAt: null, resultKey: null }).execute();
      assert.equal(await purgeExpiredBlendJobs(api.database.db, store, api.config.blend.retentionMs, later), 2);
      assert.ok(!fs.existsSync(resultFile), 'the result image is deleted');
      await problem(await api.fetch(`/v1/blend/status/${done.jobId}`, { key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/blend/status/${failed.jobId}`, { key }), 404, 'not_found');
      // Its per-job signing secret went with it: the URL is refused like any URL that cannot be verified.
      await problem((await fetch(local(api, done.resultUrl))) as never, 403, 'invalid_signature');
      assert.deepEqual((await (await api.fetch('/v1/blend/jobs', { key })).json()).data.map((j: { jobId: string }) => j.jobId), ['job_01m80eg3tperaacsapew6ns7qq']);
    });

    test("blend.* webhooks reach subscribers and the job's own webhookUrl, signed", async (t) => {
      const images = await imageServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const got: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
      const server = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          got.push({ headers: req.headers, body });
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
      const hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const { secret } = await (await api.fetch('/v1/account/webhook-secret', { key })).json();
      const ok = await start(api, key, { projectId: 'hooks', images: images.set('median-crowd').slice(0, 2), options: { blendType: 'mean' }, webhookUrl: hook });
      const bad = await start(api, key, { projectId: 'hooks', images: [images.set('median-crowd')[0], `${images.base}/missing.png`], webhookUrl: hook });
      await settled(api, key, ok.jobId);
      await settled(api, key, bad.jobId);
      await until(() => got.length >= 4, 10_000, 'four deliveries');
      const verifier = new Webhook(secret);
      const bodies = got.map((d) => verifier.verify(d.body, d.headers as Record<string, string>) as { event: string; jobId: string; data: any });
      const of = (jobId: string) => bodies.filter((b) => b.jobId === jobId).map((b) => b.event).sort();
      assert.deepEqual(of(ok.jobId), ['blend.completed', 'blend.started']);
      assert.deepEqual(of(bad.jobId), ['blend.failed', 'blend.started']);
      const completed = bodies.find((b) => b.event === 'blend.completed')!;
      assert.deepEqual(Object.keys(completed.data).sort(), ['alignment', 'processingTime', 'qualityScore', 'resultUrl']);
      assert.deepEqual(
        completed.data.alignment.map((a: { index: number; method: string }) => [a.index, a.method]),
        [
          [0, 'reference'],
          [1, 'identity'],
        ],
      );
      assert.equal((await fetch(local(api, completed.data.resultUrl))).status, 200);
      const failed = bodies.find((b) => b.event === 'blend.failed')!;
      assert.deepEqual([failed.data.error.code, failed.data.error.imageIndex], ['image_fetch_failed', 1]);
    });
  });
}

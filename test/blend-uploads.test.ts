import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { createResultStore } from '../src/blend/storage.js';
import { UPLOAD_BUFFER_BYTES } from '../src/blend/upload-intake.js';
import { checkUploadImages, purgeExpiredUploads } from '../src/blend/uploads.service.js';
import { lockAccountUploads } from '../src/blend/uploads.repository.js';
import { TenantScope } from '../src/db/tenant.js';
import { newId } from '../src/ids.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until, settledJob } from './helpers.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');
const CROWD = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'median-crowd/manifest.json'), 'utf8')) as { images: string[]; imagesJpeg: string[] };
const crowd = (ext: 'png' | 'jpg') => (ext === 'png' ? CROWD.images : CROWD.imagesJpeg).map((f) => path.join(FIXTURES, 'median-crowd', f));
const BIN = path.resolve(import.meta.dirname, '../bin/montage.js');

/** Sends `bytes` as the multipart field `field` (the API's upload). */
function upload(api: TestApp, key: string, bytes: Buffer, field = 'file', name = 'frame.jpg') {
  const form = new FormData();
  form.append(field, new Blob([bytes]), name);
  return api.fetch('/v1/blend/uploads', { method: 'POST', key, body: form });
}

async function uploaded(api: TestApp, key: string, bytes: Buffer) {
  const res = await upload(api, key, bytes);
  assert.equal(res.status, 201, await res.clone().text());
  const body = await res.json();
  assert.equal(res.headers.get('location'), `/v1/blend/uploads/${body.id}`);
  return body as { id: string; bytes: number; width: number; height: number; format: string; sha256: string; expiresAt: string; createdAt: string };
}

/** Every file under the store's uploads/ (none may be left by a refused upload, temporary ones included). */
function storedUploads(api: TestApp): string[] {
  const root = path.join(api.config.dataDir, 'results', 'uploads');
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

const settled = settledJob;

/** A JPEG of seeded noise (q90, about 0.8 bytes a pixel): an image of a chosen size that compresses little. */
async function noiseJpeg(width: number, height: number, seed: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  let state = seed;
  for (let i = 0; i < raw.length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) | 0;
    raw[i] = state >>> 24;
  }
  return sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
}

/** A logger that keeps what is logged as an error (the sweep's and the deletes' failures). */
function capturingLog() {
  const errors: { obj: object; msg: string }[] = [];
  return { errors, error: (obj: object, msg: string) => errors.push({ obj, msg }) };
}

const start = (api: TestApp, key: string, images: string[], options: object = { blendType: 'median', outputFormat: 'png' }) =>
  api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'uploads', images, options } });

for (const engine of ENGINES) {
  describe(`blend uploads (${engine})`, () => {
    test('an upload reports the size the image is shown at: a quarter turn of its EXIF orientation swaps width and height', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      const jpeg = fs.readFileSync(crowd('jpg')[0]!); // 416×277 as stored
      for (const [orientation, size] of [[1, [416, 277]], [3, [416, 277]], [6, [277, 416]], [8, [277, 416]]] as const) {
        const tagged = await sharp(jpeg).withMetadata({ orientation }).jpeg().toBuffer();
        const record = await uploaded(api, key, tagged);
        assert.deepEqual([record.width, record.height], size, `orientation ${orientation}`);
      }
    });

    test('a JPEG and a PNG are stored as sent, read back, listed by pages, deleted; another account sees none of it', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_UPLOAD_TTL: '2h' });
      const { key } = await api.account();
      const other = await api.account();
      const jpeg = fs.readFileSync(crowd('jpg')[0]!);
      const png = fs.readFileSync(crowd('png')[0]!);
      const before = Date.now();
      const a = await uploaded(api, key, jpeg);
      const b = await uploaded(api, key, png);
      assert.match(a.id, /^upl_[0-9a-z]{26}$/);
      assert.deepEqual([a.bytes, a.width, a.height, a.format, a.sha256], [jpeg.length, 416, 277, 'jpeg', createHash('sha256').update(jpeg).digest('hex')]);
      assert.deepEqual([b.bytes, b.format, b.sha256], [png.length, 'png', createHash('sha256').update(png).digest('hex')]);
      const ttl = Date.parse(a.expiresAt) - Date.parse(a.createdAt);
      assert.equal(ttl, 2 * 3_600_000);
      assert.ok(Date.parse(a.createdAt) >= before - 1000);
      // The bytes stored are the bytes sent.
      const stored = storedUploads(api);
      assert.equal(stored.length, 2);
      assert.ok(stored.some((f) => fs.readFileSync(f).equals(png)));

      assert.deepEqual(await (await api.fetch(`/v1/blend/uploads/${a.id}`, { key })).json(), a);
      const page1 = await (await api.fetch('/v1/blend/uploads?limit=1', { key })).json();
      assert.deepEqual([page1.data.map((u: { id: string }) => u.id), page1.hasMore], [[b.id], true]);
      const page2 = await (await api.fetch(`/v1/blend/uploads?limit=1&cursor=${page1.nextCursor}`, { key })).json();
      assert.deepEqual([page2.data.map((u: { id: string }) => u.id), page2.hasMore], [[a.id], false]);

      // Tenant isolation: another account's upload does not exist for it, anywhere.
      await problem(await api.fetch(`/v1/blend/uploads/${a.id}`, { key: other.key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/blend/uploads/${a.id}`, { method: 'DELETE', key: other.key }), 404, 'not_found');
      assert.deepEqual((await (await api.fetch('/v1/blend/uploads', { key: other.key })).json()).data, []);
      const refused = await problem(await start(api, other.key, [a.id, b.id]), 400, 'invalid_request');
      assert.deepEqual(refused.errors.map((e: { path: string }) => e.path), ['/images/0']);
      await problem(await api.fetch('/v1/blend/uploads/upl_nonsense', { key }), 404, 'not_found');
      const eventsOnly = await api.key(other.accountId, 'business', { scopes: ['events:read'] });
      await problem(await upload(api, eventsOnly, png), 403, 'insufficient_scope');

      assert.equal((await api.fetch(`/v1/blend/uploads/${a.id}`, { method: 'DELETE', key })).status, 204);
      await problem(await api.fetch(`/v1/blend/uploads/${a.id}`, { key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/blend/uploads/${a.id}`, { method: 'DELETE', key }), 404, 'not_found');
      assert.equal(storedUploads(api).length, 1, 'the bytes went with it');
    });

    test('bytes, pixels, not an image, a missing field and a full account are refused while receiving, and nothing is stored', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_MAX_IMAGE_BYTES: '100000', MONTAGE_BLEND_MAX_PIXELS: '200000', MONTAGE_BLEND_MAX_UPLOADS: '2' });
      const { key } = await api.account();
      const png = fs.readFileSync(crowd('png')[0]!); // 416×277, 209,008 bytes
      const jpeg = fs.readFileSync(crowd('jpg')[0]!); // 416×277, 41,388 bytes

      const bytes = await problem(await upload(api, key, png), 413, 'upload_too_large');
      assert.equal(bytes.limit, 'bytes');
      // A header that names more pixels than the limit is refused from the first bytes: the rest is random.
      const huge = await sharp({ create: { width: 1000, height: 1000, channels: 3, background: '#808080' } }).jpeg().toBuffer();
      const pixels = await problem(await upload(api, key, Buffer.concat([huge.subarray(0, 2000), Buffer.alloc(80_000, 7)])), 413, 'upload_too_large');
      assert.equal(pixels.limit, 'pixels');
      // Ten megabytes of a valid header and then padding: refused at the byte limit, answered all the same.
      const padded = Buffer.concat([jpeg, Buffer.alloc(10_000_000)]);
      assert.equal((await problem(await upload(api, key, padded), 413, 'upload_too_large')).limit, 'bytes');
      await problem(await upload(api, key, Buffer.from('this is not an image at all, only text '.repeat(50))), 422, 'upload_not_an_image');
      await problem(await upload(api, key, Buffer.alloc(0)), 422, 'upload_not_an_image');
      const missing = await problem(await upload(api, key, jpeg, 'image'), 400, 'invalid_request');
      assert.equal(missing.errors[0].path, '/file');
      await problem(await api.fetch('/v1/blend/uploads', { method: 'POST', key, json: { file: 'x' } }), 400, 'invalid_request');
      // An animation is refused (a job would take its first frame alone), naming its frames.
      const still = (background: string) => sharp({ create: { width: 64, height: 48, channels: 3, background } }).png().toBuffer();
      const animation = await sharp([await still('#c04020'), await still('#2040c0')], { join: { animated: true } }).gif().toBuffer();
      assert.match((await problem(await upload(api, key, animation), 422, 'upload_not_an_image')).detail, /holds 2 frames/);
      // The other routes of uploads take no such body: 415, as every JSON route answers it.
      await problem(await api.fetch('/v1/blend/uploads/upl_00000000000000000000000000', { method: 'DELETE', key, body: jpeg, headers: { 'content-type': 'application/octet-stream' } }), 415, 'unsupported_media_type');
      // The image's own bytes as the body: the route's own advice (a multipart form), not the JSON routes' 415.
      for (const type of ['image/jpeg', 'application/octet-stream']) {
        const raw = await problem(await api.fetch('/v1/blend/uploads', { method: 'POST', key, body: jpeg, headers: { 'content-type': type } }), 400, 'invalid_request');
        assert.equal(raw.errors[0].path, '/file');
        assert.match(raw.detail, /multipart\/form-data/);
      }
      assert.deepEqual(storedUploads(api), [], 'no bytes of a refused upload are left');
      assert.deepEqual((await (await api.fetch('/v1/blend/uploads', { key })).json()).data, []);

      await uploaded(api, key, jpeg);
      await uploaded(api, key, jpeg);
      assert.equal((await problem(await upload(api, key, jpeg), 409, 'upload_quota_exceeded')).limit, 'count');
      assert.equal(storedUploads(api).length, 2);
      // The server still answers on a fresh connection after the refusals that closed theirs.
      assert.equal((await api.fetch('/v1/blend/uploads', { key })).status, 200);
    });

    test('an image larger than the upload buffers is stored byte for byte; one past the byte limit far into its body leaves nothing', async (t) => {
      const limit = 3 * UPLOAD_BUFFER_BYTES;
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_MAX_IMAGE_BYTES: String(limit) });
      const { key } = await api.account();
      const large = await noiseJpeg(2000, 1500, 1);
      const tooLarge = await noiseJpeg(2400, 1800, 2);
      assert.ok(large.length > 2 * UPLOAD_BUFFER_BYTES && large.length <= limit, `${large.length} bytes`);
      assert.ok(tooLarge.length > limit, `${tooLarge.length} bytes`);

      const stored = await uploaded(api, key, large);
      assert.deepEqual([stored.bytes, stored.width, stored.height, stored.sha256], [large.length, 2000, 1500, createHash('sha256').update(large).digest('hex')]);
      assert.deepEqual(storedUploads(api).map((f) => fs.readFileSync(f).equals(large)), [true]);
      // Refused when the limit is passed, more than two buffers into the body: no part of it is kept.
      assert.equal((await problem(await upload(api, key, tooLarge), 413, 'upload_too_large')).limit, 'bytes');
      assert.equal(storedUploads(api).length, 1);
      assert.equal((await (await api.fetch('/v1/blend/uploads', { key })).json()).data.length, 1);
    });

    test('the byte quota of an account counts live uploads only', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_MAX_UPLOAD_BYTES: '100000' });
      const { key } = await api.account();
      const jpeg = fs.readFileSync(crowd('jpg')[0]!); // 41,388 bytes
      const first = await uploaded(api, key, jpeg);
      await uploaded(api, key, jpeg);
      assert.equal((await problem(await upload(api, key, jpeg), 409, 'upload_quota_exceeded')).limit, 'bytes');
      assert.equal((await api.fetch(`/v1/blend/uploads/${first.id}`, { method: 'DELETE', key })).status, 204);
      await uploaded(api, key, jpeg);
      assert.equal(storedUploads(api).length, 2);
    });

    test('uploads expire; the sweep removes them, but keeps one a queued job uses until the job ends', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_UPLOAD_TTL: '1h' });
      const { key } = await api.account();
      const [one, two, three] = crowd('jpg').map((f) => fs.readFileSync(f));
      const used = await uploaded(api, key, one!);
      const alsoUsed = await uploaded(api, key, two!);
      const unused = await uploaded(api, key, three!);
      // No worker runs here: the job stays queued.
      const job = await (await start(api, key, [used.id, alsoUsed.id])).json();
      assert.equal(job.status, 'queued');
      assert.deepEqual(job.images, [used.id, alsoUsed.id]);
      await problem(await api.fetch(`/v1/blend/uploads/${used.id}`, { method: 'DELETE', key }), 409, 'upload_in_use');

      const store = createResultStore(api.config);
      const log = capturingLog();
      assert.equal(await purgeExpiredUploads(api.database.db, store, log), 0, 'nothing has expired yet');
      const later = Date.now() + 3_600_000 + 1000;
      assert.equal(await purgeExpiredUploads(api.database.db, store, log, later), 1);
      assert.equal(storedUploads(api).length, 2, 'the queued job keeps its two');
      const rows = await api.database.db.selectFrom('blendUploads').select('id').orderBy('id').execute();
      assert.deepEqual(rows.map((r) => r.id), [used.id, alsoUsed.id]);
      assert.ok(!rows.some((r) => r.id === unused.id));

      await api.database.db.updateTable('blendJobs').set({ status: 'failed', completedAt: Date.now() }).where('id', '=', job.jobId).execute();
      assert.equal(await purgeExpiredUploads(api.database.db, store, log, later), 2);
      assert.deepEqual(storedUploads(api), []);
      assert.deepEqual(log.errors, []);
    });

    test('a DELETE that waits for a job start holding the upload sees that job and refuses', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_UPLOAD_TTL: '1h' });
      const { key, accountId } = await api.account();
      const [one, two] = crowd('jpg').map((f) => fs.readFileSync(f));
      const first = await uploaded(api, key, one!);
      const second = await uploaded(api, key, two!);
      const queued = await (await start(api, key, [first.id, first.id])).json();
      const job = await api.database.db.selectFrom('blendJobs').selectAll().where('id', '=', queued.jobId).executeTakeFirstOrThrow();
      let deleting: Promise<Response> | null = null;
      // A job start as blend.service does it: the uploads checked (held, on PostgreSQL), then the job stored; the DELETE comes in between.
      await api.database.db.transaction().execute(async (trx) => {
        await checkUploadImages(new TenantScope(trx, accountId), [second.id], Date.now());
        deleting = api.fetch(`/v1/blend/uploads/${second.id}`, { method: 'DELETE', key });
        await new Promise((r) => setTimeout(r, 300));
        await trx.insertInto('blendJobs').values({ ...job, id: newId('job'), images: JSON.stringify([second.id, second.id]) }).execute();
      });
      await problem(await deleting!, 409, 'upload_in_use');
      assert.ok(await api.database.db.selectFrom('blendUploads').select('id').where('id', '=', second.id).executeTakeFirst(), 'the upload stays');
    });

    test('an upload holding its account lock does not hold up other writes of the account', async (t) => {
      if (engine !== 'postgres') return t.skip('SQLite runs one write transaction at a time: there is no row lock to test');
      const api = await startApp(t, await freshStorage(t, engine));
      const { key, accountId } = await api.account();
      await api.database.db.transaction().execute(async (trx) => {
        await lockAccountUploads(new TenantScope(trx, accountId));
        // A job insert takes a key-share lock on the account row: with FOR UPDATE it would wait for this transaction, which waits for it.
        const started = start(api, key, ['https://example.com/1.png', 'https://example.com/2.png'], { blendType: 'mean' }).then((res) => res.status);
        const blocked = new Promise((r) => setTimeout(() => r('still waiting after 10 s'), 10_000).unref());
        assert.equal(await Promise.race([started, blocked]), 202);
      });
    });

    test('a sweep whose store fails to delete one upload removes the others and keeps that record for the next sweep', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_UPLOAD_TTL: '1h' });
      const { key, accountId } = await api.account();
      const frames = crowd('jpg').slice(0, 3).map((f) => fs.readFileSync(f));
      const ids: string[] = [];
      for (const frame of frames) ids.push((await uploaded(api, key, frame)).id);
      // The directory store cannot delete a directory where the object's file was: a real failure of its delete.
      const stuck = path.join(api.config.dataDir, 'results', 'uploads', accountId.toLowerCase(), ids[1]!);
      fs.rmSync(stuck);
      fs.mkdirSync(stuck);
      fs.writeFileSync(path.join(stuck, 'keep'), 'x');

      const store = createResultStore(api.config);
      const log = capturingLog();
      const later = Date.now() + 3_600_000 + 1000;
      assert.equal(await purgeExpiredUploads(api.database.db, store, log, later), 2, 'the failure does not stop the others');
      const rows = await api.database.db.selectFrom('blendUploads').select('id').execute();
      assert.deepEqual(rows.map((r) => r.id), [ids[1]], 'the record of the bytes still stored stays');
      assert.equal(log.errors.length, 1);
      assert.equal((log.errors[0]!.obj as { key: string }).key, `uploads/${accountId.toLowerCase()}/${ids[1]}`);

      fs.rmSync(stuck, { recursive: true });
      assert.equal(await purgeExpiredUploads(api.database.db, store, log, later), 1, 'the next sweep removes it');
      assert.deepEqual(await api.database.db.selectFrom('blendUploads').select('id').execute(), []);
    });

    test('an expired upload is gone for the client: not read, not listed, refused by a new job', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_UPLOAD_TTL: '1s' });
      const { key } = await api.account();
      const jpeg = fs.readFileSync(crowd('jpg')[0]!);
      const a = await uploaded(api, key, jpeg);
      const b = await uploaded(api, key, jpeg);
      await new Promise((r) => setTimeout(r, Date.parse(b.expiresAt) - Date.now() + 50));
      await problem(await api.fetch(`/v1/blend/uploads/${a.id}`, { key }), 404, 'not_found');
      assert.deepEqual((await (await api.fetch('/v1/blend/uploads', { key })).json()).data, []);
      const refused = await problem(await start(api, key, [a.id, b.id]), 400, 'invalid_request');
      assert.equal(refused.errors[0].path, '/images/0');
    });

    test('a job of uploaded frames (and a URL beside them) completes with the exact median', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_CONCURRENCY: '1', MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
      const { key } = await api.account();
      const frames = crowd('png');
      // The last frame is linked, the others uploaded.
      const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(fs.readFileSync(frames.at(-1)!)));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
      const ids = [];
      for (const file of frames.slice(0, -1)) ids.push((await uploaded(api, key, fs.readFileSync(file))).id);
      ids.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/7.png`);
      const queued = await start(api, key, ids);
      assert.equal(queued.status, 202);
      const job = await settled(api, key, (await queued.json()).jobId);
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      const result = new URL(job.resultUrl);
      const image = await fetch(`${api.url}${result.pathname}${result.search}`);
      const pixels = await sharp(Buffer.from(await image.arrayBuffer())).raw().toBuffer();
      const truth = await sharp(path.join(FIXTURES, 'median-crowd/gt.png')).removeAlpha().raw().toBuffer();
      assert.ok(pixels.equals(truth), 'the median of the 6 uploaded frames and the linked one equals the ground truth');

      // Once its job has finished, an upload can be deleted again.
      const again = await (await start(api, key, ids.slice(0, 2), { blendType: 'mean' })).json();
      const finished = await settled(api, key, again.jobId);
      assert.equal(finished.status, 'completed');
      assert.equal((await api.fetch(`/v1/blend/uploads/${ids[1]}`, { method: 'DELETE', key })).status, 204);
    });

    test('montage blend uploads the files, waits for the job and writes the result; refusals exit 1, usage errors 2', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_CONCURRENCY: '1' }, { workers: true });
      const { key } = await api.account();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-cli-'));
      onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
      const run = (args: string[], env: Record<string, string> = {}) =>
        new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, MONTAGE_API_KEY: key, ...env }, cwd: dir });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d) => (stdout += d));
          child.stderr.on('data', (d) => (stderr += d));
          child.on('exit', (code) => resolve({ code, stdout, stderr }));
        });

      const out = path.join(dir, 'empty.png');
      const done = await run(['blend', ...crowd('png'), '--type', 'median', '--server', api.url, '--out', out, '--json']);
      assert.equal(done.code, 0, done.stderr);
      const job = JSON.parse(done.stdout);
      assert.deepEqual([job.status, job.blendType, job.output, job.images.length], ['completed', 'median', out, 7]);
      assert.ok(job.images.every((id: string) => /^upl_/.test(id)));
      for (let i = 1; i <= 7; i++) assert.match(done.stderr, new RegExp(`\\[${i}/7\\] ${i}\\.png .*upl_`));
      assert.match(done.stderr, /completed in/);
      const pixels = await sharp(out).raw().toBuffer();
      const truth = await sharp(path.join(FIXTURES, 'median-crowd/gt.png')).removeAlpha().raw().toBuffer();
      assert.ok(pixels.equals(truth), 'the file written is the exact median');

      // Without --out: <jobId>.jpg in the working directory, its name on stdout; the key from --key.
      const plain = await run(['blend', ...crowd('jpg').slice(0, 2), '--type', 'mean', '--no-align', '--server', api.url, '--key', key], { MONTAGE_API_KEY: '' });
      assert.equal(plain.code, 0, plain.stderr);
      const written = plain.stdout.trim();
      assert.match(written, /^job_[0-9a-z]{26}\.jpg$/);
      assert.equal((await sharp(path.join(dir, written)).metadata()).format, 'jpeg');

      const text = path.join(dir, 'notes.jpg');
      fs.writeFileSync(text, 'not an image');
      const refused = await run(['blend', crowd('png')[0]!, text, '--type', 'median', '--server', api.url]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^upload_not_an_image: /m);
      const badKey = await run(['blend', ...crowd('png').slice(0, 2), '--type', 'median', '--server', api.url], { MONTAGE_API_KEY: `mtg_${'x'.repeat(40)}` });
      assert.equal(badKey.code, 1);
      assert.match(badKey.stderr, /^unauthorized: /m);
      const noKey = await run(['blend', ...crowd('png').slice(0, 2), '--type', 'median', '--server', api.url], { MONTAGE_API_KEY: '' });
      assert.equal(noKey.code, 2);
      assert.match(noKey.stderr, /--key or MONTAGE_API_KEY/);
      const oneFile = await run(['blend', crowd('png')[0]!, '--type', 'median', '--server', api.url]);
      assert.equal(oneFile.code, 2);
      const noType = await run(['blend', ...crowd('png').slice(0, 2), '--server', api.url]);
      assert.equal(noType.code, 2);
      assert.match(noType.stderr, /--type/);
      // A job that runs and fails exits 3 with its error code.
      const small = path.join(dir, 'small.png');
      await sharp({ create: { width: 64, height: 64, channels: 3, background: '#202020' } }).png().toFile(small);
      const failed = await run(['blend', crowd('png')[0]!, small, '--type', 'mean', '--server', api.url, '--out', path.join(dir, 'x.png')]);
      assert.equal(failed.code, 3, failed.stderr);
      assert.match(failed.stderr, /^alignment_failed: /m);
    });
  });
}

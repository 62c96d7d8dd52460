/**
 * A blend job's progress and its cancel (docs/blend.md, "Progress" and "Cancel"): the stages a
 * real job goes through, as server-sent events and in its polled status record; cancelling a
 * queued job and a job running in a `montage worker` process of its own, whose CPU falls back to
 * idle; what cannot be cancelled; another account's job; the bound on open streams. On every
 * engine of the run. The worker test runs the built server (`npm run build` first).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { before, describe, test, type TestContext } from 'node:test';
import { chromium } from 'playwright-core';
import sharp from 'sharp';
import { createAccount } from '../src/accounts/accounts.service.js';
import { DASHBOARD_DIR } from '../src/dashboard/dashboard.routes.js';
import { PROGRESS_STAGES } from '../src/blend/progress.js';
import { ENGINES, FAST_WEBHOOKS, freshStorage, hookReceiver, jsonClient, onCleanup, problem, startApp, type TestApp, until, workerProcess } from './helpers.js';

const FIXTURE = path.resolve(import.meta.dirname, 'fixtures/blend/exposure-bracket');
const small = ['1.png', '2.png', '3.png'].map((f) => fs.readFileSync(path.join(FIXTURE, f)));
/** Frames large enough that a job works for several seconds on two threads. */
let large: Buffer[] = [];
let medium: Buffer[] = [];

before(async () => {
  large = await Promise.all(small.map((png) => sharp(png).resize(3600, 3600).jpeg({ quality: 90 }).toBuffer()));
  medium = await Promise.all(small.map((png) => sharp(png).resize(1600, 1600).jpeg({ quality: 90 }).toBuffer()));
});

/**
 * Serves the frames over loopback: `/<size>/<index>` at once, `/slow/<size>/<index>` after
 * 300 ms per index (so that fetching is seen), and `/held/<index>` only once `release()` is called.
 */
async function frameServer(t: TestContext) {
  const held: Array<() => void> = [];
  let released = false;
  const server = http.createServer((req, res) => {
    const parts = (req.url ?? '').split('/').slice(1);
    const send = (size: string, index: string) => {
      const frame = ({ large, medium, small } as Record<string, Buffer[]>)[size]?.[Number(index)];
      if (!frame) return res.writeHead(404).end();
      res.writeHead(200).end(frame);
    };
    if (parts[0] === 'slow') return void setTimeout(() => send(parts[1]!, parts[2]!), 300 * (Number(parts[2]) + 1));
    if (parts[0] === 'held') return released ? send('small', parts[1]!) : void held.push(() => send('small', parts[1]!));
    send(parts[0]!, parts[1]!);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const release = () => {
    released = true;
    held.splice(0).forEach((send) => send());
  };
  onCleanup(t, () => {
    release();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const urls = (prefix: string, count = 3) => Array.from({ length: count }, (_, i) => `${base}/${prefix}/${i % 3}`);
  return { urls, release };
}

interface ServerSentEvent {
  event: string;
  data: any;
}

/** Opens a job's event stream and collects its events until the stream ends; `response` is the answer as it began. */
async function openStream(api: TestApp, key: string, jobId: string) {
  const response = await api.fetch(`/v1/blend/status/${jobId}/events`, { key });
  const events: ServerSentEvent[] = [];
  const ended =
    response.status !== 200
      ? Promise.resolve(events)
      : (async () => {
          const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = '';
          for (;;) {
            const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
            if (done) return events;
            buffer += value;
            let end: number;
            while ((end = buffer.indexOf('\n\n')) >= 0) {
              const block = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const fields = Object.fromEntries(block.split('\n').filter((l) => !l.startsWith(':') && l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
              if (fields.event) events.push({ event: fields.event, data: JSON.parse(fields.data ?? 'null') });
            }
          }
        })();
  return { response, events, ended };
}

/**
 * An event stream that the test hangs up on: a connection of its own (fetch's pool opens a spare
 * connection after an abort, which would hold the server's close until its header time-out).
 */
function hangUpStream(api: TestApp, key: string, jobId: string): Promise<{ status: number; received: () => string; hangUp: () => void }> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${api.url}/v1/blend/status/${jobId}/events`, { agent: false, headers: { authorization: `Bearer ${key}` } }, (response) => {
      response.setEncoding('utf8');
      let text = '';
      response.on('data', (chunk: string) => (text += chunk));
      response.on('error', () => {});
      resolve({ status: response.statusCode!, received: () => text, hangUp: () => request.destroy() });
    });
    request.on('error', (err) => (request.destroyed ? undefined : reject(err)));
  });
}

async function status(api: TestApp, key: string, jobId: string) {
  return (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
}

/** Total CPU time (user + system, clock ticks) of process `pid` so far, from /proc. */
function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

const ENV = { ...FAST_WEBHOOKS, MONTAGE_BLEND_THREADS: '2' };

for (const engine of ENGINES) {
  describe(`blend progress and cancel (${engine})`, () => {
    test('a job reports its stages in order over server-sent events and in its status, and ends with its final values', async (t) => {
      const frames = await frameServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const client = jsonClient(api, key);
      const job = await client.expect(202, 'POST', '/blend/start', { projectId: 'progress', images: frames.urls('slow/medium', 5), options: { blendType: 'mean' } });
      assert.equal(job.progress, null);
      const stream = await openStream(api, key, job.jobId);
      assert.equal(stream.response.status, 200);
      assert.match(stream.response.headers.get('content-type') ?? '', /^text\/event-stream/);
      // Polling sees the same progress as the stream.
      const polled: any[] = [];
      const polling = until(async () => {
        const record = await status(api, key, job.jobId);
        if (record.progress) polled.push(record.progress);
        return record.status === 'completed' || record.status === 'failed';
      }, 60_000);
      const events = await stream.ended;
      await polling;

      const final = events.at(-1)!;
      assert.equal(final.event, 'completed', JSON.stringify(final.data.error));
      assert.equal(final.data.jobId, job.jobId);
      assert.deepEqual(final.data.progress, { stage: 'encoding', fraction: 1, framesDone: 5, framesTotal: 5 });
      const progress = events.slice(0, -1);
      assert.ok(progress.every((e) => e.event === 'progress' && e.data.jobId === job.jobId));
      const seen = progress.map((e) => e.data.progress).filter(Boolean);
      const order = seen.map((p) => PROGRESS_STAGES.indexOf(p.stage));
      assert.deepEqual(order, [...order].sort((a, b) => a - b), `stages out of order: ${seen.map((p) => p.stage)}`);
      // The slow image server makes fetching last a second and a half: it is seen, frame by frame.
      const fetching = seen.filter((p) => p.stage === 'fetching');
      assert.ok(fetching.length >= 2, JSON.stringify(seen));
      assert.ok(fetching.every((p, i) => i === 0 || p.framesDone >= fetching[i - 1].framesDone));
      assert.ok(seen.every((p) => p.framesTotal === 5 && p.fraction >= 0 && p.fraction <= 1));
      assert.ok(polled.some((p) => p.stage === 'fetching'), JSON.stringify(polled));
      assert.deepEqual((await status(api, key, job.jobId)).progress, final.data.progress);

      // A finished job's stream says how it ended, and ends.
      const again = await openStream(api, key, job.jobId);
      assert.deepEqual((await again.ended).map((e) => e.event), ['completed']);
    });

    test('a queued job is cancelled at once, with its webhook; a completed one cannot be; cancelling twice is harmless', async (t) => {
      const frames = await frameServer(t);
      const receiver = await hookReceiver(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key } = await api.account();
      const client = jsonClient(api, key);
      // Its images are held: the worker that took it is still fetching them, and it is queued.
      const job = await client.expect(202, 'POST', '/blend/start', { projectId: 'cancel', images: frames.urls('held'), webhookUrl: receiver.url });
      await until(async () => (await status(api, key, job.jobId)).progress?.stage === 'fetching', 10_000, 'the worker to fetch');
      const stream = await openStream(api, key, job.jobId);
      const cancelled = await client.expect(200, 'POST', `/blend/jobs/${job.jobId}/cancel`);
      assert.equal(cancelled.status, 'cancelled');
      assert.ok(cancelled.completedAt && cancelled.cancelRequestedAt);
      assert.equal((await client.expect(200, 'POST', `/blend/jobs/${job.jobId}/cancel`)).status, 'cancelled');
      assert.deepEqual((await stream.ended).map((e) => e.event).at(-1), 'cancelled');
      const hook = await until(() => receiver.got.find((m) => m.event === 'blend.cancelled'), 10_000, 'blend.cancelled');
      assert.equal(hook.jobId, job.jobId);
      assert.equal(hook.data.status, 'cancelled');
      // The images arrive after all: the worker records nothing more (no start, no result).
      frames.release();
      await new Promise((r) => setTimeout(r, 500));
      const after = await status(api, key, job.jobId);
      assert.equal(after.status, 'cancelled');
      assert.equal(after.startedAt, null);
      assert.deepEqual(receiver.got.map((m) => m.event), ['blend.cancelled']);
      assert.equal((await client.expect(200, 'GET', '/blend/jobs?status=cancelled')).data.length, 1);

      const done = await client.expect(202, 'POST', '/blend/start', { projectId: 'cancel', images: frames.urls('small'), options: { blendType: 'mean', align: false } });
      const completed = await until(async () => ((await status(api, key, done.jobId)).status === 'completed' ? true : null), 60_000, 'the job to complete');
      assert.ok(completed);
      const refused = await problem(await client.send('POST', `/blend/jobs/${done.jobId}/cancel`), 409, 'job_not_cancellable');
      assert.equal(refused.jobStatus, 'completed');
    });

    test("another account's job is not found, and each account has a bound on open streams that a closed stream frees", async (t) => {
      const frames = await frameServer(t);
      const api = await startApp(t, await freshStorage(t, engine), ENV);
      const owner = await api.account();
      const other = await api.account();
      const job = await jsonClient(api, owner.key).expect(202, 'POST', '/blend/start', { projectId: 'mine', images: frames.urls('small') });
      await problem(await api.fetch(`/v1/blend/status/${job.jobId}/events`, { key: other.key }), 404, 'not_found');
      await problem(await jsonClient(api, other.key).send('POST', `/blend/jobs/${job.jobId}/cancel`), 404, 'not_found');
      assert.equal((await status(api, owner.key, job.jobId)).status, 'queued');

      const streams = await Promise.all(Array.from({ length: 10 }, () => hangUpStream(api, owner.key, job.jobId)));
      onCleanup(t, () => streams.forEach((s) => s.hangUp()));
      assert.ok(streams.every((s) => s.status === 200));
      await until(() => streams[0]!.received().includes('event: progress'), 5000, 'the first event');
      assert.match(streams[0]!.received(), new RegExp(`event: progress\ndata: ${JSON.stringify({ jobId: job.jobId, status: 'queued', progress: null })}\n\n`));
      const refused = await problem(await api.fetch(`/v1/blend/status/${job.jobId}/events`, { key: owner.key }), 429, 'too_many_streams');
      assert.equal(refused.limit, 10);
      // Other accounts have their own bound.
      const otherJob = await jsonClient(api, other.key).expect(202, 'POST', '/blend/start', { projectId: 'theirs', images: frames.urls('small') });
      const theirs = await hangUpStream(api, other.key, otherJob.jobId);
      assert.equal(theirs.status, 200);
      theirs.hangUp();
      // A client that goes away frees its place.
      streams[0]!.hangUp();
      const reopened = await until(async () => {
        const next = await hangUpStream(api, owner.key, job.jobId);
        if (next.status === 200) return next;
        next.hangUp();
        return null;
      }, 5000, 'a free place');
      reopened!.hangUp();
    });

    test('a job running in a worker process of its own is stopped by a cancel: cancelled, webhook sent, the worker idle again', async (t) => {
      assert.ok(fs.existsSync(path.resolve(import.meta.dirname, '../dist/cli.js')), 'npm run build first');
      const frames = await frameServer(t);
      const receiver = await hookReceiver(t);
      const storage = await freshStorage(t, engine);
      const api = await startApp(t, storage, ENV);
      const worker = await workerProcess(t, { ...storage.env, ...ENV, MONTAGE_BLEND_JOB_TIMEOUT: '300s' });
      const { key } = await api.account();
      const client = jsonClient(api, key);
      const job = await client.expect(202, 'POST', '/blend/start', { projectId: 'stop', images: frames.urls('large', 5), options: { blendType: 'exposure' }, webhookUrl: receiver.url });
      const stream = await openStream(api, key, job.jobId);
      // Working on its pixels: the worker's CPU is measured over a second of it.
      await until(async () => ['aligning', 'blending'].includes((await status(api, key, job.jobId)).progress?.stage), 60_000, 'the job to be aligning');
      const busyFrom = cpuTicks(worker.pid!);
      await new Promise((r) => setTimeout(r, 1000));
      const working = cpuTicks(worker.pid!) - busyFrom;

      const asked = await client.expect(202, 'POST', `/blend/jobs/${job.jobId}/cancel`);
      assert.equal(asked.status, 'processing');
      assert.ok(asked.cancelRequestedAt);
      const cancelled = await until(async () => {
        const record = await status(api, key, job.jobId);
        return record.status === 'processing' ? null : record;
      }, 30_000, 'the worker to stop the job');
      assert.equal(cancelled.status, 'cancelled');
      assert.equal((await stream.ended).at(-1)!.event, 'cancelled');
      const hook = await until(() => receiver.got.find((m) => m.event === 'blend.cancelled'), 10_000, 'blend.cancelled');
      assert.equal(hook.jobId, job.jobId);
      assert.ok(!receiver.got.some((m) => m.event === 'blend.completed' || m.event === 'blend.failed'));

      // Its work has stopped: the worker's CPU no longer grows as it did while working.
      await new Promise((r) => setTimeout(r, 500));
      const idleFrom = cpuTicks(worker.pid!);
      await new Promise((r) => setTimeout(r, 1000));
      const idle = cpuTicks(worker.pid!) - idleFrom;
      t.diagnostic(`worker CPU: ${working} ticks in a second of work, ${idle} in a second from 0.5 s after the job was recorded cancelled`);
      assert.ok(idle < working * 0.2, `the worker used ${working} ticks working and ${idle} after the cancel`);
    });
  });
}

test('the dashboard shows a running job with a live progress bar, and its Cancel button stops it', async (t) => {
  assert.ok(fs.existsSync(path.join(DASHBOARD_DIR, 'index.html')), 'npm run build first');
  const frames = await frameServer(t);
  const api = await startApp(t, await freshStorage(t, 'sqlite'), ENV, { workers: true });
  const email = `progress.${Date.now()}@example.com`;
  const account = await createAccount(api.database.db, { email, plan: 'business', password: 'correct horse battery staple' });
  const key = await api.key(account.id, 'business');

  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  onCleanup(t, () => browser.close());
  const page = await browser.newPage();
  await page.goto(`${api.url}/dashboard/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  const job = await jsonClient(api, key).expect(202, 'POST', '/blend/start', { projectId: 'live', images: frames.urls('slow/large', 5), options: { blendType: 'exposure' } });
  await page.goto(`${api.url}/dashboard/blend/${job.jobId}`);
  // The bar follows the job's event stream: it moves without a reload.
  const bar = page.getByRole('progressbar', { name: 'Blend progress' });
  await bar.waitFor();
  const value = () => bar.evaluate((el) => (el as unknown as { value: number }).value);
  const first = await value();
  await until(async () => (await value()) > first, 60_000, 'the bar to move');
  await until(async () => /aligning|blending/.test(await page.locator('.progress-text').innerText()), 60_000, 'the job to work on its pixels');
  await page.getByRole('button', { name: 'Cancel job' }).click();
  await until(async () => /cancelled/.test(await page.locator('.facts').innerText()), 30_000, 'the page to show the job cancelled');
  assert.equal(await page.getByRole('button', { name: /Cancel job|Stopping/ }).count(), 0);
  assert.match(await page.locator('.result-pending').innerText(), /cancelled/);
  assert.equal((await status(api, key, job.jobId)).status, 'cancelled');
});

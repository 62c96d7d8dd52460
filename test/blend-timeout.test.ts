import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { before, describe, test, type TestContext } from 'node:test';
import sharp from 'sharp';
import { ENGINES, freshStorage, onCleanup, startApp, type TestApp, until } from './helpers.js';

/**
 * A job's time limit stops its work (docs/blend.md, "Limits and configuration"): the job fails
 * with `job_timeout` within a second of its limit, and the process's CPU (every thread's: the
 * pool's and libvips') falls to idle then, instead of the engine running on for the job nobody
 * waits for any more. The frames are the exposure fixture made large (5 × 3600×3600), so that
 * the job takes the pool's threads several seconds past its limit.
 */

const FIXTURE = path.resolve(import.meta.dirname, 'fixtures/blend/exposure-bracket');
const SIDE = 3600;
const LIMIT_MS = 2000;
/**
 * The share of its working rate under which the process counts as idle: the machine may be shared,
 * so the CPU the process gets while it works is measured in the same run, not assumed.
 */
const IDLE_SHARE = 0.2;

const small = ['1.png', '2.png', '3.png'].map((f) => fs.readFileSync(path.join(FIXTURE, f)));
let large: Buffer[] = [];

before(async () => {
  large = await Promise.all(small.map((png) => sharp(png).resize(SIDE, SIDE).jpeg({ quality: 90 }).toBuffer()));
});

/** Serves the frames over loopback: `large` and `small` URLs of the same three. */
async function frameServer(t: TestContext): Promise<{ large: string[]; small: string[] }> {
  const server = http.createServer((req, res) => {
    const [, size, index] = (req.url ?? '').split('/');
    const frame = (size === 'large' ? large : small)[Number(index)];
    if (!frame) return res.writeHead(404).end();
    res.writeHead(200).end(frame);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { large: large.map((_, i) => `${base}/large/${i}`), small: small.map((_, i) => `${base}/small/${i}`) };
}

async function blend(api: TestApp, key: string, images: string[], options: object) {
  const res = await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'limits', images, options } });
  assert.equal(res.status, 202, await res.clone().text());
  const { jobId } = (await res.json()) as { jobId: string };
  return until(
    async () => {
      const job = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
      return job.status === 'completed' || job.status === 'failed' ? job : null;
    },
    60_000,
    `blend job ${jobId}`,
  );
}

/** Samples this process's CPU (all its threads: the pool's, libvips', this one) every 50 ms; `cores(from, to)` is its rate between two wall-clock times. */
function cpuSampler() {
  const samples: Array<{ at: number; cpuMs: number }> = [];
  const take = () => {
    const { user, system } = process.cpuUsage();
    samples.push({ at: Date.now(), cpuMs: (user + system) / 1000 });
  };
  take();
  const timer = setInterval(take, 50);
  const nearest = (at: number) => samples.reduce((best, s) => (Math.abs(s.at - at) < Math.abs(best.at - at) ? s : best));
  return {
    stop: () => clearInterval(timer),
    cores(from: number, to: number): number {
      const [a, b] = [nearest(from), nearest(to)];
      return (b.cpuMs - a.cpuMs) / (b.at - a.at);
    },
  };
}

for (const engine of ENGINES) {
  describe(`blend time limit (${engine})`, () => {
    test('a job past its limit fails with job_timeout, and its work stops within a second', async (t) => {
      const images = await frameServer(t);
      const env = { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_BLEND_THREADS: '2' };
      const api = await startApp(t, await freshStorage(t, engine), { ...env, MONTAGE_BLEND_JOB_TIMEOUT: `${LIMIT_MS}ms` }, { workers: true });
      const { key } = await api.account();
      const cpu = cpuSampler();
      const job = await blend(api, key, [...images.large, ...images.large.slice(0, 2)], { blendType: 'exposure' });
      assert.deepEqual([job.status, job.error.code], ['failed', 'job_timeout'], JSON.stringify(job.error));
      const limitAt = Date.parse(job.startedAt) + LIMIT_MS;
      await new Promise((r) => setTimeout(r, Math.max(0, limitAt + 1500 - Date.now())));
      cpu.stop();
      // Working, the process used `working` cores in the second before the limit; from a second after it, next to none.
      const [working, after] = [cpu.cores(limitAt - 1000, limitAt), cpu.cores(limitAt + 1000, limitAt + 1500)];
      t.diagnostic(`CPU: ${working.toFixed(2)} cores in the second before the limit, ${after.toFixed(2)} from 1 to 1.5 s after it; failed after ${job.processingTime} ms`);
      assert.ok(after < working * IDLE_SHARE, `the process used ${working.toFixed(2)} cores before the limit and ${after.toFixed(2)} from a second after it`);

      // The pool is whole again (a thread stopped mid-task has been replaced): the next job runs on it.
      // That job starts the stopped threads' successors, which load their modules again (~0.2 s here
      // idle, several times that on a loaded CI machine): what is checked is that the pool runs it,
      // not how fast, so it runs under a limit of a minute (the limit is read as a job starts).
      api.config.blend.jobTimeoutMs = 60_000;
      const next = await blend(api, key, images.small, { blendType: 'mean', align: false });
      t.diagnostic(`the next job: ${next.status} after ${next.processingTime} ms`);
      assert.equal(next.status, 'completed', JSON.stringify(next.error));
    });
  });
}

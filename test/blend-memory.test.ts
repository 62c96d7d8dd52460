import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { stackFrameFiles } from './blend-scenes.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { jobMemory, jobPixels, MemoryBudget } from '../src/blend/memory.js';
import { Spool } from '../src/blend/spool.js';
import { streamStack } from '../src/blend/stream.js';
import { loadConfig } from '../src/config.js';
import { ENGINES, freshStorage, onCleanup, startApp, type TestApp, until, settledJob, fileServer } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CROWD = [1, 2, 3, 4, 5, 6, 7].map((i) => `crowd-${i}.jpg`);
const CROWD_PIXELS = 7 * 416 * 277;
/** RSS a refused job may add: far less than one decoded 7000×7000 frame (147 MB). */
const SMALL_GROWTH = 48e6;

/**
 * Huge images that compress to little (one colour: 7000×7000 is ~160 KB): made in a child process, so that
 * making them leaves nothing in this process's memory that a later decode could reuse unseen.
 */
function bigImages(t: TestContext): { dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-big-'));
  onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
  const script = `
    import sharp from 'sharp';
    const make = (w, h, file) => sharp({ create: { width: w, height: h, channels: 3, background: '#808080' } }).png({ compressionLevel: 9 }).toFile(file);
    await make(7000, 7000, ${JSON.stringify(path.join(dir, '7000.png'))});
    await make(7071, 7071, ${JSON.stringify(path.join(dir, '50mp.png'))});
  `;
  const made = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  return { dir };
}


async function startJob(api: TestApp, key: string, images: string[], blendType = 'median') {
  const res = await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'memory', images, options: { blendType } } });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).jobId as string;
}

const settled = (api: TestApp, key: string, jobId: string, timeoutMs = 120_000) => settledJob(api, key, jobId, timeoutMs);

/** Runs `work`, sampling this process's resident set every 2 ms; returns its result and the largest growth seen. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const before = process.memoryUsage.rss();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 2);
  try {
    const value = await work();
    return { value, growth: peak - before };
  } finally {
    clearInterval(timer);
  }
}

for (const engine of ENGINES) {
  describe(`blend memory (${engine})`, () => {
    test('jobs over the pixel budget are refused from the image headers, before anything is decoded', async (t) => {
      const { dir } = bigImages(t);
      assert.ok(fs.statSync(path.join(dir, '7000.png')).size < 1e6, 'a 49 MP image of a few hundred KB');
      const base = await fileServer(t, dir);
      // The default budget, and private addresses allowed for the loopback image server.
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
      const { key } = await api.account();
      const samples = CROWD.map((name) => `${api.config.publicUrl}/samples/${name}`);
      // The engine's threads and modules start with a first job: not the refused jobs' memory.
      assert.equal((await settled(api, key, await startJob(api, key, samples.slice(0, 3)))).status, 'completed');

      const cases: Array<[string, string[]]> = [
        ['10 × 7000×7000 PNG', Array.from({ length: 10 }, () => `${base}/7000.png`)],
        ['a 50 MP first frame and nine small JPEGs', [`${base}/50mp.png`, ...samples, ...samples.slice(0, 2)]],
        ['a small first frame and nine 7000×7000 PNGs', [samples[0]!, ...Array.from({ length: 9 }, () => `${base}/7000.png`)]],
      ];
      for (const [name, images] of cases) {
        const { value: job, growth } = await peakGrowth(async () => settled(api, key, await startJob(api, key, images)));
        assert.equal(job.status, 'failed', name);
        assert.deepEqual([job.error.code, job.error.imageIndex, job.attempts], ['job_too_large', null, 1], `${name}: ${JSON.stringify(job.error)}`);
        assert.match(job.error.message, new RegExp(`more than the job limit of ${api.config.blend.maxJobPixels}`));
        assert.ok(growth < SMALL_GROWTH, `${name}: the process grew by ${Math.round(growth / 1e6)} MB`);
      }
    });

    test('two jobs that together exceed the blend memory run one after the other, and both complete', async (t) => {
      // Room for one sample job's estimate, not for two.
      const memory = Math.floor(jobMemory('median', false, CROWD_PIXELS) * 1.5);
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_BLEND_MEMORY: String(memory), MONTAGE_BLEND_CONCURRENCY: '2' }, { workers: true });
      const { key } = await api.account();
      const images = CROWD.map((name) => `${api.config.publicUrl}/samples/${name}`);
      const ids = [await startJob(api, key, images), await startJob(api, key, images)];
      const jobs = await Promise.all(ids.map((id) => settled(api, key, id)));
      for (const job of jobs) assert.equal(job.status, 'completed', JSON.stringify(job.error));
      const [first, second] = jobs.map((j) => ({ started: Date.parse(j.startedAt), completed: Date.parse(j.completedAt) })).sort((a, b) => a.started - b.started);
      assert.ok(second!.started >= first!.completed, `the second started ${second!.started - first!.completed} ms after the first completed`);
    });
  });
}

describe('streamed exposure and focus stacks', () => {
  test('32 frames peak no higher than 8 (held, the 24 frames more would add 54 MB of pixels alone)', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-pyramid-memory-'));
    onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
    const pool = new WorkerPool(2);
    onCleanup(t, () => pool.close());
    const limits = loadConfig({}).blend;
    const run = async (type: 'exposure' | 'focus', sources: string[]) => {
      const spool = await Spool.create();
      try {
        const { value } = await peakGrowth(() => streamStack({ pool, limits, type, align: false, deghost: false, sources, spool, signal: new AbortController().signal }));
        return value;
      } finally {
        await spool.discard();
      }
    };
    for (const type of ['exposure', 'focus'] as const) {
      const sources = await stackFrameFiles(dir, type, 32, { photo: 'chelsea.jpg', width: 1000, height: 750 });
      // the first job warms the threads' kernels and libvips up; then the peaks of 8 and of 32 frames
      await run(type, sources.slice(0, 3));
      const peak = async (n: number) => {
        let highest = 0;
        const timer = setInterval(() => (highest = Math.max(highest, process.memoryUsage.rss())), 2);
        try {
          await run(type, sources.slice(0, n));
        } finally {
          clearInterval(timer);
        }
        return highest;
      };
      const eight = await peak(8);
      const many = await peak(32);
      assert.ok(many < eight + 30e6, `${type}: 32 frames peaked ${Math.round((many - eight) / 1e6)} MB above 8`);
    }
  });
});

describe('blend memory budget', () => {
  test('MONTAGE_BLEND_MAX_JOB_PIXELS and MONTAGE_BLEND_MEMORY: defaults, sizes, and errors naming the variable', () => {
    const defaults = loadConfig({}).blend;
    assert.equal(defaults.maxJobPixels, 120_000_000);
    assert.ok(defaults.memoryBytes > 0 && defaults.memoryBytes <= os.totalmem() / 2);
    assert.equal(loadConfig({ MONTAGE_BLEND_MAX_JOB_PIXELS: '60000000' }).blend.maxJobPixels, 60_000_000);
    const sizes: Array<[string, number]> = [['2GB', 2e9], ['512MB', 512e6], ['1.5GiB', 1.5 * 1024 ** 3], ['1073741824', 1073741824], ['64 mib', 64 * 1024 ** 2]];
    for (const [text, bytes] of sizes) assert.equal(loadConfig({ MONTAGE_BLEND_MEMORY: text }).blend.memoryBytes, bytes, text);
    assert.throws(() => loadConfig({ MONTAGE_BLEND_MEMORY: 'lots' }), /^Error: MONTAGE_BLEND_MEMORY: must be a size such as 2GB/);
    assert.throws(() => loadConfig({ MONTAGE_BLEND_MEMORY: '1KB' }), /MONTAGE_BLEND_MEMORY: must be at least/);
    assert.throws(() => loadConfig({ MONTAGE_BLEND_MAX_JOB_PIXELS: 'many' }), /MONTAGE_BLEND_MAX_JOB_PIXELS: must be a whole number/);
  });

  test('a job counts each frame at least at the size of the first', () => {
    assert.equal(jobPixels([{ width: 10, height: 10 }, { width: 5, height: 5 }, { width: 20, height: 10 }]), 100 + 100 + 200);
    assert.ok(jobMemory('composite', false, 1e6) > jobMemory('lighten', false, 1e6));
    assert.equal(jobMemory('mean', true, 1e6), jobMemory('composite', false, 1e6), 'preserveBackground segments every frame');
  });

  test('admits in order while jobs fit; a job larger than the budget runs alone; an aborted waiter leaves the line', async () => {
    const budget = new MemoryBudget(100);
    const order: string[] = [];
    const take = (name: string, bytes: number, signal?: AbortSignal) =>
      budget.acquire(bytes, signal).then((release) => {
        order.push(name);
        return release;
      });
    const a = await take('a', 60);
    const b = take('b', 60);
    const c = take('c', 10); // fits, but waits behind b: first come, first served
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([order, budget.state], [['a'], { reserved: 60, running: 1, waiting: 2 }]);
    a();
    const releaseB = await b;
    const releaseC = await c;
    assert.deepEqual(order, ['a', 'b', 'c']);
    const abort = new AbortController();
    const huge = take('huge', 500);
    const aborted = take('aborted', 1, abort.signal);
    abort.abort(new Error('stopping'));
    await assert.rejects(aborted, /stopping/);
    releaseB();
    releaseC();
    releaseC(); // a second call gives nothing back twice
    const releaseHuge = await huge;
    assert.deepEqual(budget.state, { reserved: 500, running: 1, waiting: 0 });
    releaseHuge();
    assert.deepEqual(budget.state, { reserved: 0, running: 0, waiting: 0 });
  });
});

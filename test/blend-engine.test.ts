import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { blendFrames, type PixelBlendType } from '../src/blend/engine/blend.js';
import { type RgbImage, sharedImage, toShared } from '../src/blend/engine/image/image.js';
import { overlayRows, multiplyRows, screenRows, softLightRows } from '../src/blend/engine/point/layers.js';
import { clippedFractions, psnr, ssim } from '../src/blend/engine/image/metrics.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { POOL_TASKS, type TASKS as TEST_TASKS } from './fixtures/pool-tasks.js';
import { expandIntoRows, reduceRows } from '../src/blend/engine/pyramid/pyramid.js';
import { levelSizes, type Plane, sharedPlane } from '../src/blend/engine/pyramid/planes.js';
import { darkenRows, lightenRows, meanRows, medianRows, type PointKernel } from '../src/blend/engine/point/stack.js';
import { MEDIAN_SIMD_MAX_FRAMES, SIMD_MAX_FRAMES } from '../src/blend/engine/point/stack-simd.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');

interface Scenario {
  frames: RgbImage[];
  gt: RgbImage;
  manifest: {
    baselines: Record<string, { psnr: number; ssim: number }> & { region: unknown; perFrame?: Array<{ clipped: { dark: number; bright: number } }> };
  };
}

async function load(file: string): Promise<RgbImage> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
}

async function scenario(name: string): Promise<Scenario> {
  const dir = path.join(FIXTURES, name);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Scenario['manifest'] & { images: string[] };
  const frames = await Promise.all(manifest.images.map((f) => load(path.join(dir, f))));
  return { frames, gt: await load(path.join(dir, 'gt.png')), manifest };
}

/** Runs a point-wise kernel on the calling thread over the whole image. */
function direct(kernel: PointKernel, frames: RgbImage[]): RgbImage {
  const { width, height } = frames[0]!;
  const out = sharedImage(width, height);
  kernel(frames.map((f) => f.data), width, out.data, 0, height);
  return out;
}

/** A 1-pixel-high image from channel values. */
const pixels = (...values: number[]): RgbImage => toShared(values.length / 3, 1, Uint8Array.from(values));

function randomFrames(n: number, width: number, height: number, levels: number, seed: number): RgbImage[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    const f = sharedImage(width, height);
    for (let i = 0; i < f.data.length; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      f.data[i] = (s >>> 16) % levels;
    }
    return f;
  });
}

let pool: WorkerPool;
before(() => {
  pool = new WorkerPool(2);
});
after(() => pool.close());

describe('metrics', () => {
  it('reproduce the manifests baselines', async () => {
    const noise = await scenario('noise-mean');
    const crowd = await scenario('median-crowd');
    const handheld = await scenario('handheld-mean');
    const checks: Array<[RgbImage, Scenario, { psnr: number; ssim: number }]> = [
      [noise.frames[0]!, noise, noise.manifest.baselines.firstFrame!],
      [direct(meanRows, noise.frames), noise, noise.manifest.baselines.naiveMean!],
      [crowd.frames[0]!, crowd, crowd.manifest.baselines.firstFrame!],
      [handheld.frames[0]!, handheld, handheld.manifest.baselines.firstFrame!],
      [direct(meanRows, handheld.frames), handheld, handheld.manifest.baselines.naiveMean!],
    ];
    for (const [image, s, expected] of checks) {
      const box = typeof s.manifest.baselines.region === 'object' ? (s.manifest.baselines.region as { x: number; y: number; width: number; height: number }) : undefined;
      assert.ok(Math.abs(psnr(image, s.gt, box) - expected.psnr) <= 0.01, `psnr ${psnr(image, s.gt, box)} vs ${expected.psnr}`);
      assert.ok(Math.abs(ssim(image, s.gt, box) - expected.ssim) <= 0.0001, `ssim ${ssim(image, s.gt, box)} vs ${expected.ssim}`);
    }
    assert.equal(psnr(crowd.gt, crowd.gt), 100);
    assert.equal(ssim(crowd.gt, crowd.gt), 1);
  });
});

describe('stack', () => {
  it('median-crowd: the median of 7 is exactly the ground truth', async () => {
    const { frames, gt } = await scenario('median-crowd');
    assert.equal(psnr(await blendFrames(pool, 'median', frames), gt), 100);
  });

  it('star-trails: lighten is exactly the ground truth', async () => {
    const { frames, gt } = await scenario('star-trails');
    assert.equal(psnr(await blendFrames(pool, 'lighten', frames), gt), 100);
  });

  it('noise-mean: the mean beats the naive baseline', async () => {
    const { frames, gt, manifest } = await scenario('noise-mean');
    assert.ok(psnr(await blendFrames(pool, 'mean', frames), gt) >= manifest.baselines.naiveMean!.psnr);
  });

  it('median, mean, lighten and darken agree with sorting for 1..11, 16, 17 and 32 frames (SIMD), 33, 40 (JavaScript; the median SIMD up to 128) and 129 (JavaScript)', () => {
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, SIMD_MAX_FRAMES, SIMD_MAX_FRAMES + 1, 40, MEDIAN_SIMD_MAX_FRAMES, MEDIAN_SIMD_MAX_FRAMES + 1]) {
      // 2 levels: every 0-1 input (enough for comparator networks); 3: many ties; 256: the general case
      for (const levels of [2, 3, 256]) {
        const frames = randomFrames(n, 97, 13, levels, n * 31 + levels);
        const results = [medianRows, meanRows, lightenRows, darkenRows].map((k) => direct(k, frames).data);
        for (let i = 0; i < frames[0]!.data.length; i++) {
          const v = frames.map((f) => f.data[i]!).sort((a, b) => a - b);
          const median = (v[(n - 1) >> 1]! + v[n >> 1]! + 1) >> 1;
          const mean = Math.floor(v.reduce((a, b) => a + b, 0) / n + 0.5);
          assert.deepEqual(
            results.map((r) => r[i]),
            [median, mean, v[n - 1], v[0]],
            `n ${n}, values ${v.join(',')}`,
          );
        }
      }
    }
  });

  it('through the pool equals called directly, on a row split', async () => {
    const frames = randomFrames(5, 61, 37, 256, 9);
    const kernels: Array<[PixelBlendType, PointKernel]> = [
      ['median', medianRows],
      ['mean', meanRows],
      ['darken', darkenRows],
      ['soft-light', softLightRows],
    ];
    for (const [type, kernel] of kernels) assert.deepEqual((await blendFrames(pool, type, frames)).data, direct(kernel, frames).data, type);
  });
});

describe('layers', () => {
  it('follow the W3C formulas on hand-computed values', () => {
    // backdrop row: 128, 64, 200, 64, 64, 50; source row: 64, 128, 100, 200, 50, 200
    const cb = pixels(128, 64, 200, 64, 64, 50);
    const cs = pixels(64, 128, 100, 200, 50, 200);
    const run = (k: PointKernel, ...frames: RgbImage[]): number[] => [...direct(k, frames).data];
    // multiply: 128·64/255 = 32.1, 64·128/255 = 32.1, 200·100/255 = 78.4, 64·200/255 = 50.2, 64·50/255 = 12.5, 50·200/255 = 39.2
    assert.deepEqual(run(multiplyRows, cb, cs), [32, 32, 78, 50, 13, 39]);
    // screen: a + b − ab/255
    assert.deepEqual(run(screenRows, cb, cs), [160, 160, 222, 214, 101, 211]);
    // overlay: cb ≤ ½ → 2·cb·cs; else screen(cs, 2cb − 1): 128 > 127.5 → 64 + 1 − 64·1/255 = 64.7; 200 → 100 + 145 − 100·145/255 = 188.1
    assert.deepEqual(run(overlayRows, cb, cs), [65, 64, 188, 100, 25, 78]);
    // soft-light: (64, 50) → 34.9 (cs ≤ ½); (64, 200) → 100.3 (√cb); (50, 200) → 85.9 (cb ≤ ¼ polynomial)
    const soft = run(softLightRows, cb, cs);
    assert.deepEqual([soft[3], soft[4], soft[5]], [100, 35, 86]);
    // folded left to right: (255 · 128 / 255) · 128 / 255 = 64.25
    assert.deepEqual(run(multiplyRows, pixels(255, 255, 255), pixels(128, 128, 128), pixels(128, 128, 128)), [64, 64, 64]);
  });
});

/** The Gaussian pyramid of a plane (level 0 is the plane itself), on the calling thread, from the engine's row tasks. */
function gaussianPyramid(plane: Plane): Plane[] {
  const levels = [plane];
  for (const [w, h] of levelSizes(plane.width, plane.height).slice(1)) {
    const next = sharedPlane(w, h);
    reduceRows([levels[levels.length - 1]!], 'level', [next], 0, h);
    levels.push(next);
  }
  return levels;
}

/** The Laplacian pyramid of a plane, built in place over its Gaussian pyramid (the plane is copied). */
function laplacianPyramid(plane: Plane): Plane[] {
  const copy = sharedPlane(plane.width, plane.height);
  copy.data.set(plane.data);
  const levels = gaussianPyramid(copy);
  for (let l = 0; l + 1 < levels.length; l++) expandIntoRows([levels[l]!], [levels[l + 1]!], -1, 0, levels[l]!.height);
  return levels;
}

/** Collapses a Laplacian pyramid in place, coarsest first; returns level 0, the picture. */
function collapsePyramid(levels: Plane[]): Plane {
  for (let l = levels.length - 2; l >= 0; l--) expandIntoRows([levels[l]!], [levels[l + 1]!], 1, 0, levels[l]!.height);
  return levels[0]!;
}

describe('pyramid', () => {
  it('collapsing a Laplacian pyramid gives the plane back', () => {
    const plane = sharedPlane(203, 97);
    for (let i = 0; i < plane.data.length; i++) plane.data[i] = (i * 7919) % 255;
    const levels = laplacianPyramid(plane);
    assert.deepEqual(
      levels.map((l) => [l.width, l.height]),
      levelSizes(203, 97),
    );
    assert.ok(Math.min(levels.at(-1)!.width, levels.at(-1)!.height) >= 8);
    const back = collapsePyramid(levels);
    let worst = 0;
    for (let i = 0; i < plane.data.length; i++) worst = Math.max(worst, Math.abs(back.data[i]! - plane.data[i]!));
    assert.ok(worst < 1e-3, `max error ${worst}`);
  });
});

describe('exposure and focus', () => {
  it('exposure-bracket: fusion is close to the 0 EV frame and clips less than the worst input', async () => {
    const { frames, gt, manifest } = await scenario('exposure-bracket');
    const fused = await blendFrames(pool, 'exposure', frames);
    assert.ok(ssim(fused, gt) >= 0.9, `ssim ${ssim(fused, gt)}`);
    const clipped = clippedFractions(fused);
    const worst = Math.max(...manifest.baselines.perFrame!.map((f) => f.clipped.dark + f.clipped.bright));
    assert.ok(clipped.dark + clipped.bright < worst, `clipped ${JSON.stringify(clipped)}`);
    assert.ok(clipped.bright <= clippedFractions(gt).bright, `clipped ${JSON.stringify(clipped)}`);
  });

  it('focus-stack: beats 35 dB against the all-sharp ground truth', async () => {
    const { frames, gt } = await scenario('focus-stack');
    const stacked = await blendFrames(pool, 'focus', frames);
    assert.ok(psnr(stacked, gt) >= 35, `psnr ${psnr(stacked, gt)}`);
  });

  it('give identical frames back, at any size, and do not depend on the row split', async () => {
    const [frame] = randomFrames(1, 45, 9, 256, 3);
    for (const type of ['exposure', 'focus'] as const) {
      assert.deepEqual((await blendFrames(pool, type, [frame!, frame!, frame!])).data, frame!.data, type);
    }
    const frames = randomFrames(3, 150, 140, 256, 5);
    const single = new WorkerPool(1);
    try {
      for (const type of ['exposure', 'focus'] as const) {
        assert.deepEqual((await blendFrames(pool, type, frames)).data, (await blendFrames(single, type, frames)).data, type);
      }
    } finally {
      await single.close();
    }
  });
});

describe('the worker pool', () => {
  it('runs a task given a slot on that thread only, while the others take the rest', async () => {
    const pool = new WorkerPool<typeof TEST_TASKS>(2, POOL_TASKS);
    try {
      await pool.everyThread('whoNow'); // both threads started
      const pinned = pool.all('who', Array.from({ length: 4 }, (): [number] => [50]), { slot: 1 });
      const free = await pool.all('who', Array.from({ length: 3 }, (): [number] => [0]));
      const onSlot = await pinned;
      assert.equal(new Set(onSlot).size, 1);
      // the pinned thread is busy throughout, so the free tasks all ran on the other one
      assert.ok(free.every((id) => id !== onSlot[0]));
      assert.notEqual(await pool.run('who', [0], { slot: 0 }), onSlot[0]);
      await assert.rejects(pool.run('who', [0], { slot: 2 }), RangeError);
    } finally {
      await pool.close();
    }
  });

  it("stops an aborted job's work: its queued tasks fail at once, a band ends, a long task's thread is replaced", async () => {
    const pool = new WorkerPool<typeof TEST_TASKS>(2, POOL_TASKS);
    try {
      const before = new Set(await Promise.all([0, 1].map((slot) => pool.run('whoNow', [], { slot }))));
      const stopped = new AbortController();
      const job = pool.forJob(stopped.signal);
      const other = pool.forJob(new AbortController().signal);
      const long = job.run('spin', [60_000], { slot: 0 }); // would hold its thread for a minute
      const band = job.run('spin', [100], { slot: 1 });
      const queued = job.all('spin', Array.from({ length: 4 }, (): [number] => [1000]));
      const theirs = other.run('who', [0]);
      const reason = new Error('the job took too long');
      stopped.abort(reason);
      // only the other job's task is left in the queue, and the job can start nothing new
      assert.deepEqual(pool.activity, { queued: 1, running: 2 });
      await assert.rejects(job.run('who', [0]), (err) => err === reason);
      await assert.rejects(queued, (err) => err === reason);
      await assert.rejects(band, (err) => err === reason);
      await assert.rejects(long, (err) => err === reason);
      await job.settled();
      assert.ok(before.has(await theirs));
      assert.deepEqual(pool.activity, { queued: 0, running: 0 });
      // thread 0 was terminated and replaced; thread 1 finished its band and goes on
      const after = await Promise.all([0, 1].map((slot) => pool.run('whoNow', [], { slot })));
      assert.ok(!before.has(after[0]!));
      assert.ok(before.has(after[1]!));
    } finally {
      await pool.close();
    }
  });
});

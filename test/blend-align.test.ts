import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import sharp from 'sharp';
import { AlignmentFailed, alignFrames } from '../src/blend/engine/align.js';
import { apply } from '../src/blend/engine/homography.js';
import { sharedImage, toShared, type RgbImage } from '../src/blend/engine/image.js';
import { WorkerPool } from '../src/blend/engine/pool.js';

const FIXTURES = path.resolve(import.meta.dirname, '../../shared/fixtures/blend');

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}
interface HandheldManifest {
  images: string[];
  imagesJpeg: string[];
  groundTruth: string;
  cropBox: Box;
  frames: Array<{ gtToFrame: number[][] }>;
}

async function load(file: string, width?: number, height?: number): Promise<RgbImage> {
  const resized = width && height ? sharp(file).resize(width, height, { fit: 'fill' }) : sharp(file);
  const { data, info } = await resized.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
}

/** Per-pixel mean of the frames, rounded to 8 bits. */
function mean(frames: RgbImage[]): RgbImage {
  const [first] = frames;
  assert.ok(first);
  const out = sharedImage(first.width, first.height);
  for (let i = 0; i < out.data.length; i++) {
    let sum = 0;
    for (const f of frames) sum += f.data[i]!;
    out.data[i] = Math.round(sum / frames.length);
  }
  return out;
}

/** PSNR (dB, peak 255) over R, G and B inside `box`. */
function psnr(a: RgbImage, b: RgbImage, box: Box): number {
  let squares = 0;
  for (let y = box.y; y < box.y + box.height; y++) {
    for (let i = (y * a.width + box.x) * 3; i < (y * a.width + box.x + box.width) * 3; i++) squares += (a.data[i]! - b.data[i]!) ** 2;
  }
  return 10 * Math.log10((255 * 255) / (squares / (box.width * box.height * 3)));
}

/** Largest distance between where two homographies send the image's corners. */
function cornerError(h: number[], truth: number[], width: number, height: number): number {
  let most = 0;
  for (const [x, y] of [[0, 0], [width - 1, 0], [0, height - 1], [width - 1, height - 1]] as const) {
    const [u, v] = apply(h, x, y);
    const [p, q] = apply(truth, x, y);
    most = Math.max(most, Math.hypot(u - p, v - q));
  }
  return most;
}

/** Deterministic noise image (mulberry32). */
function noise(width: number, height: number, seed: number): RgbImage {
  const out = sharedImage(width, height);
  let s = seed;
  for (let i = 0; i < out.data.length; i++) {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    out.data[i] = (t ^ (t >>> 14)) >>> 24;
  }
  return out;
}

test('frame alignment', async (t) => {
  const pool = new WorkerPool(2);
  t.after(() => pool.close());
  const dir = path.join(FIXTURES, 'handheld-mean');
  const manifest = JSON.parse(await readFile(path.join(dir, 'manifest.json'), 'utf8')) as HandheldManifest;
  const gt = await load(path.join(dir, manifest.groundTruth));

  for (const [kind, files] of [['PNG', manifest.images], ['JPEG', manifest.imagesJpeg]] as const) {
    await t.test(`aligns the hand-held ${kind} frames close to the truth`, async (st) => {
      const frames = await Promise.all(files.map((f) => load(path.join(dir, f))));
      const { frames: aligned, frameReports } = await alignFrames(pool, frames);
      assert.deepEqual(frameReports.map((r) => r.method), ['reference', 'homography', 'homography', 'homography', 'homography', 'homography']);
      assert.equal(aligned[0], frames[0]);
      const errors = frameReports.map((r) => cornerError(r.homography, manifest.frames[r.index]!.gtToFrame.flat(), gt.width, gt.height));
      const score = psnr(mean(aligned), gt, manifest.cropBox);
      st.diagnostic(`${kind}: PSNR ${score.toFixed(2)} dB on the crop box; corner errors ${errors.map((e) => e.toFixed(3)).join(', ')} px`);
      assert.ok(score >= 33, `PSNR ${score.toFixed(2)} dB`);
      for (const e of errors) assert.ok(e < 1, `corner error ${e.toFixed(3)} px`);
      for (const r of frameReports.slice(1)) assert.ok(r.inliers >= 15 && r.correlation > 0.9, JSON.stringify(r));
    });
  }

  await t.test('leaves frames that already line up unwarped', async () => {
    const frame = await load(path.join(dir, manifest.images[0]!));
    const frames = [frame, frame, frame, frame];
    const { frames: aligned, frameReports } = await alignFrames(pool, frames);
    assert.deepEqual(frameReports.map((r) => r.method), ['reference', 'identity', 'identity', 'identity']);
    aligned.forEach((f, i) => assert.equal(f, frames[i]));
  });

  // Tripod sets: noise, passers-by, brackets and focus steps must not read as camera motion.
  for (const scenario of ['noise-mean', 'median-crowd', 'exposure-bracket', 'focus-stack']) {
    await t.test(`leaves the static ${scenario} frames unwarped`, async () => {
      const { images } = JSON.parse(await readFile(path.join(FIXTURES, scenario, 'manifest.json'), 'utf8')) as { images: string[] };
      const frames = await Promise.all(images.map((f) => load(path.join(FIXTURES, scenario, f))));
      const { frameReports } = await alignFrames(pool, frames);
      assert.deepEqual(frameReports.map((r) => r.method), ['reference', ...images.slice(1).map(() => 'identity')]);
    });
  }

  await t.test('names the frame that cannot be aligned', async () => {
    const [first, second] = await Promise.all(manifest.images.slice(0, 2).map((f) => load(path.join(dir, f))));
    assert.ok(first && second);
    const other = await load(path.join(FIXTURES, 'noise-mean', 'gt.png'), first.width, first.height);
    const expect = (index: number) => (err: unknown) => {
      assert.ok(err instanceof AlignmentFailed, String(err));
      assert.equal(err.code, 'alignment_failed');
      assert.equal(err.index, index);
      return true;
    };
    await assert.rejects(alignFrames(pool, [first, second, other]), expect(2));
    await assert.rejects(alignFrames(pool, [first, noise(first.width, first.height, 7), second]), expect(1));
  });
});

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import sharp from 'sharp';
import { AlignmentFailed, alignFrames } from '../src/blend/engine/align/align.js';
import { phaseCorrelate } from '../src/blend/engine/align/global.js';
import { checkLineUp, lineUpReference } from '../src/blend/engine/align/lineup.js';
import { apply } from '../src/blend/engine/align/homography.js';
import { sharedImage, toShared, type RgbImage } from '../src/blend/engine/image/image.js';
import { blurred, drifts, loadPhoto, moved, random, similarity, warped, withNoise } from './blend-scenes.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');

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

/** `image` with uniform grain of ±amplitude added to every channel (a linear congruential sequence from `seed`). */
function grainy(image: RgbImage, seed: number, amplitude: number): RgbImage {
  const out = sharedImage(image.width, image.height);
  for (let i = 0; i < out.data.length; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    out.data[i] = Math.max(0, Math.min(255, image.data[i]! + ((seed >>> 16) % (2 * amplitude + 1)) - amplitude));
  }
  return out;
}

/**
 * The grey thumbnail alignment decides on at factor 2 (2 × 2 block means of BT.601 luma) of
 * `image` moved `dx` pixels to the left, linearly between pixels when `dx` is fractional.
 */
function greyThumbnail(image: RgbImage, dx = 0): Uint8Array {
  const [w, h] = [image.width >> 1, image.height >> 1];
  const luma = (x: number, y: number): number => {
    const q = (y * image.width + Math.min(image.width - 1, Math.max(0, x))) * 3;
    return 0.299 * image.data[q]! + 0.587 * image.data[q + 1]! + 0.114 * image.data[q + 2]!;
  };
  return Uint8Array.from({ length: w * h }, (_, p) => {
    const [x, y] = [p % w, Math.floor(p / w)];
    let sum = 0;
    for (const [u, v] of [[0, 0], [1, 0], [0, 1], [1, 1]] as const) {
      const at = 2 * x + u + dx;
      const left = Math.floor(at);
      sum += luma(left, 2 * y + v) + (at - left) * (luma(left + 1, 2 * y + v) - luma(left, 2 * y + v));
    }
    return Math.round(sum / 4);
  });
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
      for (const r of frameReports.slice(1)) assert.ok(r.inliers >= 15 && r.confidence > 0.9, JSON.stringify(r));
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

  await t.test('measures another exposure in the reference\'s tones: a 4 EV brighter frame lines up, shifted it does not', async () => {
    // A grainy 2000 × 1500 scene (factor 2) at −2 and +2 EV (4 × darker and brighter in linear light), clipped per channel as a camera does.
    const scene = grainy(await load(path.join(FIXTURES, 'median-crowd', 'gt.png'), 2000, 1500), 1, 10);
    const gain = 4 ** (1 / 2.2);
    const bright = sharedImage(scene.width, scene.height);
    for (let i = 0; i < bright.data.length; i++) bright.data[i] = Math.min(255, Math.round(scene.data[i]! * gain));
    const dark = sharedImage(scene.width, scene.height);
    for (let i = 0; i < dark.data.length; i++) dark.data[i] = Math.round(scene.data[i]! / gain);
    const [w, h] = [scene.width / 2, scene.height / 2];
    const ref = lineUpReference(greyThumbnail(dark), w, h);
    const still = checkLineUp(ref, greyThumbnail(bright), w, h);
    assert.ok(still.drift * 2 <= 0.5, `drift ${still.drift * 2} px`);
    const moved = checkLineUp(ref, greyThumbnail(bright, 3), w, h);
    assert.ok(moved.drift * 2 > 2, `drift ${moved.drift * 2} px`);
  });

  await t.test('measures a still frame with someone walking into a corner as still, and a frame moved by a fraction of a pixel as moved', async () => {
    // A grainy 2000 × 1500 scene (factor 2), with sensor noise of its own in each frame; in the
    // frame a 600 × 600 passer-by (a patch of another photo) covers the bottom right corner block
    // and parts of its neighbours.
    const scene = grainy(await load(path.join(FIXTURES, 'median-crowd', 'gt.png'), 2000, 1500), 1, 10);
    const passerBy = await load(path.join(FIXTURES, 'noise-mean', 'gt.png'), 600, 600);
    const frame = grainy(scene, 2, 4);
    for (let y = 0; y < passerBy.height; y++) {
      const row = passerBy.data.subarray(y * passerBy.width * 3, (y + 1) * passerBy.width * 3);
      frame.data.set(row, ((frame.height - passerBy.height + y) * frame.width + frame.width - passerBy.width) * 3);
    }
    const [w, h] = [scene.width / 2, scene.height / 2];
    const ref = lineUpReference(greyThumbnail(grainy(scene, 3, 4)), w, h);
    // Full-size pixels (factor 2), against the half pixel a frame may be off and stay unwarped (align/align.ts).
    const drift = (dx: number) => 2 * checkLineUp(ref, greyThumbnail(frame, dx), w, h).drift;
    const still = drift(0);
    assert.ok(still <= 0.1, `still: drift ${still.toFixed(3)} px`);
    for (const dx of [0.3, 0.6]) {
      const moved = drift(dx);
      assert.ok(Math.abs(moved - dx) <= 0.1 && moved > 0.5 === dx > 0.5, `moved ${dx} px: drift ${moved.toFixed(3)} px`);
    }
  });

  await t.test('does not take a frame whose moved part is most of it as still because a still third fits better', async () => {
    // The left third stays put (an overlay, a dashboard) while the rest moves 3 to 20 full-size
    // pixels: the moved blocks fit worse at no motion than the still ones, and must not be left
    // out as if someone had walked into them.
    const scene = grainy(await load(path.join(FIXTURES, 'median-crowd', 'gt.png'), 2000, 1500), 1, 10);
    const [w, h] = [scene.width / 2, scene.height / 2];
    const ref = lineUpReference(greyThumbnail(grainy(scene, 3, 3)), w, h);
    const frame = grainy(scene, 4, 3);
    const still = greyThumbnail(frame);
    for (const dx of [3, 8, 20]) {
      const moved = greyThumbnail(frame, dx);
      for (let p = 0; p < moved.length; p++) if (p % w < w / 3) moved[p] = still[p]!;
      const drift = 2 * checkLineUp(ref, moved, w, h).drift;
      assert.ok(!(drift <= 0.5), `moved ${dx} px with a still third: drift ${drift.toFixed(3)} px`);
    }
  });

  await t.test('phase correlation of gradients finds a shift through a focus blur and a change of exposure', async () => {
    // Luma of a photo, and the same moved by (6, −4) px, blurred (sigma 2) and brightened with a bent tone curve.
    const photo = await load(path.join(FIXTURES, 'handheld-mean', 'gt.png'));
    const { width, height } = photo;
    const luma = (img: RgbImage) => Float32Array.from({ length: width * height }, (_, p) => 0.299 * img.data[p * 3]! + 0.587 * img.data[p * 3 + 1]! + 0.114 * img.data[p * 3 + 2]!);
    const ref = luma(photo);
    const shifted = luma(await blurred(moved(photo, 6, -4, 0), 2));
    const frame = shifted.map((v) => 255 * (Math.min(255, v) / 255) ** 0.6);
    const [best] = phaseCorrelate(ref, frame, width, height);
    // A proposal within a pixel (whitening gives the blurred frame's empty high frequencies a say); refinement does the rest.
    assert.ok(best && Math.hypot(best.dx - 6, best.dy + 4) < 0.75, JSON.stringify(best));
    // Unrelated images make no such peak.
    const other = luma(await load(path.join(FIXTURES, 'noise-mean', 'gt.png'), width, height));
    const [none] = phaseCorrelate(ref, other, width, height);
    assert.ok(none && none.peak < best.peak / 2, JSON.stringify(none));
  });

  await t.test('does not take a smooth sky shifted by several pixels for lined up', async (st) => {
    // A knocked tripod over a photo that is mostly smooth sky (noise, JPEG): the line-up check once
    // fitted drifts of 0.1–0.3 px to blocks none of which agreed, and left such frames unwarped.
    const photo = await loadPhoto(path.resolve(import.meta.dirname, 'fixtures/photos/rocket.jpg'), 320);
    for (const seed of [6007001, 6007003]) {
      const next = random(seed);
      const toFrame = drifts(5, next, 0.5).map(([dx, dy, degrees]) => similarity(photo.width, photo.height, dx, dy, degrees));
      const frames = await Promise.all(
        toFrame.map(async (h) => {
          const frame = withNoise(warped(photo, h), 8, next);
          const jpeg = await sharp(Buffer.from(frame.data), { raw: { width: frame.width, height: frame.height, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();
          const { data, info } = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
          return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
        }),
      );
      const { frameReports } = await alignFrames(pool, frames);
      const errors = frameReports.map((r) => cornerError(r.homography, toFrame[r.index]!, photo.width, photo.height));
      st.diagnostic(`seed ${seed}: ${frameReports.map((r) => r.method).join(', ')}; corner errors ${errors.map((e) => e.toFixed(2)).join(', ')} px`);
      for (const r of frameReports.slice(1)) assert.notEqual(r.method, 'identity', `seed ${seed} frame ${r.index}`);
      for (const e of errors) assert.ok(e < 1.5, `seed ${seed}: corner error ${e.toFixed(2)} px`);
    }
  });

  await t.test('aligns large frames from features found on the halved grey copy', async (st) => {
    // 2400 × 1600: a 1200 px grey copy, whose features are found at 600 px (align/cv.ts FEATURE_SIDE).
    const scene = grainy(await load(path.join(FIXTURES, 'median-crowd', 'gt.png'), 2400, 1600), 3, 10);
    const toFrame = [similarity(2400, 1600, 0, 0, 0), similarity(2400, 1600, 23.5, -11.25, 0.8), similarity(2400, 1600, -40, 17, -1.5, 1.01)];
    const frames = toFrame.map((h) => warped(scene, h));
    const { frameReports } = await alignFrames(pool, frames);
    const errors = frameReports.map((r) => cornerError(r.homography, toFrame[r.index]!, 2400, 1600));
    st.diagnostic(`${frameReports.map((r) => `${r.method} (${r.inliers} inliers)`).join(', ')}; corner errors ${errors.map((e) => e.toFixed(3)).join(', ')} px`);
    assert.deepEqual(frameReports.map((r) => r.method), ['reference', 'homography', 'homography']);
    for (const e of errors) assert.ok(e < 0.5, `corner error ${e.toFixed(3)} px`);
  });

  await t.test("reports a shifted frame as a translation (the feature homography's centre shift), a turned one as a homography", async (st) => {
    // A tripod's drift: frame 1 only shifted, frame 2 also turned. The shift is judged by the
    // blocks beside the feature homography and taken unless the homography fits significantly
    // more of them; then the warp's fixed-weight path (align/warp.ts) serves it.
    const scene = grainy(await load(path.join(FIXTURES, 'median-crowd', 'gt.png'), 2400, 1600), 5, 10);
    const toFrame = [similarity(2400, 1600, 0, 0, 0), similarity(2400, 1600, 7.25, -3.5, 0), similarity(2400, 1600, -6, 4.5, 0.3)];
    const frames = toFrame.map((h) => warped(scene, h));
    const { frameReports } = await alignFrames(pool, frames);
    const errors = frameReports.map((r) => cornerError(r.homography, toFrame[r.index]!, 2400, 1600));
    st.diagnostic(`${frameReports.map((r) => `${r.method} (${r.route})`).join(', ')}; corner errors ${errors.map((e) => e.toFixed(3)).join(', ')} px`);
    assert.deepEqual(frameReports.map((r) => r.method), ['reference', 'translation', 'homography']);
    // exactly a translation at full size, as translationShift requires
    const [h0, h1, , h3, h4, , h6, h7, h8] = frameReports[1]!.homography;
    assert.deepEqual([h0, h1, h3, h4, h6, h7, h8], [1, 0, 0, 1, 0, 0, 1]);
    assert.equal(frameReports[1]!.inliers > 0, true, 'the shift comes from the feature matches');
    for (const e of errors) assert.ok(e < 0.5, `corner error ${e.toFixed(3)} px`);
  });

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

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { AlignmentFailed, alignFrames, type FrameReport } from '../src/blend/engine/align/align.js';
import { apply } from '../src/blend/engine/align/homography.js';
import type { RgbImage } from '../src/blend/engine/image/image.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { crowd, drifts, exposureBracket, focusBracket, loadPhoto, moved, random, withNoise } from './blend-scenes.js';

/**
 * Alignment on sets it was not tuned on: the photos of the fixture sets (scikit-image's sample
 * data, see test/fixtures/blend/README.md) in scenarios they were not used for, with draws of
 * their own (blend-scenes.ts). Every set of one scene must align (tripod sets left as they are,
 * drifted ones brought back); only frames of another photo fail.
 */

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');
const PHOTOS = {
  cat: path.join(FIXTURES, 'handheld-mean/gt.png'),
  astronaut: path.join(FIXTURES, 'exposure-bracket/gt.png'),
  rocket: path.join(FIXTURES, 'noise-mean/gt.png'),
  coffee: path.join(FIXTURES, 'median-crowd/gt.png'),
};

/** Largest distance (pixels) between where the report's homography and the true drift send the frame's corners. */
function cornerError(report: FrameReport, drift: [number, number, number], width: number, height: number): number {
  const [dx, dy, degrees] = drift;
  const [c, s] = [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)];
  const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
  let most = 0;
  for (const [x, y] of [[0, 0], [width - 1, 0], [0, height - 1], [width - 1, height - 1]] as const) {
    // The scene point at reference pixel (x, y) is shown in the frame rotated about the centre, then shifted.
    const [u, v] = [x - cx, y - cy];
    const [tx, ty] = [c * u - s * v + cx + dx, s * u + c * v + cy + dy];
    const [ax, ay] = apply(report.homography, x, y);
    most = Math.max(most, Math.hypot(ax - tx, ay - ty));
  }
  return most;
}

interface Scene {
  name: string;
  frames: (photo: RgbImage, next: () => number) => Promise<RgbImage[]>;
}

test('alignment of sets of one scene it was not tuned on', async (t) => {
  const pool = new WorkerPool(2);
  t.after(() => pool.close());
  const people = await loadPhoto(PHOTOS.astronaut, 416, 416);
  const scenes: Scene[] = [
    { name: 'focus bracket', frames: (photo, next) => focusBracket(photo, 4, next) },
    { name: 'crowd for median', frames: async (photo, next) => crowd(photo, people, 7, next) },
    { name: 'exposure bracket', frames: async (photo) => exposureBracket(photo, [0, -2, 2]) },
  ];
  for (const [photoName, file] of [['cat', PHOTOS.cat], ['rocket', PHOTOS.rocket]] as const) {
    const photo = await loadPhoto(file, 416);
    for (const [k, scene] of scenes.entries()) {
      // Sensor noise of a couple of levels, as a camera adds; a stream of draws per photo and scenario.
      const next = random(1000 * k + photoName.length);
      const frames = (await scene.frames(photo, next)).map((f) => withNoise(f, 2, next));

      await t.test(`${photoName}, ${scene.name} on a tripod: every frame is left as it is`, async () => {
        const { frames: aligned, frameReports } = await alignFrames(pool, frames);
        assert.deepEqual(
          frameReports.map((r) => r.method),
          ['reference', ...frames.slice(1).map(() => 'identity')],
          JSON.stringify(frameReports.map(({ method, shiftPx, confidence }) => ({ method, shiftPx, confidence }))),
        );
        aligned.forEach((f, i) => assert.equal(f, frames[i]));
        for (const r of frameReports) assert.ok(r.confidence >= 0.1 && r.shiftPx === 0, JSON.stringify(r));
      });

      await t.test(`${photoName}, ${scene.name} on a knocked tripod (3–15 px, ±0.5°): every frame is brought back`, async (st) => {
        const drift = drifts(frames.length, next, 0.5);
        const drifted = frames.map((f, i) => moved(f, ...drift[i]!));
        const { frameReports } = await alignFrames(pool, drifted);
        const errors = frameReports.map((r) => cornerError(r, drift[r.index]!, photo.width, photo.height));
        st.diagnostic(`methods ${frameReports.map((r) => r.method).join(', ')}; corner errors ${errors.map((e) => e.toFixed(2)).join(', ')} px`);
        for (const r of frameReports.slice(1)) assert.ok(r.method === 'translation' || r.method === 'homography', JSON.stringify(r));
        // A crowd hides much of the scene from both frames, so its estimates are looser.
        const tolerance = scene.name.startsWith('crowd') ? 4 : 2;
        for (const e of errors) assert.ok(e < tolerance, `corner error ${e.toFixed(2)} px`);
      });
    }
  }

  await t.test('focus brackets of a photo with little texture (a rocket in the sky), three draws: left as they are', async () => {
    // Before block agreement decided, these failed the job: "frame 3 cannot be aligned to frame 0:
    // no homography fits its 3 feature matches" (draw 1), "only 4 of 7 feature matches agree" (draw 2).
    const photo = await loadPhoto(PHOTOS.rocket, 416);
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const frames = (await focusBracket(photo, 4, next)).map((f) => withNoise(f, 2, next));
      const { frameReports } = await alignFrames(pool, frames);
      assert.deepEqual(frameReports.map((r) => r.method), ['reference', 'identity', 'identity', 'identity'], `draw ${seed}`);
    }
  });

  await t.test('drifted tripod frames with strong features take the features-only route; a frame only part of which shows the scene is weighed with the global estimate', async () => {
    const cat = await loadPhoto(PHOTOS.cat, 832, 554);
    const coffee = await loadPhoto(PHOTOS.coffee, 832, 554);
    const next = random(11);
    const drift = drifts(4, next, 0.5);
    const frames = drift.map((d) => withNoise(moved(cat, ...d), 2, next));
    const { frameReports } = await alignFrames(pool, frames);
    const errors = frameReports.map((r) => cornerError(r, drift[r.index]!, cat.width, cat.height));
    const summary = JSON.stringify(frameReports.map(({ method, route, shiftPx }, i) => ({ method, route, shiftPx, error: errors[i]!.toFixed(2) })));
    assert.deepEqual(frameReports.map((r) => r.route), ['lined-up', 'features', 'features', 'features'], summary);
    for (const e of errors) assert.ok(e < 2, summary);

    // The right 40 % of the frame shows another photo: its features (and the strong homography
    // they give) come from the left part alone, and the blocks on the right fail under it, far more
    // than the tenth that confirms a homography. The global estimate is weighed, and the frame is
    // still brought back.
    const part = withNoise(moved(cat, ...drift[1]!), 2, next);
    const cut = Math.round(0.6 * cat.width);
    for (let y = 0; y < cat.height; y++) {
      const row = y * cat.width * 3;
      part.data.set(coffee.data.subarray(row + cut * 3, row + cat.width * 3), row + cut * 3);
    }
    const partly = await alignFrames(pool, [frames[0]!, part]);
    const report = partly.frameReports[1]!;
    assert.equal(report.route, 'weighed', JSON.stringify(report));
    assert.ok(report.method === 'translation' || report.method === 'homography', JSON.stringify(report));
    assert.ok(Math.abs(report.shiftPx - frameReports[1]!.shiftPx) < 2, `${report.shiftPx} px against ${frameReports[1]!.shiftPx} px`);
  });

  await t.test('drifted tripod frames with passers-by are brought back, most by their strong feature homography corrected by the blocks that show the scene, without the global estimate', async () => {
    // Two or three people per frame, at places of their own, make more than a tenth of the blocks
    // fail under any motion, so the blocks cannot confirm the homography as they do for a clean set.
    const cat = await loadPhoto(PHOTOS.cat, 832, 554);
    const next = random(23);
    const drift = drifts(4, next, 0.5);
    const frames = crowd(cat, people, 4, next, 3).map((f, i) => withNoise(moved(f, ...drift[i]!), 2, next));
    const { frameReports } = await alignFrames(pool, frames);
    const errors = frameReports.map((r) => cornerError(r, drift[r.index]!, cat.width, cat.height));
    const summary = JSON.stringify(frameReports.map(({ method, route, shiftPx, confidence }, i) => ({ method, route, shiftPx, confidence, error: errors[i]!.toFixed(2) })));
    // Blocks confirm a homography only when at least nine in ten agree under it (confidence ≥ 0.9):
    // a frame that decides alone with fewer did so through the corrected homography's line-up.
    assert.ok(frameReports.filter((r) => r.route === 'features' && r.confidence < 0.9).length >= 2, summary);
    for (const e of errors) assert.ok(e < 2, summary);
  });

  await t.test('a frame of another photo still fails, named, as another scene', async () => {
    const cat = await loadPhoto(PHOTOS.cat, 416, 277);
    const coffee = await loadPhoto(PHOTOS.coffee, 416, 277);
    const next = random(7);
    const frames = [withNoise(cat, 2, next), withNoise(cat, 2, next), withNoise(coffee, 2, next)];
    await assert.rejects(alignFrames(pool, frames), (err: unknown) => {
      assert.ok(err instanceof AlignmentFailed, String(err));
      assert.equal(err.index, 2);
      assert.match(err.message, /another scene/);
      // and what else reads so, with what to do
      assert.match(err.message, /EXIF orientation .* options\.align false/);
      return true;
    });
  });
});

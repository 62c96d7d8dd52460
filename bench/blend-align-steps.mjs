// What each step of alignment costs a frame, in one thread, warm: the blend benchmark's drifted
// frames (bench/blend.mjs makeInputs; `--set scene` for the lined-up ones) made into grey thumbnails
// as the engine makes them (image/analysis.ts thumbnailRows), then, for every frame against frame 0,
// the steps align/align.ts `frameAligner` runs for it (the line-up check, AKAZE features, matching,
// Lucas–Kanade refinement, block judgement, the corrected line-up and, for comparison, the global
// estimate), timed one at a time over `--rounds` rounds after a warm-up round; the median per step
// and frame, and the full-size warp of one 12 MP frame. Where a frame's decision goes depends on the
// results (align.ts); this prints the cost of every step whether its route would reach it or not.
// Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-align-steps.mjs [--rounds 5] [--inputs DIR] [--set drifted|scene]
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { inputFrames } from './blend.mjs';
import { option as arg, roundsOption } from './lib.mjs';

const rounds = roundsOption(5);
const set = arg('set', 'drifted');
const { dir, frames, remove } = await inputFrames(arg('inputs'), set);
const { thumbnailRows } = await import('../src/blend/engine/image/analysis.ts');
const { thumbnailFactor } = await import('../src/blend/engine/image/thumbnails.ts');
const { thumbnailSize } = await import('../src/blend/engine/image/image.ts');
const lineup = await import('../src/blend/engine/align/lineup.ts');
const cv = await import('../src/blend/engine/align/cv.ts');
const { refineEstimate } = await import('../src/blend/engine/align/refine.ts');
const { judgeMotions, globalEstimate } = await import('../src/blend/engine/align/global.ts');
const { IDENTITY } = await import('../src/blend/engine/align/homography.ts');
const { warpRows } = await import('../src/blend/engine/align/warp.ts');

const decoded = await Promise.all(frames.map(async (f) => {
  const { data, info } = await sharp(fs.readFileSync(path.join(dir, f))).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}));
const { width, height } = decoded[0];
const factor = thumbnailFactor(width, height);
const [w, h] = thumbnailSize(width, height, factor);
const greys = decoded.map((frame) => {
  const rgb = new Uint8Array(Math.ceil(width / factor) * Math.ceil(height / factor) * 3);
  const grey = new Uint8Array(w * h);
  thumbnailRows(frame.data, width, height, factor, rgb, 0, Math.ceil(height / factor), grey);
  return grey;
});
await cv.loadOpenCv();

const times = new Map();
async function step(name, work) {
  const started = performance.now();
  const value = await work();
  if (recording) (times.get(name) ?? times.set(name, []).get(name)).push(performance.now() - started);
  return value;
}
let recording = false;
for (let r = 0; r <= rounds; r++) {
  recording = r > 0;
  const ref = await step('lineUpReference (once a job)', () => lineup.lineUpReference(greys[0], w, h));
  const refFeatures = await step('detectFeatures (reference, once a job)', () => cv.detectFeatures(greys[0], w, h));
  for (const grey of greys.slice(1)) {
    const check = await step('checkLineUp', () => lineup.checkLineUp(ref, grey, w, h));
    const features = await step('detectFeatures', () => cv.detectFeatures(grey, w, h));
    const match = await step('matchHomography', () => cv.matchHomography(refFeatures, features));
    const e = await step('refineEstimate', () => refineEstimate(match, ref.smoothed, check.smoothed, w, h));
    const motion = e.homography ?? IDENTITY;
    await step('judgeMotions (identity, features)', () => judgeMotions(ref.level, check.level, w, h, [IDENTITY, motion]));
    await step('lineUpAfter', () => lineup.lineUpAfter(ref, grey, check.smoothed, w, h, motion));
    await step('globalEstimate (when features do not decide)', () => globalEstimate(ref.smoothed, ref.level, check.smoothed, check.level, w, h));
  }
  const out = { data: new Uint8Array(width * height * 3), width, height };
  await step('full-size warp of one frame (one thread)', () => warpRows(decoded[1], out, [0.9995, 0.003, 4.2, -0.003, 0.9995, -6.1, 1e-8, -2e-8, 1], 0, height));
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(`${frames.length} ${set} frames ${width}×${height}, thumbnails ${w}×${h}; ${rounds} rounds after a warm-up; median ms per call`);
for (const [name, list] of times) console.log(`  ${name.padEnd(48)} ${med(list).toFixed(1).padStart(7)}`);
await remove();
process.exit(0);

// What folding a deghosted mean costs, one thread, in-process: the blend benchmark's lined-up scene
// (bench/blend.mjs makeInputs: five 4000×3000 JPEGs of a static scene with two passers-by in each)
// folded as a streamed mean folds it (src/blend/engine/point/fold.ts: frame 0, then frames 1–4 with
// their deghosting masks, then the result), timed per step on this thread's CPU clock
// (/proc/thread-self/schedstat). The masks are made once (deghost/deghost.ts gridMasks, on a pool).
// `--base DIR` times a second checkout's fold in the same process, the order alternating per
// round, and checks that both write the same bytes; a base whose foldFrameRows takes full-size
// masks (before they stayed on the grid) is given each mask brought to full size first, into fresh
// shared memory as its stream.ts did (upsampleMaskRows), and that is timed with its fold.
// Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-fold-cost.mjs [--rounds 5] [--inputs DIR] [--base DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { inputFrames } from './blend.mjs';
import { option as arg, roundsOption } from './lib.mjs';

const rounds = roundsOption(5);
const roots = [path.join(import.meta.dirname, '..'), ...(arg('base') ? [path.resolve(arg('base'))] : [])];
const { dir, frames: files, remove: removeInputs } = await inputFrames(arg('inputs'), 'scene');

const { toShared } = await import(path.join(roots[0], 'src/blend/engine/image/image.ts'));
const { WorkerPool } = await import(path.join(roots[0], 'src/blend/engine/threads/pool.ts'));
const { gridMasks } = await import(path.join(roots[0], 'src/blend/engine/deghost/deghost.ts'));
const frames = [];
for (const f of files) {
  const { data, info } = await sharp(path.join(dir, f)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  frames.push(toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length)));
}
const { width, height } = frames[0];
const pool = new WorkerPool(2);
const masks = (await gridMasks(pool, frames, 'first')).masks;
await pool.close();

/** This thread's CPU time in ms. */
const cpu = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;

const folds = [];
for (const root of roots) {
  const fold = await import(path.join(root, 'src/blend/engine/point/fold.ts'));
  const { upsampleMaskRows } = await import(path.join(root, 'src/blend/engine/deghost/upsample.ts'));
  // a checkout whose deghost.ts frameMask gives full-size masks folds full-size masks
  const full = /Promise<Uint8Array \| null>/.test(fs.readFileSync(path.join(root, 'src/blend/engine/deghost/deghost.ts'), 'utf8'));
  const maskOf = (m) => {
    if (!m || !full) return m;
    const mask = new Uint8Array(new SharedArrayBuffer(width * height));
    upsampleMaskRows(m.data, m.width, m.height, m.factor, mask, width, 0, height, new Int32Array(new SharedArrayBuffer(8 * height)));
    return mask;
  };
  folds.push({ root, fold, maskOf, times: { first: [], masked: [], unmasked: [], finish: [] } });
}

function run({ fold, maskOf, times }) {
  const acc = { type: 'mean', width, values: new Uint32Array(width * height * 3), weights: null };
  let t = cpu();
  const lap = (key, ms) => (times[key][times[key].length - 1] += ms);
  for (const key of Object.keys(times)) times[key].push(0);
  fold.foldFirstRows(acc, frames[0].data, 0, height);
  lap('first', cpu() - t);
  for (let k = 1; k < frames.length; k++) {
    t = cpu();
    if (masks[k] && !acc.weights) acc.weights = new Uint32Array(width * height).fill(255 * k);
    fold.foldFrameRows(acc, frames[k].data, maskOf(masks[k]), 0, height);
    lap(masks[k] ? 'masked' : 'unmasked', cpu() - t);
  }
  const out = new Uint8Array(width * height * 3);
  t = cpu();
  fold.finishFoldRows(acc, frames.length, out, 0, height);
  lap('finish', cpu() - t);
  return out;
}

const sorted = (a) => [...a].sort((x, y) => x - y);
const summary = (a) => `min ${sorted(a)[0].toFixed(0)}, median ${sorted(a)[a.length >> 1].toFixed(0)}`;
console.log(`${frames.length} lined-up ${width} × ${height} frames from ${dir}, ${masks.filter(Boolean).length} with a mask; folds of ${roots.join(' and ')}; ${rounds} rounds; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
// one warm-up fold each, not counted
for (const f of folds) run(f), Object.keys(f.times).forEach((key) => (f.times[key] = []));
for (let r = 0; r < rounds; r++) {
  const outs = (r % 2 === 0 ? folds : [...folds].reverse()).map(run);
  if (outs.some((o) => Buffer.compare(o, outs[0]) !== 0)) throw new Error(`round ${r}: the folds' results differ`);
}
for (const { root, times } of folds) {
  const total = times.first.map((_, r) => Object.values(times).reduce((sum, t) => sum + t[r], 0));
  const parts = Object.entries(times).map(([key, t]) => `${key} ${summary(t)}`).join('; ');
  console.log(`${root}: CPU ms a job (one thread): ${summary(total)}; ${parts} (masked, unmasked: all such frames of a job)`);
}
if (folds.length > 1) console.log('same bytes every round');
console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
await removeInputs();

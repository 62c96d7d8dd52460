// The full-size warp of one 12 MP frame (4000×3000) by the homographies a drifting tripod or a
// hand-held shot gives (turned by 0.2° and −0.5° about the centre and shifted by a few pixels, and
// slightly tilted), in one thread, warm: this checkout's general kernel (align/warp-wasm.ts
// warpBand) against another checkout's (`--base DIR`, a tree holding its src/, e.g. made by
// `git archive <commit> src | tar -x -C DIR`), the two alternated call by call in the same run and
// their order swapped every round. Both as one call over the whole frame and as align.ts warpFrame
// runs it (warpThumbnailRows: bands of 8 thumbnail rows, 32 rows of a 12 MP frame, one after
// another here; the thumbnail itself is left out, the same work for both). Each call's output is
// checked against the other's, byte for byte, and each homography's once against warpRowsJs; with
// `--changed` (the base warps by another definition, e.g. bilinear before the bicubic kernel), each
// kernel is checked once against its own checkout's warpRowsJs instead.
// Prints the share of groups of four output pixels whose top-left samples are consecutive in one
// source row (the kernel's fast path), then the median ms per frame over `--rounds` rounds after a
// warm-up round. Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-warp-homography.mjs --base DIR [--changed] [--rounds 9]
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { option, roundsOption, fillTexture } from './lib.mjs';

const base = option('base');
if (!base) throw new Error('--base DIR: a tree with the src/ of the code to compare with');
const { warpBand } = await import('../src/blend/engine/align/warp-wasm.ts');
const { warpBand: baseWarpBand } = await import(pathToFileURL(path.resolve(base, 'src/blend/engine/align/warp-wasm.ts')).href);
const { warpRowsJs } = await import('../src/blend/engine/align/warp.ts');
const { warpRowsJs: baseWarpRowsJs } = await import(pathToFileURL(path.resolve(base, 'src/blend/engine/align/warp.ts')).href);
const changed = process.argv.includes('--changed');
const { sharedImage } = await import('../src/blend/engine/image/image.ts');

const rounds = roundsOption(9);
const [width, height] = [4000, 3000];
const frame = fillTexture(sharedImage(width, height), width);
const BAND = 32;

/** A turn by `degrees` about the frame's centre, then a shift by (tx, ty) and a tilt (h6, h7): output → source. */
function turn(degrees, tx, ty, h6 = 0, h7 = 0) {
  const [c, s] = [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)];
  const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
  return [c, -s, cx - c * cx + s * cy + tx, s, c, cy - s * cx - c * cy + ty, h6, h7, 1];
}

const homographies = {
  'turned 0.2°, shifted (3.4, −2.7)': turn(0.2, 3.4, -2.7),
  'turned −0.5°, shifted (−4.1, 1.6)': turn(-0.5, -4.1, 1.6),
  'tilted (h6 1e-6, h7 −2e-6), turned 0.1°': turn(0.1, 1.3, -0.8, 1e-6, -2e-6),
};

/** The share of groups of four output pixels whose top-left samples (as warpRowsJs clamps them) are consecutive in one source row. */
function consecutiveShare(h) {
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h;
  const fixed = (t) => Math.max(-2147483648, Math.min(2147483647, t)) | 0;
  let consecutive = 0;
  let groups = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x += 4, groups++) {
      let first = -1;
      let ok = true;
      for (let k = 0; k < 4 && ok; k++) {
        const c = Math.min(x + k, width - 1);
        const w = h6 * c + (h7 * y + h8);
        const x0 = Math.min(width - 1, Math.max(0, fixed(((h0 * c + (h1 * y + h2)) / w) * 256 + 0.5) >> 8));
        const y0 = Math.min(height - 1, Math.max(0, fixed(((h3 * c + (h4 * y + h5)) / w) * 256 + 0.5) >> 8));
        const p = y0 * width + x0;
        if (k === 0) first = p;
        else ok = p === first + k;
      }
      if (ok) consecutive++;
    }
  }
  return consecutive / groups;
}

const ways = {
  'base kernel, whole frame': (out, h) => baseWarpBand(frame.data, width, height, out.data, width, h, 0, height),
  'this kernel, whole frame': (out, h) => warpBand(frame.data, width, height, out.data, width, h, 0, height),
  'base kernel, 32-row bands': (out, h) => {
    for (let y = 0; y < height; y += BAND) baseWarpBand(frame.data, width, height, out.data, width, h, y, Math.min(height, y + BAND));
  },
  'this kernel, 32-row bands': (out, h) => {
    for (let y = 0; y < height; y += BAND) warpBand(frame.data, width, height, out.data, width, h, y, Math.min(height, y + BAND));
  },
};
const pairs = [
  ['base kernel, whole frame', 'this kernel, whole frame'],
  ['base kernel, 32-row bands', 'this kernel, 32-row bands'],
];
const outs = [0, 1].map(() => sharedImage(width, height));
for (const [name, h] of Object.entries(homographies)) {
  const expected = sharedImage(width, height);
  warpRowsJs(frame, expected, h, 0, height);
  ways['this kernel, whole frame'](outs[0], h);
  if (!Buffer.from(outs[0].data).equals(Buffer.from(expected.data))) throw new Error(`${name}: not warpRowsJs's bytes`);
  if (changed) {
    baseWarpRowsJs(frame, expected, h, 0, height);
    ways['base kernel, whole frame'](outs[1], h);
    if (!Buffer.from(outs[1].data).equals(Buffer.from(expected.data))) throw new Error(`${name}: the base kernel is not its warpRowsJs's bytes`);
  }
  console.log(`${name}: ${(consecutiveShare(h) * 100).toFixed(1)} % of groups consecutive`);
}
const times = new Map();
for (let r = 0; r <= rounds; r++) {
  for (const [name, h] of Object.entries(homographies)) {
    for (const pair of pairs) {
      const order = r % 2 === 0 ? pair : [...pair].reverse();
      for (const way of order) {
        const out = outs[pair.indexOf(way)];
        const started = performance.now();
        ways[way](out, h);
        const ms = performance.now() - started;
        const key = `${name}: ${way}`;
        if (r > 0) (times.get(key) ?? times.set(key, []).get(key)).push(ms);
      }
      if (!changed && !Buffer.from(outs[0].data).equals(Buffer.from(outs[1].data))) throw new Error(`${name}, ${pair[1]}: not the base kernel's bytes`);
    }
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(`${width}×${height} frame, one thread, ${rounds} rounds after a warm-up; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('median ms per frame (min–max)');
for (const [name, list] of times) console.log(`  ${name.padEnd(72)} ${median(list).toFixed(1).padStart(6)} (${Math.min(...list).toFixed(1)}–${Math.max(...list).toFixed(1)})`);

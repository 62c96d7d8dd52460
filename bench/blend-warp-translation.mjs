// The full-size warp of one 12 MP frame (4000×3000) by a pure translation, in one thread, warm:
// the translation path of align/warp.ts (warpRows: a shift verified per column, each source row's
// horizontal sums once and each output row from four of them, warp-wasm.ts `horizontal` and
// `vertical`, or a plain row copy for a whole-pixel shift) against the
// general affine kernel (warp-wasm.ts warpBand) on the same frame and homography, the two
// alternated call by call in the same run. Both as one call over the whole frame, and as align.ts
// warpFrame runs it: warpThumbnailRows in 8 bands of thumbnail rows (2 threads × 4), here one
// after another in this thread. Every call's output is checked against the other's, byte for byte.
// Median ms per frame over `--rounds` rounds after a warm-up round. Not part of `npm run bench`
// (bench/README.md).
//
//   node --import tsx bench/blend-warp-translation.mjs [--rounds 9]
import os from 'node:os';
import { fillTexture, roundsOption } from './lib.mjs';

const { warpRows, warpThumbnailRows } = await import('../src/blend/engine/align/warp.ts');
const { warpBand } = await import('../src/blend/engine/align/warp-wasm.ts');
const { thumbnailRows } = await import('../src/blend/engine/image/analysis.ts');
const { thumbnailFactor } = await import('../src/blend/engine/image/thumbnails.ts');
const { sharedImage } = await import('../src/blend/engine/image/image.ts');

const rounds = roundsOption(9);
const [width, height] = [4000, 3000];
const frame = fillTexture(sharedImage(width, height), width);
const factor = thumbnailFactor(width, height);
const [thumbWidth, thumbHeight] = [Math.ceil(width / factor), Math.ceil(height / factor)];
const bands = 8;
const cuts = Array.from({ length: bands + 1 }, (_, b) => Math.round((b * thumbHeight) / bands));

/** align/warp.ts warpThumbnailRows as it was before the translation path: the general kernel, 8 thumbnail rows a step. */
function thumbnailRowsGeneral(out, h, thumbnail, thumbStart, thumbEnd) {
  for (let ty = thumbStart; ty < thumbEnd; ty += 8) {
    const end = Math.min(thumbEnd, ty + 8);
    warpBand(frame.data, width, height, out.data, width, h, ty * factor, Math.min(height, end * factor));
    thumbnailRows(out.data, width, height, factor, thumbnail, ty, end);
  }
}

const ways = {
  'general kernel, whole frame': (out, h) => warpBand(frame.data, width, height, out.data, width, h, 0, height),
  'translation path, whole frame': (out, h) => warpRows(frame, out, h, 0, height),
  'general kernel, 8 bands with thumbnail': (out, h, thumbnail) => {
    for (let b = 0; b < bands; b++) thumbnailRowsGeneral(out, h, thumbnail, cuts[b], cuts[b + 1]);
  },
  'translation path, 8 bands with thumbnail': (out, h, thumbnail) => {
    for (let b = 0; b < bands; b++) warpThumbnailRows(frame, out, h, thumbnail, factor, cuts[b], cuts[b + 1]);
  },
};
const shifts = {
  'fractional shift (3.37, −4.61)': [1, 0, 3.37, 0, 1, -4.61, 0, 0, 1],
  'whole-pixel shift (11, 9)': [1, 0, 11, 0, 1, 9, 0, 0, 1],
};
const outs = [0, 1].map(() => ({ image: sharedImage(width, height), thumbnail: new Uint8Array(thumbWidth * thumbHeight * 3) }));
const times = new Map();
for (let r = 0; r <= rounds; r++) {
  for (const [shiftName, h] of Object.entries(shifts)) {
    for (const pair of [['general kernel, whole frame', 'translation path, whole frame'], ['general kernel, 8 bands with thumbnail', 'translation path, 8 bands with thumbnail']]) {
      // old and new alternated, the order swapped every round
      const order = r % 2 === 0 ? pair : [...pair].reverse();
      for (const name of order) {
        const out = outs[pair.indexOf(name)];
        const started = performance.now();
        ways[name](out.image, h, out.thumbnail);
        const ms = performance.now() - started;
        if (r > 0) (times.get(`${shiftName}: ${name}`) ?? times.set(`${shiftName}: ${name}`, []).get(`${shiftName}: ${name}`)).push(ms);
      }
      if (!Buffer.from(outs[0].image.data).equals(Buffer.from(outs[1].image.data))) throw new Error(`${shiftName}, ${pair[1]}: not the general kernel's bytes`);
      if (pair[0].includes('thumbnail') && !Buffer.from(outs[0].thumbnail).equals(Buffer.from(outs[1].thumbnail))) throw new Error(`${shiftName}: not the same thumbnail`);
    }
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(`${width}×${height} frame, one thread, ${rounds} rounds after a warm-up; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('median ms per frame (min–max)');
for (const [name, list] of times) console.log(`  ${name.padEnd(72)} ${median(list).toFixed(1).padStart(6)} (${Math.min(...list).toFixed(1)}–${Math.max(...list).toFixed(1)})`);

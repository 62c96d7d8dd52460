import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { greyRow, laplacianRow } from '../src/blend/engine/exposure.js';
import {
  collapseLevelZeroRows,
  expandIntoRows,
  LEVEL_ONE_STEPS,
  levelOneRows,
  levelSizes,
  reduceRows,
  sharedFixedPlane,
  sharedPlane,
  WEIGHT_ONE,
} from '../src/blend/engine/pyramid.js';

// The WebAssembly SIMD kernels (pyramid-simd.ts, exposure.ts) against the definitions, written
// plainly in 64-bit floats, on odd sizes so that edges and vector tails are exercised.

function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
}

const clamp = (i: number, last: number): number => Math.max(0, Math.min(last, i));
const TAPS = [1, 4, 6, 4, 1];

/** Level l + 1 of a plane given as value(x, y), in 64-bit floats. */
function reduceReference(value: (x: number, y: number) => number, width: number, height: number): Float64Array {
  const [dw, dh] = [Math.ceil(width / 2), Math.ceil(height / 2)];
  const out = new Float64Array(dw * dh);
  for (let y = 0; y < dh; y++) {
    for (let x = 0; x < dw; x++) {
      let sum = 0;
      for (let j = 0; j < 5; j++) {
        for (let i = 0; i < 5; i++) sum += TAPS[j]! * TAPS[i]! * value(clamp(2 * x + i - 2, width - 1), clamp(2 * y + j - 2, height - 1));
      }
      out[y * dw + x] = sum / 256;
    }
  }
  return out;
}

/** expand(c) at (x, y): c upsampled ×2 with zeros, blurred by 2 · 1-4-6-4-1 each way (edges replicated). */
function expandReference(c: Float32Array, cw: number, ch: number, x: number, y: number): number {
  const axis = (p: number, last: number): Array<[number, number]> =>
    p & 1 ? [[clamp(p >> 1, last), 0.5], [clamp((p >> 1) + 1, last), 0.5]] : [[clamp((p >> 1) - 1, last), 0.125], [clamp(p >> 1, last), 0.75], [clamp((p >> 1) + 1, last), 0.125]];
  let sum = 0;
  for (const [j, wy] of axis(y, ch - 1)) for (const [i, wx] of axis(x, cw - 1)) sum += wy * wx * c[j * cw + i]!;
  return sum;
}

/** Mertens' normalised weights of every frame (exponents 1), in 64-bit floats. */
function mertensReference(frames: Uint8Array[], width: number, height: number): Float64Array[] {
  const sigma = 0.2, epsilon = 1e-12;
  const exposedness = (v: number): number => Math.exp(-((v / 255 - 0.5) ** 2) / (2 * sigma * sigma));
  const raw = frames.map((frame) => {
    const out = new Float64Array(width * height);
    const laplacian = new Float64Array(width);
    for (let y = 0; y < height; y++) {
      const [up, mid, down] = [y - 1, y, y + 1].map((r) => greyRow(frame, width, clamp(r, height - 1))) as [Float64Array, Float64Array, Float64Array];
      laplacianRow(up, mid, down, width, laplacian);
      for (let x = 0; x < width; x++) {
        const q = (y * width + x) * 3;
        const [r, g, b] = [frame[q]!, frame[q + 1]!, frame[q + 2]!];
        const mean = (r + g + b) / 3;
        const saturation = Math.sqrt(((r - mean) ** 2 + (g - mean) ** 2 + (b - mean) ** 2) / 3) / 255;
        out[y * width + x] = laplacian[x]! * saturation * exposedness(r) * exposedness(g) * exposedness(b);
      }
    }
    return out;
  });
  for (let p = 0; p < width * height; p++) {
    const sum = raw.reduce((s, w) => s + w[p]!, epsilon * frames.length);
    for (const w of raw) w[p] = (w[p]! + epsilon) / sum;
  }
  return raw;
}

function randomFrames(n: number, width: number, height: number, seed: number): Uint8Array[] {
  const next = random(seed);
  // smooth gradients plus noise, each frame brighter than the last: every weight term matters
  return Array.from({ length: n }, (_, k) =>
    Uint8Array.from({ length: width * height * 3 }, (_, i) => {
      const p = Math.floor(i / 3), x = p % width, y = Math.floor(p / width);
      return clamp(Math.round(40 * k + 60 * Math.sin(x / 7 + (i % 3)) + y + 40 * next()), 255);
    }),
  );
}

describe('pyramid kernels', () => {
  it('reduce floats and fixed-point planes as the 1-4-6-4-1 definition does', () => {
    const next = random(1);
    for (const [w, h] of [[37, 23], [40, 17], [3, 5]] as const) {
      const plane = sharedPlane(w, h);
      for (let i = 0; i < plane.data.length; i++) plane.data[i] = 1000 * next() - 500;
      const fixed = sharedFixedPlane(w, h);
      for (let i = 0; i < fixed.data.length; i++) fixed.data[i] = Math.floor(65536 * next());
      const [dw, dh] = [Math.ceil(w / 2), Math.ceil(h / 2)];
      const [a, b] = [sharedPlane(dw, dh), sharedPlane(dw, dh)];
      reduceRows([plane], 'level', [a], 0, dh);
      reduceRows([fixed], 'weight', [b], 0, dh);
      const wantA = reduceReference((x, y) => plane.data[y * w + x]!, w, h);
      const wantB = reduceReference((x, y) => fixed.data[y * w + x]! / WEIGHT_ONE, w, h);
      for (let i = 0; i < dw * dh; i++) {
        assert.ok(Math.abs(a.data[i]! - wantA[i]!) < 1e-3, `${w}×${h} float ${i}: ${a.data[i]} ≠ ${wantA[i]}`);
        assert.ok(Math.abs(b.data[i]! - wantB[i]!) < 1e-6, `${w}×${h} fixed ${i}: ${b.data[i]} ≠ ${wantB[i]}`);
      }
    }
  });

  it('expand as the zero-upsampled, 2 · 1-4-6-4-1 blur does', () => {
    const next = random(2);
    for (const [w, h] of [[37, 23], [40, 18]] as const) {
      const [cw, ch] = [Math.ceil(w / 2), Math.ceil(h / 2)];
      const coarse = sharedPlane(cw, ch);
      for (let i = 0; i < coarse.data.length; i++) coarse.data[i] = 200 * next();
      const fine = sharedPlane(w, h);
      fine.data.fill(1);
      expandIntoRows([fine], [coarse], -1, 0, h);
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const want = 1 - expandReference(coarse.data, cw, ch, x, y);
          assert.ok(Math.abs(fine.data[y * w + x]! - want) < 1e-4, `(${x}, ${y}): ${fine.data[y * w + x]} ≠ ${want}`);
        }
      }
    }
  });

  it('level 1 of the frames is exact, and of the exposure weights within a step of the definition', () => {
    const [w, h] = [45, 21];
    const frames = randomFrames(3, w, h, 3);
    const [dw, dh] = levelSizes(w, h)[1]!;
    const firsts = frames.map(() => [0, 1, 2].map(() => sharedFixedPlane(dw, dh)));
    const weights = frames.map(() => sharedFixedPlane(dw, dh));
    // two row ranges, as two pool threads would run them
    levelOneRows(frames, w, h, 'exposure', firsts, weights, 0, 4);
    levelOneRows(frames, w, h, 'exposure', firsts, weights, 4, dh);
    const mertens = mertensReference(frames, w, h);
    for (const [k, frame] of frames.entries()) {
      for (let c = 0; c < 3; c++) {
        const want = reduceReference((x, y) => frame[(y * w + x) * 3 + c]!, w, h);
        assert.deepEqual(Array.from(firsts[k]![c]!.data), Array.from(want, (v) => v * LEVEL_ONE_STEPS), `frame ${k} channel ${c}`);
      }
      const want = reduceReference((x, y) => mertens[k]![y * w + x]!, w, h);
      for (let i = 0; i < dw * dh; i++) {
        assert.ok(Math.abs(weights[k]!.data[i]! - want[i]! * WEIGHT_ONE) <= 1.5, `frame ${k} weight ${i}: ${weights[k]!.data[i]} ≠ ${want[i]! * WEIGHT_ONE}`);
      }
    }
  });

  it('level 0 alone is the weighted mean, rounded: Mertens weights and one-hot choices', () => {
    const [w, h] = [35, 9];
    const frames = randomFrames(4, w, h, 4);
    const out = new Uint8Array(w * h * 3);
    collapseLevelZeroRows(frames, null, 'exposure', null, out, w, h, 0, h);
    const mertens = mertensReference(frames, w, h);
    let worst = 0;
    for (let i = 0; i < out.length; i++) {
      const p = Math.floor(i / 3);
      const want = frames.reduce((s, f, k) => s + mertens[k]![p]! * f[i]!, 0);
      worst = Math.max(worst, Math.abs(out[i]! - want));
    }
    assert.ok(worst <= 0.51, `off by ${worst}`);
    const choice = Uint8Array.from({ length: w * h }, (_, p) => (p * 7) % 4);
    collapseLevelZeroRows(frames, null, { choice }, null, out, w, h, 0, h);
    assert.deepEqual(Array.from(out), Array.from(out, (_, i) => frames[choice[Math.floor(i / 3)]!]![i]));
  });
});

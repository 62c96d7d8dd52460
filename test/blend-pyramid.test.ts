import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { greyRow, laplacianRow } from '../src/blend/engine/pyramid/exposure.js';
import { accumulateRows, collapseLevelZeroRows, expandIntoRows, levelOneRows, reduceRows } from '../src/blend/engine/pyramid/pyramid.js';
import { LEVEL_ONE_STEPS, levelSizes, sharedFixedPlane, sharedPlane, WEIGHT_ONE } from '../src/blend/engine/pyramid/planes.js';
import { rowMemory } from '../src/blend/engine/pyramid/simd.js';

// The WebAssembly SIMD kernels (pyramid/simd*.ts, pyramid/exposure.ts) against the definitions, written
// plainly in 64-bit floats, and, where the blend's bytes depend on exact floats, against the
// kernels' 32-bit operations (Math.fround), on odd sizes so that edges and vector tails are exercised.

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

/**
 * expand(c) at (x, y) in the kernels' own 32-bit operations and order (down, then across; edges
 * replicated): the kernels fuse and reorder their passes, and must still give these floats.
 */
function expandF32(c: Float32Array, cw: number, ch: number, x: number, y: number): number {
  const f = Math.fround;
  const j = y >> 1, at = (i: number, r: number): number => c[clamp(r, ch - 1) * cw + clamp(i, cw - 1)]!;
  const down = (i: number): number => {
    const [a, b, d] = y & 1 ? [at(i, j), at(i, j), at(i, j + 1)] : [at(i, j - 1), at(i, j), at(i, j + 1)];
    const [p, q] = y & 1 ? [0.5, 0] : [0.125, 0.75];
    return f(f(f(a + d) * p) + f(b * q));
  };
  const i = x >> 1;
  return x & 1 ? f(f(down(i) + down(i + 1)) * 0.5) : f(f(f(down(i - 1) + down(i + 1)) + f(down(i) * 6)) * 0.125);
}

// Sizes that leave vector tails (widths not multiples of 4 or 16) and levels of one to three rows.
const ODD_SIZES = [[1, 1], [2, 1], [3, 2], [5, 3], [17, 1], [33, 3], [37, 23]] as const;

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

  it('expand and accumulate through an expand in the kernels\' 32-bit operations, on any size', () => {
    const next = random(5);
    for (const [w, h] of ODD_SIZES) {
      const [cw, ch] = [Math.ceil(w / 2), Math.ceil(h / 2)];
      const coarse = sharedPlane(cw, ch);
      for (let i = 0; i < coarse.data.length; i++) coarse.data[i] = 200 * next() - 100;
      const fine = sharedPlane(w, h);
      for (let i = 0; i < fine.data.length; i++) fine.data[i] = 100 * next();
      const laplacian = sharedPlane(w, h);
      laplacian.data.set(fine.data);
      expandIntoRows([laplacian], [coarse], -1, 0, h);
      // a frame's level: its R (fixed point) and weight (fixed point and float), into an accumulator
      const level = sharedFixedPlane(w, h), weight = sharedFixedPlane(w, h), floatWeight = sharedPlane(w, h);
      for (let i = 0; i < w * h; i++) {
        level.data[i] = Math.floor(65536 * next());
        weight.data[i] = Math.floor(WEIGHT_ONE * next());
        floatWeight.data[i] = next();
      }
      const [acc, accFloat] = [sharedPlane(w, h), sharedPlane(w, h)];
      acc.data.set(fine.data);
      accFloat.data.set(fine.data);
      // split in two row ranges, as two pool threads would run them
      for (const [y0, y1] of [[0, h >> 1], [h >> 1, h]] as const) {
        accumulateRows([acc], [level], [coarse], weight, y0, y1);
        accumulateRows([accFloat], [fine], [coarse], floatWeight, y0, y1);
      }
      const f = Math.fround;
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const i = y * w + x, e = expandF32(coarse.data, cw, ch, x, y);
          assert.equal(laplacian.data[i], f(fine.data[i]! + f(e * -1)), `${w}×${h} laplacian (${x}, ${y})`);
          const g = level.data[i]! / LEVEL_ONE_STEPS, weightValue = weight.data[i]! / WEIGHT_ONE;
          assert.equal(acc.data[i], f(fine.data[i]! + f(weightValue * f(g - e))), `${w}×${h} fixed-point accumulate (${x}, ${y})`);
          assert.equal(accFloat.data[i], f(fine.data[i]! + f(floatWeight.data[i]! * f(fine.data[i]! - e))), `${w}×${h} float accumulate (${x}, ${y})`);
        }
      }
    }
  });

  it('level 1 of the frames is exact, and of the exposure weights within a step of the definition', () => {
    for (const [w, h] of [[45, 21], [19, 3], [6, 2], [3, 1]] as const) {
      const frames = randomFrames(3, w, h, 3);
      const [dw, dh] = levelSizes(w, h)[1] ?? [Math.ceil(w / 2), Math.ceil(h / 2)];
      const firsts = frames.map(() => [0, 1, 2].map(() => sharedFixedPlane(dw, dh)));
      const weights = frames.map(() => sharedFixedPlane(dw, dh));
      // two row ranges, as two pool threads would run them
      levelOneRows(frames, w, h, 'exposure', firsts, weights, 0, dh >> 1);
      levelOneRows(frames, w, h, 'exposure', firsts, weights, dh >> 1, dh);
      const mertens = mertensReference(frames, w, h);
      for (const [k, frame] of frames.entries()) {
        for (let c = 0; c < 3; c++) {
          const want = reduceReference((x, y) => frame[(y * w + x) * 3 + c]!, w, h);
          assert.deepEqual(Array.from(firsts[k]![c]!.data), Array.from(want, (v) => v * LEVEL_ONE_STEPS), `${w}×${h} frame ${k} channel ${c}`);
        }
        const want = reduceReference((x, y) => mertens[k]![y * w + x]!, w, h);
        for (let i = 0; i < dw * dh; i++) {
          const got = weights[k]!.data[i]!;
          assert.ok(Math.abs(got - want[i]! * WEIGHT_ONE) <= 1.5, `${w}×${h} frame ${k} weight ${i}: ${got} ≠ ${want[i]! * WEIGHT_ONE}`);
        }
      }
    }
  });

  it('level 0 from level 1: the expands of the frames and of the blend, in the kernels\' 32-bit operations', () => {
    const next = random(6);
    for (const [w, h] of ODD_SIZES) {
      const frames = randomFrames(3, w, h, 7);
      const [cw, ch] = [Math.ceil(w / 2), Math.ceil(h / 2)];
      const firsts = frames.map(() => [0, 1, 2].map(() => sharedFixedPlane(cw, ch)));
      for (const plane of firsts.flat()) for (let i = 0; i < cw * ch; i++) plane.data[i] = Math.floor(65280 * next());
      const coarser = [0, 1, 2].map(() => sharedPlane(cw, ch));
      for (const plane of coarser) for (let i = 0; i < cw * ch; i++) plane.data[i] = 60 * next() - 20;
      // one-hot weights are exact, so every float of the result is known
      const choice = Uint8Array.from({ length: w * h }, () => Math.floor(3 * next()));
      const out = new Uint8Array(w * h * 3);
      for (const [y0, y1] of [[0, h >> 1], [h >> 1, h]] as const) collapseLevelZeroRows(frames, firsts, { choice }, coarser, out, w, h, y0, y1);
      const f = Math.fround;
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          for (let c = 0; c < 3; c++) {
            let sum = expandF32(coarser[c]!.data, cw, ch, x, y);
            for (const [k, frame] of frames.entries()) {
              const unit = Float32Array.from(firsts[k]![c]!.data, (v) => v / LEVEL_ONE_STEPS);
              const weight = choice[y * w + x] === k ? 1 : 0;
              sum = f(sum + f(weight * f(frame[(y * w + x) * 3 + c]! - expandF32(unit, cw, ch, x, y))));
            }
            const want = Math.min(255, Math.max(0, Math.trunc(f(sum + 0.5))));
            assert.equal(out[(y * w + x) * 3 + c], want, `${w}×${h} (${x}, ${y}) channel ${c}`);
          }
        }
      }
    }
  });

  it('rounds floats to RGB bytes as unsigned truncation and saturating narrowing do, for every float', () => {
    // unsigned truncation, then narrowing that reads its lanes as signed: what the blend's bytes were made with
    const byte = (v: number): number => {
      const x = Math.fround(v + 0.5);
      const u = Number.isNaN(x) || x < 0 ? 0 : x >= 2 ** 32 ? 2 ** 32 - 1 : Math.trunc(x);
      const short = Math.min(65535, Math.max(0, u | 0));
      return Math.min(255, Math.max(0, short >= 32768 ? short - 65536 : short));
    };
    const specials = [NaN, -Infinity, -1e10, -1, -0.5, -0.2, 0, 0.49, 127.5, 254.49, 254.5, 255, 300, 32767, 32767.5, 40000];
    const values = [...specials, 65535, 65536, 1e6, 2 ** 31 - 128, 2 ** 31, 3e9, 2 ** 32, 1e20, Infinity, 17.5, 18.5];
    const n = values.length;
    const mem = rowMemory();
    const planes = [0, 1, 2].map(() => mem.row(n, 4)), rgb = mem.row(3 * n, 1);
    mem.ready();
    // each channel gets the values rotated, so that every value meets every lane and channel
    planes.forEach((row, c) => mem.f32.set(values.map((_, i) => values[(i + 7 * c) % n]!), row.at >> 2));
    mem.run.floatsToRgb(planes[0]!.at, planes[1]!.at, planes[2]!.at, rgb.at, n);
    const want = Array.from({ length: 3 * n }, (_, q) => byte(values[(Math.floor(q / 3) + 7 * (q % 3)) % n]!));
    assert.deepEqual(Array.from(mem.u8.subarray(rgb.at, rgb.at + 3 * n)), want);
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

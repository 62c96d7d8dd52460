import { type Code, fn, I32, instantiate, type ModuleSource, PAGE, V128 } from '../wasm/assembler.js';

/**
 * The point-wise statistics of point/stack.ts as WebAssembly SIMD kernels, 16 bytes an instruction,
 * generated per frame count n (a median is a sorting network over n registers) and compiled once
 * per thread. Scalar JavaScript spends ~8 ns a byte on a 5-frame median; this, copies included, ~0.9 ns.
 * Each call copies one chunk of every frame into the kernel's memory, runs, copies the result out.
 */

export type StackStatistic = 'median' | 'mean' | 'lighten' | 'darken';

/** Frame counts the kernels are generated for; above it point/stack.ts loops in JavaScript. */
export const SIMD_MAX_FRAMES = 32;

/**
 * The median's own bound: a long median stack (by bands, pipeline/stream.ts) is worth a larger
 * network. Measured here: ~60 ns a byte for 50 frames and ~190 for 100, where the JavaScript
 * insertion sort of medianSorted takes over ten times as long.
 */
export const MEDIAN_SIMD_MAX_FRAMES = 128;

// Bytes of each frame per call: all n chunks and the result stay in the L2 cache.
const CHUNK = 16384;

interface Kernel {
  run(length: number): void;
  memory: Uint8Array;
}

const kernels = new Map<string, Kernel>();

/**
 * Batcher's odd–even merge sort for n wires (the network for the next power of two, without its
 * comparators that touch the missing wires, which would hold +∞), then only the comparators that
 * the wires in `wanted` depend on.
 */
export function sortingNetwork(n: number, wanted: number[]): Array<[number, number]> {
  const pairs: Array<[number, number]> = [];
  for (let p = 1; p < n; p <<= 1) {
    for (let k = p; k >= 1; k >>= 1) {
      for (let j = k % p; j + k < n; j += 2 * k) {
        for (let i = 0; i < Math.min(k, n - j - k); i++) {
          if (Math.floor((i + j) / (2 * p)) === Math.floor((i + j + k) / (2 * p))) pairs.push([i + j, i + j + k]);
        }
      }
    }
  }
  const needed = new Set(wanted);
  const kept: Array<[number, number]> = [];
  for (const [a, b] of pairs.reverse()) {
    if (!needed.has(a) && !needed.has(b)) continue;
    needed.add(a).add(b);
    kept.push([a, b]);
  }
  return kept.reverse();
}

/** The body of `run(length)`: bytes [0, length) of every frame's slot → the result slot (after the n frame slots). */
function generate(statistic: StackStatistic, n: number): Code {
  return fn({ params: { length: I32 }, locals: { i: I32 } }, (code, { length, i }) => {
    const v = Array.from({ length: n }, () => code.local(V128));
    const loadFrames = () => {
      for (let k = 0; k < n; k++) code.get(i).load(k * CHUNK).set(v[k]!);
    };
    const result = n * CHUNK;
    if (statistic === 'median') {
      const lower = (n - 1) >> 1;
      const upper = n >> 1;
      const t = code.local(V128);
      code.forStep(i, length, 16, () => {
        loadFrames();
        for (const [a, b] of sortingNetwork(n, [lower, upper])) {
          code.get(v[a]!).get(v[b]!).op('i8x16.min_u').set(t);
          code.get(v[a]!).get(v[b]!).op('i8x16.max_u').set(v[b]!);
          code.get(t).set(v[a]!);
        }
        code.get(i).get(v[lower]!);
        // for even n the mean of the two middle values, halves up: exactly avgr_u
        if (upper !== lower) code.get(v[upper]!).op('i8x16.avgr_u');
        code.store(result);
      });
    } else if (statistic === 'mean') {
      // Sums in 16-bit lanes (n ≤ 257), then round((s) / n) halves up as ⌊(s + n/2) / n⌋ in f32:
      // numerator and divisor are exact, so the quotient is within half an ulp and never crosses
      // an integer it should not (the distance to the next one is ≥ 1/2n ≫ an ulp below 256).
      const { lo, hi, x, half, count } = code.declare({ lo: V128, hi: V128, x: V128, half: V128, count: V128 });
      code.f32(n / 2).op('f32x4.splat').set(half);
      code.f32(n).op('f32x4.splat').set(count);
      code.forStep(i, length, 16, () => {
        code.get(i).load(0).set(x);
        code.get(x).op('i16x8.extend_low_i8x16_u').set(lo);
        code.get(x).op('i16x8.extend_high_i8x16_u').set(hi);
        for (let k = 1; k < n; k++) {
          code.get(i).load(k * CHUNK).set(x);
          code.get(lo).get(x).op('i16x8.extend_low_i8x16_u', 'i16x8.add').set(lo);
          code.get(hi).get(x).op('i16x8.extend_high_i8x16_u', 'i16x8.add').set(hi);
        }
        const quarter = (sums: number, part: 'i32x4.extend_low_i16x8_u' | 'i32x4.extend_high_i16x8_u') =>
          code.get(sums).op(part, 'f32x4.convert_i32x4_u').get(half).op('f32x4.add').get(count).op('f32x4.div', 'i32x4.trunc_sat_f32x4_u');
        code.get(i);
        quarter(lo, 'i32x4.extend_low_i16x8_u');
        quarter(lo, 'i32x4.extend_high_i16x8_u');
        code.op('i16x8.narrow_i32x4_u');
        quarter(hi, 'i32x4.extend_low_i16x8_u');
        quarter(hi, 'i32x4.extend_high_i16x8_u');
        code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(result);
      });
    } else {
      const fold = statistic === 'lighten' ? 'i8x16.max_u' : 'i8x16.min_u';
      code.forStep(i, length, 16, () => {
        code.get(i).get(i).load(0);
        for (let k = 1; k < n; k++) code.get(i).load(k * CHUNK).op(fold);
        code.store(result);
      });
    }
  });
}

/** The module of `statistic` over n frames: `run` and memory for the n frame chunks and the result. */
export function stackModule(statistic: StackStatistic, n: number): ModuleSource {
  return { functions: { run: generate(statistic, n) }, pages: Math.ceil(((n + 1) * CHUNK) / PAGE) };
}

function kernelFor(statistic: StackStatistic, n: number): Kernel {
  const key = `${statistic}/${n}`;
  let kernel = kernels.get(key);
  if (!kernel) {
    const { exports, memory } = instantiate(stackModule(statistic, n));
    kernel = { run: exports.run as (length: number) => void, memory: new Uint8Array(memory.buffer) };
    kernels.set(key, kernel);
  }
  return kernel;
}

/** Writes bytes [from, to) of `out` as `statistic` of the same bytes of every frame (1 ≤ n ≤ SIMD_MAX_FRAMES). */
export function stackBytes(statistic: StackStatistic, frames: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const n = frames.length;
  const { run, memory } = kernelFor(statistic, n);
  const result = n * CHUNK;
  inChunks(from, to, CHUNK, (c0, length) => {
    for (let k = 0; k < n; k++) memory.set(frames[k]!.subarray(c0, c0 + length), k * CHUNK);
    // the tail of a short chunk is computed from stale bytes and not copied out
    run(length);
    out.set(memory.subarray(result, result + length), c0);
  });
}

/** `body(start, length)` for each piece of [from, to) cut into `size` (the last may be shorter): the loop of the kernels that copy their input into their memory a piece at a time. */
export function inChunks(from: number, to: number, size: number, body: (start: number, length: number) => void): void {
  for (let start = from; start < to; start += size) body(start, Math.min(size, to - start));
}

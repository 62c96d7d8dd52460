import { fn, I32, instantiate, type ModuleSource, PAGE, V128 } from '../wasm/assembler.js';
import { inChunks } from './stack-simd.js';

/**
 * The weighted mean of point/stack-weighted.ts as a WebAssembly SIMD kernel, generated per frame
 * count n (n ≤ SIMD_MAX_FRAMES of point/stack-simd.ts) and compiled once per thread: per channel
 * byte, ⌊(2·Σ m_k·v_k + Σ m_k) / (2·Σ m_k)⌋, m_k frame k's mask at the byte's pixel. 16 pixels a
 * step: the 48 bytes of their RGB in three vectors, each with its pixels' mask bytes spread to
 * their three channels by a shuffle; products m·v ≤ 65025 in 16-bit lanes, sums in 32-bit lanes,
 * and the quotient in f32. Numerator and divisor are whole and below 2^24 (n ≤ 32), so the
 * quotient is within half an ulp of the true one, which lies at least 1 / divisor from any whole
 * number it is not: its floor is exact, as the JavaScript's. Each call copies a chunk of every
 * frame and mask into the kernel's memory, runs, copies the result out.
 */

/** Pixels of every frame per call (a 4000 px row is one call). */
export const WEIGHTED_CHUNK = 4096;

/** Bytes from the start of the kernel's memory: frame k's RGB at 3k·CHUNK, mask k's at 3n·CHUNK + k·CHUNK, the result after. */
const frameAt = (k: number) => 3 * k * WEIGHTED_CHUNK;
const maskAt = (n: number, k: number) => 3 * n * WEIGHTED_CHUNK + k * WEIGHTED_CHUNK;
const resultAt = (n: number) => 4 * n * WEIGHTED_CHUNK;

/** The module of the weighted mean over n frames: `run(pixels)` and memory for the n frame and mask chunks and the result. */
export function weightedMeanModule(n: number): ModuleSource {
  const run = fn({ params: { pixels: I32 }, locals: { i: I32, q: I32 } }, (code, { pixels, i, q }) => {
    const { v, m, mLow, mHigh, product } = code.declare({ v: V128, m: V128, mLow: V128, mHigh: V128, product: V128 });
    // Σ m·v of the vector's four quarters (32-bit lanes)
    const { s0, s1, s2, s3 } = code.declare({ s0: V128, s1: V128, s2: V128, s3: V128 });
    const sums = [s0, s1, s2, s3];
    // Σ m ≤ 32 · 255 fits 16-bit lanes: the weights are summed there, widened once
    const { wLow, wHigh } = code.declare({ wLow: V128, wHigh: V128 });
    const zero = () => code.i32(0).op('i32x4.splat');
    code.forStep(i, pixels, 16, () => {
      code.get(i).i32(3).op('i32.mul').set(q);
      for (let part = 0; part < 3; part++) {
        // byte b of this vector is channel b mod 3 of pixel ⌊(16·part + b) / 3⌋ of the 16
        const lanes = Array.from({ length: 16 }, (_, b) => Math.floor((16 * part + b) / 3));
        for (let a = 0; a < 4; a++) zero().set(sums[a]!);
        zero().set(wLow);
        zero().set(wHigh);
        for (let k = 0; k < n; k++) {
          code.get(i).load(maskAt(n, k)).set(m);
          code.get(m).get(m).shuffle(lanes).set(m);
          code.get(m).op('i16x8.extend_low_i8x16_u').set(mLow);
          code.get(m).op('i16x8.extend_high_i8x16_u').set(mHigh);
          code.get(q).load(frameAt(k) + 16 * part).set(v);
          code.get(wLow).get(mLow).op('i16x8.add').set(wLow);
          code.get(wHigh).get(mHigh).op('i16x8.add').set(wHigh);
          for (const [half, mask, extend] of [
            [0, mLow, 'i16x8.extend_low_i8x16_u'],
            [1, mHigh, 'i16x8.extend_high_i8x16_u'],
          ] as const) {
            code.get(v).op(extend).get(mask).op('i16x8.mul').set(product);
            code.get(sums[2 * half]!).get(product).op('i32x4.extend_low_i16x8_u', 'i32x4.add').set(sums[2 * half]!);
            code.get(sums[2 * half + 1]!).get(product).op('i32x4.extend_high_i16x8_u', 'i32x4.add').set(sums[2 * half + 1]!);
          }
        }
        const weights = [wLow, wLow, wHigh, wHigh];
        const widen = ['i32x4.extend_low_i16x8_u', 'i32x4.extend_high_i16x8_u', 'i32x4.extend_low_i16x8_u', 'i32x4.extend_high_i16x8_u'] as const;
        // ⌊(2s + w) / 2w⌋ per quarter, narrowed back to bytes
        const quotient = (a: number) =>
          code
            .get(sums[a]!)
            .i32(1)
            .op('i32x4.shl')
            .get(weights[a]!)
            .op(widen[a]!, 'i32x4.add', 'f32x4.convert_i32x4_u')
            .get(weights[a]!)
            .op(widen[a]!)
            .i32(1)
            .op('i32x4.shl', 'f32x4.convert_i32x4_u', 'f32x4.div', 'i32x4.trunc_sat_f32x4_u');
        code.get(q);
        quotient(0);
        quotient(1);
        code.op('i16x8.narrow_i32x4_u');
        quotient(2);
        quotient(3);
        code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(resultAt(n) + 16 * part);
      }
    });
  });
  return { functions: { run }, pages: Math.ceil((resultAt(n) + 3 * WEIGHTED_CHUNK) / PAGE) };
}

interface Kernel {
  run(pixels: number): void;
  memory: Uint8Array;
}

const kernels = new Map<number, Kernel>();

function kernelFor(n: number): Kernel {
  let kernel = kernels.get(n);
  if (!kernel) {
    const { exports, memory } = instantiate(weightedMeanModule(n));
    kernel = { run: exports.run as (pixels: number) => void, memory: new Uint8Array(memory.buffer) };
    kernels.set(n, kernel);
  }
  return kernel;
}

/**
 * Pixels [from, to) of `out` as the weighted mean of the frames (RGB bytes) with `masks` (a byte a
 * pixel, pixel p's at p − maskBase; null counts 255 everywhere), for 1 ≤ n ≤ SIMD_MAX_FRAMES frames.
 */
export function weightedMeanPixels(frames: Uint8Array[], masks: Array<Uint8Array | null>, out: Uint8Array, from: number, to: number, maskBase = 0): void {
  const n = frames.length;
  const { run, memory } = kernelFor(n);
  inChunks(from, to, WEIGHTED_CHUNK, (p0, pixels) => {
    for (let k = 0; k < n; k++) {
      memory.set(frames[k]!.subarray(3 * p0, 3 * (p0 + pixels)), frameAt(k));
      const mask = masks[k];
      if (mask) memory.set(mask.subarray(p0 - maskBase, p0 - maskBase + pixels), maskAt(n, k));
      else memory.fill(255, maskAt(n, k), maskAt(n, k) + pixels);
    }
    // the tail of a short chunk is computed from stale bytes and not copied out
    run(pixels);
    out.set(memory.subarray(resultAt(n), resultAt(n) + 3 * pixels), 3 * p0);
  });
}

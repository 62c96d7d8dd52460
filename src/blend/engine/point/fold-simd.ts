import { floatLanes, fn, I32, instantiate, type ModuleSource, PAGE, V128 } from '../wasm/assembler.js';
import { inChunks } from './stack-simd.js';

/**
 * The streamed mean's fold (point/fold.ts) as WebAssembly SIMD kernels, compiled once per thread:
 * `fold` adds a frame's m·v to the sums Σ m·v of each channel byte and m to the weights Σ m of
 * each pixel, 16 pixels a step (their 48 RGB bytes in three vectors, each with its pixels' mask
 * bytes spread to their three channels by a shuffle; products m·v ≤ 65025 in 16-bit lanes, added
 * in 32-bit lanes, as whole numbers: the same sums as the JavaScript); `finish` writes each byte
 * as ⌊(2·Σ m·v + Σ m) / (2·Σ m)⌋ in f64, two lanes at a time: numerator and divisor are whole
 * numbers below 2^32 (Σ m·v ≤ 255² a frame, under 5000 frames), converted exactly, and divided
 * with the one rounding the JavaScript's division makes, so the floor is the JavaScript's. A frame
 * that counts everywhere is folded with a mask of 255. Each call copies a chunk of the frame, mask,
 * sums and weights into the kernel's memory, runs, and copies the sums and weights (or the
 * result) out.
 */

/** Pixels per call. */
export const FOLD_CHUNK = 4096;

/** Bytes from the start of the kernel's memory: the chunk's RGB, mask, sums (Uint32, 3 a pixel), weights (Uint32), result (RGB). */
const FRAME = 0;
const MASK = 3 * FOLD_CHUNK;
const SUMS = 4 * FOLD_CHUNK;
const WEIGHTS = 16 * FOLD_CHUNK;
const RESULT = 20 * FOLD_CHUNK;

/** The module: `fold(pixels)` and `finish(pixels)` over the chunk in its memory. */
export function foldMeanModule(): ModuleSource {
  const fold = fn({ params: { pixels: I32 }, locals: { i: I32, q: I32, s: I32 } }, (code, { pixels, i, q, s }) => {
    const { v, m, mp, mLow, product } = code.declare({ v: V128, m: V128, mp: V128, mLow: V128, product: V128 });
    code.forStep(i, pixels, 16, () => {
      // pixel i's RGB at 3i, its three sums at 12i, its weight at 4i
      code.get(i).i32(3).op('i32.mul').set(q);
      code.get(i).i32(12).op('i32.mul').set(s);
      code.get(i).load(MASK).set(m);
      // the weights of the 16 pixels: four vectors of 32-bit lanes
      code.get(m).op('i16x8.extend_low_i8x16_u').set(mLow);
      code.get(m).op('i16x8.extend_high_i8x16_u').set(product);
      for (const [a, half, widen] of [
        [0, mLow, 'i32x4.extend_low_i16x8_u'],
        [1, mLow, 'i32x4.extend_high_i16x8_u'],
        [2, product, 'i32x4.extend_low_i16x8_u'],
        [3, product, 'i32x4.extend_high_i16x8_u'],
      ] as const) {
        const at = WEIGHTS + 16 * a;
        code.get(i).i32(2).op('i32.shl').get(i).i32(2).op('i32.shl').load(at).get(half).op(widen, 'i32x4.add').store(at);
      }
      for (let part = 0; part < 3; part++) {
        // byte b of this vector is channel b mod 3 of pixel ⌊(16·part + b) / 3⌋ of the 16
        const lanes = Array.from({ length: 16 }, (_, b) => Math.floor((16 * part + b) / 3));
        code.get(m).get(m).shuffle(lanes).set(mp);
        code.get(q).load(FRAME + 16 * part).set(v);
        for (const [half, extend] of [
          [0, 'i16x8.extend_low_i8x16_u'],
          [1, 'i16x8.extend_high_i8x16_u'],
        ] as const) {
          code.get(v).op(extend).get(mp).op(extend, 'i16x8.mul').set(product);
          const at = SUMS + 64 * part + 32 * half;
          code.get(s).get(s).load(at).get(product).op('i32x4.extend_low_i16x8_u', 'i32x4.add').store(at);
          code.get(s).get(s).load(at + 16).get(product).op('i32x4.extend_high_i16x8_u', 'i32x4.add').store(at + 16);
        }
      }
    });
  });
  const finish = fn({ params: { pixels: I32 }, locals: { i: I32, q: I32, s: I32, w: I32 } }, (code, { pixels, i, q, s, w }) => {
    const { num, den, low } = code.declare({ num: V128, den: V128, low: V128 });
    // sums vector j (values 4j..4j+3 of the 16 pixels' 48) over the weights of its pixels: 4 quotients in 32-bit lanes
    const quotient = (j: number) => {
      const group = Math.floor(j / 3), t = j % 3;
      // value 12·group + 4t + l belongs to pixel 4·group + ⌊(4t + l) / 3⌋
      const spread = floatLanes(Array.from({ length: 4 }, (_, l) => Math.floor((4 * t + l) / 3)));
      code.get(w).load(WEIGHTS + 16 * group).get(w).load(WEIGHTS + 16 * group).shuffle(spread).set(den);
      code.get(s).load(SUMS + 16 * j).i32(1).op('i32x4.shl').get(den).op('i32x4.add').set(num);
      code.get(den).i32(1).op('i32x4.shl').set(den);
      code.get(num).op('f64x2.convert_low_i32x4_u').get(den).op('f64x2.convert_low_i32x4_u', 'f64x2.div', 'i32x4.trunc_sat_f64x2_u_zero').set(low);
      const upper = floatLanes([2, 3, 2, 3]);
      code.get(low);
      code.get(num).get(num).shuffle(upper).op('f64x2.convert_low_i32x4_u');
      code.get(den).get(den).shuffle(upper).op('f64x2.convert_low_i32x4_u', 'f64x2.div', 'i32x4.trunc_sat_f64x2_u_zero');
      code.shuffle(floatLanes([0, 1, 4, 5]));
    };
    code.forStep(i, pixels, 16, () => {
      code.get(i).i32(3).op('i32.mul').set(q);
      code.get(i).i32(12).op('i32.mul').set(s);
      code.get(i).i32(2).op('i32.shl').set(w);
      for (let part = 0; part < 3; part++) {
        code.get(q);
        quotient(4 * part);
        quotient(4 * part + 1);
        code.op('i16x8.narrow_i32x4_u');
        quotient(4 * part + 2);
        quotient(4 * part + 3);
        code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(RESULT + 16 * part);
      }
    });
  });
  return { functions: { fold, finish }, pages: Math.ceil((RESULT + 3 * FOLD_CHUNK) / PAGE) };
}

interface Kernel {
  fold(pixels: number): void;
  finish(pixels: number): void;
  bytes: Uint8Array;
  words: Uint32Array;
}

let kernel: Kernel | null = null;

function kernelOf(): Kernel {
  if (!kernel) {
    const { exports, memory } = instantiate(foldMeanModule());
    kernel = {
      fold: exports.fold as (pixels: number) => void,
      finish: exports.finish as (pixels: number) => void,
      bytes: new Uint8Array(memory.buffer),
      words: new Uint32Array(memory.buffer),
    };
  }
  return kernel;
}

/**
 * Folds pixels [p0, p1) of `frame` (RGB) into `sums` (Σ m·v, 3 a pixel) and `weights` (Σ m, null
 * while no frame had a mask: then they are not kept) with mask m: `mask`'s byte at p − maskBase,
 * 255 everywhere when null. `first`: the sums start at 0 (frame 0) instead of their values.
 */
export function foldMeanPixels(sums: Uint32Array, weights: Uint32Array | null, frame: Uint8Array, mask: Uint8Array | null, maskBase: number, p0: number, p1: number, first = false): void {
  const { fold, bytes, words } = kernelOf();
  inChunks(p0, p1, FOLD_CHUNK, (c0, pixels) => {
    bytes.set(frame.subarray(3 * c0, 3 * (c0 + pixels)), FRAME);
    if (mask) bytes.set(mask.subarray(c0 - maskBase, c0 - maskBase + pixels), MASK);
    else bytes.fill(255, MASK, MASK + pixels);
    if (first) words.fill(0, SUMS / 4, SUMS / 4 + 3 * pixels);
    else words.set(sums.subarray(3 * c0, 3 * (c0 + pixels)), SUMS / 4);
    if (weights) words.set(weights.subarray(c0, c0 + pixels), WEIGHTS / 4);
    // the tail of a short chunk is computed from stale values and not copied out
    fold(pixels);
    sums.set(words.subarray(SUMS / 4, SUMS / 4 + 3 * pixels), 3 * c0);
    if (weights) weights.set(words.subarray(WEIGHTS / 4, WEIGHTS / 4 + pixels), c0);
  });
}

/** Pixels [p0, p1) of `out` (RGB) from the sums and weights (null: `every` at each pixel). */
export function finishMeanPixels(sums: Uint32Array, weights: Uint32Array | null, every: number, out: Uint8Array, p0: number, p1: number): void {
  const { finish, bytes, words } = kernelOf();
  inChunks(p0, p1, FOLD_CHUNK, (c0, pixels) => {
    words.set(sums.subarray(3 * c0, 3 * (c0 + pixels)), SUMS / 4);
    if (weights) words.set(weights.subarray(c0, c0 + pixels), WEIGHTS / 4);
    else words.fill(every, WEIGHTS / 4, WEIGHTS / 4 + pixels);
    finish(pixels);
    out.set(bytes.subarray(RESULT, RESULT + 3 * pixels), 3 * c0);
  });
}

import { exposureWeightCode } from './exposure.js';
import { accumulate, addScaled, fill, normalise, oneHot } from './simd-arithmetic.js';
import { bytesToFloats, floatsToRgb, floatsToShorts, shortsToFloats, split } from './simd-convert.js';
import { decimate, expand, sumBytes5, sumFloats5 } from './simd-reduce-expand.js';
import { type Code, instantiate, KernelArena, type ModuleSource, type WasmMemory } from '../wasm/assembler.js';

/**
 * The row loops of the pyramid blend (pyramid/pyramid.ts) as WebAssembly SIMD kernels, assembled once
 * per thread into one module: 4 floats, 8 shorts or 16 bytes an instruction. The kernels are
 * written in pyramid/simd-convert.ts, pyramid/simd-reduce-expand.ts, pyramid/simd-arithmetic.ts
 * and pyramid/exposure.ts; this file holds their signatures, the module and its row memory. A kernel
 * works on rows copied into its memory (`RowMemory`); JavaScript only picks the rows, copies them
 * in and out, and replicates the edges. Every kernel runs whole vectors, so it may read and write
 * up to 64 bytes past a row (and the expands read a vector before it): `RowMemory` rows are
 * padded for that.
 */

/** The kernels' signatures: addresses are byte offsets into the memory, `n` counts elements. */
export interface RowKernels {
  /** Interleaved RGB bytes at `src` → planar R, G, B bytes. */
  split(src: number, r: number, g: number, b: number, n: number): void;
  /** Bytes → floats. */
  bytesToFloats(src: number, dst: number, n: number): void;
  /** Float rows of R, G and B → interleaved RGB bytes (the inverse of split), rounded half up and clipped to 0..255. */
  floatsToRgb(r: number, g: number, b: number, dst: number, n: number): void;
  /** Unsigned shorts × `scale` → floats. */
  shortsToFloats(src: number, dst: number, n: number, scale: number): void;
  /** Floats × `scale` → unsigned shorts, rounded half up and clipped to 0..65535. */
  floatsToShorts(src: number, dst: number, n: number, scale: number): void;
  /** Bytes of five rows → r0 + r4 + 4·(r1 + r3) + 6·r2 as shorts (≤ 4080, exact). */
  sumBytes5(r0: number, r1: number, r2: number, r3: number, r4: number, dst: number, n: number): void;
  /** The same on floats. */
  sumFloats5(r0: number, r1: number, r2: number, r3: number, r4: number, dst: number, n: number): void;
  /**
   * out[x] = t[2x − 2] + t[2x + 2] + 4·(t[2x − 1] + t[2x + 1]) + 6·t[2x] of shorts (wrapping; the
   * rows here stay ≤ 65 280), t starting 2 elements after `t` (edges replicated into them);
   * `even` and `odd` are scratch of n + 16 shorts.
   */
  decimateShorts(t: number, n: number, even: number, odd: number, dst: number): void;
  /** The same on floats, times `scale`. */
  decimateFloats(t: number, n: number, even: number, odd: number, dst: number, scale: number): void;
  /**
   * A row of an expand from the n-element coarse rows a, b, c around it (edges replicated at
   * [−1] and [n]): t = (a + c)·p + b·q down, then dst[2x] = (t[x − 1] + 6·t[x] + t[x + 1]) / 8,
   * dst[2x + 1] = (t[x] + t[x + 1]) / 2 across; 2n elements.
   */
  expandRow(a: number, b: number, c: number, n: number, p: number, q: number, dst: number): void;
  /** acc += w · (g − e) with e that row of the expand (`accumulate` fused with `expandRow`), g floats. */
  expandAccumulate(a: number, b: number, c: number, n: number, p: number, q: number, acc: number, w: number, g: number): void;
  /** The same with g bytes. */
  expandAccumulateBytes(a: number, b: number, c: number, n: number, p: number, q: number, acc: number, w: number, g: number): void;
  /** a += w · (g − e). */
  accumulate(a: number, w: number, g: number, e: number, n: number): void;
  /** a += s · b. */
  addScaled(a: number, b: number, n: number, s: number): void;
  /** dst = value. */
  fill(dst: number, n: number, value: number): void;
  /** w = (w + epsilon) / sum. */
  normalise(w: number, sum: number, n: number, epsilon: number): void;
  /** dst = 1 where choice = k, else 0 (floats). */
  oneHot(choice: number, k: number, dst: number, n: number): void;
  /** A row's planar R, G, B bytes → its BT.601 grey (0..1), saturation and well-exposedness (pyramid/exposure.ts). */
  exposurePixels(r: number, g: number, b: number, grey: number, saturation: number, exposedness: number, n: number): void;
  /**
   * Mertens' weight before normalisation, |Laplacian| of grey (`mid` with edges at mid[−1],
   * mid[n]) · saturation · well-exposedness, into `dst` and added to `sum`.
   */
  exposureWeight(up: number, mid: number, down: number, saturation: number, exposedness: number, dst: number, sum: number, n: number): void;
}

let kernels: { run: RowKernels; memory: WasmMemory } | null = null;

/** The module of every row kernel. */
export function rowModule(): ModuleSource {
  const { exposurePixels, exposureWeight } = exposureWeightCode();
  const functions: Record<keyof RowKernels, Code> = {
    split: split(),
    bytesToFloats: bytesToFloats(),
    floatsToRgb: floatsToRgb(),
    shortsToFloats: shortsToFloats(),
    floatsToShorts: floatsToShorts(),
    sumBytes5: sumBytes5(),
    sumFloats5: sumFloats5(),
    decimateShorts: decimate(2),
    decimateFloats: decimate(4),
    expandRow: expand('store'),
    expandAccumulate: expand('floats'),
    expandAccumulateBytes: expand('bytes'),
    accumulate: accumulate(),
    addScaled: addScaled(),
    fill: fill(),
    normalise: normalise(),
    oneHot: oneHot(),
    exposurePixels,
    exposureWeight,
  };
  return { functions, pages: 1 };
}

function compiled(): { run: RowKernels; memory: WasmMemory } {
  if (!kernels) {
    const { exports, memory } = instantiate(rowModule());
    kernels = { run: exports as unknown as RowKernels, memory };
  }
  return kernels;
}

/** A row buffer in the kernels' memory: `at` is its byte address, `length` its elements. */
export interface Row {
  at: number;
  length: number;
}

/**
 * The kernels of this thread with row buffers laid out in their memory. Rows are allocated for
 * one task (`rows`), then views are taken: the memory may grow only before that.
 */
export class RowMemory extends KernelArena {
  readonly run: RowKernels;

  constructor() {
    const { run, memory } = compiled();
    super(memory);
    this.run = run;
  }

  /** A row of `length` elements of `bytes` bytes each. */
  row(length: number, bytes: 1 | 2 | 4): Row {
    return { at: this.alloc(length * bytes), length };
  }

  /** Copies `length` elements of `data` from `from` into `row`. */
  put(row: Row, data: Float32Array | Uint16Array | Uint8Array, from: number, length: number): void {
    const source = data.subarray(from, from + length);
    if (source instanceof Float32Array) this.f32.set(source, row.at >> 2);
    else if (source instanceof Uint16Array) this.u16.set(source, row.at >> 1);
    else this.u8.set(source, row.at);
  }

  /** Copies the first `length` elements of `row` into `data` at `from`. */
  take(row: Row, data: Float32Array | Uint16Array | Uint8Array, from: number, length: number): void {
    if (data instanceof Float32Array) data.set(this.f32.subarray(row.at >> 2, (row.at >> 2) + length), from);
    else if (data instanceof Uint16Array) data.set(this.u16.subarray(row.at >> 1, (row.at >> 1) + length), from);
    else data.set(this.u8.subarray(row.at, row.at + length), from);
  }

  /** Replicates a float row's edges: `before` elements before element 0, `after` after element n − 1. */
  replicateFloats(at: number, n: number, before: number, after: number): void {
    const f = this.f32, e = at >> 2;
    for (let k = 1; k <= before; k++) f[e - k] = f[e]!;
    for (let k = 0; k < after; k++) f[e + n + k] = f[e + n - 1]!;
  }

  replicateShorts(at: number, n: number, before: number, after: number): void {
    const u = this.u16, e = at >> 1;
    for (let k = 1; k <= before; k++) u[e - k] = u[e]!;
    for (let k = 0; k < after; k++) u[e + n + k] = u[e + n - 1]!;
  }
}

/** The one RowMemory of this thread, its rows laid out afresh by each task. */
let shared: RowMemory | null = null;

export function rowMemory(): RowMemory {
  shared ??= new RowMemory();
  return shared.reset();
}

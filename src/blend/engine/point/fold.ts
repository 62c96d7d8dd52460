import type { GridMask } from '../deghost/masks.js';
import { maskRows } from '../deghost/upsample.js';
import { stackBytes } from './stack-simd.js';
import { FOLD_STEPS, type LayerMode } from './layers.js';

/**
 * The point-wise types that fold frames one at a time into an accumulator, so a stack of any
 * length is blended holding one frame (pipeline/stream.ts), with the same bytes as the kernels
 * that see every frame at once (point/stack.ts, point/stack-weighted.ts, point/layers.ts):
 * - lighten, darken: the running maximum / minimum, in 8 bits (exact whatever the order);
 * - mean: Σ m_k·v_k per channel and, once some frame has a deghosting mask, Σ m_k per pixel
 *   (m_k = 255 for a frame counted everywhere), finished as ⌊(2·Σ m·v + Σ m) / (2·Σ m)⌋: the
 *   weighted mean of point/stack-weighted.ts, which is the plain mean to the byte where every m_k is 255;
 * - the layer modes: the running result in doubles, each frame folded in order and rounded once at the end.
 * Each function works on rows [y0, y1) so the caller splits rows across the pool's threads.
 * A mean's masks come on the agreement test's grid (deghost/deghost.ts `frameMask`) and are brought
 * to full size a row at a time as they are folded (deghost/upsample.ts `maskRows`, the values
 * upsampleMaskRows writes), as the held weighted mean does (point/stack-weighted.ts): a full-size
 * mask would be written once and read once, a byte a pixel of fresh memory for each frame.
 */

export type FoldType = 'mean' | 'lighten' | 'darken' | LayerMode;

/** What a fold holds between frames; its arrays live in shared memory. */
export interface FoldAccumulator {
  type: FoldType;
  width: number;
  /** lighten, darken: the running result; mean: Σ m·v (Uint32); layer modes: the running result in 0..1 (Float64). */
  values: Uint8Array | Uint32Array | Float64Array;
  /** mean only: Σ m per pixel, made when the first frame with a mask arrives (null: every frame so far counted everywhere). */
  weights: Uint32Array | null;
}

const UNIT = 1 / 255;

/** Starts the fold with frame 0's rows [y0, y1). */
export function foldFirstRows(acc: FoldAccumulator, frame: Uint8Array, y0: number, y1: number): void {
  const [from, to] = [3 * y0 * acc.width, 3 * y1 * acc.width];
  const { values } = acc;
  if (acc.type === 'lighten' || acc.type === 'darken') (values as Uint8Array).set(frame.subarray(from, to), from);
  else if (acc.type === 'mean') for (let p = from; p < to; p++) values[p] = 255 * frame[p]!;
  else for (let p = from; p < to; p++) values[p] = frame[p]! * UNIT;
}

/**
 * Folds the next frame's rows [y0, y1) into the accumulator; `mask` is its deghosting mask (mean
 * only: 0..255 per pixel, on the agreement test's grid; null where it counts everywhere), which
 * needs `acc.weights`.
 */
export function foldFrameRows(acc: FoldAccumulator, frame: Uint8Array, mask: GridMask | null, y0: number, y1: number): void {
  const { width, values, type } = acc;
  const [from, to] = [3 * y0 * width, 3 * y1 * width];
  if (type === 'lighten' || type === 'darken') {
    // in place: the kernel copies a chunk of both in before it writes the chunk out
    stackBytes(type, [values as Uint8Array, frame], values as Uint8Array, from, to);
  } else if (type === 'mean') {
    foldMean(values as Uint32Array, acc.weights, frame, mask, width, y0, y1);
  } else {
    FOLD_STEPS[type](values as Float64Array, frame, from, to - from, from);
  }
}

/**
 * Σ m·v and Σ m over rows [y0, y1): a row's mask is 255 outside its span (`maskRows`), so the rows
 * without one, and each masked row beside its span, fold as a frame that counts everywhere.
 */
function foldMean(sums: Uint32Array, weights: Uint32Array | null, frame: Uint8Array, mask: GridMask | null, width: number, y0: number, y1: number): void {
  if (!mask) {
    foldEverywhere(sums, weights, frame, y0 * width, y1 * width);
    return;
  }
  const rows = maskRows(mask.data, mask.width, mask.height, mask.factor, width);
  const row = new Uint8Array(width);
  for (let y = y0; y < y1; ) {
    // the rows the mask is 255 all across, folded at once
    let end = y;
    for (; end < y1; end++) {
      const [x0, x1] = rows.span(end);
      if (x0 < x1) break;
    }
    if (end > y) {
      foldEverywhere(sums, weights, frame, y * width, end * width);
      y = end;
      continue;
    }
    const [x0, x1] = rows.span(y);
    const p = y * width;
    rows.row(y, row, 0);
    foldEverywhere(sums, weights, frame, p, p + x0);
    foldMasked(sums, weights!, frame, row, p + x0, p + x1, p);
    foldEverywhere(sums, weights, frame, p + x1, p + width);
    y++;
  }
}

/** Pixels [p0, p1) of a frame that counts there (m = 255); `weights` null while every frame so far counted everywhere. */
function foldEverywhere(sums: Uint32Array, weights: Uint32Array | null, frame: Uint8Array, p0: number, p1: number): void {
  for (let q = 3 * p0; q < 3 * p1; q++) sums[q]! += 255 * frame[q]!;
  if (weights) for (let p = p0; p < p1; p++) weights[p]! += 255;
}

/** Pixels [p0, p1) weighted by the mask's values, pixel p's at mask[p − maskBase]. */
function foldMasked(sums: Uint32Array, weights: Uint32Array, frame: Uint8Array, mask: Uint8Array, p0: number, p1: number, maskBase: number): void {
  for (let p = p0, q = 3 * p0; p < p1; p++, q += 3) {
    const m = mask[p - maskBase]!;
    weights[p]! += m;
    sums[q]! += m * frame[q]!;
    sums[q + 1]! += m * frame[q + 1]!;
    sums[q + 2]! += m * frame[q + 2]!;
  }
}

/** Writes rows [y0, y1) of the result into `out`, after `frames` frames were folded in. */
export function finishFoldRows(acc: FoldAccumulator, frames: number, out: Uint8Array, y0: number, y1: number): void {
  const { width, values, type, weights } = acc;
  const [from, to] = [3 * y0 * width, 3 * y1 * width];
  if (type === 'lighten' || type === 'darken') {
    if (out !== values) out.set((values as Uint8Array).subarray(from, to), from);
  } else if (type === 'mean') {
    const sums = values as Uint32Array;
    const every = 255 * frames;
    for (let p = y0 * width, q = from; p < y1 * width; p++, q += 3) {
      const w = weights ? weights[p]! : every;
      const twice = 2 * w;
      out[q] = Math.floor((2 * sums[q]! + w) / twice);
      out[q + 1] = Math.floor((2 * sums[q + 1]! + w) / twice);
      out[q + 2] = Math.floor((2 * sums[q + 2]! + w) / twice);
    }
  } else {
    // every mode keeps 0..1, so rounding needs no clamp
    for (let p = from; p < to; p++) out[p] = (values[p]! * 255 + 0.5) | 0;
  }
}

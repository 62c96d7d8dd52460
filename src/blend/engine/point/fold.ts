import type { GridMask } from '../deghost/masks.js';
import { maskedSpan, maskRows } from '../deghost/upsample.js';
import { finishMeanPixels, foldMeanPixels } from './fold-simd.js';
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
 * A mean's sums, weights and result are computed in WebAssembly SIMD (point/fold-simd.ts), to the
 * value of the definition above (test/blend-wasm.test.ts holds it in JavaScript and compares).
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
  else if (acc.type === 'mean') foldMeanPixels(values as Uint32Array, null, frame, null, 0, y0 * acc.width, y1 * acc.width, true);
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
 * without one fold as a frame that counts everywhere, and a masked row takes the mask's values in
 * its span and 255 around it.
 */
function foldMean(sums: Uint32Array, weights: Uint32Array | null, frame: Uint8Array, mask: GridMask | null, width: number, y0: number, y1: number): void {
  if (!mask) {
    foldMeanPixels(sums, weights, frame, null, 0, y0 * width, y1 * width);
    return;
  }
  const rows = maskRows(mask.data, mask.width, mask.height, mask.factor, width);
  const masks = [rows];
  const row = new Uint8Array(width);
  const span = new Int32Array(2);
  for (let y = y0; y < y1; ) {
    // the rows the mask is 255 all across, folded at once
    let end = y;
    while (end < y1 && !maskedSpan(masks, width, end, span)) end++;
    if (end > y) {
      foldMeanPixels(sums, weights, frame, null, 0, y * width, end * width);
      y = end;
      continue;
    }
    const x0 = span[0]!, x1 = span[1]!;
    row.fill(255, 0, x0);
    rows.row(y, row, 0);
    row.fill(255, x1, width);
    foldMeanPixels(sums, weights, frame, row, y * width, y * width, (y + 1) * width);
    y++;
  }
}

/** Writes rows [y0, y1) of the result into `out`, after `frames` frames were folded in. */
export function finishFoldRows(acc: FoldAccumulator, frames: number, out: Uint8Array, y0: number, y1: number): void {
  const { width, values, type, weights } = acc;
  const [from, to] = [3 * y0 * width, 3 * y1 * width];
  if (type === 'lighten' || type === 'darken') {
    if (out !== values) out.set((values as Uint8Array).subarray(from, to), from);
  } else if (type === 'mean') {
    finishMeanPixels(values as Uint32Array, weights, 255 * frames, out, y0 * width, y1 * width);
  } else {
    // every mode keeps 0..1, so rounding needs no clamp
    for (let p = from; p < to; p++) out[p] = (values[p]! * 255 + 0.5) | 0;
  }
}

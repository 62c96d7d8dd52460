import type { GridMask } from '../deghost/masks.js';
import { maskedSpan, maskRows } from '../deghost/upsample.js';
import { SIMD_MAX_FRAMES } from './stack-simd.js';
import { meanBytes, meanRows } from './stack.js';
import { weightedMeanPixels } from './stack-weighted-simd.js';

/**
 * The mean of deghosted frames (deghost/deghost.ts): per channel, Σ m_k·v_k / Σ m_k rounded to
 * nearest (halves up), where m_k is frame k's agreement mask (0..255; a null mask is 255
 * everywhere, and the reference's always is, so the sum is never 0). With every mask at 255 this is
 * the plain mean to the byte, so every row runs through meanRows (point/stack.ts) and, in the rows
 * where a frame stops counting, the columns outside of which every mask is 255 are computed again:
 * in WebAssembly SIMD (point/stack-weighted-simd.ts) up to SIMD_MAX_FRAMES frames, by the
 * JavaScript of `weightedPixels` for more (the two agree to the byte).
 * The masks come on the agreement test's grid and are brought to full size here a row at a time
 * (deghost/upsample.ts `maskRows`, the values upsampleMaskRows writes): a full-size mask is written
 * once and read once, and its fresh memory (a byte a pixel and frame) cost more than the
 * interpolation itself.
 */
export function weightedMeanRows(frames: Uint8Array[], masks: Array<GridMask | null>, width: number, out: Uint8Array, y0: number, y1: number): void {
  const simd = frames.length <= SIMD_MAX_FRAMES;
  const rows = masks.map((m) => (m ? maskRows(m.data, m.width, m.height, m.factor, width) : null));
  // each mask's row across the columns some mask is below 255 at (`span`), 255 around its own span
  const row = masks.map((m) => (m ? new Uint8Array(width) : null));
  const span = new Int32Array(2);
  for (let y = y0; y < y1; ) {
    let end = y;
    while (end < y1 && !maskedSpan(rows, width, end, span)) end++;
    if (end > y) {
      meanRows(frames, width, out, y, end);
      y = end;
      continue;
    }
    const x0 = span[0]!, x1 = span[1]!;
    rows.forEach((r, k) => {
      if (!r) return;
      row[k]!.fill(255, x0, x1);
      r.row(y, row[k]!, 0);
    });
    const [from, to] = [y * width + x0, y * width + x1];
    // the plain mean beside the span, the weighted one (which is the plain one where every mask is 255) in it
    meanBytes(frames, out, 3 * y * width, 3 * from);
    meanBytes(frames, out, 3 * to, 3 * (y + 1) * width);
    if (simd) weightedMeanPixels(frames, row, out, from, to, y * width);
    else {
      // weightedPixels skips the pixels whose masks are all 255: they get the plain mean first
      meanBytes(frames, out, 3 * from, 3 * to);
      weightedPixels(frames, row, out, from, to, y * width);
    }
    y++;
  }
}

/**
 * Pixels [from, to) of `out` where some mask is below 255, in JavaScript (the others hold the plain
 * mean already); pixel p's mask bytes at p − maskBase (for masks of one row, its first pixel).
 */
export function weightedPixels(frames: Uint8Array[], masks: Array<Uint8Array | null>, out: Uint8Array, from: number, to: number, maskBase = 0): void {
  const present = masks.filter((m): m is Uint8Array => m !== null);
  for (let p = from; p < to; p++) {
    let full = true;
    for (let k = 0; k < present.length && full; k++) full = present[k]![p - maskBase] === 255;
    if (full) continue;
    let weights = 0, r = 0, g = 0, b = 0;
    for (let k = 0; k < frames.length; k++) {
      const m = masks[k]?.[p - maskBase] ?? 255;
      if (m === 0) continue;
      const f = frames[k]!, q = 3 * p;
      weights += m;
      r += m * f[q]!;
      g += m * f[q + 1]!;
      b += m * f[q + 2]!;
    }
    const q = 3 * p, twice = 2 * weights;
    out[q] = Math.floor((2 * r + weights) / twice);
    out[q + 1] = Math.floor((2 * g + weights) / twice);
    out[q + 2] = Math.floor((2 * b + weights) / twice);
  }
}

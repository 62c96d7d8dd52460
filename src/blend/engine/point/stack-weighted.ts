import { meanRows } from './stack.js';

/**
 * The mean of deghosted frames (deghost/deghost.ts): per channel, Σ m_k·v_k / Σ m_k rounded to
 * nearest (halves up), where m_k is frame k's agreement mask (0..255; a null mask is 255
 * everywhere, and the reference's always is, so the sum is never 0). With every mask at 255 this is
 * the plain mean to the byte, so every row runs through meanRows (point/stack.ts) and, in the rows
 * where a frame stops counting, only the pixels where some mask is below 255 are computed again
 * by the loop below.
 */
export function weightedMeanRows(frames: Uint8Array[], masks: Array<Uint8Array | null>, width: number, out: Uint8Array, y0: number, y1: number): void {
  for (let y = y0; y < y1; ) {
    let end = y;
    while (end < y1 && !masked(masks, width, end)) end++;
    if (end > y) {
      meanRows(frames, width, out, y, end);
      y = end;
    } else {
      meanRows(frames, width, out, y, y + 1);
      weightedRow(frames, masks, width, out, y++);
    }
  }
}

/** Whether any mask is below 255 in row y. */
function masked(masks: Array<Uint8Array | null>, width: number, y: number): boolean {
  for (const mask of masks) {
    if (!mask) continue;
    for (let p = y * width, end = p + width; p < end; p++) if (mask[p] !== 255) return true;
  }
  return false;
}

/** Row y's pixels where some mask is below 255 (the others hold the plain mean already). */
function weightedRow(frames: Uint8Array[], masks: Array<Uint8Array | null>, width: number, out: Uint8Array, y: number): void {
  const present = masks.filter((m): m is Uint8Array => m !== null);
  for (let p = y * width, end = p + width; p < end; p++) {
    let full = true;
    for (let k = 0; k < present.length && full; k++) full = present[k]![p] === 255;
    if (full) continue;
    let weights = 0, r = 0, g = 0, b = 0;
    for (let k = 0; k < frames.length; k++) {
      const m = masks[k]?.[p] ?? 255;
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

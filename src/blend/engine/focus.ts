import { greyRow, laplacianRow } from './exposure.js';
import { WEIGHT_ONE } from './pyramid.js';

/**
 * Focus stacking's selection: per pixel, the frame with the most local detail (|Laplacian| of
 * grey, the contrast measure of exposure fusion, summed over a (2r+1)² window). The frames are
 * then blended through Laplacian pyramids with these one-hot weights (pyramid.ts, driven by
 * blend.ts), so the seams between choices are smooth.
 */

/** Window radius of the sharpness measure, in pixels. */
export const SHARPNESS_RADIUS = 4;

// Rows per strip: strip buffers stay small, and the window's overlap costs 2r / STRIP extra rows.
const STRIP = 64;

/** Rows [y0, y1) of `choice`: the index of the sharpest frame per pixel (the earlier one on ties). */
export function sharpestFrameRows(
  frames: Uint8Array[],
  width: number,
  height: number,
  choice: Uint8Array,
  y0: number,
  y1: number,
  radius = SHARPNESS_RADIUS,
): void {
  const rows = (count: number): Float64Array[] => Array.from({ length: count }, () => new Float64Array(width));
  const grey = rows(STRIP + 2 * radius + 2);
  const detail = rows(STRIP + 2 * radius);
  const best = new Float64Array(STRIP * width);
  const column = new Float64Array(width);
  const laplacian = new Float64Array(width);
  const last = height - 1;
  const clampRow = (y: number): number => (y < 0 ? 0 : y > last ? last : y);
  for (let s0 = y0; s0 < y1; s0 += STRIP) {
    const s1 = Math.min(y1, s0 + STRIP);
    // grey rows [g0, g1) feed the Laplacian of rows [d0, d1), which feed the window sums of [s0, s1)
    const g0 = Math.max(0, s0 - radius - 1), g1 = Math.min(height, s1 + radius + 1);
    const d0 = Math.max(0, s0 - radius), d1 = Math.min(height, s1 + radius);
    for (let k = 0; k < frames.length; k++) {
      const frame = frames[k]!;
      for (let y = g0; y < g1; y++) greyRow(frame, width, y, grey[y - g0]!);
      for (let y = d0; y < d1; y++) {
        laplacianRow(grey[clampRow(y - 1) - g0]!, grey[y - g0]!, grey[clampRow(y + 1) - g0]!, width, laplacian);
        boxRow(laplacian, width, radius, detail[y - d0]!);
      }
      column.fill(0);
      for (let y = s0 - radius; y <= s0 + radius; y++) {
        const add = detail[clampRow(y) - d0]!;
        for (let x = 0; x < width; x++) column[x]! += add[x]!;
      }
      for (let y = s0; y < s1; y++) {
        if (y > s0) {
          // slide the window down one row
          const add = detail[clampRow(y + radius) - d0]!, drop = detail[clampRow(y - radius - 1) - d0]!;
          for (let x = 0; x < width; x++) column[x]! += add[x]! - drop[x]!;
        }
        for (let x = 0, o = (y - s0) * width, p = y * width; x < width; x++) {
          const v = column[x]!;
          if (k === 0 || v > best[o + x]!) {
            best[o + x] = v;
            choice[p + x] = k;
          }
        }
      }
    }
  }
}

/** Rows [y0, y1) of frame `index`'s one-hot weight (fixed point, pyramid.ts): 1 where it is the sharpest, else 0. */
export function selectionWeightRows(choice: Uint8Array, index: number, width: number, weight: Uint16Array, y0: number, y1: number): void {
  for (let p = y0 * width, end = y1 * width; p < end; p++) weight[p] = choice[p] === index ? WEIGHT_ONE : 0;
}

// Sums of 2r + 1 neighbours along the row (edges replicated), by a running sum.
function boxRow(row: Float64Array, width: number, radius: number, out: Float64Array): void {
  const last = width - 1;
  let sum = 0;
  for (let x = -radius; x <= radius; x++) sum += row[x < 0 ? 0 : x > last ? last : x]!;
  for (let x = 0; x < width; x++) {
    out[x] = sum;
    const enter = x + radius + 1, leave = x - radius;
    sum += row[enter > last ? last : enter]! - row[leave < 0 ? 0 : leave]!;
  }
}

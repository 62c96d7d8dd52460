import { focusKernels } from './focus-simd.js';
import { growTo } from '../wasm/assembler.js';

/**
 * Focus stacking's selection: per pixel, the frame with the most local detail (|Laplacian| of
 * grey, the contrast measure of exposure fusion, summed over a (2r+1)² window). The frames are
 * then blended through Laplacian pyramids with these one-hot weights (pyramid/pyramid.ts, driven by
 * blend.ts), so the seams between choices are smooth. The measure runs as SIMD kernels in exact
 * integers (pyramid/focus-simd.ts); JavaScript picks the rows and replicates the edges.
 */

/** Window radius of the sharpness measure, in pixels. */
export const SHARPNESS_RADIUS = 4;

// Rows per strip: the window's overlap costs 2r / STRIP extra rows, the strip's rows of best
// sums 4 bytes a pixel of kernel memory.
const STRIP = 128;

/**
 * A stack streamed a few frames at a time (engine/pyramid-stream.ts): `frames[0]` is frame `first`,
 * and `best` keeps each pixel's best sum so far between calls, as `choice` keeps its frame.
 */
export interface SharpestSoFar {
  first: number;
  best: Int32Array;
}

/**
 * Rows [y0, y1) of `choice`: the index of the sharpest frame per pixel (the earlier one on ties).
 * With `soFar`, the frames carry on from the frames before them: the same choice as when every
 * frame is at hand (the sums are exact integers).
 */
export function sharpestFrameRows(
  frames: Uint8Array[],
  width: number,
  height: number,
  choice: Uint8Array,
  y0: number,
  y1: number,
  radius = SHARPNESS_RADIUS,
  soFar: SharpestSoFar | null = null,
): void {
  const { run, memory } = focusKernels(radius);
  // Row buffers, each with room either side for the edges read (radius elements) and whole vectors run past the end.
  const margin = Math.ceil((4 * radius + 64) / 16) * 16;
  let used = 0;
  const row = (bytes: number): number => {
    const at = used + margin;
    used += Math.ceil((bytes + 2 * margin) / 16) * 16;
    return at;
  };
  const rgb = row(3 * width);
  const planes = [row(width), row(width), row(width)] as const;
  const grey = Array.from({ length: STRIP + 2 * radius + 2 }, () => row(4 * width));
  const detail = Array.from({ length: STRIP + 2 * radius }, () => row(4 * width));
  const laplacian = row(4 * width);
  const column = row(4 * width);
  // The strip's best sums and choices, row after row at a whole number of vectors apart (kernels write whole vectors).
  const stride = Math.ceil(width / 16) * 16;
  const best = row(4 * stride * STRIP);
  const chosen = row(stride * STRIP);
  growTo(memory, used);
  const u8 = new Uint8Array(memory.buffer);
  const i32 = new Int32Array(memory.buffer);
  const replicate = (at: number, count: number): void => {
    const e = at >> 2;
    for (let k = 1; k <= count; k++) i32[e - k] = i32[e]!;
    for (let k = 0; k < count; k++) i32[e + width + k] = i32[e + width - 1]!;
  };

  const last = height - 1;
  const clampRow = (y: number): number => (y < 0 ? 0 : y > last ? last : y);
  for (let s0 = y0; s0 < y1; s0 += STRIP) {
    const s1 = Math.min(y1, s0 + STRIP);
    // grey rows [g0, g1) feed the Laplacian of rows [d0, d1), which feed the window sums of [s0, s1)
    const g0 = Math.max(0, s0 - radius - 1), g1 = Math.min(height, s1 + radius + 1);
    const d0 = Math.max(0, s0 - radius), d1 = Math.min(height, s1 + radius);
    const first = soFar?.first ?? 0;
    if (first === 0) {
      // Every sum is ≥ 0: the first frame wins everywhere.
      i32.fill(-1, best >> 2, (best >> 2) + (s1 - s0) * stride);
    } else {
      for (let y = s0; y < s1; y++) {
        i32.set(soFar!.best.subarray(y * width, (y + 1) * width), (best >> 2) + stride * (y - s0));
        u8.set(choice.subarray(y * width, (y + 1) * width), chosen + stride * (y - s0));
      }
    }
    for (let k = 0; k < frames.length; k++) {
      const frame = frames[k]!;
      for (let y = g0; y < g1; y++) {
        u8.set(frame.subarray(y * width * 3, (y + 1) * width * 3), rgb);
        run.split(rgb, planes[0], planes[1], planes[2], width);
        run.grey(planes[0], planes[1], planes[2], grey[y - g0]!, width);
        replicate(grey[y - g0]!, 1);
      }
      for (let y = d0; y < d1; y++) {
        run.laplacian(grey[clampRow(y - 1) - g0]!, grey[y - g0]!, grey[clampRow(y + 1) - g0]!, laplacian, width);
        replicate(laplacian, radius);
        run.across(laplacian, detail[y - d0]!, width);
      }
      i32.fill(0, column >> 2, (column >> 2) + width);
      for (let y = s0 - radius; y <= s0 + radius; y++) run.add(column, detail[clampRow(y) - d0]!, width);
      for (let y = s0; y < s1; y++) {
        // slide the window down one row
        if (y > s0) run.slide(column, detail[clampRow(y + radius) - d0]!, detail[clampRow(y - radius - 1) - d0]!, width);
        run.pick(column, best + 4 * stride * (y - s0), chosen + stride * (y - s0), first + k, width);
      }
    }
    for (let y = s0; y < s1; y++) choice.set(u8.subarray(chosen + stride * (y - s0), chosen + stride * (y - s0) + width), y * width);
    if (soFar) for (let y = s0; y < s1; y++) soFar.best.set(i32.subarray((best >> 2) + stride * (y - s0), (best >> 2) + stride * (y - s0) + width), y * width);
  }
}

/**
 * The composite's own Burt–Adelson pyramid (5-tap binomial kernel, mirrored edges), run in pool
 * threads one band of rows at a time on the coarse grid. Each frame's levels hold, per pixel, its
 * difference from the background (r, g, b) and its blending weight (w), so the multi-band blend
 * of a frame is a sum of band × weight products.
 */
import { chunkRows, kernelMemory } from './simd.js';
import { BAND_PLAN_BYTES, BandPlan } from './simd-pyramid.js';

/** A pyramid level: `channels` floats per pixel, interleaved, in shared memory. */
export interface Plane {
  width: number;
  height: number;
  channels: number;
  data: Float32Array;
}

/** Mirrors an index into [0, n) without repeating the edge sample (-1 → 1, n → n - 2). */
function mirror(i: number, n: number): number {
  if (n === 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
  return i;
}

/** The size of the next coarser level. */
export function reducedSize(n: number): number {
  return Math.ceil(n / 2);
}

/** The five mirrored taps of a [1 4 6 4 1] kernel around 2x, for x < `count`, `channels` apart. */
function reduceTaps(count: number, n: number, channels: number): Int32Array {
  const taps = new Int32Array(count * 5);
  for (let x = 0; x < count; x++) {
    for (let d = -2; d <= 2; d++) taps[x * 5 + d + 2] = mirror(2 * x + d, n) * channels;
  }
  return taps;
}

/**
 * REDUCE: rows [r0, r1) of `dst`, the level below `src` (blur with [1 4 6 4 1] / 16, keep every
 * other sample), in WebAssembly (composite/simd-pyramid.ts). Levels are four channels: three of
 * colour difference and a weight.
 */
export function reduceRows(src: Plane, dst: Plane, r0: number, r1: number): void {
  const { width: sw, height: sh, channels: ch, data } = src;
  const stride = sw * ch;
  const out = dst.data;
  if (ch !== 4 || dst.channels !== 4) throw new Error(`reduceRows takes 4-channel levels, not ${ch} -> ${dst.channels}`);
  const taps = reduceTaps(dst.width, sw, ch);
  const memory = kernelMemory();
  // a chunk of output rows at a time, so the kernel memory holds few source rows
  const chunk = Math.min(r1 - r0, chunkRows(dst.width));
  const rows = memory.alloc((2 * chunk + 3) * stride * 4);
  const [column, tapBytes, sources, outRows] = [memory.alloc(stride * 4), memory.alloc(dst.width * 20), memory.alloc(chunk * 20), memory.alloc(chunk * dst.width * 16)];
  const { run, f32, i32 } = memory.ready();
  for (let i = 0; i < taps.length; i++) i32[(tapBytes >> 2) + i] = taps[i]! * 4;
  for (let c0 = r0; c0 < r1; c0 += chunk) {
    const c1 = Math.min(r1, c0 + chunk);
    // the source rows these output rows read, mirrored ones included, are [lo, hi]
    const lo = Math.max(0, 2 * c0 - 2);
    const hi = Math.min(sh - 1, 2 * c1);
    f32.set(data.subarray(lo * stride, (hi + 1) * stride), rows >> 2);
    for (let y = c0, e = sources >> 2; y < c1; y++) {
      for (let d = -2; d <= 2; d++, e++) i32[e] = rows + (mirror(2 * y + d, sh) - lo) * stride * 4;
    }
    run.reduceLevelRows(c1 - c0, sources, column, stride, tapBytes, dst.width, outRows);
    out.set(f32.subarray(outRows >> 2, (outRows >> 2) + (c1 - c0) * dst.width * 4), c0 * dst.width * 4);
  }
}

/** Into `span` at `at`, the first and last pixel of row `y` of `plane` with a non-zero value among channels [c0, c1) (width, −1: none). */
function nonZeroSpan(plane: Plane, y: number, c0: number, c1: number, span: Int32Array, at: number): void {
  const { width, channels, data } = plane;
  let first = width;
  let last = -1;
  for (let x = 0, i = y * width * channels; x < width; x++, i += channels) {
    for (let k = c0; k < c1; k++) {
      if (data[i + k] !== 0) {
        if (first === width) first = x;
        last = x;
        break;
      }
    }
  }
  span[at] = first;
  span[at + 1] = last;
}

/** The rows of the level above that rows [y0, y1) read, [lo, hi] (the rows around y >> 1, mirrored). */
function rowsAbove(y0: number, y1: number, height: number): [number, number] {
  return [Math.max(0, (y0 >> 1) - 1), Math.min(height - 1, ((y1 - 1) >> 1) + 1)];
}

/**
 * Rows [r0, r1) of one frame's blended band sum at a level, collapsing from the top down:
 * `sum = (G - EXPAND(G_next)).rgb * G.w + EXPAND(sum_next)`, or `G.rgb * G.w` at the top level.
 * A frame's weights cover a small part of the frame, so only pixels with a weight, or that the
 * sum above reaches, are computed: elsewhere the sum is 0 (the plane comes zeroed), as the
 * formula gives up to the sign of a zero, which the result adds to the background and so loses.
 * Where the weight is 0 the sum is the expanded sum above, as `x · 0 + s` is. The arithmetic is
 * WebAssembly in f64, the JavaScript's steps (composite/simd-pyramid.ts); JavaScript picks, per
 * row, the spans and the rows above to expand (BandPlan).
 */
export function bandRows(level: Plane, next: Plane | null, sumNext: Plane | null, sum: Plane, r0: number, r1: number): void {
  if (r1 <= r0) return;
  const { width } = level;
  // the level above and the sum above have the same size
  const [sw, sh] = [next?.width ?? 0, next?.height ?? 0];
  const sumAbove = next ? sumNext : null;
  const rows = chunkRows(width);
  const memory = kernelMemory();
  const [levelRows, outRows, plan] = [memory.alloc(rows * width * 16), memory.alloc(rows * width * 12), memory.alloc(rows * BAND_PLAN_BYTES)];
  const aboveRows = next ? Math.min(sh, (rows >> 1) + 3) : 0;
  const [nextRows, sumRows] = [memory.alloc(aboveRows * sw * 16), memory.alloc(aboveRows * sw * 12)];
  const [column, expandedLevel, expandedSum] = [memory.alloc(sw * 16), memory.alloc(width * 12), memory.alloc(width * 12)];
  const { run, f32, i32 } = memory.ready();
  // per row of the sum above that this range reads, the span of its non-zero pixels
  const [first, last] = sumAbove ? rowsAbove(r0, r1, sh) : [0, -1];
  const spansAbove = new Int32Array(2 * (last - first + 1));
  for (let row = first; row <= last; row++) nonZeroSpan(sumAbove!, row, 0, 3, spansAbove, 2 * (row - first));
  for (let y0 = r0; y0 < r1; y0 += rows) {
    const y1 = Math.min(r1, y0 + rows);
    f32.set(level.data.subarray(y0 * width * 4, y1 * width * 4), levelRows >> 2);
    f32.fill(0, outRows >> 2, (outRows >> 2) + (y1 - y0) * width * 3);
    const [lo, hi] = next ? rowsAbove(y0, y1, sh) : [0, -1];
    if (next) f32.set(next.data.subarray(lo * sw * 4, (hi + 1) * sw * 4), nextRows >> 2);
    if (sumAbove) f32.set(sumAbove.data.subarray(lo * sw * 3, (hi + 1) * sw * 3), sumRows >> 2);
    for (let y = y0, e = plan >> 2; y < y1; y++, e += BAND_PLAN_BYTES >> 2) {
      nonZeroSpan(level, y, 3, 4, i32, e + BandPlan.wa);
      let [ea, eb] = [width, -1];
      if (next) {
        const half = y >> 1;
        const [up, down] = [mirror(half - 1, sh), mirror(half + 1, sh)];
        if (sumAbove) {
          // pixels the expanded sum above reaches: those reading a non-zero column of its rows
          const [u, h, d] = [2 * (up - first), 2 * (half - first), 2 * (down - first)];
          const ka = Math.min(spansAbove[u]!, spansAbove[h]!, spansAbove[d]!);
          const kb = Math.max(spansAbove[u + 1]!, spansAbove[h + 1]!, spansAbove[d + 1]!);
          if (ka <= kb) [ea, eb] = [Math.max(0, 2 * ka - 2), Math.min(width - 1, 2 * kb + 3)];
        }
        // an EXPAND's three source rows, from the first copied
        const odd = y & 1;
        i32[e + BandPlan.a] = (odd ? half : up) - lo;
        i32[e + BandPlan.b] = (odd ? down : half) - lo;
        i32[e + BandPlan.c] = down - lo;
        i32[e + BandPlan.odd] = odd;
      }
      i32[e + BandPlan.ea] = ea;
      i32[e + BandPlan.eb] = eb;
      i32[e + BandPlan.x0] = Math.min(i32[e + BandPlan.wa]!, ea);
      i32[e + BandPlan.x1] = Math.max(i32[e + BandPlan.wb]!, eb);
    }
    run.bandSumRows(y1 - y0, plan, levelRows, nextRows, sumRows, width, sw, next ? 1 : 0, column, expandedLevel, expandedSum, outRows);
    sum.data.set(f32.subarray(outRows >> 2, (outRows >> 2) + (y1 - y0) * width * 3), y0 * width * 3);
  }
}

/**
 * A frame's pyramid of (difference, weight) above its base level, its bands blended and collapsed
 * back into `bands` (3 channels, the base level's size), in one thread: the levels are small, and
 * one task per frame, the frames' tasks side by side, keeps the threads busy with less traffic.
 */
export function collapse(base: Plane, levels: number, bands: Plane): void {
  const local = (width: number, height: number, channels: number): Plane => ({ width, height, channels, data: new Float32Array(width * height * channels) });
  const pyramid = [base];
  for (let l = 1; l < levels; l++) {
    const src = pyramid[l - 1]!;
    const dst = local(reducedSize(src.width), reducedSize(src.height), 4);
    reduceRows(src, dst, 0, dst.height);
    pyramid.push(dst);
  }
  let sumNext: Plane | null = null;
  for (let l = levels - 1; l >= 0; l--) {
    const level = pyramid[l]!;
    const sum = l === 0 ? bands : local(level.width, level.height, 3);
    bandRows(level, pyramid[l + 1] ?? null, sumNext, sum, 0, level.height);
    sumNext = sum;
  }
}

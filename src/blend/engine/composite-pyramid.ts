/**
 * The composite's own Burt–Adelson pyramid (5-tap binomial kernel, mirrored edges), run in pool
 * threads one band of rows at a time on the coarse grid. Each frame's levels hold, per pixel, its
 * difference from the background (r, g, b) and its blending weight (w), so the multi-band blend
 * of a frame is a sum of band × weight products.
 */
import { kernelMemory } from './composite-simd.js';

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
 * other sample). Four channels in WebAssembly (composite-simd-pyramid.ts), in the same f64 steps as the
 * JavaScript for other counts.
 */
export function reduceRows(src: Plane, dst: Plane, r0: number, r1: number): void {
  const { width: sw, height: sh, channels: ch, data } = src;
  const stride = sw * ch;
  const out = dst.data;
  const taps = reduceTaps(dst.width, sw, ch);
  if (ch === 4) {
    const memory = kernelMemory();
    // a chunk of output rows at a time, so the kernel memory holds few source rows
    const chunk = Math.min(r1 - r0, 32);
    const rows = memory.alloc((2 * chunk + 3) * stride * 4);
    const [column, tapBytes, row] = [memory.alloc(stride * 4), memory.alloc(dst.width * 20), memory.alloc(dst.width * 16)];
    const { run, f32, i32 } = memory.ready();
    for (let i = 0; i < taps.length; i++) i32[(tapBytes >> 2) + i] = taps[i]! * 4;
    for (let c0 = r0; c0 < r1; c0 += chunk) {
      const c1 = Math.min(r1, c0 + chunk);
      // the source rows these output rows read, mirrored ones included, are [lo, hi]
      const lo = Math.max(0, 2 * c0 - 2);
      const hi = Math.min(sh - 1, 2 * c1);
      f32.set(data.subarray(lo * stride, (hi + 1) * stride), rows >> 2);
      const at = (y: number) => rows + (mirror(y, sh) - lo) * stride * 4;
      for (let y = c0; y < c1; y++) {
        run.reduceColumn(at(2 * y - 2), at(2 * y - 1), at(2 * y), at(2 * y + 1), at(2 * y + 2), column, stride);
        run.reduceAcross(column, tapBytes, dst.width, row);
        out.set(f32.subarray(row >> 2, (row >> 2) + dst.width * 4), y * dst.width * 4);
      }
    }
    return;
  }
  const column = new Float32Array(stride);
  for (let y = r0; y < r1; y++) {
    const a = mirror(2 * y - 2, sh) * stride;
    const b = mirror(2 * y - 1, sh) * stride;
    const c = mirror(2 * y, sh) * stride;
    const d = mirror(2 * y + 1, sh) * stride;
    const e = mirror(2 * y + 2, sh) * stride;
    for (let i = 0; i < stride; i++) column[i] = (data[a + i]! + data[e + i]! + 4 * (data[b + i]! + data[d + i]!) + 6 * data[c + i]!) * (1 / 16);
    for (let x = 0, o = y * dst.width * ch, t = 0; x < dst.width; x++, t += 5) {
      const [xa, xb, xc, xd, xe] = [taps[t]!, taps[t + 1]!, taps[t + 2]!, taps[t + 3]!, taps[t + 4]!];
      for (let k = 0; k < ch; k++, o++) {
        out[o] = (column[xa + k]! + column[xe + k]! + 4 * (column[xb + k]! + column[xd + k]!) + 6 * column[xc + k]!) * (1 / 16);
      }
    }
  }
}

/** The first and last pixel of row `y` of `plane` with a non-zero value among channels [c0, c1) ([width, −1]: none). */
function nonZeroSpan(plane: Plane, y: number, c0: number, c1: number): [number, number] {
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
  return [first, last];
}

/**
 * Rows [r0, r1) of one frame's blended band sum at a level, collapsing from the top down:
 * `sum = (G - EXPAND(G_next)).rgb * G.w + EXPAND(sum_next)`, or `G.rgb * G.w` at the top level.
 * A frame's weights cover a small part of the frame, so only pixels with a weight, or that the
 * sum above reaches, are computed: elsewhere the sum is 0 (the plane comes zeroed), as the
 * formula gives up to the sign of a zero, which the result adds to the background and so loses.
 * Where the weight is 0 the sum is the expanded sum above, as `x · 0 + s` is. The arithmetic is
 * WebAssembly in f64, the JavaScript's steps (composite-simd-pyramid.ts); JavaScript picks the spans.
 */
export function bandRows(level: Plane, next: Plane | null, sumNext: Plane | null, sum: Plane, r0: number, r1: number): void {
  const { width, data: g } = level;
  const out = sum.data;
  const memory = kernelMemory();
  const [gRow, expandedLevel, expandedSum, outRow] = [memory.alloc(width * 16), memory.alloc(width * 12), memory.alloc(width * 12), memory.alloc(width * 12)];
  // an expansion's three source rows and their vertical step, 4 channels at most
  const sources = [0, 1, 2, 3].map(() => memory.alloc((next?.width ?? 0) * 16));
  const [rowA, rowB, rowC, column] = sources as [number, number, number, number];
  const { run, f32 } = memory.ready();
  // EXPAND of row y of `src` to this level, pixels [x0, x1], 3 channels → `dst`
  const expand = (src: Plane, y: number, x0: number, x1: number, dst: number) => {
    const { width: sw, height: sh, channels: ch, data } = src;
    const half = y >> 1;
    const odd = y & 1;
    const rows = odd ? [half, mirror(half + 1, sh), mirror(half + 1, sh)] : [mirror(half - 1, sh), half, mirror(half + 1, sh)];
    // the source columns pixels x0..x1 read: (x >> 1) − 1 .. (x >> 1) + 1, mirrored into the row
    const s0 = Math.max(0, (x0 >> 1) - 1);
    const s1 = Math.min(sw - 1, (x1 >> 1) + 1);
    rows.forEach((row, k) => f32.set(data.subarray((row * sw + s0) * ch, (row * sw + s1 + 1) * ch), sources[k]! >> 2));
    run.expandColumns(rowA, rowB, rowC, (s1 - s0 + 1) * ch, odd, column);
    run.expandAcross(column, ch, sw, s0, x0, x1, dst);
  };
  // per row of the sum above that this range reads, the span of its non-zero pixels
  const spansAbove = new Map<number, [number, number]>();
  const spanAbove = (row: number): [number, number] => {
    let span = spansAbove.get(row);
    if (!span) spansAbove.set(row, (span = nonZeroSpan(sumNext!, row, 0, 3)));
    return span;
  };
  for (let y = r0; y < r1; y++) {
    const [wa, wb] = nonZeroSpan(level, y, 3, 4);
    // pixels the expanded sum above reaches: those reading a non-zero column of its rows
    let [ea, eb] = [width, -1];
    if (next && sumNext) {
      const half = y >> 1;
      const rows = [mirror(half - 1, sumNext.height), half, mirror(half + 1, sumNext.height)];
      let [ka, kb] = [sumNext.width, -1];
      for (const row of rows) {
        const [a, b] = spanAbove(row);
        ka = Math.min(ka, a);
        kb = Math.max(kb, b);
      }
      if (ka <= kb) [ea, eb] = [Math.max(0, 2 * ka - 2), Math.min(width - 1, 2 * kb + 3)];
    }
    if (wa > wb && ea > eb) continue;
    const [x0, x1] = [Math.min(wa, ea), Math.max(wb, eb)];
    f32.set(g.subarray((y * width + x0) * 4, (y * width + x1 + 1) * 4), (gRow >> 2) + x0 * 4);
    if (ea <= eb) expand(sumNext!, y, ea, eb, expandedSum);
    if (next && wa <= wb) expand(next, y, wa, wb, expandedLevel);
    run.bandCombine(gRow, expandedLevel, expandedSum, x0, x1, ea, eb, next ? 1 : 0, outRow);
    out.set(f32.subarray((outRow >> 2) + x0 * 3, (outRow >> 2) + (x1 + 1) * 3), (y * width + x0) * 3);
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

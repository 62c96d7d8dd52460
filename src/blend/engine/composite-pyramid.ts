/**
 * The composite's own Burt–Adelson pyramid (5-tap binomial kernel, mirrored edges), run in pool
 * threads one band of rows at a time on the coarse grid. Each frame's levels hold, per pixel, its
 * difference from the background (r, g, b) and its blending weight (w), so the multi-band blend
 * of a frame is a sum of band × weight products.
 */

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

/** REDUCE: rows [r0, r1) of `dst`, the level below `src` (blur with [1 4 6 4 1] / 16, keep every other sample). */
export function reduceRows(src: Plane, dst: Plane, r0: number, r1: number): void {
  const { width: sw, height: sh, channels: ch, data } = src;
  const stride = sw * ch;
  const column = new Float32Array(stride);
  const out = dst.data;
  for (let y = r0; y < r1; y++) {
    const a = mirror(2 * y - 2, sh) * stride;
    const b = mirror(2 * y - 1, sh) * stride;
    const c = mirror(2 * y, sh) * stride;
    const d = mirror(2 * y + 1, sh) * stride;
    const e = mirror(2 * y + 2, sh) * stride;
    for (let i = 0; i < stride; i++) column[i] = (data[a + i]! + data[e + i]! + 4 * (data[b + i]! + data[d + i]!) + 6 * data[c + i]!) * (1 / 16);
    for (let x = 0, o = y * dst.width * ch; x < dst.width; x++) {
      const xa = mirror(2 * x - 2, sw) * ch;
      const xb = mirror(2 * x - 1, sw) * ch;
      const xc = 2 * x * ch;
      const xd = mirror(2 * x + 1, sw) * ch;
      const xe = mirror(2 * x + 2, sw) * ch;
      for (let k = 0; k < ch; k++, o++) {
        out[o] = (column[xa + k]! + column[xe + k]! + 4 * (column[xb + k]! + column[xd + k]!) + 6 * column[xc + k]!) * (1 / 16);
      }
    }
  }
}

/**
 * EXPAND: row `y` of `src` upsampled to a level `width` wide, first 3 channels, into `out`
 * (`width * 3` floats). `column` is scratch of `src.width * 3` floats.
 */
function expandRow(src: Plane, y: number, width: number, out: Float32Array, column: Float32Array): void {
  const { width: sw, height: sh, channels: ch, data } = src;
  const half = y >> 1;
  const odd = (y & 1) === 1;
  const a = (odd ? half : mirror(half - 1, sh)) * sw * ch;
  const b = (odd ? mirror(half + 1, sh) : half) * sw * ch;
  const c = mirror(half + 1, sh) * sw * ch;
  for (let x = 0, i = 0, s = 0; x < sw; x++, s += ch) {
    for (let k = 0; k < 3; k++, i++) {
      column[i] = odd ? (data[a + s + k]! + data[b + s + k]!) * 0.5 : (data[a + s + k]! + data[c + s + k]!) * 0.125 + data[b + s + k]! * 0.75;
    }
  }
  for (let x = 0, o = 0; x < width; x++) {
    const h = (x >> 1) * 3;
    const r = mirror((x >> 1) + 1, sw) * 3;
    if ((x & 1) === 1) {
      for (let k = 0; k < 3; k++, o++) out[o] = (column[h + k]! + column[r + k]!) * 0.5;
    } else {
      const l = mirror((x >> 1) - 1, sw) * 3;
      for (let k = 0; k < 3; k++, o++) out[o] = (column[l + k]! + column[r + k]!) * 0.125 + column[h + k]! * 0.75;
    }
  }
}

/**
 * Rows [r0, r1) of one frame's blended band sum at a level, collapsing from the top down:
 * `sum = (G - EXPAND(G_next)).rgb * G.w + EXPAND(sum_next)`, or `G.rgb * G.w` at the top level.
 */
export function bandRows(level: Plane, next: Plane | null, sumNext: Plane | null, sum: Plane, r0: number, r1: number): void {
  const { width, data: g } = level;
  const expandedLevel = new Float32Array(width * 3);
  const expandedSum = new Float32Array(width * 3);
  const column = new Float32Array((next?.width ?? 0) * 3);
  for (let y = r0; y < r1; y++) {
    if (next && sumNext) {
      expandRow(next, y, width, expandedLevel, column);
      expandRow(sumNext, y, width, expandedSum, column);
    }
    for (let x = 0, i = y * width * 4, o = y * width * 3; x < width; x++, i += 4) {
      const w = g[i + 3]!;
      for (let k = 0; k < 3; k++, o++) sum.data[o] = (g[i + k]! - expandedLevel[x * 3 + k]!) * w + expandedSum[x * 3 + k]!;
    }
  }
}

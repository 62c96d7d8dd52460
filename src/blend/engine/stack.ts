/**
 * Point-wise statistics over N aligned frames (mean, median, lighten, darken), each over a row
 * range [y0, y1) so the caller can split rows across pool threads. Every channel value of every
 * pixel is independent, so the loops run over the bytes of the range.
 */

/** The shape every point-wise kernel shares: frames' RGB bytes in, `out` rows [y0, y1) written. */
export type PointKernel = (frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number) => void;

// Bytes per chunk: a chunk of every frame and of the accumulator stays in cache between passes.
const CHUNK = 8192;

/** Per-channel mean, rounded to nearest (halves up). */
export function meanRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  const n = frames.length;
  const end = y1 * width * 3;
  // sum → round(sum / n), so the hot loop has no division
  const rounded = new Uint8Array(255 * n + 1);
  for (let s = 0; s < rounded.length; s++) rounded[s] = Math.floor((2 * s + n) / (2 * n));
  const acc = new Int32Array(CHUNK);
  for (let c0 = y0 * width * 3; c0 < end; c0 += CHUNK) {
    const len = Math.min(CHUNK, end - c0);
    acc.fill(0, 0, len);
    let k = 0;
    // two frames a pass halves the accumulator traffic
    for (; k + 1 < n; k += 2) {
      const a = frames[k]!, b = frames[k + 1]!;
      for (let i = 0, p = c0; i < len; i++, p++) acc[i]! += a[p]! + b[p]!;
    }
    if (k < n) {
      const a = frames[k]!;
      for (let i = 0, p = c0; i < len; i++, p++) acc[i]! += a[p]!;
    }
    for (let i = 0, p = c0; i < len; i++, p++) out[p] = rounded[acc[i]!]!;
  }
}

/** Per-channel maximum (star trails, light painting). */
export function lightenRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  const max = Math.max;
  foldPairs(frames, width, out, y0, y1, (a, b, c0, c1) => {
    for (let p = c0; p < c1; p++) out[p] = max(out[p]!, a[p]!, b[p]!);
  });
}

/** Per-channel minimum (removing bright specks). */
export function darkenRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  const min = Math.min;
  foldPairs(frames, width, out, y0, y1, (a, b, c0, c1) => {
    for (let p = c0; p < c1; p++) out[p] = min(out[p]!, a[p]!, b[p]!);
  });
}

// Starts each chunk of `out` as frame 0 and folds the other frames into it two at a time (the
// last pair may repeat a frame); each kernel owns its loop, so every loop sees one operation.
function foldPairs(
  frames: Uint8Array[],
  width: number,
  out: Uint8Array,
  y0: number,
  y1: number,
  fold: (a: Uint8Array, b: Uint8Array, c0: number, c1: number) => void,
): void {
  const n = frames.length;
  const end = y1 * width * 3;
  for (let c0 = y0 * width * 3; c0 < end; c0 += CHUNK) {
    const c1 = Math.min(end, c0 + CHUNK);
    out.set(frames[0]!.subarray(c0, c1), c0);
    for (let k = 1; k < n; k += 2) fold(frames[k]!, frames[Math.min(k + 1, n - 1)]!, c0, c1);
  }
}

/**
 * Exact per-channel median; for even N the mean of the two middle values, rounded (halves up).
 * 3, 4, 5, 6 and 7 frames use selection networks on locals; other counts sort each value set.
 */
export function medianRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  const from = y0 * width * 3;
  const to = y1 * width * 3;
  switch (frames.length) {
    case 1:
      out.set(frames[0]!.subarray(from, to), from);
      return;
    case 3:
      return median3(frames, out, from, to);
    case 4:
      return median4(frames, out, from, to);
    case 5:
      return median5(frames, out, from, to);
    case 6:
      return median6(frames, out, from, to);
    case 7:
      return median7(frames, out, from, to);
    default:
      return medianSorted(frames, out, from, to);
  }
}

function median3(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!;
  for (let p = from; p < to; p++) {
    let a = f0[p]!, b = f1[p]!, t;
    const c = f2[p]!;
    if (a > b) { t = a; a = b; b = t; }
    // median = max(min, min(max, c))
    if (b > c) b = c;
    out[p] = a > b ? a : b;
  }
}

function median4(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!;
  for (let p = from; p < to; p++) {
    const a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!;
    const lo1 = a < b ? a : b, hi1 = a < b ? b : a;
    const lo2 = c < d ? c : d, hi2 = c < d ? d : c;
    // the two middle values are the larger minimum and the smaller maximum
    const mid = (lo1 > lo2 ? lo1 : lo2) + (hi1 < hi2 ? hi1 : hi2);
    out[p] = (mid + 1) >> 1;
  }
}

function median5(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!, f4 = f[4]!;
  for (let p = from; p < to; p++) {
    let a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!, e = f4[p]!, t;
    if (a > b) { t = a; a = b; b = t; }
    if (d > e) { t = d; d = e; e = t; }
    if (a > d) { t = a; a = d; d = t; }
    if (b > e) { t = b; b = e; e = t; }
    if (b > c) { t = b; b = c; c = t; }
    if (c > d) { t = c; c = d; d = t; }
    out[p] = b > c ? b : c;
  }
}

function median6(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!, f4 = f[4]!, f5 = f[5]!;
  for (let p = from; p < to; p++) {
    let a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!, e = f4[p]!, g = f5[p]!, t;
    // odd-even transposition rounds; five suffice to place the two middle values
    if (b > c) { t = b; b = c; c = t; }
    if (d > e) { t = d; d = e; e = t; }
    if (a > b) { t = a; a = b; b = t; }
    if (c > d) { t = c; c = d; d = t; }
    if (e > g) { t = e; e = g; g = t; }
    if (b > c) { t = b; b = c; c = t; }
    if (d > e) { t = d; d = e; e = t; }
    if (a > b) { t = a; a = b; b = t; }
    if (c > d) { t = c; c = d; d = t; }
    if (e > g) { t = e; e = g; g = t; }
    if (b > c) { t = b; b = c; c = t; }
    if (d > e) { t = d; d = e; e = t; }
    out[p] = (c + d + 1) >> 1;
  }
}

function median7(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!, f4 = f[4]!, f5 = f[5]!, f6 = f[6]!;
  for (let p = from; p < to; p++) {
    let a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!, e = f4[p]!, g = f5[p]!, h = f6[p]!, t;
    if (a > g) { t = a; a = g; g = t; }
    if (a > d) { t = a; a = d; d = t; }
    if (b > h) { t = b; b = h; h = t; }
    if (c > e) { t = c; c = e; e = t; }
    if (a > b) { t = a; a = b; b = t; }
    if (d > g) { t = d; d = g; g = t; }
    if (c > h) { t = c; c = h; h = t; }
    if (c > d) { t = c; c = d; d = t; }
    if (d > h) { t = d; d = h; h = t; }
    if (e > g) { t = e; e = g; g = t; }
    if (b > e) { t = b; b = e; e = t; }
    if (b > d) { t = b; b = d; d = t; }
    out[p] = d < e ? d : e;
  }
}

function medianSorted(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const n = f.length;
  const lower = (n - 1) >> 1;
  const upper = n >> 1;
  const values = new Int32Array(n);
  for (let p = from; p < to; p++) {
    // insertion sort: for a handful of values it beats anything with more bookkeeping
    for (let k = 0; k < n; k++) {
      const v = f[k]![p]!;
      let j = k - 1;
      while (j >= 0 && values[j]! > v) {
        values[j + 1] = values[j]!;
        j--;
      }
      values[j + 1] = v;
    }
    out[p] = (values[lower]! + values[upper]! + 1) >> 1;
  }
}

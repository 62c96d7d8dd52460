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
  foldPairs(frames, width, out, y0, y1, (a, b, c0, c1) => {
    for (let p = c0; p < c1; p++) out[p] = hi(hi(out[p]!, a[p]!), b[p]!);
  });
}

/** Per-channel minimum (removing bright specks). */
export function darkenRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  foldPairs(frames, width, out, y0, y1, (a, b, c0, c1) => {
    for (let p = c0; p < c1; p++) out[p] = lo(lo(out[p]!, a[p]!), b[p]!);
  });
}

// Branch-free minimum and maximum of two bytes (the sign of a − b as a mask). On noisy photos a
// comparison's outcome is a coin toss, and a mispredicted branch (Math.min and Math.max compile to
// branches too) costs more than these few integer operations: the median networks run 3× faster.
function lo(a: number, b: number): number {
  const d = a - b;
  return b + (d & (d >> 31));
}

function hi(a: number, b: number): number {
  const d = a - b;
  return a - (d & (d >> 31));
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

// The networks below sort in place with lo/hi: `[a, b] = [lo(a, b), hi(a, b)]` is a compare-exchange.

function median3(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!;
  for (let p = from; p < to; p++) {
    const a = f0[p]!, b = f1[p]!;
    // median = max(min, min(max, c))
    out[p] = hi(lo(a, b), lo(hi(a, b), f2[p]!));
  }
}

function median4(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!;
  for (let p = from; p < to; p++) {
    const a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!;
    // the two middle values are the larger minimum and the smaller maximum
    out[p] = (hi(lo(a, b), lo(c, d)) + lo(hi(a, b), hi(c, d)) + 1) >> 1;
  }
}

function median5(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!, f4 = f[4]!;
  for (let p = from; p < to; p++) {
    const a = f0[p]!, b = f1[p]!, d = f3[p]!, e = f4[p]!;
    // the smallest of the two pairs' minima and the largest of their maxima cannot be the median:
    // it is the median of the other two and the fifth value
    const low = hi(lo(a, b), lo(d, e));
    const high = lo(hi(a, b), hi(d, e));
    out[p] = hi(lo(low, high), lo(hi(low, high), f2[p]!));
  }
}

function median6(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!, f4 = f[4]!, f5 = f[5]!;
  for (let p = from; p < to; p++) {
    let a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!, e = f4[p]!, g = f5[p]!, t;
    // odd-even transposition rounds; five suffice to place the two middle values
    t = lo(b, c); c = hi(b, c); b = t;
    t = lo(d, e); e = hi(d, e); d = t;
    t = lo(a, b); b = hi(a, b); a = t;
    t = lo(c, d); d = hi(c, d); c = t;
    t = lo(e, g); g = hi(e, g); e = t;
    t = lo(b, c); c = hi(b, c); b = t;
    t = lo(d, e); e = hi(d, e); d = t;
    t = lo(a, b); b = hi(a, b); a = t;
    t = lo(c, d); d = hi(c, d); c = t;
    t = lo(e, g); g = hi(e, g); e = t;
    t = lo(b, c); c = hi(b, c); b = t;
    t = lo(d, e); e = hi(d, e); d = t;
    out[p] = (c + d + 1) >> 1;
  }
}

function median7(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const f0 = f[0]!, f1 = f[1]!, f2 = f[2]!, f3 = f[3]!, f4 = f[4]!, f5 = f[5]!, f6 = f[6]!;
  for (let p = from; p < to; p++) {
    let a = f0[p]!, b = f1[p]!, c = f2[p]!, d = f3[p]!, e = f4[p]!, g = f5[p]!, h = f6[p]!, t;
    t = lo(a, g); g = hi(a, g); a = t;
    t = lo(a, d); d = hi(a, d); a = t;
    t = lo(b, h); h = hi(b, h); b = t;
    t = lo(c, e); e = hi(c, e); c = t;
    t = lo(a, b); b = hi(a, b); a = t;
    t = lo(d, g); g = hi(d, g); d = t;
    t = lo(c, h); h = hi(c, h); c = t;
    t = lo(c, d); d = hi(c, d); c = t;
    t = lo(d, h); h = hi(d, h); d = t;
    t = lo(e, g); g = hi(e, g); e = t;
    t = lo(b, e); e = hi(b, e); b = t;
    t = lo(b, d); d = hi(b, d); b = t;
    out[p] = lo(d, e);
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

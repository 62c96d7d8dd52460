import { MEDIAN_SIMD_MAX_FRAMES, SIMD_MAX_FRAMES, stackBytes } from './stack-simd.js';

/**
 * Point-wise statistics over N aligned frames (mean, median, lighten, darken), each over a row
 * range [y0, y1) so the caller can split rows across pool threads. Every channel value of every
 * pixel is independent, so the loops run over the bytes of the range: in WebAssembly SIMD
 * (point/stack-simd.ts) up to SIMD_MAX_FRAMES frames, in the JavaScript loops below for more.
 */

/** The shape every point-wise kernel shares: frames' RGB bytes in, `out` rows [y0, y1) written. */
export type PointKernel = (frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number) => void;

// Bytes per chunk: a chunk of every frame and of the accumulator stays in cache between passes.
const CHUNK = 8192;

/** Per-channel mean, rounded to nearest (halves up). */
export function meanRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  meanBytes(frames, out, y0 * width * 3, y1 * width * 3);
}

/** Bytes [from, to) of `out` as the mean of the frames' bytes there, rounded to nearest (halves up); for rows or parts of rows. */
export function meanBytes(frames: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  if (frames.length <= SIMD_MAX_FRAMES) return stackBytes('mean', frames, out, from, to);
  const n = frames.length;
  const end = to;
  // sum → round(sum / n), so the hot loop has no division
  const rounded = new Uint8Array(255 * n + 1);
  for (let s = 0; s < rounded.length; s++) rounded[s] = Math.floor((2 * s + n) / (2 * n));
  const acc = new Int32Array(CHUNK);
  for (let c0 = from; c0 < end; c0 += CHUNK) {
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
  if (frames.length <= SIMD_MAX_FRAMES) return stackBytes('lighten', frames, out, y0 * width * 3, y1 * width * 3);
  foldPairs(frames, width, out, y0, y1, (a, b, c0, c1) => {
    for (let p = c0; p < c1; p++) out[p] = hi(hi(out[p]!, a[p]!), b[p]!);
  });
}

/** Per-channel minimum (removing bright specks). */
export function darkenRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  if (frames.length <= SIMD_MAX_FRAMES) return stackBytes('darken', frames, out, y0 * width * 3, y1 * width * 3);
  foldPairs(frames, width, out, y0, y1, (a, b, c0, c1) => {
    for (let p = c0; p < c1; p++) out[p] = lo(lo(out[p]!, a[p]!), b[p]!);
  });
}

// Branch-free minimum and maximum of two bytes (the sign of a − b as a mask). On noisy photos a
// comparison's outcome is a coin toss, and a mispredicted branch (Math.min and Math.max compile to
// branches too) costs more than these few integer operations.
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
 * Up to MEDIAN_SIMD_MAX_FRAMES frames a sorting network in WebAssembly SIMD; beyond, each value set is sorted.
 */
export function medianRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  const from = y0 * width * 3;
  const to = y1 * width * 3;
  if (frames.length <= MEDIAN_SIMD_MAX_FRAMES) return stackBytes('median', frames, out, from, to);
  medianSorted(frames, out, from, to);
}

function medianSorted(f: Uint8Array[], out: Uint8Array, from: number, to: number): void {
  const n = f.length;
  const lower = (n - 1) >> 1;
  const upper = n >> 1;
  const values = new Int32Array(n);
  for (let p = from; p < to; p++) {
    // insertion sort: the rare job with this many frames is not worth more bookkeeping
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

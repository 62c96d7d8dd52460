import { correlationAfterWarp } from './grey.js';
import type { FeatureMatch } from './cv.js';
import { cornerDisplacement, invert, multiply, normalise, type Homography } from './homography.js';
import { solveSymmetric } from './linear.js';

/**
 * Sub-pixel refinement of a feature homography on the thumbnails, by inverse-compositional
 * Lucas–Kanade (Baker & Matthews 2004) on all pixels: keypoints alone leave the corners ~1 px
 * off, which the full-size warp multiplies by the thumbnail factor. OpenCV's ECC does the same
 * job but takes ~20× longer in wasm. Runs in a pool thread, inside refineEstimate.
 */

/** Thumbnail pixels sampled at most (on a regular grid), enough for a 0.05 px estimate. */
const MAX_SAMPLES = 150_000;
/** Stop once an update moves the corners less than this (thumbnail pixels). */
const CONVERGED = 0.005;
const MAX_ITERATIONS = 30;

type Nine = [number, number, number, number, number, number, number, number, number];

// Each pixel loop is a function of its own at module level: V8 optimises small functions as a
// whole and keeps that code from call to call, where one large function with several hot loops
// was compiled loop by loop on every call (a thread refines only a few times per job).

/** The samples: every `step`-th pixel of every `step`-th row, one pixel in from the edges. */
interface Samples {
  n: number;
  xs: Int32Array;
  ys: Int32Array;
}

function samplesOf(width: number, height: number): Samples {
  const step = Math.max(1, Math.ceil(Math.sqrt((width * height) / MAX_SAMPLES)));
  const n = Math.max(0, Math.ceil((width - 2) / step)) * Math.max(0, Math.ceil((height - 2) / step));
  const xs = new Int32Array(n);
  const ys = new Int32Array(n);
  for (let y = 1, s = 0; y < height - 1; y += step) {
    for (let x = 1; x < width - 1; x += step, s++) {
      xs[s] = x;
      ys[s] = y;
    }
  }
  return { n, xs, ys };
}

/**
 * The template's steepest-descent images at the samples (8 per sample), its values there and the
 * Gauss–Newton Hessian; parameters in centred coordinates scaled by 1 / half.
 */
function steepestDescent(template: Float32Array, width: number, height: number, half: number, { n, xs, ys }: Samples) {
  const cx = (width - 1) / 2;
  const cy = (height - 1) / 2;
  const steepest = new Float32Array(n * 8);
  const values = new Float32Array(n);
  // The Hessian's upper triangle, summed in sample order (the lower one is its mirror: sd[k]·sd[m] = sd[m]·sd[k]).
  const upper = new Float64Array(64);
  const sd = new Float64Array(8);
  for (let s = 0; s < n; s++) {
    const x = xs[s]!;
    const y = ys[s]!;
    const i = y * width + x;
    const gx = ((template[i + 1]! - template[i - 1]!) / 2) * half;
    const gy = ((template[i + width]! - template[i - width]!) / 2) * half;
    const u = (x - cx) / half;
    const v = (y - cy) / half;
    const along = -(gx * u + gy * v);
    sd[0] = gx * u;
    sd[1] = gx * v;
    sd[2] = gx;
    sd[3] = gy * u;
    sd[4] = gy * v;
    sd[5] = gy;
    sd[6] = along * u;
    sd[7] = along * v;
    for (let k = 0; k < 8; k++) {
      const a = sd[k]!;
      steepest[s * 8 + k] = a;
      for (let m = k; m < 8; m++) upper[k * 8 + m]! += a * sd[m]!;
    }
    values[s] = template[i]!;
  }
  const hessian = new Float64Array(64);
  for (let k = 0; k < 8; k++) for (let m = 0; m < 8; m++) hessian[k * 8 + m] = upper[Math.min(k, m) * 8 + Math.max(k, m)]!;
  return { steepest, values, hessian };
}

/**
 * `image` sampled through `h` at the samples, bilinear, into `warped` (float32); `valid` marks
 * the samples whose source lies inside the image (the others keep what they held).
 */
function sampleThrough(image: Float32Array, width: number, height: number, h: Homography, { n, xs, ys }: Samples, warped: Float32Array, valid: Uint8Array): void {
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h as Nine;
  for (let s = 0; s < n; s++) {
    const x = xs[s]!;
    const y = ys[s]!;
    const w = h6 * x + h7 * y + h8;
    const sx = (h0 * x + h1 * y + h2) / w;
    const sy = (h3 * x + h4 * y + h5) / w;
    valid[s] = sx >= 0 && sy >= 0 && sx < width - 1 && sy < height - 1 ? 1 : 0;
    if (!valid[s]) continue;
    const x0 = sx | 0;
    const y0 = sy | 0;
    const fx = sx - x0;
    const fy = sy - y0;
    const i = y0 * width + x0;
    const top = image[i]! + fx * (image[i + 1]! - image[i]!);
    const bottom = image[i + width]! + fx * (image[i + width + 1]! - image[i + width]!);
    warped[s] = top + fy * (bottom - top);
  }
}

/** Σ steepest·e over the valid samples, e the residual of the warped frame (after gain and offset) clipped at ±clip. */
function descent(steepest: Float32Array, values: Float32Array, warped: Float32Array, valid: Uint8Array, n: number, gain: number, offset: number, clip: number): Float64Array {
  // The eight sums in locals, each in sample order (declared one by one: see lineup.ts blockShifts).
  let g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0;
  for (let s = 0; s < n; s++) {
    if (!valid[s]) continue;
    const e = Math.max(-clip, Math.min(clip, gain * warped[s]! + offset - values[s]!));
    const o = s * 8;
    g0 += steepest[o]! * e;
    g1 += steepest[o + 1]! * e;
    g2 += steepest[o + 2]! * e;
    g3 += steepest[o + 3]! * e;
    g4 += steepest[o + 4]! * e;
    g5 += steepest[o + 5]! * e;
    g6 += steepest[o + 6]! * e;
    g7 += steepest[o + 7]! * e;
  }
  return Float64Array.of(g0, g1, g2, g3, g4, g5, g6, g7);
}

/** Gain and offset that match the warped frame's levels to the template's over the valid samples, and the clipping level of the residuals; null where too few samples overlap or the frame is flat there. */
function levels(values: Float32Array, warped: Float32Array, valid: Uint8Array, n: number): { gain: number; offset: number; clip: number } | null {
  let count = 0;
  let mt = 0;
  let mi = 0;
  for (let s = 0; s < n; s++) {
    if (!valid[s]) continue;
    count++;
    mt += values[s]!;
    mi += warped[s]!;
  }
  if (count < n / 4) return null;
  mt /= count;
  mi /= count;
  let vt = 0;
  let vi = 0;
  for (let s = 0; s < n; s++) {
    if (!valid[s]) continue;
    vt += (values[s]! - mt) ** 2;
    vi += (warped[s]! - mi) ** 2;
  }
  if (!(vi > 0)) return null;
  const gain = Math.sqrt(vt / vi);
  const offset = mt - gain * mi;
  const residuals: number[] = [];
  for (let s = 0; s < n; s += 7) if (valid[s]) residuals.push(Math.abs(gain * warped[s]! + offset - values[s]!));
  residuals.sort((a, b) => a - b);
  return { gain, offset, clip: Math.max(1, 3 * 1.4826 * (residuals[residuals.length >> 1] ?? 0)) };
}

/**
 * Refines `start` (reference thumbnail pixel → frame thumbnail pixel) so that the frame, warped
 * by it, best matches the reference in least squares, after a global gain and offset (exposure)
 * and with residuals clipped at three robust deviations (moving objects). Both thumbnails come
 * smoothed (align/grey.ts `smooth`).
 */
export function refineHomography(
  template: Float32Array,
  image: Float32Array,
  width: number,
  height: number,
  start: Homography,
): Homography {
  // Parameters act in centred coordinates scaled to about ±1, which keeps the 8×8 system well conditioned.
  const half = Math.max(width, height) / 2;
  const cx = (width - 1) / 2;
  const cy = (height - 1) / 2;
  const toUnit = [1 / half, 0, -cx / half, 0, 1 / half, -cy / half, 0, 0, 1];
  const fromUnit = [half, 0, cx, 0, half, cy, 0, 0, 1];

  const samples = samplesOf(width, height);
  const { n } = samples;
  const { steepest, values, hessian } = steepestDescent(template, width, height, half, samples);
  const warped = new Float32Array(n);
  const valid = new Uint8Array(n);
  sampleThrough(image, width, height, start, samples, warped, valid);
  const level = levels(values, warped, valid, n);
  if (!level) return start;
  const { gain, offset, clip } = level;

  let h = start;
  for (let iteration = 0; iteration < MAX_ITERATIONS; iteration++) {
    if (iteration > 0) sampleThrough(image, width, height, h, samples, warped, valid);
    const g = descent(steepest, values, warped, valid, n, gain, offset, clip);
    const dp = solveSymmetric(hessian, g, 8);
    if (!dp) return start;
    const [p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0] = dp;
    const update = multiply(fromUnit, multiply(invert([1 + p0, p1, p2, p3, 1 + p4, p5, p6, p7, 1]), toUnit));
    h = normalise(multiply(h, update));
    if (cornerDisplacement(update, width, height) < CONVERGED) break;
  }
  return h;
}

export interface Estimate extends FeatureMatch {
  /** Normalised correlation with the reference after warping by `homography` (smoothed thumbnails). */
  correlation: number;
}

/**
 * A feature homography (align/cv.ts) refined on the thumbnails' pixels, with the correlation it
 * brings; the refinement is kept only where it helps, so a refinement gone astray never costs a frame.
 * `refSmoothed` and `frameSmoothed` are the thumbnails already smoothed (align/grey.ts `smooth`,
 * made once per frame by the line-up checks, align/lineup.ts).
 */
export function refineEstimate(match: FeatureMatch, refSmoothed: Float32Array, frameSmoothed: Float32Array, width: number, height: number): Estimate {
  const ransac = match.homography;
  if (!ransac) return { ...match, correlation: 0 };
  const a = refSmoothed;
  const b = frameSmoothed;
  const refined = refineHomography(a, b, width, height, ransac);
  const before = correlationAfterWarp(a, b, width, height, ransac);
  const after = correlationAfterWarp(a, b, width, height, refined);
  return { ...match, homography: after > before ? refined : ransac, correlation: Math.max(before, after) };
}

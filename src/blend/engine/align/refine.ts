import { correlationAfterWarp, smooth } from './grey.js';
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

  const step = Math.max(1, Math.ceil(Math.sqrt((width * height) / MAX_SAMPLES)));
  const xs: number[] = [];
  const ys: number[] = [];
  for (let y = 1; y < height - 1; y += step) {
    for (let x = 1; x < width - 1; x += step) {
      xs.push(x);
      ys.push(y);
    }
  }
  const n = xs.length;
  const steepest = new Float32Array(n * 8);
  const values = new Float32Array(n);
  const hessian = new Float64Array(64);
  for (let s = 0; s < n; s++) {
    const x = xs[s]!;
    const y = ys[s]!;
    const i = y * width + x;
    const gx = ((template[i + 1]! - template[i - 1]!) / 2) * half;
    const gy = ((template[i + width]! - template[i - width]!) / 2) * half;
    const u = (x - cx) / half;
    const v = (y - cy) / half;
    const sd = [gx * u, gx * v, gx, gy * u, gy * v, gy, -(gx * u + gy * v) * u, -(gx * u + gy * v) * v];
    for (let k = 0; k < 8; k++) {
      steepest[s * 8 + k] = sd[k]!;
      for (let m = 0; m < 8; m++) hessian[k * 8 + m]! += sd[k]! * sd[m]!;
    }
    values[s] = template[i]!;
  }

  const warped = new Float32Array(n);
  const valid = new Uint8Array(n);
  const sample = (h: Homography): void => {
    const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h as [number, number, number, number, number, number, number, number, number];
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
  };

  // Gain and offset that match the frame's levels to the reference's where they overlap, and the clipping level.
  sample(start);
  let count = 0;
  let mt = 0;
  let mi = 0;
  for (let s = 0; s < n; s++) {
    if (!valid[s]) continue;
    count++;
    mt += values[s]!;
    mi += warped[s]!;
  }
  if (count < n / 4) return start;
  mt /= count;
  mi /= count;
  let vt = 0;
  let vi = 0;
  for (let s = 0; s < n; s++) {
    if (!valid[s]) continue;
    vt += (values[s]! - mt) ** 2;
    vi += (warped[s]! - mi) ** 2;
  }
  if (!(vi > 0)) return start;
  const gain = Math.sqrt(vt / vi);
  const offset = mt - gain * mi;
  const residuals: number[] = [];
  for (let s = 0; s < n; s += 7) if (valid[s]) residuals.push(Math.abs(gain * warped[s]! + offset - values[s]!));
  residuals.sort((a, b) => a - b);
  const clip = Math.max(1, 3 * 1.4826 * (residuals[residuals.length >> 1] ?? 0));

  let h = start;
  for (let iteration = 0; iteration < MAX_ITERATIONS; iteration++) {
    if (iteration > 0) sample(h);
    const g = new Float64Array(8);
    for (let s = 0; s < n; s++) {
      if (!valid[s]) continue;
      const e = Math.max(-clip, Math.min(clip, gain * warped[s]! + offset - values[s]!));
      for (let k = 0; k < 8; k++) g[k]! += steepest[s * 8 + k]! * e;
    }
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
 * `refSmoothed` is the reference's thumbnail already smoothed (made once per job, align/lineup.ts).
 */
export function refineEstimate(match: FeatureMatch, refSmoothed: Float32Array, frameGrey: Uint8Array, width: number, height: number): Estimate {
  const ransac = match.homography;
  if (!ransac) return { ...match, correlation: 0 };
  const a = refSmoothed;
  const b = smooth(frameGrey, width, height);
  const refined = refineHomography(a, b, width, height, ransac);
  const before = correlationAfterWarp(a, b, width, height, ransac);
  const after = correlationAfterWarp(a, b, width, height, refined);
  return { ...match, homography: after > before ? refined : ransac, correlation: Math.max(before, after) };
}

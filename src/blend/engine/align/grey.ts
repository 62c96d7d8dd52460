import type { Homography } from './homography.js';

/**
 * Pixel loops on the small grey copies ("thumbnails") alignment decides on, run in pool threads
 * (threads/pool.ts). None of them touches OpenCV, so a static-camera set never loads it.
 */

/**
 * 3×3 binomial blur, edges replicated. Alignment compares smoothed thumbnails: steadier
 * gradients, and sensor noise no longer dominates the correlations.
 */
export function smooth(grey: Uint8Array, width: number, height: number): Float32Array {
  // Sums of three weighted neighbours are whole numbers (≤ 4 × 255), exact in 16 bits.
  const across = new Uint16Array(width * height);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    if (width === 1) {
      across[row] = 4 * grey[row]!;
      continue;
    }
    across[row] = 3 * grey[row]! + grey[row + 1]!;
    for (let i = row + 1, end = row + width - 1; i < end; i++) across[i] = grey[i - 1]! + 2 * grey[i]! + grey[i + 1]!;
    across[row + width - 1] = grey[row + width - 2]! + 3 * grey[row + width - 1]!;
  }
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    const up = Math.max(0, y - 1) * width;
    const down = Math.min(height - 1, y + 1) * width;
    const row = y * width;
    for (let x = 0; x < width; x++) out[row + x] = (across[up + x]! + 2 * across[row + x]! + across[down + x]!) / 16;
  }
  return out;
}

/** Each 2 × 2 block of `image` averaged: the next pyramid level. */
export function halve(image: Float32Array, width: number, height: number): Float32Array {
  const w = width >> 1;
  const out = new Float32Array(w * (height >> 1));
  for (let y = 0; y < height >> 1; y++) {
    for (let x = 0; x < w; x++) {
      const i = 2 * y * width + 2 * x;
      out[y * w + x] = (image[i]! + image[i + 1]! + image[i + width]! + image[i + width + 1]!) / 4;
    }
  }
  return out;
}

/** Running sums for a normalised cross-correlation. */
class Correlation {
  private n = 0;
  private sa = 0;
  private sb = 0;
  private saa = 0;
  private sbb = 0;
  private sab = 0;

  add(a: number, b: number): void {
    this.n++;
    this.sa += a;
    this.sb += b;
    this.saa += a * a;
    this.sbb += b * b;
    this.sab += a * b;
  }

  /** In [-1, 1]; 0 when either side is flat or nothing was added. */
  value(): number {
    const { n } = this;
    const va = this.saa - (this.sa * this.sa) / n;
    const vb = this.sbb - (this.sb * this.sb) / n;
    return n > 0 && va > 0 && vb > 0 ? (this.sab - (this.sa * this.sb) / n) / Math.sqrt(va * vb) : 0;
  }
}

/** Normalised correlation of two images of the same size, pixel for pixel. */
export function correlation(a: Float32Array, b: Float32Array): number {
  // Correlation's sums in locals, in the same order: the same value, without a memory round trip per pixel.
  let sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    sa += x;
    sb += y;
    saa += x * x;
    sbb += y * y;
    sab += x * y;
  }
  const n = a.length;
  const va = saa - (sa * sa) / n;
  const vb = sbb - (sb * sb) / n;
  return n > 0 && va > 0 && vb > 0 ? (sab - (sa * sb) / n) / Math.sqrt(va * vb) : 0;
}

/** Pixels a correlation or shift needs at most for a steady value; more are skipped on a regular grid. */
export const ENOUGH_SAMPLES = 200_000;
export const gridStep = (pixels: number, enough: number) => Math.max(1, Math.ceil(Math.sqrt(pixels / enough)));

/**
 * `frame` at the point that homography `h` (reference pixel → frame pixel) takes reference pixel
 * (x, y) to, bilinear; NaN when that point lies outside the frame.
 */
export function sampleThroughHomography(frame: Float32Array, width: number, height: number, h: Homography, x: number, y: number): number {
  const w = h[6]! * x + h[7]! * y + h[8]!;
  const sx = (h[0]! * x + h[1]! * y + h[2]!) / w;
  const sy = (h[3]! * x + h[4]! * y + h[5]!) / w;
  if (!(sx >= 0 && sy >= 0 && sx <= width - 1 && sy <= height - 1)) return NaN;
  const x0 = Math.min(sx | 0, width - 2);
  const y0 = Math.min(sy | 0, height - 2);
  const fx = sx - x0;
  const fy = sy - y0;
  const i = y0 * width + x0;
  const top = frame[i]! + fx * (frame[i + 1]! - frame[i]!);
  const bottom = frame[i + width]! + fx * (frame[i + width + 1]! - frame[i + width]!);
  return top + fy * (bottom - top);
}

/**
 * Normalised correlation of `ref` with `frame` brought onto it by `h` (reference pixel → frame
 * pixel), bilinear, over the reference pixels whose source lies inside the frame.
 */
export function correlationAfterWarp(ref: Float32Array, frame: Float32Array, width: number, height: number, h: Homography): number {
  const c = new Correlation();
  const step = gridStep(width * height, ENOUGH_SAMPLES);
  for (let y = 0; y < height; y += step) {
    for (let x = 0; x < width; x += step) {
      const value = sampleThroughHomography(frame, width, height, h, x, y);
      if (!Number.isNaN(value)) c.add(ref[y * width + x]!, value);
    }
  }
  return c.value();
}

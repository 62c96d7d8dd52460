import FFT from 'fft.js';
import { gridStep, halve, sampleThroughHomography } from './grey.js';
import { IDENTITY, isPlausible, multiply, normalise, type Homography } from './homography.js';
import { refineHomography } from './refine.js';

/**
 * Alignment's weaker evidence, for frames feature matching cannot align (align/align.ts): a global
 * motion that moving people and focus blur cannot fool, and the block agreement that says whether
 * a frame shows the reference's scene and which motion brings it there best. Runs in pool threads
 * on the grey thumbnails, without OpenCV.
 *
 * - The shift: phase correlation of the thumbnails' gradients (gx + i·gy as one complex image,
 *   under a Hann window) at ~256 px. Gradients leave out the levels (exposure), whitening the
 *   cross-power spectrum leaves out how much detail each frame has (focus blur). People who moved
 *   make peaks of their own, so the strongest peaks and the shift most blocks agree on (each
 *   block's own phase correlation) are all tried, and block agreement picks the scene's.
 * - That shift refined into a homography by robust Lucas–Kanade (align/refine.ts), for a small rotation.
 * - Block agreement: the frame is cut into BLOCKS × BLOCKS blocks at half the thumbnail's size,
 *   and each textured block of the reference agrees with the frame brought onto it when their
 *   gradients correlate (zero-mean normalised, ≥ AGREES). Gradient correlation within a block
 *   ignores the block's gain and offset (exposure, even a bent tone curve) and most of a blur;
 *   a block a person walked into disagrees and is outvoted by the static ones.
 */

/** Blocks per side for the agreement. */
const BLOCKS = 8;
/** Correlation of gradients from which a block agrees: far above what unrelated textures reach (~±0.2), below what focus blur leaves of the same texture. */
export const AGREES = 0.5;
/** Mean squared gradient (grey levels² per pixel, half-size thumbnail) from which a reference block has texture to agree on; noise of a few levels stays far below. */
const TEXTURE = 1;
/** Samples block agreement takes at most per motion (on a regular grid beyond): a few hundred per block. */
const AGREEMENT_SAMPLES = 50_000;
/** Longest side (pixels) of the level phase correlation runs on. */
const CORRELATION_SIDE = 256;

/** How each textured block of the reference agrees with the frame under one motion. */
export interface BlockScores {
  /** Gradient correlation per textured block (same order for every motion of one frame); NaN where the frame does not cover the block. */
  correlations: number[];
}

/** Block agreement of a frame under several candidate motions. */
export interface Agreement {
  /** Reference blocks with texture enough to tell. */
  textured: number;
  /** Per candidate, in the order given. */
  scores: BlockScores[];
}

/** `image` (width × height) halved `times` times, with its size. */
function halvedTimes(image: Float32Array, width: number, height: number, times: number): { image: Float32Array; width: number; height: number } {
  let [img, w, h] = [image, width, height];
  for (let k = 0; k < times; k++) [img, w, h] = [halve(img, w, h), w >> 1, h >> 1];
  return { image: img, width: w, height: h };
}

/** A homography on the thumbnail as one on the thumbnail halved `times` times (a pixel u there averages thumbnail pixels from 2u). */
export function toHalved(h: Homography, times: number): Homography {
  const f = 2 ** times;
  const c = (f - 1) / 2;
  const toThumb = [f, 0, c, 0, f, c, 0, 0, 1];
  const toHalf = [1 / f, 0, -c / f, 0, 1 / f, -c / f, 0, 0, 1];
  return normalise(multiply(multiply(toHalf, h), toThumb));
}

/** The inverse of toHalved. */
function fromHalved(h: Homography, times: number): Homography {
  const f = 2 ** times;
  const c = (f - 1) / 2;
  const toThumb = [f, 0, c, 0, f, c, 0, 0, 1];
  const toHalf = [1 / f, 0, -c / f, 0, 1 / f, -c / f, 0, 0, 1];
  return normalise(multiply(multiply(toThumb, h), toHalf));
}

/** Block `b`'s pixel range [x0, x1) × [y0, y1), one pixel in from the edges (gradients read both neighbours). */
function blockBounds(b: number, width: number, height: number): [number, number, number, number] {
  const [col, row] = [b % BLOCKS, Math.floor(b / BLOCKS)];
  return [
    Math.max(1, Math.floor((col * width) / BLOCKS)),
    Math.min(width - 1, Math.floor(((col + 1) * width) / BLOCKS)),
    Math.max(1, Math.floor((row * height) / BLOCKS)),
    Math.min(height - 1, Math.floor(((row + 1) * height) / BLOCKS)),
  ];
}

// The pixel loops below are module-level functions: V8 optimises them whole and keeps that code
// from call to call (a thread judges only a few frames per job).

/** Whether the reference's block [x0, x1) × [y0, y1) has texture to agree on (TEXTURE), on the sampling grid. */
function isTextured(ref: Float32Array, width: number, [x0, x1, y0, y1]: [number, number, number, number], step: number): boolean {
  let sx = 0;
  let sy = 0;
  let ss = 0;
  let count = 0;
  for (let y = y0; y < y1; y += step) {
    for (let x = x0; x < x1; x += step) {
      const i = y * width + x;
      const gx = (ref[i + 1]! - ref[i - 1]!) / 2;
      const gy = (ref[i + width]! - ref[i - width]!) / 2;
      sx += gx;
      sy += gy;
      ss += gx * gx + gy * gy;
      count++;
    }
  }
  return count >= 16 && (ss - (sx * sx + sy * sy) / count) / count >= TEXTURE;
}

/** `frame` brought onto the reference by `h`, bilinear, into `warped`; `valid` marks the pixels whose source lies inside the frame. */
function warpOnto(frame: Float32Array, width: number, height: number, h: Homography, warped: Float32Array, valid: Uint8Array): void {
  valid.fill(0);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const value = sampleThroughHomography(frame, width, height, h, x, y);
      if (Number.isNaN(value)) continue;
      warped[y * width + x] = value;
      valid[y * width + x] = 1;
    }
  }
}

/**
 * Zero-mean correlation of the gradient vectors (x and y parts as one signal each) of `ref` and
 * `image` over a block, on the sampling grid; with `valid`, only where the image's four
 * neighbours are valid, and NaN when fewer than half the block's samples are.
 */
function gradientCorrelation(ref: Float32Array, image: Float32Array, valid: Uint8Array | null, width: number, [x0, x1, y0, y1]: [number, number, number, number], step: number): number {
  let count = 0;
  let total = 0;
  let ax = 0;
  let ay = 0;
  let fxs = 0;
  let fys = 0;
  let aa = 0;
  let ff = 0;
  let af = 0;
  for (let y = y0; y < y1; y += step) {
    for (let x = x0; x < x1; x += step) {
      const i = y * width + x;
      total++;
      if (valid && !(valid[i - 1]! & valid[i + 1]! & valid[i - width]! & valid[i + width]!)) continue;
      const gx = (image[i + 1]! - image[i - 1]!) / 2;
      const gy = (image[i + width]! - image[i - width]!) / 2;
      const rx = (ref[i + 1]! - ref[i - 1]!) / 2;
      const ry = (ref[i + width]! - ref[i - width]!) / 2;
      count++;
      ax += rx;
      ay += ry;
      fxs += gx;
      fys += gy;
      aa += rx * rx + ry * ry;
      ff += gx * gx + gy * gy;
      af += rx * gx + ry * gy;
    }
  }
  if (count < total / 2) return NaN;
  const va = aa - (ax * ax + ay * ay) / count;
  const vf = ff - (fxs * fxs + fys * fys) / count;
  return va > 0 && vf > 0 ? (af - (ax * fxs + ay * fys) / count) / Math.sqrt(va * vf) : 0;
}

/**
 * Gradient correlation per textured reference block between `ref` and `frame` brought onto it
 * by `h` (reference pixel → frame pixel), both at the same size, bilinear.
 */
export function blockAgreement(ref: Float32Array, frame: Float32Array, width: number, height: number, motions: Homography[]): Agreement {
  // Every pixel up to AGREEMENT_SAMPLES, then on a regular grid: a few hundred per block suffice.
  const step = gridStep(width * height, AGREEMENT_SAMPLES);
  const bounds = Array.from({ length: BLOCKS * BLOCKS }, (_, b) => blockBounds(b, width, height));
  const textured = bounds.flatMap((block, b) => (isTextured(ref, width, block, step) ? [b] : []));

  const n = width * height;
  let warped = new Float32Array(0);
  let valid = new Uint8Array(0);
  const scores = motions.map((h): BlockScores => {
    const still = h.every((v, k) => v === (k % 4 === 0 ? 1 : 0));
    if (!still) {
      if (warped.length !== n) (warped = new Float32Array(n)), (valid = new Uint8Array(n));
      warpOnto(frame, width, height, h, warped, valid);
    }
    const correlations = textured.map((b) => gradientCorrelation(ref, still ? frame : warped, still ? null : valid, width, bounds[b]!, step));
    return { correlations };
  });
  return { textured: textured.length, scores };
}

/** Separable 3×3 binomial blur of a float image, edges replicated: takes the edge off a focus blur's difference in detail before gradients are compared. */
export function soften(image: Float32Array, width: number, height: number): Float32Array {
  const across = new Float32Array(image.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0, i = y * width; x < width; x++, i++) {
      across[i] = image[x > 0 ? i - 1 : i]! + 2 * image[i]! + image[x < width - 1 ? i + 1 : i]!;
    }
  }
  const out = new Float32Array(image.length);
  for (let y = 0; y < height; y++) {
    const [up, down] = [Math.max(0, y - 1) * width, Math.min(height - 1, y + 1) * width];
    for (let x = 0; x < width; x++) out[y * width + x] = (across[up + x]! + 2 * across[y * width + x]! + across[down + x]!) / 16;
  }
  return out;
}

/** The level block agreement is measured on: the smoothed thumbnail halved once and softened. */
export function agreementLevel(smoothed: Float32Array, width: number, height: number): Float32Array {
  return soften(halve(smoothed, width, height), width >> 1, height >> 1);
}

/** A power of two ≥ n, at least 4 (fft.js's smallest size). */
const powerOfTwo = (n: number) => Math.max(4, 2 ** Math.ceil(Math.log2(n)));

/** The 2-D FFT, in place on rows then columns, of an interleaved complex nx × ny image. */
function fft2(data: Float64Array, nx: number, ny: number, inverse: boolean): void {
  const rows = new FFT(nx);
  const columns = new FFT(ny);
  const [rowIn, rowOut] = [new Float64Array(2 * nx), new Float64Array(2 * nx)];
  for (let y = 0; y < ny; y++) {
    rowIn.set(data.subarray(2 * y * nx, 2 * (y + 1) * nx));
    if (inverse) rows.inverseTransform(rowOut, rowIn);
    else rows.transform(rowOut, rowIn);
    data.set(rowOut, 2 * y * nx);
  }
  const [colIn, colOut] = [new Float64Array(2 * ny), new Float64Array(2 * ny)];
  for (let x = 0; x < nx; x++) {
    for (let y = 0; y < ny; y++) (colIn[2 * y] = data[2 * (y * nx + x)]!), (colIn[2 * y + 1] = data[2 * (y * nx + x) + 1]!);
    if (inverse) columns.inverseTransform(colOut, colIn);
    else columns.transform(colOut, colIn);
    for (let y = 0; y < ny; y++) (data[2 * (y * nx + x)] = colOut[2 * y]!), (data[2 * (y * nx + x) + 1] = colOut[2 * y + 1]!);
  }
}

/** The spectrum of an image's gradients as one complex image gx + i·gy, under a Hann window, zero-padded to nx × ny. */
function gradientSpectrum(image: Float32Array, width: number, height: number, nx: number, ny: number): Float64Array {
  const data = new Float64Array(2 * nx * ny);
  const hann = (t: number, n: number) => 0.5 - 0.5 * Math.cos((2 * Math.PI * (t + 0.5)) / n);
  for (let y = 1; y < height - 1; y++) {
    const wy = hann(y, height);
    for (let x = 1; x < width - 1; x++) {
      const i = y * width + x;
      const w = wy * hann(x, width);
      data[2 * (y * nx + x)] = ((image[i + 1]! - image[i - 1]!) / 2) * w;
      data[2 * (y * nx + x) + 1] = ((image[i + width]! - image[i - width]!) / 2) * w;
    }
  }
  fft2(data, nx, ny, false);
  return data;
}

/** Phase-correlation peaks tried as shifts: a person who moved between frames makes a peak of their own, which may outgrow the scene's. */
const PEAKS = 8;

/** conj(A)·B, whitened, into `a` (interleaved complex, `count` values): its inverse peaks where frame(p + t) matches ref(p). */
function whiten(a: Float64Array, b: Float64Array, count: number): void {
  for (let k = 0; k < count; k++) {
    const ar = a[2 * k]!, ai = a[2 * k + 1]!, br = b[2 * k]!, bi = b[2 * k + 1]!;
    const re = ar * br + ai * bi;
    const im = ar * bi - ai * br;
    const m = Math.hypot(re, im);
    a[2 * k] = m > 1e-9 ? re / m : 0;
    a[2 * k + 1] = m > 1e-9 ? im / m : 0;
  }
}

/** The real parts of the interleaved complex nx × ny image `a` that are local maxima over their 5 × 5 neighbourhood (wrapping around), as indices. */
function localMaxima(a: Float64Array, nx: number, ny: number): number[] {
  const maxima: number[] = [];
  for (let k = 0; k < nx * ny; k++) {
    const x = k % nx, y = Math.floor(k / nx);
    const v = a[2 * k]!;
    let highest = true;
    for (let j = -2; j <= 2 && highest; j++) {
      const row = (((y + j) % ny) + ny) % ny;
      for (let i = -2; i <= 2; i++) {
        if ((i || j) && a[2 * (row * nx + ((((x + i) % nx) + nx) % nx))]! >= v) {
          highest = false;
          break;
        }
      }
    }
    if (highest) maxima.push(k);
  }
  return maxima;
}

/**
 * The shifts (dx, dy) with frame(p + shift) ≈ ref(p) that phase correlation of the gradients
 * proposes, strongest peak first, in pixels of the images given, each with its peak's height
 * (1 for a pure shift, ~0 for unrelated images).
 */
export function phaseCorrelate(ref: Float32Array, frame: Float32Array, width: number, height: number, count = PEAKS): Array<{ dx: number; dy: number; peak: number }> {
  const [nx, ny] = [powerOfTwo(width), powerOfTwo(height)];
  const a = gradientSpectrum(ref, width, height, nx, ny);
  const b = gradientSpectrum(frame, width, height, nx, ny);
  whiten(a, b, nx * ny);
  fft2(a, nx, ny, true);
  const at = (x: number, y: number) => a[2 * ((((y % ny) + ny) % ny) * nx + (((x % nx) + nx) % nx))]!;
  const maxima = localMaxima(a, nx, ny);
  maxima.sort((p, q) => a[2 * q]! - a[2 * p]!);
  // A parabola through each peak and its neighbours, for the fraction of a pixel.
  const vertex = (l: number, c: number, r: number) => (l - 2 * c + r < 0 ? (0.5 * (l - r)) / (l - 2 * c + r) : 0);
  const wrap = (v: number, n: number) => (v > n / 2 ? v - n : v);
  return maxima.slice(0, count).map((k) => {
    const [px, py] = [k % nx, Math.floor(k / nx)];
    const peak = at(px, py);
    const fx = vertex(at(px - 1, py), peak, at(px + 1, py));
    const fy = vertex(at(px, py - 1), peak, at(px, py + 1));
    return { dx: wrap(px, nx) + fx, dy: wrap(py, ny) + fy, peak };
  });
}

/** Blocks per side whose own phase correlations propose a shift each. */
const SHIFT_BLOCKS = 4;

/** The part of `image` (width wide) from (x0, y0), side × side. */
function crop(image: Float32Array, width: number, x0: number, y0: number, side: number): Float32Array {
  const out = new Float32Array(side * side);
  for (let y = 0; y < side; y++) out.set(image.subarray((y0 + y) * width + x0, (y0 + y) * width + x0 + side), y * side);
  return out;
}

/**
 * The shift most blocks agree on: each of SHIFT_BLOCKS × SHIFT_BLOCKS blocks (a power-of-two
 * square in each cell) proposes its strongest phase-correlation peak, and the proposal with the
 * most others within a pixel wins, averaged with them. A person covers some blocks and pulls
 * those anywhere; the scene's blocks agree. Null when the blocks are too small to tell.
 */
function medianBlockShift(ref: Float32Array, frame: Float32Array, width: number, height: number): { dx: number; dy: number; peak: number } | null {
  const side = 2 ** Math.floor(Math.log2(Math.min(width, height) / SHIFT_BLOCKS));
  if (side < 16) return null;
  const proposals: Array<{ dx: number; dy: number; peak: number }> = [];
  for (let by = 0; by < SHIFT_BLOCKS; by++) {
    for (let bx = 0; bx < SHIFT_BLOCKS; bx++) {
      const x0 = Math.round(((bx + 0.5) * width) / SHIFT_BLOCKS - side / 2);
      const y0 = Math.round(((by + 0.5) * height) / SHIFT_BLOCKS - side / 2);
      const [best] = phaseCorrelate(crop(ref, width, x0, y0, side), crop(frame, width, x0, y0, side), side, side, 1);
      if (best) proposals.push(best);
    }
  }
  let support: typeof proposals = [];
  for (const p of proposals) {
    const near = proposals.filter((q) => Math.hypot(q.dx - p.dx, q.dy - p.dy) <= 1);
    if (near.length > support.length) support = near;
  }
  if (support.length < 2) return null;
  const mean = (f: (q: (typeof proposals)[number]) => number) => support.reduce((sum, q) => sum + f(q), 0) / support.length;
  return { dx: mean((q) => q.dx), dy: mean((q) => q.dy), peak: mean((q) => q.peak) };
}

/** What the global estimate proposes for one frame: the shift alone, and refined into a homography (null where it is no plausible motion). */
export interface GlobalEstimate {
  translation: Homography;
  refined: Homography | null;
  /** Height of the phase correlation's peak. */
  peak: number;
}

/**
 * The global estimate of frame → reference on the grey thumbnails, already smoothed and their
 * agreement levels made (agreementLevel; once per frame, by the line-up checks, align/lineup.ts):
 * phase correlation at ~256 px, then robust Lucas–Kanade from that shift.
 */
export function globalEstimate(refSmoothed: Float32Array, refLevel: Float32Array, frame: Float32Array, frameLevel: Float32Array, width: number, height: number): GlobalEstimate {
  const times = Math.max(0, Math.ceil(Math.log2(Math.max(width, height) / CORRELATION_SIDE)));
  const r = halvedTimes(refSmoothed, width, height, times);
  const f = halvedTimes(frame, width, height, times);
  // Of the peaks, the shift most of the frame's blocks agree with: the scene's, not a passer-by's.
  const peaks = phaseCorrelate(r.image, f.image, r.width, r.height);
  const byBlocks = medianBlockShift(r.image, f.image, r.width, r.height);
  if (byBlocks) peaks.push(byBlocks);
  if (peaks.length === 0) peaks.push({ dx: 0, dy: 0, peak: 0 });
  const shifts = peaks.map(({ dx, dy }) => fromHalved([1, 0, dx, 0, 1, dy, 0, 0, 1], times));
  const agreement = blockAgreement(refLevel, frameLevel, width >> 1, height >> 1, shifts.map((h) => toHalved(h, 1)));
  const chosen = bestFitting(agreement);
  const translation = shifts[chosen]!;
  const peak = peaks[chosen]!.peak;
  const refined = refineHomography(refSmoothed, frame, width, height, translation);
  return {
    translation,
    refined: isPlausible(refined, width, height) ? refined : null,
    peak,
  };
}

/**
 * Block agreement (blockAgreement) of the frame under each candidate motion (thumbnail
 * homographies), measured at half the thumbnail's size on the levels agreementLevel made.
 */
export function judgeMotions(refLevel: Float32Array, frameLevel: Float32Array, width: number, height: number, motions: Homography[]): Agreement {
  return blockAgreement(refLevel, frameLevel, width >> 1, height >> 1, motions.map((h) => toHalved(h, 1)));
}

/** Agreement of a frame left as it is, on levels already made by agreementLevel. */
export function agreementAsIs(ref: Float32Array, frame: Float32Array, width: number, height: number): Agreement {
  return blockAgreement(ref, frame, width, height, [IDENTITY]);
}

/**
 * The motion (index into agreement.scores) that fits best: the largest sum of block correlations
 * over the blocks that agree under some motion (the scene's static part; a block no motion
 * explains, or one the frame does not cover, counts −1).
 */
export function bestFitting(agreement: Agreement): number {
  const fit = motionFits(agreement);
  return fit.indexOf(Math.max(...fit));
}

/** Per motion, its fit: the sum of its correlations over the blocks that agree under some motion (NaN, uncovered, as −1). */
export function motionFits(agreement: Agreement): number[] {
  const blocks = staticBlocks(agreement);
  return agreement.scores.map((sc) => blocks.reduce((sum, k) => sum + blockValue(sc, k), 0));
}

/** The blocks that agree under at least one motion. */
export function staticBlocks(agreement: Agreement): number[] {
  const first = agreement.scores[0];
  if (!first) return [];
  return first.correlations.map((_, k) => k).filter((k) => agreement.scores.some((sc) => sc.correlations[k]! >= AGREES));
}

/** A block's correlation under a motion, −1 where the frame does not cover it. */
export const blockValue = (scores: BlockScores, k: number): number => {
  const v = scores.correlations[k]!;
  return Number.isNaN(v) ? -1 : v;
};

/** How many of the textured blocks agree under one motion. */
export function agreeingBlocks(scores: BlockScores): number {
  return scores.correlations.filter((c) => c >= AGREES).length;
}

/** Share of the textured blocks that agree (0 when none has texture). */
export function agreeingShare(agreement: Agreement, scores: BlockScores): number {
  if (agreement.textured === 0) return 0;
  return agreeingBlocks(scores) / agreement.textured;
}

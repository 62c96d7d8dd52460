import { thumbnailSize } from './align-grey.js';

/**
 * Measurements on small (~1000 px) copies, run in pool threads: what `auto` decides from and
 * what the quality score is made of. Deterministic: same pixels, same numbers.
 */

/**
 * Rows [rowStart, rowEnd) of an RGB thumbnail: each pixel the mean of a factor × factor block of
 * the source (the last row and column of blocks may be cut short). With `grey`, the same pass also
 * writes alignment's grey thumbnail (align-grey.ts): the BT.601 luma of each whole block, one byte
 * per block, `floor(width / factor)` wide, so a frame is read once for both. Run in pool threads
 * by row ranges.
 */
export function thumbnailRows(
  source: Uint8Array,
  width: number,
  height: number,
  factor: number,
  out: Uint8Array,
  rowStart: number,
  rowEnd: number,
  grey: Uint8Array | null = null,
): void {
  const outWidth = Math.ceil(width / factor);
  const [greyWidth, greyHeight] = thumbnailSize(width, height, factor);
  const whole = Math.floor(width / factor) * 3;
  const blockBytes = factor * 3;
  const sums = new Uint32Array(outWidth * 3);
  const greyScale = 1 / (256 * factor * factor);
  for (let oy = rowStart; oy < rowEnd; oy++) {
    sums.fill(0);
    const y0 = oy * factor;
    const y1 = Math.min(height, y0 + factor);
    // Whole source rows in memory order, summed into one row of blocks: the cache reads each byte once.
    for (let y = y0; y < y1; y++) {
      let i = y * width * 3;
      for (let o = 0; o < whole; o += 3) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (const end = i + blockBytes; i < end; i += 3) {
          r += source[i]!;
          g += source[i + 1]!;
          b += source[i + 2]!;
        }
        sums[o]! += r;
        sums[o + 1]! += g;
        sums[o + 2]! += b;
      }
      for (const end = (y + 1) * width * 3; i < end; i += 3) {
        sums[whole]! += source[i]!;
        sums[whole + 1]! += source[i + 1]!;
        sums[whole + 2]! += source[i + 2]!;
      }
    }
    const rows = y1 - y0;
    for (let ox = 0, o = 0, d = oy * outWidth * 3; ox < outWidth; ox++, o += 3, d += 3) {
      const n = rows * (Math.min(width, (ox + 1) * factor) - ox * factor);
      out[d] = Math.round(sums[o]! / n);
      out[d + 1] = Math.round(sums[o + 1]! / n);
      out[d + 2] = Math.round(sums[o + 2]! / n);
    }
    if (grey && oy < greyHeight) {
      // The weights of align-grey's luma (77, 150, 29) / 256, applied to the block sums: the same integer sum.
      for (let ox = 0, o = 0, d = oy * greyWidth; ox < greyWidth; ox++, o += 3, d++) {
        const s = 77 * sums[o]! + 150 * sums[o + 1]! + 29 * sums[o + 2]!;
        grey[d] = (s * greyScale + 0.5) | 0;
      }
    }
  }
}

/** BT.601 luma of an RGB buffer, 0..255. */
export function luma(rgb: Uint8Array, pixels: number): Float32Array {
  const out = new Float32Array(pixels);
  for (let i = 0, j = 0; i < pixels; i++, j += 3) out[i] = 0.299 * rgb[j]! + 0.587 * rgb[j + 1]! + 0.114 * rgb[j + 2]!;
  return out;
}

/** |4-neighbour Laplacian| of luma, zero on the border. */
function laplacian(y: Float32Array, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  for (let r = 1; r < height - 1; r++) {
    for (let c = 1, i = r * width + 1; c < width - 1; c++, i++) {
      out[i] = y[i - 1]! + y[i + 1]! + y[i - width]! + y[i + width]! - 4 * y[i]!;
    }
  }
  return out;
}

function variance(values: Float32Array): number {
  let sum = 0;
  let squares = 0;
  for (const v of values) {
    sum += v;
    squares += v * v;
  }
  const mean = sum / values.length;
  return squares / values.length - mean * mean;
}

export interface FrameStats {
  meanLuma: number;
  /** Variance of the Laplacian of luma, less what the frame's noise contributes: detail, not grain. */
  sharpness: number;
  /** Standard deviation of the frame's noise (Immerkær's estimator), 0..255. */
  noise: number;
  /** Share of pixels with any channel ≤ 2 (dark) or ≥ 253 (bright), as the fixtures count them. */
  clippedDark: number;
  clippedBright: number;
  /** Sharpness of each tile of a TILES × TILES grid, row-major. */
  tileSharpness: number[];
}

export const TILES = 8;

export function frameStats(rgb: Uint8Array, width: number, height: number): FrameStats {
  const pixels = width * height;
  const y = luma(rgb, pixels);
  const lap = laplacian(y, width, height);
  let lumaSum = 0;
  let dark = 0;
  let bright = 0;
  for (let i = 0, j = 0; i < pixels; i++, j += 3) {
    lumaSum += y[i]!;
    const r = rgb[j]!;
    const g = rgb[j + 1]!;
    const b = rgb[j + 2]!;
    if (r <= 2 || g <= 2 || b <= 2) dark++;
    if (r >= 253 || g >= 253 || b >= 253) bright++;
  }
  const tileSharpness: number[] = [];
  for (let ty = 0; ty < TILES; ty++) {
    for (let tx = 0; tx < TILES; tx++) {
      const x0 = Math.max(1, Math.floor((tx * width) / TILES));
      const x1 = Math.min(width - 1, Math.floor(((tx + 1) * width) / TILES));
      const y0 = Math.max(1, Math.floor((ty * height) / TILES));
      const y1 = Math.min(height - 1, Math.floor(((ty + 1) * height) / TILES));
      let sum = 0;
      let squares = 0;
      let n = 0;
      for (let r = y0; r < y1; r++) {
        for (let i = r * width + x0, end = r * width + x1; i < end; i++) {
          const v = lap[i]!;
          sum += v;
          squares += v * v;
          n++;
        }
      }
      tileSharpness.push(n > 0 ? squares / n - (sum / n) ** 2 : 0);
    }
  }
  const noise = noiseSigma(y, width, height);
  // White noise of deviation σ adds 20σ² to the variance of a 4-neighbour Laplacian (4² + 4 × 1²).
  const sharpness = Math.max(0, variance(lap) - 20 * noise * noise);
  return { meanLuma: lumaSum / pixels, sharpness, noise, clippedDark: dark / pixels, clippedBright: bright / pixels, tileSharpness };
}

/** Immerkær (1996): σ from the mean |response| to a mask that cancels smooth image structure. */
function noiseSigma(y: Float32Array, width: number, height: number): number {
  if (width < 3 || height < 3) return 0;
  let sum = 0;
  for (let r = 1; r < height - 1; r++) {
    for (let c = 1, i = r * width + 1; c < width - 1; c++, i++) {
      const up = i - width;
      const down = i + width;
      sum += Math.abs(
        y[up - 1]! - 2 * y[up]! + y[up + 1]! - 2 * y[i - 1]! + 4 * y[i]! - 2 * y[i + 1]! + y[down - 1]! - 2 * y[down]! + y[down + 1]!,
      );
    }
  }
  return (Math.sqrt(Math.PI / 2) * sum) / (6 * (width - 2) * (height - 2));
}

/**
 * How well a frame lines up with the reference: the upper quartile, over a BLOCKS × BLOCKS grid,
 * of each block's normalised correlation, with each frame's noise variance taken out of its
 * block variances (noise lowers correlation without any misalignment). Passers-by spoil some
 * blocks, not the upper quartile; a misaligned frame spoils them all. Flat blocks are left out.
 */
export function blockCorrelation(reference: Uint8Array, frame: Uint8Array, width: number, height: number, noiseA: number, noiseB: number): number {
  const ya = luma(reference, width * height);
  const yb = luma(frame, width * height);
  const scores: number[] = [];
  for (let by = 0; by < BLOCKS; by++) {
    for (let bx = 0; bx < BLOCKS; bx++) {
      const x0 = Math.floor((bx * width) / BLOCKS);
      const x1 = Math.floor(((bx + 1) * width) / BLOCKS);
      const y0 = Math.floor((by * height) / BLOCKS);
      const y1 = Math.floor(((by + 1) * height) / BLOCKS);
      let sa = 0;
      let sb = 0;
      let n = 0;
      for (let r = y0; r < y1; r++) {
        for (let i = r * width + x0, end = r * width + x1; i < end; i++) {
          sa += ya[i]!;
          sb += yb[i]!;
          n++;
        }
      }
      if (n === 0) continue;
      const ma = sa / n;
      const mb = sb / n;
      let ab = 0;
      let aa = 0;
      let bb = 0;
      for (let r = y0; r < y1; r++) {
        for (let i = r * width + x0, end = r * width + x1; i < end; i++) {
          const da = ya[i]! - ma;
          const db = yb[i]! - mb;
          ab += da * db;
          aa += da * da;
          bb += db * db;
        }
      }
      const signalA = aa / n - noiseA * noiseA;
      const signalB = bb / n - noiseB * noiseB;
      // A block with almost no texture beyond its noise says nothing about alignment.
      if (signalA < 4 || signalB < 4) continue;
      scores.push(Math.min(1, ab / n / Math.sqrt(signalA * signalB)));
    }
  }
  if (scores.length === 0) return 1;
  scores.sort((a, b) => a - b);
  return scores[Math.floor(0.75 * (scores.length - 1))]!;
}

const BLOCKS = 8;

/**
 * Ghosting: for each pixel, the median over frames of |frame − result| (per channel, averaged),
 * then averaged over the image. A clean result agrees with most frames at every pixel, so
 * passers-by seen in a minority of frames do not count, while ghosts and leftover noise do.
 */
export function ghosting(frames: Uint8Array[], result: Uint8Array, pixels: number): number {
  const n = frames.length;
  const diffs = new Float32Array(n);
  let total = 0;
  for (let p = 0, j = 0; p < pixels; p++, j += 3) {
    for (let f = 0; f < n; f++) {
      const frame = frames[f]!;
      diffs[f] = (Math.abs(frame[j]! - result[j]!) + Math.abs(frame[j + 1]! - result[j + 1]!) + Math.abs(frame[j + 2]! - result[j + 2]!)) / 3;
    }
    // Insertion sort: a typed array's sort() costs more per call than these few values do.
    for (let a = 1; a < n; a++) {
      const v = diffs[a]!;
      let b = a - 1;
      while (b >= 0 && diffs[b]! > v) {
        diffs[b + 1] = diffs[b]!;
        b--;
      }
      diffs[b + 1] = v;
    }
    total += n % 2 === 1 ? diffs[(n - 1) / 2]! : (diffs[n / 2 - 1]! + diffs[n / 2]!) / 2;
  }
  return total / pixels;
}

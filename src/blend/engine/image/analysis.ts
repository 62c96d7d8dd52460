import { thumbnailSize } from './image.js';
import { blockMeans } from './blocks-simd.js';

/**
 * Measurements on small (~1000 px) copies, run in pool threads: what `auto` decides from and
 * what the quality score is made of. Deterministic: same pixels, same numbers.
 */

/**
 * Rows [rowStart, rowEnd) of an RGB thumbnail: each pixel the mean of a factor × factor block of
 * the source (the last row and column of blocks may be cut short). With `grey`, the same pass also
 * writes alignment's grey thumbnail (align/grey.ts): the BT.601 luma of each whole block, one byte
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
  for (let oy = rowStart; oy < rowEnd; oy++) {
    const y = oy * factor;
    const withGrey = grey && oy < greyHeight ? grey : null;
    blockMeans(source, width, y, Math.min(height, y + factor) - y, factor, out, oy * outWidth * 3, withGrey, oy * greyWidth, greyWidth);
  }
}

/** BT.601 luma of an RGB buffer, 0..255. */
export function luma(rgb: Uint8Array, pixels: number): Float32Array {
  const out = new Float32Array(pixels);
  for (let i = 0, j = 0; i < pixels; i++, j += 3) out[i] = 0.299 * rgb[j]! + 0.587 * rgb[j + 1]! + 0.114 * rgb[j + 2]!;
  return out;
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
  const y = new Float32Array(pixels);
  let lumaSum = 0;
  let dark = 0;
  let bright = 0;
  for (let i = 0, j = 0; i < pixels; i++, j += 3) {
    const r = rgb[j]!;
    const g = rgb[j + 1]!;
    const b = rgb[j + 2]!;
    y[i] = 0.299 * r + 0.587 * g + 0.114 * b;
    lumaSum += y[i]!;
    if (r <= 2 || g <= 2 || b <= 2) dark++;
    if (r >= 253 || g >= 253 || b >= 253) bright++;
  }
  // One row-major pass over the interior for the 4-neighbour Laplacian (rounded to f32, zero on
  // the border), its variance over the frame and per tile, and the noise estimate: every sum
  // receives its values in the order separate passes would give them, so the figures do not
  // depend on the fusion.
  const tileX = tileBounds(width);
  const tileY = tileBounds(height);
  const tileSums = new Float64Array(TILES * TILES);
  const tileSquares = new Float64Array(TILES * TILES);
  const tileCounts = new Float64Array(TILES * TILES);
  let lapSum = 0;
  let lapSquares = 0;
  let noiseSum = 0;
  for (let ty = 0; ty < TILES; ty++) {
    for (let r = tileY[ty]!; r < tileY[ty + 1]!; r++) {
      for (let tx = 0; tx < TILES; tx++) {
        const tile = ty * TILES + tx;
        let sum = tileSums[tile]!;
        let squares = tileSquares[tile]!;
        const start = r * width + tileX[tx]!;
        const end = r * width + tileX[tx + 1]!;
        // The 3 × 3 neighbourhood slides along the row: three new values a pixel, not nine loads.
        let a0 = y[start - width - 1]!, a1 = y[start - width]!;
        let b0 = y[start - 1]!, b1 = y[start]!;
        let c0 = y[start + width - 1]!, c1 = y[start + width]!;
        for (let i = start; i < end; i++) {
          const a2 = y[i - width + 1]!;
          const b2 = y[i + 1]!;
          const c2 = y[i + width + 1]!;
          const v = Math.fround(b0 + b2 + a1 + c1 - 4 * b1);
          sum += v;
          squares += v * v;
          lapSum += v;
          lapSquares += v * v;
          // Immerkær's mask (see noiseSigma below)
          noiseSum += Math.abs(a0 - 2 * a1 + a2 - 2 * b0 + 4 * b1 - 2 * b2 + c0 - 2 * c1 + c2);
          a0 = a1;
          a1 = a2;
          b0 = b1;
          b1 = b2;
          c0 = c1;
          c1 = c2;
        }
        tileSums[tile] = sum;
        tileSquares[tile] = squares;
        tileCounts[tile]! += tileX[tx + 1]! - tileX[tx]!;
      }
    }
  }
  const tileSharpness: number[] = [];
  for (let tile = 0; tile < TILES * TILES; tile++) {
    const n = tileCounts[tile]!;
    tileSharpness.push(n > 0 ? tileSquares[tile]! / n - (tileSums[tile]! / n) ** 2 : 0);
  }
  const noise = noiseSigma(noiseSum, width, height);
  const lapMean = lapSum / pixels;
  // White noise of deviation σ adds 20σ² to the variance of a 4-neighbour Laplacian (4² + 4 × 1²).
  const sharpness = Math.max(0, lapSquares / pixels - lapMean * lapMean - 20 * noise * noise);
  return { meanLuma: lumaSum / pixels, sharpness, noise, clippedDark: dark / pixels, clippedBright: bright / pixels, tileSharpness };
}

/** The TILES + 1 bounds of the tiles along a side, inside the one-pixel border: [1, side − 1) cut in TILES; all empty when the side has no interior (under 3 pixels). */
function tileBounds(side: number): number[] {
  // A side of 1 would otherwise end its last tile at 1 and put the border row or column, whose neighbours lie outside the frame, in it.
  if (side < 3) return new Array<number>(TILES + 1).fill(1);
  const bounds = Array.from({ length: TILES + 1 }, (_, t) => Math.min(side - 1, Math.max(1, Math.floor((t * side) / TILES))));
  bounds[TILES] = Math.max(1, side - 1);
  return bounds;
}

/** Immerkær (1996): σ from the mean |response| (summed in `sum` over the interior) to a mask that cancels smooth image structure. */
function noiseSigma(sum: number, width: number, height: number): number {
  if (width < 3 || height < 3) return 0;
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
  return ghostingSum(frames, result, 0, pixels) / pixels;
}

/**
 * The sum over pixels [start, end) of ghosting's per-pixel medians, so that threads can share an
 * image. Each median is a multiple of 2⁻²⁶, so every partial sum below 2²⁷ is exact in a double
 * and the parts add up to the one-pass total wherever the image is cut; a larger total (a mean
 * residual over 59 on the largest thumbnail, 1499 × 1499) scores 0 for ghosting either way.
 */
export function ghostingSum(frames: Uint8Array[], result: Uint8Array, start: number, end: number): number {
  const n = frames.length;
  const lower = (n - 1) >> 1;
  const upper = n >> 1;
  // A frame's residual at a pixel is s / 3 in f32, s the sum of its three |differences|: as it
  // only grows with s, the integers are sorted and the residuals looked up.
  const residual = Float32Array.from({ length: 3 * 255 + 1 }, (_, s) => s / 3);
  const sums = new Int32Array(n);
  let total = 0;
  for (let p = start, j = 3 * start; p < end; p++, j += 3) {
    const r = result[j]!;
    const g = result[j + 1]!;
    const b = result[j + 2]!;
    // insertion sort: a typed array's sort() costs more per call than these few values do
    for (let f = 0; f < n; f++) {
      const frame = frames[f]!;
      const v = Math.abs(frame[j]! - r) + Math.abs(frame[j + 1]! - g) + Math.abs(frame[j + 2]! - b);
      let k = f - 1;
      while (k >= 0 && sums[k]! > v) {
        sums[k + 1] = sums[k]!;
        k--;
      }
      sums[k + 1] = v;
    }
    total += lower === upper ? residual[sums[lower]!]! : (residual[sums[lower]!]! + residual[sums[upper]!]!) / 2;
  }
  return total;
}

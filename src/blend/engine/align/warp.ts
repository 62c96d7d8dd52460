import type { Homography } from './homography.js';
import type { RgbImage } from '../image/image.js';
import { thumbnailRows } from '../image/analysis.js';
import { cubicWeights, WEIGHT_BITS } from './cubic.js';
import { allocAligned, copyRowsPadded, paddedStride, translationKernel, warpBand } from './warp-wasm.js';

type Nine = [number, number, number, number, number, number, number, number, number];

/**
 * `t` truncated to an int32, saturating: a position beyond ±2^31 / 256 pixels stays at the far end
 * (and is clamped to the frame's edge) where `t | 0` would wrap it modulo 2^32, possibly back inside
 * the frame. NaN gives 0 (as `| 0` and WebAssembly's saturating truncation do).
 */
function toFixed(t: number): number {
  return Math.max(-2147483648, Math.min(2147483647, t)) | 0;
}

/**
 * Writes rows [rowStart, rowEnd) of `out`: `frame` warped by `h` as warpRowsJs defines it, in the
 * WebAssembly kernel (align/warp-wasm.ts), or, when translationShift finds every pixel's position
 * a fixed shift of its own, by warpTranslationRows (fixed weights, no positions to compute, each
 * source row's horizontal sums made once). Runs in a pool thread on one row range, so a frame is
 * warped by all threads at once.
 */
export function warpRows(frame: RgbImage, out: RgbImage, h: Homography, rowStart: number, rowEnd: number): void {
  const shift = translationShift(h, frame.width, out.width, rowStart, rowEnd);
  if (shift === null) warpBand(frame.data, frame.width, frame.height, out.data, out.width, h, rowStart, rowEnd);
  else warpTranslationRows(frame, out, h, shift, rowStart, rowEnd);
}

/** The last homography, frame width and row length translationShift checked the columns of, and what it found. */
let checked: { h: number[]; width: number; columns: number; shift: number | null } | null = null;

/** The sample warpRowsJs takes for fixed-point column position X in a frame of columns [0, maxX]: x0·256 + fx after its clamp (X may be beyond the int32 range here). */
function sampleColumn(X: number, maxX: number): number {
  const x0 = Math.floor(X / 256);
  return x0 < 0 ? 0 : x0 >= maxX ? maxX * 256 : X;
}

/**
 * When warpRowsJs would sample every output pixel (x, y) of rows [rowStart, rowEnd), in a frame
 * `width` pixels wide, at the fixed-point column X = 256·x + D (after its clamp to the frame), D the
 * same for the whole band: D; otherwise null. Only a homography with h0 = h4 = h8 = 1 and h1 = h3 =
 * h6 = h7 = 0 (a translation) can, and only verified: D is taken from the last column, and every
 * column's X computed as warpRowsJs computes it ((h0·x + (h1·y + h2)) / w, ·256, + 0.5, truncated,
 * saturating) and clamped as it clamps it must give the same sample as 256·x + D; the row's terms
 * h1·y + h2 and h7·y + h8 are checked to be the same in every row of the band (then w = h6·x + 1
 * is 1, and the row position depends on the row alone). The clamp is what is compared, not X: X is
 * truncated toward zero, so left of the frame (a negative position) it is not 256·x + D, yet both
 * are clamped to column 0 with no fraction. In f64, x + h2 is rounded, and far from the origin or
 * with NaN or infinite entries the samples are not a shift's: those fall back to the general
 * kernel. The column check is kept for the last homography and sizes, as warpThumbnailRows asks
 * again for each step of a band.
 */
export function translationShift(h: Homography, width: number, columns: number, rowStart: number, rowEnd: number): number | null {
  const [h0, h1, h2, h3, h4, , h6, h7, h8] = h as Nine;
  if (h0 !== 1 || h1 !== 0 || h3 !== 0 || h4 !== 1 || h6 !== 0 || h7 !== 0 || h8 !== 1 || columns < 1) return null;
  const rowX = h1 * rowStart + h2;
  for (let y = rowStart; y < rowEnd; y++) if (h1 * y + h2 !== rowX || h7 * y + h8 !== 1) return null;
  if (checked === null || checked.width !== width || checked.columns !== columns || checked.h.some((v, i) => !Object.is(v, h[i]))) {
    const maxX = width - 1;
    const at = (x: number) => toFixed(((h0 * x + rowX) / (h6 * x + 1)) * 256 + 0.5);
    let shift: number | null = at(columns - 1) - 256 * (columns - 1);
    for (let x = 0; x < columns && shift !== null; x++) {
      if (sampleColumn(at(x), maxX) !== sampleColumn(256 * x + shift, maxX)) shift = null;
    }
    checked = { h: [...h], width, columns, shift };
  }
  return checked.shift;
}

/** Output rows a step of warpTranslationRows blends from the source rows it copied into the kernel's memory: ~200 KB in and out of a 4000-pixel row, in the cache. */
const TRANSLATION_ROWS_A_STEP = 16;

/**
 * Rows [rowStart, rowEnd) of `out` as warpRowsJs writes them, for a homography whose columns
 * translationShift found at 256·x + `shift`: every pixel of a row has the same fractions, fx =
 * shift & 255 and the row's fy, so the columns whose centre taps are not clamped (0 ≤ x + (shift
 * >> 8) < width − 1) are one fixed 4 × 4 sum, each row's position computed as warpRowsJs computes
 * it. A few output rows at a time, the source rows they read are copied into the WebAssembly
 * kernel's memory with their edges replicated (warpRowsJs clamps the taps' columns), each one's
 * horizontal sums made once (warp-wasm.ts `horizontal`, i32 lanes) and each output row made from
 * its four tap rows' sums (`vertical`; a tap row beyond the frame is its edge row, as warpRowsJs
 * clamps it), or, for a whole-pixel shift (fx = fy = 0: weights 0, 1024, 0, 0), its source bytes
 * moved. The columns beyond, whose centre taps are clamped to the frame's left or right edge with
 * fx = 0, all take the same pixel in a row: warpRowsJs's at the strip's first column, repeated.
 */
function warpTranslationRows(frame: RgbImage, out: RgbImage, h: Homography, shift: number, rowStart: number, rowEnd: number): void {
  const [, , , h3, h4, h5, h6, h7, h8] = h as Nine;
  const { width, height, data: src } = frame;
  const dst = out.data;
  const maxX = width - 1;
  const maxY = height - 1;
  const columns = out.width;
  const rowBytes = columns * 3;
  // (not >> and &: far outside the frame, the shift need not be an int32)
  const dx = Math.floor(shift / 256);
  const fx = shift - dx * 256;
  const [w0, w1, w2, w3] = cubicWeights(fx);
  // the columns whose centre taps are not clamped: 0 ≤ x + dx < maxX
  const left = Math.min(columns, Math.max(0, -dx));
  const right = Math.min(columns, Math.max(left, maxX - dx));
  const inside = (right - left) * 3;
  // a source row copied in (copyRowsPadded: a pixel replicated left of it, two right of it), and the horizontal sums' row (i32, whole 16-byte steps)
  const padded = paddedStride(width);
  const sumsBytes = Math.ceil(inside / 16) * 64;
  const tops = new Int32Array(TRANSLATION_ROWS_A_STEP);
  const fys = new Int32Array(TRANSLATION_ROWS_A_STEP);
  for (let y0 = rowStart; y0 < rowEnd; y0 += TRANSLATION_ROWS_A_STEP) {
    const y1 = Math.min(rowEnd, y0 + TRANSLATION_ROWS_A_STEP);
    // each row's centre tap row and fraction, as warpRowsJs computes them (h3 = h6 = 0: the same for every column)
    let first = height;
    let last = -1;
    for (let y = y0; y < y1; y++) {
      const Y = toFixed(((h3 * 0 + (h4 * y + h5)) / (h6 * 0 + (h7 * y + h8))) * 256 + 0.5);
      let top = Y >> 8;
      let fy = Y & 255;
      if (top < 0 || top >= maxY) (top = top < 0 ? 0 : maxY), (fy = 0);
      tops[y - y0] = top;
      fys[y - y0] = fy;
      first = Math.min(first, fy === 0 ? top : Math.max(0, top - 1));
      last = Math.max(last, fy === 0 ? top : Math.min(maxY, top + 2));
    }
    if (inside > 0) {
      const { kernel, arena } = translationKernel();
      const rows = last - first + 1;
      // the kernel reads 21 bytes past a row's last step, beyond its 6 bytes of replicated pixels
      const srcAt = copyRowsPadded(arena.reset(), src, width, height, first, rows, 48);
      const sumsAt = arena.alloc(rows * sumsBytes + 64);
      // the last step writes up to 15 bytes beyond the band's last row
      const outAt = allocAligned(arena, (y1 - y0) * rowBytes + 16, dst, y0 * rowBytes);
      const { u8 } = arena.ready();
      const whole = fx === 0 && fys.subarray(0, y1 - y0).every((fy) => fy === 0);
      if (!whole) for (let r = 0; r < rows; r++) kernel.horizontal(srcAt + r * padded + (left + dx) * 3, sumsAt + r * sumsBytes, inside, w0, w1, w2, w3);
      for (let y = y0; y < y1; y++) {
        const top = tops[y - y0]!;
        const o = outAt + (y - y0) * rowBytes + left * 3;
        if (whole) {
          const p = srcAt + (top - first) * padded + (left + dx) * 3;
          u8.copyWithin(o, p, p + inside);
          continue;
        }
        const [v0, v1, v2, v3] = cubicWeights(fys[y - y0]!);
        const tap = (t: number) => sumsAt + (Math.min(maxY, Math.max(0, top - 1 + t)) - first) * sumsBytes;
        // a weight of 0 (fy = 0) reads the centre row in place of a tap row beyond those copied in
        kernel.vertical(v0 === 0 ? tap(1) : tap(0), tap(1), v2 === 0 ? tap(1) : tap(2), v3 === 0 ? tap(1) : tap(3), o, inside, v0, v1, v2, v3);
      }
      dst.set(u8.subarray(outAt, outAt + (y1 - y0) * rowBytes), y0 * rowBytes);
    }
    for (let y = y0; y < y1; y++) {
      if (left > 0) edgeStrip(frame, out, h, y, 0, left);
      if (right < columns) edgeStrip(frame, out, h, y, right, columns);
    }
  }
}

/** Columns [start, end) of row y, whose samples warpRowsJs clamps to the same edge column with fx = 0: its pixel at `start`, repeated. */
function edgeStrip(frame: RgbImage, out: RgbImage, h: Homography, y: number, start: number, end: number): void {
  warpRowsJs(frame, out, h, y, y + 1, start, start + 1);
  const o = (y * out.width + start) * 3;
  const dst = out.data;
  for (let done = 3, total = (end - start) * 3; done < total; done *= 2) dst.copyWithin(o + done, o, o + Math.min(done, total - done));
}

/** Thumbnail rows warped and then reduced per step of warpThumbnailRows: 8 rows of a 12 MP frame's thumbnail are 32 rows, ~400 KB, of the warped frame. */
const THUMBNAIL_ROWS_A_STEP = 8;

/**
 * Rows [thumbStart, thumbEnd) of the warped frame's thumbnail (image/thumbnails.ts: means of
 * `factor` × `factor` blocks, into `thumbnail`) and the rows of `out` they cover: `frame` warped by
 * `h` (warpRows) a few thumbnail rows at a time, each step's rows reduced to the thumbnail while
 * they are still in the cache, instead of read back from memory by a pass of their own. The same
 * bytes as warpRows and then thumbnailRows over the whole frame.
 */
export function warpThumbnailRows(frame: RgbImage, out: RgbImage, h: Homography, thumbnail: Uint8Array, factor: number, thumbStart: number, thumbEnd: number): void {
  for (let ty = thumbStart; ty < thumbEnd; ty += THUMBNAIL_ROWS_A_STEP) {
    const end = Math.min(thumbEnd, ty + THUMBNAIL_ROWS_A_STEP);
    warpRows(frame, out, h, ty * factor, Math.min(out.height, end * factor));
    thumbnailRows(out.data, out.width, out.height, factor, thumbnail, ty, end);
  }
}

/**
 * The definition of the warp, which the kernel matches byte for byte (test/blend-warp.test.ts):
 * writes rows [rowStart, rowEnd) of `out`, each output pixel (x, y) taking the bicubic
 * (Catmull–Rom) sample of `frame` at h·(x, y) (h maps output pixel → frame pixel, pixel centres at
 * integers): the position in 1/256 pixel, rounded; a position beyond the frame clamped to its edge
 * (fraction 0); the 4 × 4 taps around it with their coordinates clamped to the frame (edge
 * replication); the sum of taps × horizontal weight × vertical weight (cubicWeights, in
 * 1/1024 each) rounded to a byte and clamped to 0–255 (the kernel overshoots a little at a sharp
 * edge, as every sharpening interpolator does). Only columns [columnStart, columnEnd) when given.
 *
 * Why cubic and not bilinear: a bilinear sample half a pixel off is the mean of two pixels, a blur
 * that takes fine detail away from every frame a stack moves (about 1 dB of PSNR on sharp photos
 * in the quality matrix, more than averaging five noisy frames gains on a clean one); the
 * Catmull–Rom kernel keeps it at four times the taps.
 */
export function warpRowsJs(frame: RgbImage, out: RgbImage, h: Homography, rowStart: number, rowEnd: number, columnStart = 0, columnEnd = out.width): void {
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h as Nine;
  const { width, height, data: src } = frame;
  const dst = out.data;
  const maxX = width - 1;
  const maxY = height - 1;
  const columns = out.width;
  const xs = [0, 0, 0, 0];
  const rows = [0, 0, 0, 0];
  for (let y = rowStart; y < rowEnd; y++) {
    // The row's part of the numerators and divisor; each pixel adds its column's (evaluated anew,
    // not advanced by a sum along the row, so any four pixels' positions can be computed at once).
    const rowX = h1 * y + h2;
    const rowY = h4 * y + h5;
    const rowW = h7 * y + h8;
    let o = (y * columns + columnStart) * 3;
    for (let x = columnStart; x < columnEnd; x++, o += 3) {
      const nx = h0 * x + rowX;
      const ny = h3 * x + rowY;
      const w = h6 * x + rowW;
      // Position in 1/256 pixel, rounded (a negative one is clamped below anyway): integer arithmetic from here on.
      const X = toFixed((nx / w) * 256 + 0.5);
      const Y = toFixed((ny / w) * 256 + 0.5);
      let x0 = X >> 8;
      let y0 = Y >> 8;
      let fx = X & 255;
      let fy = Y & 255;
      if (x0 < 0 || x0 >= maxX) (x0 = x0 < 0 ? 0 : maxX), (fx = 0);
      if (y0 < 0 || y0 >= maxY) (y0 = y0 < 0 ? 0 : maxY), (fy = 0);
      const wx = cubicWeights(fx);
      const wy = cubicWeights(fy);
      for (let t = 0; t < 4; t++) {
        xs[t] = Math.min(maxX, Math.max(0, x0 - 1 + t)) * 3;
        rows[t] = Math.min(maxY, Math.max(0, y0 - 1 + t)) * width * 3;
      }
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let j = 0; j < 4; j++) {
          const r = rows[j]! + c;
          sum += wy[j]! * (wx[0]! * src[r + xs[0]!]! + wx[1]! * src[r + xs[1]!]! + wx[2]! * src[r + xs[2]!]! + wx[3]! * src[r + xs[3]!]!);
        }
        dst[o + c] = Math.min(255, Math.max(0, (sum + (1 << (2 * WEIGHT_BITS - 1))) >> (2 * WEIGHT_BITS)));
      }
    }
  }
}

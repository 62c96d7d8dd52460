import type { Homography } from './homography.js';
import type { RgbImage } from '../image/image.js';
import { thumbnailRows } from '../image/analysis.js';
import { warpBand } from './warp-wasm.js';

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
 * WebAssembly kernel (align/warp-wasm.ts). Runs in a pool thread on one row range, so a frame is
 * warped by all threads at once.
 */
export function warpRows(frame: RgbImage, out: RgbImage, h: Homography, rowStart: number, rowEnd: number): void {
  warpBand(frame.data, frame.width, frame.height, out.data, out.width, h, rowStart, rowEnd);
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
 * writes rows [rowStart, rowEnd) of `out`, each output pixel (x, y) taking the bilinear sample of
 * `frame` at h·(x, y) (h maps output pixel → frame pixel, pixel centres at integers), with
 * coordinates clamped to the frame (edge replication).
 */
export function warpRowsJs(frame: RgbImage, out: RgbImage, h: Homography, rowStart: number, rowEnd: number): void {
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h as Nine;
  const { width, height, data: src } = frame;
  const dst = out.data;
  const maxX = width - 1;
  const maxY = height - 1;
  const stride = width * 3;
  const columns = out.width;
  for (let y = rowStart; y < rowEnd; y++) {
    // The row's part of the numerators and divisor; each pixel adds its column's (evaluated anew,
    // not advanced by a sum along the row, so any four pixels' positions can be computed at once).
    const rowX = h1 * y + h2;
    const rowY = h4 * y + h5;
    const rowW = h7 * y + h8;
    let o = y * columns * 3;
    for (let x = 0; x < columns; x++, o += 3) {
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
      const p = y0 * stride + x0 * 3;
      const q = fx === 0 ? p : p + 3;
      const r = fy === 0 ? p : p + stride;
      const s = r + q - p;
      const gx = 256 - fx;
      const gy = 256 - fy;
      dst[o] = ((src[p]! * gx + src[q]! * fx) * gy + (src[r]! * gx + src[s]! * fx) * fy + 32768) >> 16;
      dst[o + 1] = ((src[p + 1]! * gx + src[q + 1]! * fx) * gy + (src[r + 1]! * gx + src[s + 1]! * fx) * fy + 32768) >> 16;
      dst[o + 2] = ((src[p + 2]! * gx + src[q + 2]! * fx) * gy + (src[r + 2]! * gx + src[s + 2]! * fx) * fy + 32768) >> 16;
    }
  }
}

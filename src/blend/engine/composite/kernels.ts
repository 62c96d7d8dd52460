/**
 * The composite's full-size pixel loops, run in pool threads over bands of rows: the clean plate
 * (median), each frame's halo, which frame owns each pixel, each frame's coarse copy (the base
 * of its pyramid), the result, and `preserveBackground`'s restriction of a blend to the people.
 * The kernels' input is copied into their memory a chunk of rows at a time (chunkRows), and they
 * loop over the rows.
 */
import type { Plane } from './pyramid.js';
import { chunkRows, gridPosition, type KernelMemory, kernelMemory } from './simd.js';
import { LAYER_BYTES } from './simd-finish.js';
import { quadEnd } from './simd-finish-row.js';
import { ROW_TAP_BYTES, TAP_BYTES, type Taps } from './simd-shared.js';
import { columnBytes } from './simd-sums.js';
import { medianRows as stackMedianRows } from '../point/stack.js';

/** The coarse grid a halo is kept on: one cell per `factor` × `factor` pixels. */
export interface HaloGrid {
  factor: number;
  width: number;
  height: number;
}

/** One frame's share of the blend on the coarse grid: its base level (difference, weight) and its collapsed bands. */
export interface Layer {
  index: number;
  base: Plane;
  bands: Plane;
}

/**
 * Per-byte median of the frames over rows [r0, r1) (mean of the middle two for an even count,
 * halves up): the median blend's own kernel (point/stack.ts), a SIMD sorting network up to 32 frames.
 */
export function medianRows(frames: Uint8Array[], out: Uint8Array, width: number, r0: number, r1: number): void {
  stackMedianRows(frames, width, out, r0, r1);
}

/**
 * Grid cells a slice of a band copies of each plane it reads (halos, bands, base levels): a band
 * of a tall image goes in slices, so the thread's kernel memory, which never shrinks, stays small.
 */
const SLICE_CELLS = 1 << 17;

/** Pixel rows in a slice of a band whose grid is `cells` wide, a grid row per `factor` pixel rows. */
const sliceRows = (cells: number, factor: number) => Math.max(1, Math.floor(SLICE_CELLS / cells)) * factor;

/** [from, to) of [r0, r1) in steps of `step`. */
function* chunks(r0: number, r1: number, step: number): Generator<[number, number]> {
  for (let from = r0; from < r1; from += step) yield [from, Math.min(r1, from + step)];
}

/**
 * Cell rows [c0, c1) in runs of the same number of pixel rows, `each(from, to, count)`: every cell
 * row holds `factor` rows but the image's last, which may hold fewer.
 */
function byRowCount(c0: number, c1: number, height: number, factor: number, each: (from: number, to: number, count: number) => void): void {
  const full = Math.max(c0, Math.min(c1, Math.floor(height / factor)));
  if (full > c0) each(c0, full, factor);
  if (c1 > full) each(full, c1, height - full * factor);
}

/**
 * The i32 sums per channel over `factor` × `factor` cells of cell rows [c0, c1) of an image of
 * `channels` bytes a pixel, whose pixel rows from c0's first are at `src` → `dst` (`channels` ×
 * `cells` a row). `columns`: columnBytes of scratch.
 */
function cellTotals(memory: KernelMemory, src: number, c0: number, c1: number, width: number, height: number, channels: number, factor: number, cells: number, columns: number, dst: number): void {
  byRowCount(c0, c1, height, factor, (from, to, count) => {
    const skip = from - c0;
    memory.run.cellTotals(to - from, src + skip * factor * width * channels, width, channels, count, factor, cells, columns, dst + skip * cells * channels * 4);
  });
}

/**
 * Three passes of a radius-2 box blur along each row (close to a Gaussian of sigma 2.45 cells): per
 * sample, the five samples around it, the row's end samples standing in past its ends, summed from
 * 0 in order and divided by 5, each pass rounded to f32.
 */
function blurRows(values: Float32Array, width: number, height: number): void {
  // a row with its end samples repeated twice past each end: sample x + d, clamped, is padded[x + d + 2]
  const padded = new Float32Array(width + 4);
  for (let row = 0; row < width * height; row += width) {
    for (let pass = 0; pass < 3; pass++) {
      for (let x = 0; x < width; x++) padded[x + 2] = values[row + x]!;
      padded[0] = padded[1] = padded[2]!;
      padded[width + 3] = padded[width + 2] = padded[width + 1]!;
      for (let x = 0; x < width; x++) values[row + x] = (0 + padded[x]! + padded[x + 1]! + padded[x + 2]! + padded[x + 3]! + padded[x + 4]!) / 5;
    }
  }
}

/**
 * The same blur down each column, a row at a time: the same sums in the same order, but reading
 * memory in order (a column of a tall grid is a cache line a sample).
 */
function blurColumns(values: Float32Array, width: number, height: number): void {
  // per column, the two samples above the row being blurred as they were before this pass
  const [above2, above1] = [new Float32Array(width), new Float32Array(width)];
  for (let pass = 0; pass < 3; pass++) {
    above2.set(values.subarray(0, width));
    above1.set(values.subarray(0, width));
    for (let y = 0; y < height; y++) {
      const row = y * width;
      const below1 = Math.min(height - 1, y + 1) * width;
      const below2 = Math.min(height - 1, y + 2) * width;
      for (let x = 0; x < width; x++) {
        const sample = values[row + x]!;
        values[row + x] = (0 + above2[x]! + above1[x]! + sample + values[below1 + x]! + values[below2 + x]!) / 5;
        above2[x] = above1[x]!;
        above1[x] = sample;
      }
    }
  }
}

/**
 * A frame's halo on the halo grid: its mask blurred and doubled, so it is 1 on the person and
 * fades out over a ring of its own background around them. The seams then run through background
 * the frames share, where the multi-band blend hides them.
 */
export function haloPlane(mask: Uint8Array, width: number, height: number, grid: HaloGrid, halo: Float32Array): void {
  const { factor, width: gw, height: gh } = grid;
  const cellRows = chunkRows(factor * width);
  const memory = kernelMemory();
  const rows = memory.alloc(cellRows * factor * width);
  const columns = memory.alloc(columnBytes(width, 1, factor));
  const sums = memory.alloc(4 * gw * cellRows);
  const { u8, i32 } = memory.ready();
  for (const [c0, c1] of chunks(0, gh, cellRows)) {
    u8.set(mask.subarray(c0 * factor * width, Math.min(height, c1 * factor) * width), rows);
    cellTotals(memory, rows, c0, c1, width, height, 1, factor, gw, columns, sums);
    for (let cy = c0, s = sums >> 2; cy < c1; cy++) {
      // whole numbers below 2^24, as the f32 sums of sums of bytes were
      const count = Math.min(factor, height - cy * factor);
      for (let cx = 0; cx < gw; cx++, s++) halo[cy * gw + cx] = i32[s]! / (255 * count * Math.min(factor, width - cx * factor));
    }
  }
  blurRows(halo, gw, gh);
  blurColumns(halo, gw, gh);
  for (let i = 0; i < halo.length; i++) halo[i] = Math.min(1, 2 * halo[i]!);
}

/** Column lookups for bilinear sampling of a grid `gridWidth` cells wide, one cell per `factor` pixels. */
function columnTaps(width: number, gridWidth: number, factor: number): Taps {
  const left = new Int32Array(width);
  const right = new Int32Array(width);
  const fx = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const u = gridPosition(x, gridWidth, factor);
    left[x] = Math.floor(u);
    right[x] = Math.min(gridWidth - 1, left[x]! + 1);
    fx[x] = u - left[x]!;
  }
  return { left, right, fx };
}

/** The grid rows pixel rows [r0, r1) read: [first, last]. */
function gridRows(r0: number, r1: number, gridHeight: number, factor: number): [number, number] {
  return [Math.floor(gridPosition(r0, gridHeight, factor)), Math.min(gridHeight - 1, Math.floor(gridPosition(r1 - 1, gridHeight, factor)) + 1)];
}

/**
 * Rows [r0, r1): which frame owns each pixel and with what weight (0..255). A person beats a halo,
 * and among people the strongest mask wins; elsewhere the frame with the strongest halo in the
 * pixel's halo cell. Returns, per frame, whether it owns any pixel with a weight above zero.
 */
export function ownerRows(masks: Uint8Array[], halos: Float32Array[], grid: HaloGrid, winner: Uint8Array, weight: Uint8Array, width: number, r0: number, r1: number): boolean[] {
  const owns = masks.map(() => false);
  for (const [s0, s1] of chunks(r0, r1, sliceRows(grid.width, grid.factor))) {
    ownerSlice(masks, halos, grid, winner, weight, width, s0, s1).forEach((owned, k) => (owns[k] ||= owned));
  }
  return owns;
}

/** ownerRows over a slice of a band. */
function ownerSlice(masks: Uint8Array[], halos: Float32Array[], grid: HaloGrid, winner: Uint8Array, weight: Uint8Array, width: number, r0: number, r1: number): boolean[] {
  const { factor, width: gw, height: gh } = grid;
  const n = masks.length;
  const rows = chunkRows(width);
  const memory = kernelMemory();
  const maskStride = Math.ceil((rows * width) / 16) * 16;
  const maskRows = memory.alloc(n * maskStride);
  const [winners, weights, cellOwner, owned] = [memory.alloc(rows * width), memory.alloc(rows * width), memory.alloc(gw), memory.alloc(n)];
  // Only the halo grid rows these pixel rows read (sliceRows)
  const [first, last] = gridRows(r0, r1, gh, factor);
  const planeStride = (last - first + 1) * gw * 4;
  const planes = memory.alloc(n * planeStride);
  const haloStride = Math.ceil(gw / 4) * 16;
  const haloRows = memory.alloc(n * haloStride);
  const [taps, rowTaps] = [memory.alloc(width * TAP_BYTES), memory.alloc(rows * ROW_TAP_BYTES)];
  const { run, u8, f32 } = memory.ready();
  halos.forEach((h, k) => f32.set(h.subarray(first * gw, (last + 1) * gw), (planes + k * planeStride) >> 2));
  memory.putTaps(taps, columnTaps(width, gw, factor), width);
  u8.fill(0, owned, owned + n);
  for (const [y0, y1] of chunks(r0, r1, rows)) {
    const pixels = (y1 - y0) * width;
    masks.forEach((mask, k) => u8.set(mask.subarray(y0 * width, y1 * width), maskRows + k * maskStride));
    run.strongest(maskRows, n, maskStride, winners, weights, pixels);
    memory.putRowTaps(rowTaps, y0, y1, gh, factor, first);
    run.claimRows(y1 - y0, rowTaps, planes, planeStride, n, gw, haloRows, haloStride, cellOwner, factor, taps, width, owned, winners, weights);
    winner.set(u8.subarray(winners, winners + pixels), y0 * width);
    weight.set(u8.subarray(weights, weights + pixels), y0 * width);
  }
  return masks.map((_, k) => u8[owned + k] === 1);
}

/** Rows [r0, r1) of the background's sums (r, g, b) over `factor` × `factor` cells, on the base level's grid. */
export function cellSumRows(background: Uint8Array, width: number, height: number, factor: number, cw: number, sums: Float32Array, r0: number, r1: number): void {
  const cellRows = chunkRows(factor * width);
  const memory = kernelMemory();
  const rows = memory.alloc(cellRows * factor * width * 3);
  const columns = memory.alloc(columnBytes(width, 3, factor));
  const cells = memory.alloc(12 * cw * cellRows);
  const { u8, i32 } = memory.ready();
  for (const [c0, c1] of chunks(r0, r1, cellRows)) {
    u8.set(background.subarray(c0 * factor * width * 3, Math.min(height, c1 * factor) * width * 3), rows);
    cellTotals(memory, rows, c0, c1, width, height, 3, factor, cw, columns, cells);
    sums.set(i32.subarray(cells >> 2, (cells >> 2) + (c1 - c0) * 3 * cw), c0 * cw * 3);
  }
}

/**
 * Rows [r0, r1) of a frame's base level: its difference to the background and its weight, averaged
 * over `factor` × `factor` cells. The sums are of whole numbers (the background's from
 * cellSumRows, at most 255 × factor² each), so the frame's sum minus the background's is exactly
 * the sum of the differences.
 */
export function baseRows(frame: Uint8Array, backgroundSums: Float32Array, winner: Uint8Array, weight: Uint8Array, index: number, width: number, height: number, factor: number, base: Plane, r0: number, r1: number): void {
  const { width: cw, data } = base;
  const cellRows = chunkRows(factor * width);
  const pixels = cellRows * factor * width;
  const memory = kernelMemory();
  const rows = memory.alloc(pixels * 3);
  const [winners, weights, mine] = [memory.alloc(pixels), memory.alloc(pixels), memory.alloc(pixels)];
  const [colours, owned] = [memory.alloc(columnBytes(width, 3, factor)), memory.alloc(columnBytes(width, 1, factor))];
  const [sums, out] = [memory.alloc(12 * cw * cellRows), memory.alloc(16 * cw * cellRows)];
  const { run, u8, f32 } = memory.ready();
  for (const [c0, c1] of chunks(r0, r1, cellRows)) {
    const [y0, y1] = [c0 * factor, Math.min(height, c1 * factor)];
    u8.set(frame.subarray(y0 * width * 3, y1 * width * 3), rows);
    u8.set(winner.subarray(y0 * width, y1 * width), winners);
    u8.set(weight.subarray(y0 * width, y1 * width), weights);
    run.ownedBytes(winners, weights, index, mine, (y1 - y0) * width);
    f32.set(backgroundSums.subarray(c0 * cw * 3, c1 * cw * 3), sums >> 2);
    byRowCount(c0, c1, height, factor, (from, to, count) => {
      const skip = from - c0;
      const [pixelRows, cellRow] = [skip * factor * width, skip * cw];
      // 1 / the cell's pixel count: the last cell of a row may be narrower
      const [scale, lastScale] = [1 / (count * factor), 1 / (count * (width - (cw - 1) * factor))];
      run.baseCellRows(to - from, rows + pixelRows * 3, mine + pixelRows, width, count, factor, cw, colours, owned, sums + cellRow * 12, scale, lastScale, out + cellRow * 16);
    });
    data.set(f32.subarray(out >> 2, (out >> 2) + (c1 - c0) * 4 * cw), c0 * cw * 4);
  }
}

/**
 * Rows [r0, r1) of the result: the background, plus every layer's collapsed bands (upsampled),
 * plus the owner's detail above the coarse grid (its difference minus its upsampled base level),
 * weighted by the owner's full-size weight. The layers' bands are summed once on the coarse grid
 * (the rows this range reads), so each pixel row interpolates one grid row pair, not one per
 * layer; a layer's base level is interpolated only on rows its frame owns pixels of, between
 * the first and last of them. A row that nothing reaches is the background's.
 */
export function finishRows(background: Uint8Array, frames: Uint8Array[], winner: Uint8Array, weight: Uint8Array, layers: Layer[], factor: number, out: Uint8Array, width: number, r0: number, r1: number): void {
  const cw = layers[0]?.base.width ?? 1;
  for (const [s0, s1] of chunks(r0, r1, sliceRows(cw, factor))) finishSlice(background, frames, winner, weight, layers, factor, out, width, s0, s1);
}

/** finishRows over a slice of a band. */
function finishSlice(background: Uint8Array, frames: Uint8Array[], winner: Uint8Array, weight: Uint8Array, layers: Layer[], factor: number, out: Uint8Array, width: number, r0: number, r1: number): void {
  const { width: cw, height: ch } = layers[0]?.base ?? { width: 1, height: 1 };
  const [g0, g1] = gridRows(r0, r1, ch, factor);
  const grid = g1 - g0 + 1;
  const stride = cw * 3;
  const n = frames.length;
  const rows = chunkRows(width);
  const memory = kernelMemory();
  const [summed, layerBands, reached] = [memory.alloc(grid * stride * 4), memory.alloc(grid * stride * 4), memory.alloc(grid)];
  // per layer its base level's rows [g0, g1] (4 channels), its frame's rows, its interpolated base level row (3 channels)
  const bases = layers.map(() => memory.alloc(grid * cw * 16));
  const frameRows = layers.map(() => memory.alloc(rows * width * 3));
  const baseRow = layers.map(() => memory.alloc(stride * 4));
  const [bands, still, layerTable, owners] = [memory.alloc(stride * 4), memory.alloc(cw), memory.alloc(layers.length * LAYER_BYTES), memory.alloc(8 * n)];
  const [backgroundRows, outRows, winners, weights] = [memory.alloc(rows * width * 3), memory.alloc(rows * width * 3), memory.alloc(rows * width), memory.alloc(rows * width)];
  const [spans, rowTaps, taps, fractions] = [memory.alloc(rows * 8 * n), memory.alloc(rows * ROW_TAP_BYTES), memory.alloc(width * TAP_BYTES), memory.alloc(256 * 8)];
  const { run, u8, i32, f32, f64 } = memory.ready();
  const tapsOf = columnTaps(width, cw, factor);
  memory.putTaps(taps, tapsOf, width);
  const quads = quadEnd(tapsOf, width, factor);
  for (let w = 0; w < 256; w++) f64[(fractions >> 3) + w] = w / 255;
  f32.fill(0, summed >> 2, (summed >> 2) + grid * stride);
  for (const layer of layers) {
    f32.set(layer.bands.data.subarray(g0 * stride, (g1 + 1) * stride), layerBands >> 2);
    run.addFloats(summed, layerBands, grid * stride);
  }
  for (let gy = 0; gy < grid; gy++) {
    u8[reached + gy] = 0;
    for (let i = (summed >> 2) + gy * stride, end = i + stride; i < end; i++) {
      if (f32[i] !== 0) {
        u8[reached + gy] = 1;
        break;
      }
    }
  }
  layers.forEach((layer, j) => {
    f32.set(layer.base.data.subarray(g0 * cw * 4, (g1 + 1) * cw * 4), bases[j]! >> 2);
    i32.set([layer.index, bases[j]!, frameRows[j]!, baseRow[j]!], (layerTable >> 2) + j * (LAYER_BYTES >> 2));
  });
  for (const [y0, y1] of chunks(r0, r1, rows)) {
    const count = y1 - y0;
    u8.set(winner.subarray(y0 * width, y1 * width), winners);
    u8.set(weight.subarray(y0 * width, y1 * width), weights);
    u8.set(background.subarray(y0 * width * 3, y1 * width * 3), backgroundRows);
    run.ownerSpans(count, winners, weights, width, n, spans);
    layers.forEach((layer, j) => {
      // only the rows its frame owns pixels of are read
      const k = layer.index;
      let [a, b] = [count, -1];
      for (let r = 0, e = (spans >> 2) + k; r < count; r++, e += 2 * n) {
        if (i32[e]! > i32[e + n]!) continue;
        a = Math.min(a, r);
        b = r;
      }
      if (a <= b) u8.set(frames[k]!.subarray((y0 + a) * width * 3, (y0 + b + 1) * width * 3), frameRows[j]! + a * width * 3);
    });
    memory.putRowTaps(rowTaps, y0, y1, ch, factor, g0);
    run.resultRows(count, rowTaps, spans, n, layerTable, layers.length, owners, cw, summed, reached, bands, still, backgroundRows, winners, weights, taps, width, outRows, quads, fractions);
    out.set(u8.subarray(outRows, outRows + count * width * 3), y0 * width * 3);
  }
}

/**
 * Rows [r0, r1) for `preserveBackground`: the first frame wherever no mask is set, the blend where a
 * mask is full, and between them a mix by the strongest mask (the feather lies inside the masks).
 */
export function keepRows(first: Uint8Array, blended: Uint8Array, masks: Uint8Array[], out: Uint8Array, width: number, r0: number, r1: number): void {
  const strongest = new Uint8Array(width);
  for (let y = r0; y < r1; y++) {
    const row = y * width;
    strongest.fill(0);
    for (const mask of masks) {
      const m = mask.subarray(row, row + width);
      for (let x = 0; x < width; x++) if (m[x]! > strongest[x]!) strongest[x] = m[x]!;
    }
    for (let x = 0, q = row * 3; x < width; x++, q += 3) {
      const a = strongest[x]!;
      if (a === 0) {
        out[q] = first[q]!;
        out[q + 1] = first[q + 1]!;
        out[q + 2] = first[q + 2]!;
        continue;
      }
      for (let k = 0; k < 3; k++) out[q + k] = first[q + k]! + ((blended[q + k]! - first[q + k]!) * a) / 255 + 0.5;
    }
  }
}

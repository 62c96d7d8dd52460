/**
 * The composite's full-size pixel loops, run in pool threads over bands of rows: the clean plate
 * (median), each frame's halo, which frame owns each pixel, each frame's coarse copy (the base
 * of its pyramid), the result, and `preserveBackground`'s restriction of a blend to the people.
 */
import type { Plane } from './composite-pyramid.js';
import { type KernelMemory, kernelMemory, quadEnd, TAP_BYTES, type Taps } from './composite-simd.js';
import { medianRows as stackMedianRows } from './stack.js';

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
 * halves up): the median blend's own kernel (stack.ts), a SIMD sorting network up to 32 frames.
 */
export function medianRows(frames: Uint8Array[], out: Uint8Array, width: number, r0: number, r1: number): void {
  stackMedianRows(frames, width, out, r0, r1);
}

/**
 * In place, the sums of each run of `factor` pixels (the last cut short) of the 16-bit column
 * sums at `columns` (`channels` interleaved, room for `factor` pixels past the row), left over
 * the run's first pixel (16 bits hold 255 × 16 × 16). For a power of two a run's sum is built in
 * SIMD by doubling: each lane plus the one half a run to its right, the row's tail zeroed.
 */
function runSums(memory: KernelMemory, columns: number, pixels: number, channels: number, factor: number): void {
  if ((factor & (factor - 1)) !== 0) {
    memory.run.blockSums(columns, pixels, channels, factor);
    return;
  }
  const lanes = Math.ceil(pixels / factor) * factor * channels;
  memory.u8.fill(0, columns + 2 * pixels * channels, columns + 2 * lanes + 16);
  for (let step = 1; step < factor; step *= 2) memory.run.doubleSums(columns, lanes, 2 * step * channels);
}

/** runSums, then each run's sums as i32 at `dst` (`channels` a run). */
function runTotals(memory: KernelMemory, columns: number, pixels: number, channels: number, factor: number, dst: number): void {
  runSums(memory, columns, pixels, channels, factor);
  memory.run.pickSums(columns, Math.ceil(pixels / factor), channels, 2 * factor * channels, dst);
}

/** Bytes for the column sums of a row of `pixels` pixels handed to runSums. */
const columnBytes = (pixels: number, channels: number, factor: number) => 2 * (pixels + factor) * channels + 16;

/** Three passes of a radius-2 box blur along one axis (close to a Gaussian of sigma 2.45 cells). */
function blurAxis(values: Float32Array, count: number, stride: number, lines: number, lineStride: number): void {
  const line = new Float32Array(count);
  for (let l = 0; l < lines; l++) {
    const base = l * lineStride;
    for (let pass = 0; pass < 3; pass++) {
      for (let i = 0; i < count; i++) line[i] = values[base + i * stride]!;
      for (let i = 0; i < count; i++) {
        let sum = 0;
        for (let d = -2; d <= 2; d++) sum += line[Math.min(count - 1, Math.max(0, i + d))]!;
        values[base + i * stride] = sum / 5;
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
  const memory = kernelMemory();
  const rows = memory.alloc(factor * width);
  const columns = memory.alloc(columnBytes(width, 1, factor));
  const sums = memory.alloc(4 * gw);
  const { run, u8, i32 } = memory.ready();
  for (let cy = 0; cy < gh; cy++) {
    // whole numbers below 2^24, as the f32 sums of sums of bytes were
    const count = Math.min(factor, height - cy * factor);
    u8.set(mask.subarray(cy * factor * width, (cy * factor + count) * width), rows);
    run.columnSums(rows, width, count, width, columns);
    runTotals(memory, columns, width, 1, factor, sums);
    for (let cx = 0; cx < gw; cx++) halo[cy * gw + cx] = i32[(sums >> 2) + cx]! / (255 * count * Math.min(factor, width - cx * factor));
  }
  blurAxis(halo, gw, 1, gh, gw);
  blurAxis(halo, gh, gw, gw, 1);
  for (let i = 0; i < halo.length; i++) halo[i] = Math.min(1, 2 * halo[i]!);
}

/** Column lookups for bilinear sampling of a grid `gridWidth` cells wide, one cell per `factor` pixels. */
function columnTaps(width: number, gridWidth: number, factor: number): Taps {
  const left = new Int32Array(width);
  const right = new Int32Array(width);
  const fx = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const u = Math.min(gridWidth - 1, Math.max(0, (x + 0.5) / factor - 0.5));
    left[x] = Math.floor(u);
    right[x] = Math.min(gridWidth - 1, left[x]! + 1);
    fx[x] = u - left[x]!;
  }
  return { left, right, fx };
}

/** The two grid rows around pixel row `y` and the weight of the lower one. */
function rowTaps(y: number, gridHeight: number, factor: number): [number, number, number] {
  const v = Math.min(gridHeight - 1, Math.max(0, (y + 0.5) / factor - 0.5));
  const top = Math.floor(v);
  return [top, Math.min(gridHeight - 1, top + 1), v - top];
}

/**
 * Rows [r0, r1): which frame owns each pixel and with what weight (0..255). A person beats a halo,
 * and among people the strongest mask wins; elsewhere the frame with the strongest halo in the
 * pixel's halo cell. Returns, per frame, whether it owns any pixel with a weight above zero.
 */
export function ownerRows(masks: Uint8Array[], halos: Float32Array[], grid: HaloGrid, winner: Uint8Array, weight: Uint8Array, width: number, r0: number, r1: number): boolean[] {
  const { factor, width: gw, height: gh } = grid;
  const n = masks.length;
  const memory = kernelMemory();
  const maskStride = Math.ceil(width / 16) * 16;
  const maskRows = memory.alloc(n * maskStride);
  const [rowWinner, rowWeight, cellOwner, owned] = [memory.alloc(width), memory.alloc(width), memory.alloc(gw), memory.alloc(n)];
  if (r1 <= r0) return masks.map(() => false);
  // Only the halo grid rows these pixel rows read: whole planes would make a tall, narrow image's
  // every band copy (and the thread's memory hold) all of them.
  const first = rowTaps(r0, gh, factor)[0];
  const last = rowTaps(r1 - 1, gh, factor)[1];
  const planeStride = (last - first + 1) * gw * 4;
  const planes = memory.alloc(n * planeStride);
  const haloStride = Math.ceil(gw / 4) * 16;
  const haloRows = memory.alloc(n * haloStride);
  const taps = memory.alloc(width * TAP_BYTES);
  const { run, u8, f32 } = memory.ready();
  halos.forEach((h, k) => f32.set(h.subarray(first * gw, (last + 1) * gw), (planes + k * planeStride) >> 2));
  memory.putTaps(taps, columnTaps(width, gw, factor), width);
  u8.fill(0, owned, owned + n);
  for (let y = r0; y < r1; y++) {
    const row = y * width;
    for (let k = 0; k < n; k++) u8.set(masks[k]!.subarray(row, row + width), maskRows + k * maskStride);
    run.strongest(maskRows, n, maskStride, rowWinner, rowWeight, width);
    const [top, bottom, fy] = rowTaps(y, gh, factor);
    run.haloRows(planes + (top - first) * gw * 4, planes + (bottom - first) * gw * 4, planeStride, n, gw, fy, haloRows, haloStride, cellOwner);
    run.claim(rowWinner, rowWeight, haloRows, haloStride, cellOwner, factor, taps, width, owned, gw);
    winner.set(u8.subarray(rowWinner, rowWinner + width), row);
    weight.set(u8.subarray(rowWeight, rowWeight + width), row);
  }
  return masks.map((_, k) => u8[owned + k] === 1);
}

/** Rows [r0, r1) of the background's sums (r, g, b) over `factor` × `factor` cells, on the base level's grid. */
export function cellSumRows(background: Uint8Array, width: number, height: number, factor: number, cw: number, sums: Float32Array, r0: number, r1: number): void {
  const memory = kernelMemory();
  const rows = memory.alloc(factor * width * 3);
  const columns = memory.alloc(columnBytes(width, 3, factor));
  const cells = memory.alloc(12 * cw);
  const { run, u8, i32 } = memory.ready();
  for (let cy = r0; cy < r1; cy++) {
    const count = Math.min(factor, height - cy * factor);
    u8.set(background.subarray(cy * factor * width * 3, (cy * factor + count) * width * 3), rows);
    run.columnSums(rows, width * 3, count, width * 3, columns);
    runTotals(memory, columns, width, 3, factor, cells);
    sums.set(i32.subarray(cells >> 2, (cells >> 2) + 3 * cw), cy * cw * 3);
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
  const memory = kernelMemory();
  const rows = memory.alloc(factor * width * 3);
  const [winners, weights, mine] = [memory.alloc(factor * width), memory.alloc(factor * width), memory.alloc(factor * width)];
  const [colours, owned] = [memory.alloc(columnBytes(width, 3, factor)), memory.alloc(columnBytes(width, 1, factor))];
  const [sums, out] = [memory.alloc(12 * cw), memory.alloc(16 * cw)];
  const { run, u8, f32 } = memory.ready();
  for (let cy = r0; cy < r1; cy++) {
    const y0 = cy * factor;
    const count = Math.min(factor, height - y0);
    u8.set(frame.subarray(y0 * width * 3, (y0 + count) * width * 3), rows);
    run.columnSums(rows, width * 3, count, width * 3, colours);
    runSums(memory, colours, width, 3, factor);
    u8.set(winner.subarray(y0 * width, (y0 + count) * width), winners);
    u8.set(weight.subarray(y0 * width, (y0 + count) * width), weights);
    run.ownedBytes(winners, weights, index, mine, count * width);
    run.columnSums(mine, width, count, width, owned);
    runSums(memory, owned, width, 1, factor);
    f32.set(backgroundSums.subarray(cy * cw * 3, (cy + 1) * cw * 3), sums >> 2);
    // 1 / the cell's pixel count: the last cell of a row may be narrower
    run.baseCells(colours, owned, factor, sums, cw, 1 / (count * factor), 1 / (count * (width - (cw - 1) * factor)), out);
    data.set(f32.subarray(out >> 2, (out >> 2) + 4 * cw), cy * cw * 4);
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
  const { width: cw, height: ch } = layers[0]?.base ?? { width: 1, height: 1 };
  const g0 = rowTaps(r0, ch, factor)[0];
  const g1 = rowTaps(r1 - 1, ch, factor)[1];
  const gridRows = g1 - g0 + 1;
  const stride = cw * 3;
  const n = frames.length;
  const memory = kernelMemory();
  const [summed, layerBands] = [memory.alloc(gridRows * stride * 4), memory.alloc(gridRows * stride * 4)];
  // per layer its base level's rows [g0, g1] (4 channels), per frame index its interpolated row (3 channels)
  const bases = layers.map(() => memory.alloc(gridRows * cw * 16));
  const baseRowOf = frames.map(() => memory.alloc(stride * 4));
  const [bands, still] = [memory.alloc(stride * 4), memory.alloc(cw)];
  const [rowBackground, rowOut, rowWinner, rowWeight] = [memory.alloc(width * 3), memory.alloc(width * 3), memory.alloc(width), memory.alloc(width)];
  const frameRowOf = frames.map(() => memory.alloc(width * 3));
  const [first, last, ownerTable] = [memory.alloc(4 * n), memory.alloc(4 * n), memory.alloc(8 * n)];
  const [taps, fractions] = [memory.alloc(width * TAP_BYTES), memory.alloc(256 * 8)];
  const { run, u8, i32, f32, f64 } = memory.ready();
  const tapsOf = columnTaps(width, cw, factor);
  memory.putTaps(taps, tapsOf, width);
  const quads = quadEnd(tapsOf, width, factor);
  for (let w = 0; w < 256; w++) f64[(fractions >> 3) + w] = w / 255;
  f32.fill(0, summed >> 2, (summed >> 2) + gridRows * stride);
  for (const layer of layers) {
    f32.set(layer.bands.data.subarray(g0 * stride, (g1 + 1) * stride), layerBands >> 2);
    run.addFloats(summed, layerBands, gridRows * stride);
  }
  const reached = new Uint8Array(gridRows);
  for (let gy = 0; gy < gridRows; gy++) {
    for (let i = (summed >> 2) + gy * stride, end = i + stride; i < end; i++) {
      if (f32[i] !== 0) {
        reached[gy] = 1;
        break;
      }
    }
  }
  layers.forEach((layer, j) => f32.set(layer.base.data.subarray(g0 * cw * 4, (g1 + 1) * cw * 4), bases[j]! >> 2));
  for (let y = r0; y < r1; y++) {
    const [top, bottom, fy] = rowTaps(y, ch, factor);
    const row0 = y * width;
    u8.set(winner.subarray(row0, row0 + width), rowWinner);
    u8.set(weight.subarray(row0, row0 + width), rowWeight);
    i32.fill(width, first >> 2, (first >> 2) + n);
    i32.fill(-1, last >> 2, (last >> 2) + n);
    run.spans(rowWinner, rowWeight, width, first, last);
    i32.fill(0, ownerTable >> 2, (ownerTable >> 2) + 2 * n);
    let owners = false;
    layers.forEach((layer, j) => {
      const k = layer.index;
      const [a, b] = [i32[(first >> 2) + k]!, i32[(last >> 2) + k]!];
      if (a > b) return;
      owners = true;
      const [c0, c1] = [tapsOf.left[a]!, tapsOf.right[b]!];
      const plane = bases[j]!;
      run.lerpRows(plane + ((top - g0) * cw + c0) * 16, plane + ((bottom - g0) * cw + c0) * 16, c1 - c0 + 1, 4, fy, baseRowOf[k]! + c0 * 12);
      u8.set(frames[k]!.subarray(row0 * 3, (row0 + width) * 3), frameRowOf[k]!);
      i32[(ownerTable >> 2) + 2 * k] = frameRowOf[k]!;
      i32[(ownerTable >> 2) + 2 * k + 1] = baseRowOf[k]!;
    });
    if (!owners && !reached[top - g0] && !reached[bottom - g0]) {
      // background + 0 + 0 × f, rounded: the background itself
      out.set(background.subarray(row0 * 3, (row0 + width) * 3), row0 * 3);
      continue;
    }
    run.lerpRows(summed + (top - g0) * stride * 4, summed + (bottom - g0) * stride * 4, cw, 3, fy, bands);
    u8.set(background.subarray(row0 * 3, (row0 + width) * 3), rowBackground);
    run.stillColumns(bands, cw, still);
    run.finishRow(rowBackground, bands, still, rowWinner, rowWeight, ownerTable, taps, width, rowOut, quads, fractions);
    out.set(u8.subarray(rowOut, rowOut + width * 3), row0 * 3);
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

/**
 * The composite's full-size pixel loops, run in pool threads over bands of rows: the clean plate
 * (median), each frame's halo, which frame owns each pixel, each frame's coarse copy (the base
 * of its pyramid), the result, and `preserveBackground`'s restriction of a blend to the people.
 */
import type { Plane } from './composite-pyramid.js';
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

/** `winner` value of a pixel that no frame claims. */
const NOBODY = 255;

/**
 * Per-byte median of the frames over rows [r0, r1) (mean of the middle two for an even count,
 * halves up): the median blend's own kernel (stack.ts), a SIMD sorting network up to 32 frames.
 */
export function medianRows(frames: Uint8Array[], out: Uint8Array, width: number, r0: number, r1: number): void {
  stackMedianRows(frames, width, out, r0, r1);
}

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
  halo.fill(0);
  for (let y = 0; y < height; y++) {
    const cells = Math.floor(y / factor) * gw;
    for (let cx = 0, i = y * width; cx < gw; cx++) {
      let sum = 0;
      for (const end = Math.min(i + factor, (y + 1) * width); i < end; i++) sum += mask[i]!;
      halo[cells + cx]! += sum;
    }
  }
  for (let cy = 0; cy < gh; cy++) {
    const rows = Math.min(factor, height - cy * factor);
    for (let cx = 0; cx < gw; cx++) halo[cy * gw + cx]! /= 255 * rows * Math.min(factor, width - cx * factor);
  }
  blurAxis(halo, gw, 1, gh, gw);
  blurAxis(halo, gh, gw, gw, 1);
  for (let i = 0; i < halo.length; i++) halo[i] = Math.min(1, 2 * halo[i]!);
}

/** Column lookups for bilinear sampling of a grid `gridWidth` cells wide, one cell per `factor` pixels. */
function columnTaps(width: number, gridWidth: number, factor: number) {
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
  const { left, right, fx } = columnTaps(width, gw, factor);
  const haloRows = halos.map(() => new Float32Array(gw));
  const cellOwner = new Uint8Array(gw);
  const owned = new Uint8Array(masks.length);
  for (let y = r0; y < r1; y++) {
    const row = y * width;
    const rowWinner = winner.subarray(row, row + width);
    const rowWeight = weight.subarray(row, row + width);
    rowWinner.fill(NOBODY);
    rowWeight.fill(0);
    for (let k = 0; k < masks.length; k++) {
      const mask = masks[k]!.subarray(row, row + width);
      for (let x = 0; x < width; x++) {
        if (mask[x]! > rowWeight[x]!) {
          rowWeight[x] = mask[x]!;
          rowWinner[x] = k;
        }
      }
    }
    const [top, bottom, fy] = rowTaps(y, gh, factor);
    cellOwner.fill(0);
    for (let k = 0; k < halos.length; k++) {
      const h = halos[k]!;
      const r = haloRows[k]!;
      for (let u = 0; u < gw; u++) {
        r[u] = 255 * (h[top * gw + u]! + (h[bottom * gw + u]! - h[top * gw + u]!) * fy);
        if (r[u]! > haloRows[cellOwner[u]!]![u]!) cellOwner[u] = k;
      }
    }
    // cell by cell: the pixels of cell u are [u × factor, (u + 1) × factor)
    for (let u = 0, x = 0; u < gw; u++) {
      const cell = cellOwner[u]!;
      const cellHalo = haloRows[cell]!;
      for (const end = Math.min(width, x + factor); x < end; x++) {
        const person = rowWinner[x]!;
        const owner = person === NOBODY ? cell : person;
        const r = person === NOBODY ? cellHalo : haloRows[person]!;
        const a = r[left[x]!]!;
        const halo = a + (r[right[x]!]! - a) * fx[x]! + 0.5;
        if (halo >= rowWeight[x]! + 1) {
          rowWeight[x] = halo;
          rowWinner[x] = owner;
        }
        if (rowWeight[x]! > 0) owned[rowWinner[x]!] = 1;
      }
    }
  }
  return masks.map((_, k) => owned[k] === 1);
}

/** Rows [r0, r1) of the background's sums (r, g, b) over `factor` × `factor` cells, on the base level's grid. */
export function cellSumRows(background: Uint8Array, width: number, height: number, factor: number, cw: number, sums: Float32Array, r0: number, r1: number): void {
  for (let cy = r0; cy < r1; cy++) {
    const y0 = cy * factor;
    const y1 = Math.min(height, y0 + factor);
    for (let cx = 0; cx < cw; cx++) {
      const x0 = cx * factor;
      const x1 = Math.min(width, x0 + factor);
      let r = 0;
      let g = 0;
      let b = 0;
      for (let y = y0; y < y1; y++) {
        for (let q = (y * width + x0) * 3, end = (y * width + x1) * 3; q < end; q += 3) {
          r += background[q]!;
          g += background[q + 1]!;
          b += background[q + 2]!;
        }
      }
      const o = (cy * cw + cx) * 3;
      sums[o] = r;
      sums[o + 1] = g;
      sums[o + 2] = b;
    }
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
  for (let cy = r0; cy < r1; cy++) {
    const y0 = cy * factor;
    const y1 = Math.min(height, y0 + factor);
    for (let cx = 0; cx < cw; cx++) {
      const x0 = cx * factor;
      const x1 = Math.min(width, x0 + factor);
      let r = 0;
      let g = 0;
      let b = 0;
      let w = 0;
      for (let y = y0; y < y1; y++) {
        for (let p = y * width + x0, end = y * width + x1; p < end; p++) {
          const q = p * 3;
          r += frame[q]!;
          g += frame[q + 1]!;
          b += frame[q + 2]!;
          if (winner[p] === index) w += weight[p]!;
        }
      }
      const s = (cy * cw + cx) * 3;
      const scale = 1 / ((y1 - y0) * (x1 - x0));
      const o = (cy * cw + cx) * 4;
      data[o] = (r - backgroundSums[s]!) * scale;
      data[o + 1] = (g - backgroundSums[s + 1]!) * scale;
      data[o + 2] = (b - backgroundSums[s + 2]!) * scale;
      data[o + 3] = (w * scale) / 255;
    }
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
  const { left, right, fx } = columnTaps(width, cw, factor);
  const g0 = rowTaps(r0, ch, factor)[0];
  const g1 = rowTaps(r1 - 1, ch, factor)[1];
  const stride = cw * 3;
  const summed = new Float32Array((g1 - g0 + 1) * stride);
  for (const layer of layers) {
    const b = layer.bands.data;
    for (let i = 0, j = g0 * stride; i < summed.length; i++, j++) summed[i]! += b[j]!;
  }
  const reached = new Uint8Array(g1 - g0 + 1);
  for (let gy = 0; gy < reached.length; gy++) {
    for (let i = gy * stride, end = i + stride; i < end; i++) {
      if (summed[i] !== 0) {
        reached[gy] = 1;
        break;
      }
    }
  }
  const bands = new Float32Array(stride);
  // Per frame index: its layer's base level, interpolated to the current row (empty: no layer).
  const none = new Float32Array(0);
  const bases = frames.map((_, i) => (layers.some((l) => l.index === i) ? new Float32Array(stride) : none));
  // Per frame index: the first and last pixel of the row it owns (first > last: none).
  const first = new Int32Array(frames.length);
  const last = new Int32Array(frames.length);
  for (let y = r0; y < r1; y++) {
    const [top, bottom, fy] = rowTaps(y, ch, factor);
    const row0 = y * width;
    first.fill(width);
    last.fill(-1);
    for (let x = 0, p = row0; x < width; x++, p++) {
      if (weight[p] === 0) continue;
      const k = winner[p]!;
      if (x < first[k]!) first[k] = x;
      last[k] = x;
    }
    let owners = false;
    for (const layer of layers) {
      const k = layer.index;
      if (first[k]! > last[k]!) continue;
      owners = true;
      const g = layer.base.data;
      const row = bases[k]!;
      for (let c = left[first[k]!]!, end = right[last[k]!]!, t = top * cw * 4, s = bottom * cw * 4; c <= end; c++) {
        const i = c * 3;
        const j = c * 4;
        row[i] = g[t + j]! + (g[s + j]! - g[t + j]!) * fy;
        row[i + 1] = g[t + j + 1]! + (g[s + j + 1]! - g[t + j + 1]!) * fy;
        row[i + 2] = g[t + j + 2]! + (g[s + j + 2]! - g[t + j + 2]!) * fy;
      }
    }
    if (!owners && !reached[top - g0] && !reached[bottom - g0]) {
      // background + 0 + 0 × f, rounded: the background itself
      out.set(background.subarray(row0 * 3, (row0 + width) * 3), row0 * 3);
      continue;
    }
    for (let i = 0, t = (top - g0) * stride, s = (bottom - g0) * stride; i < stride; i++) bands[i] = summed[t + i]! + (summed[s + i]! - summed[t + i]!) * fy;
    for (let x = 0, p = row0, q = p * 3; x < width; x++, p++, q += 3) {
      const l = left[x]! * 3;
      const r = right[x]! * 3;
      const f = fx[x]!;
      const v0 = background[q]! + bands[l]! + (bands[r]! - bands[l]!) * f;
      const v1 = background[q + 1]! + bands[l + 1]! + (bands[r + 1]! - bands[l + 1]!) * f;
      const v2 = background[q + 2]! + bands[l + 2]! + (bands[r + 2]! - bands[l + 2]!) * f;
      const owner = weight[p]! > 0 ? bases[winner[p]!]! : none;
      if (owner.length === 0) {
        out[q] = v0 < 0 ? 0 : v0 > 255 ? 255 : v0 + 0.5;
        out[q + 1] = v1 < 0 ? 0 : v1 > 255 ? 255 : v1 + 0.5;
        out[q + 2] = v2 < 0 ? 0 : v2 > 255 ? 255 : v2 + 0.5;
        continue;
      }
      const frame = frames[winner[p]!]!;
      const w = weight[p]! / 255;
      const d0 = v0 + w * (frame[q]! - background[q]! - (owner[l]! + (owner[r]! - owner[l]!) * f));
      const d1 = v1 + w * (frame[q + 1]! - background[q + 1]! - (owner[l + 1]! + (owner[r + 1]! - owner[l + 1]!) * f));
      const d2 = v2 + w * (frame[q + 2]! - background[q + 2]! - (owner[l + 2]! + (owner[r + 2]! - owner[l + 2]!) * f));
      out[q] = d0 < 0 ? 0 : d0 > 255 ? 255 : d0 + 0.5;
      out[q + 1] = d1 < 0 ? 0 : d1 > 255 ? 255 : d1 + 0.5;
      out[q + 2] = d2 < 0 ? 0 : d2 > 255 ? 255 : d2 + 0.5;
    }
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

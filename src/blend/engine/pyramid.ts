import { sharedFloats } from './image.js';

/**
 * Gaussian and Laplacian pyramids on Float32 planes (Burt & Adelson): the 5-tap binomial
 * 1-4-6-4-1 kernel, separable, edges replicated; level l+1 is level l blurred and decimated,
 * ceil(width / 2) × ceil(height / 2). Kernels work on row ranges of one level so the caller can
 * split a level across pool threads, and take several planes (channels) per call.
 */
export interface Plane {
  data: Float32Array;
  width: number;
  height: number;
}

/** A plane in shared memory. */
export function sharedPlane(width: number, height: number): Plane {
  return { data: sharedFloats(width * height), width, height };
}

/**
 * The largest planes a blend keeps are stored in 16-bit fixed point, at half the memory of Float32:
 * level-0 weights (0..WEIGHT_ONE for 0..1) and every frame's level 1 (LEVEL_ONE_STEPS per unit).
 */
export interface FixedPlane {
  data: Uint16Array;
  width: number;
  height: number;
}

export function sharedFixedPlane(width: number, height: number): FixedPlane {
  return { data: new Uint16Array(new SharedArrayBuffer(width * height * 2)), width, height };
}

/**
 * Weights ~3·10⁻⁵ apart, far below an 8-bit step once multiplied by pixel values. A power of two,
 * so 1 is exact and scaling back is exact.
 */
export const WEIGHT_ONE = 1 << 15;

/**
 * Level 1 of an 8-bit frame under the 1-4-6-4-1 kernel is a whole number of 256ths (the kernel
 * sums to 256 each way), so keeping it in 256ths is exact.
 */
export const LEVEL_ONE_STEPS = 256;

/** The sizes of a pyramid's levels, finest first; the coarsest is 8..16 px on its short side. */
export function levelSizes(width: number, height: number): Array<[number, number]> {
  const sizes: Array<[number, number]> = [[width, height]];
  while (Math.min(width, height) > 16) {
    width = Math.ceil(width / 2);
    height = Math.ceil(height / 2);
    sizes.push([width, height]);
  }
  return sizes;
}

/** Level l + 1 from level l: rows [y0, y1) of every `dst[i]` from `src[i]`. */
export function reduceRows(src: Plane[], dst: Plane[], y0: number, y1: number): void {
  for (let i = 0; i < src.length; i++) {
    const s = src[i]!, d = dst[i]!;
    const sw = s.width, dw = d.width, last = s.height - 1, data = s.data;
    const t = new Float64Array(sw + 4);
    for (let y = y0; y < y1; y++) {
      const r2 = clamp(2 * y, last) * sw;
      const r0 = clamp(2 * y - 2, last) * sw, r1 = clamp(2 * y - 1, last) * sw;
      const r3 = clamp(2 * y + 1, last) * sw, r4 = clamp(2 * y + 2, last) * sw;
      for (let x = 0; x < sw; x++) {
        t[x + 2] = data[r0 + x]! + data[r4 + x]! + 4 * (data[r1 + x]! + data[r3 + x]!) + 6 * data[r2 + x]!;
      }
      decimate(t, sw, d.data, y * dw, dw);
    }
  }
}

/**
 * Level l + 1 from a fixed-point level l (`unit` is the value of one step: 1 / WEIGHT_ONE for level-0
 * weights, 1 / LEVEL_ONE_STEPS for a frame's level 1): rows [y0, y1) of every `dst[i]` from `src[i]`.
 * A copy of reduceRows rather than a parameter of it: one loop reading both array types runs slower.
 */
export function reduceFixedRows(src: FixedPlane[], unit: number, dst: Plane[], y0: number, y1: number): void {
  for (let i = 0; i < src.length; i++) {
    const s = src[i]!, d = dst[i]!;
    const sw = s.width, dw = d.width, last = s.height - 1, data = s.data;
    const t = new Float64Array(sw + 4);
    for (let y = y0; y < y1; y++) {
      const r2 = clamp(2 * y, last) * sw;
      const r0 = clamp(2 * y - 2, last) * sw, r1 = clamp(2 * y - 1, last) * sw;
      const r3 = clamp(2 * y + 1, last) * sw, r4 = clamp(2 * y + 2, last) * sw;
      for (let x = 0; x < sw; x++) {
        t[x + 2] = (data[r0 + x]! + data[r4 + x]! + 4 * (data[r1 + x]! + data[r3 + x]!) + 6 * data[r2 + x]!) * unit;
      }
      decimate(t, sw, d.data, y * dw, dw);
    }
  }
}

/**
 * Level 1 of the R, G and B pyramids straight from the interleaved 8-bit frame (level 0), in fixed
 * point (LEVEL_ONE_STEPS) into `kept`: the only copy of the frame's level 1.
 */
export function reduceRgbRows(frame: Uint8Array, width: number, height: number, kept: FixedPlane[], y0: number, y1: number): void {
  const last = height - 1, stride = width * 3, dw = kept[0]!.width;
  const t = new Float64Array(width + 4);
  const row = new Float32Array(dw);
  for (let y = y0; y < y1; y++) {
    const r2 = clamp(2 * y, last) * stride;
    const r0 = clamp(2 * y - 2, last) * stride, r1 = clamp(2 * y - 1, last) * stride;
    const r3 = clamp(2 * y + 1, last) * stride, r4 = clamp(2 * y + 2, last) * stride;
    for (let c = 0; c < 3; c++) {
      for (let x = 0, q = c; x < width; x++, q += 3) {
        t[x + 2] = frame[r0 + q]! + frame[r4 + q]! + 4 * (frame[r1 + q]! + frame[r3 + q]!) + 6 * frame[r2 + q]!;
      }
      const o = y * dw, fixed = kept[c]!.data;
      decimate(t, width, row, 0, dw);
      for (let x = 0; x < dw; x++) fixed[o + x] = row[x]! * LEVEL_ONE_STEPS;
    }
  }
}

/**
 * One level (≥ 1) of a weighted Laplacian blend: acc[i] += weight · (level[i] − expand(coarser[i])),
 * or acc[i] += weight · level[i] at the coarsest level (`coarser` null).
 */
export function accumulateRows(
  acc: Plane[],
  level: Plane[],
  coarser: Plane[] | null,
  weight: Plane,
  y0: number,
  y1: number,
): void {
  const w = weight.width, wd = weight.data;
  const e = new Float64Array(2 * w + 2);
  for (let i = 0; i < acc.length; i++) {
    const a = acc[i]!.data, g = level[i]!.data, c = coarser?.[i];
    const t = c ? new Float64Array(c.width + 2) : null;
    for (let y = y0; y < y1; y++) {
      const o = y * w;
      // a row where the frame has no weight adds nothing (most rows of a focus stack's frame)
      if (!anyWeight(wd, o, w)) continue;
      if (c && t) {
        expandRow(c, y, t, e);
        for (let x = 0; x < w; x++) a[o + x]! += wd[o + x]! * (g[o + x]! - e[x]!);
      } else {
        for (let x = 0; x < w; x++) a[o + x]! += wd[o + x]! * g[o + x]!;
      }
    }
  }
}

/**
 * accumulateRows at level 1, whose frame level is kept in fixed point (LEVEL_ONE_STEPS; scaling back
 * is exact). A copy rather than a parameter, as for reduceFixedRows.
 */
export function accumulateFixedRows(
  acc: Plane[],
  level: FixedPlane[],
  coarser: Plane[] | null,
  weight: Plane,
  y0: number,
  y1: number,
): void {
  const w = weight.width, wd = weight.data, unit = 1 / LEVEL_ONE_STEPS;
  const e = new Float64Array(2 * w + 2);
  for (let i = 0; i < acc.length; i++) {
    const a = acc[i]!.data, g = level[i]!.data, c = coarser?.[i];
    const t = c ? new Float64Array(c.width + 2) : null;
    for (let y = y0; y < y1; y++) {
      const o = y * w;
      if (!anyWeight(wd, o, w)) continue;
      if (c && t) {
        expandRow(c, y, t, e);
        for (let x = 0; x < w; x++) a[o + x]! += wd[o + x]! * (g[o + x]! * unit - e[x]!);
      } else {
        for (let x = 0; x < w; x++) a[o + x]! += wd[o + x]! * (g[o + x]! * unit);
      }
    }
  }
}

/** Every frame's level-0 weights: one fixed-point plane per frame (WEIGHT_ONE is 1), or the index of the one frame chosen per pixel. */
export type LevelZeroWeights = { planes: Uint16Array[] } | { choice: Uint8Array };

/**
 * The finest level of the blend, straight into the 8-bit result, so level 0 is never stored:
 * out = clip(round(expand(coarser) + Σ_k w_k · (frame_k − expand(firsts[k])))) per channel, where
 * `firsts[k]` is level 1 of frame k's R, G, B pyramids (fixed point, LEVEL_ONE_STEPS) and `coarser`
 * level 1 of the collapsed blend (both null when level 0 is the only level).
 */
export function collapseLevelZeroRows(
  frames: Uint8Array[],
  firsts: FixedPlane[][] | null,
  weights: LevelZeroWeights,
  coarser: Plane[] | null,
  out: Uint8Array,
  width: number,
  y0: number,
  y1: number,
): void {
  const t = new Float64Array(width + 2);
  const w = new Float64Array(width);
  const [er, eg, eb] = [0, 1, 2].map(() => new Float64Array(2 * width + 2)) as [Float64Array, Float64Array, Float64Array];
  const [sr, sg, sb] = [0, 1, 2].map(() => new Float64Array(width)) as [Float64Array, Float64Array, Float64Array];
  for (let y = y0; y < y1; y++) {
    const o = y * width;
    if (coarser) {
      expandRow(coarser[0]!, y, t, er);
      expandRow(coarser[1]!, y, t, eg);
      expandRow(coarser[2]!, y, t, eb);
    }
    for (let x = 0; x < width; x++) {
      sr[x] = er[x]!;
      sg[x] = eg[x]!;
      sb[x] = eb[x]!;
    }
    for (let k = 0; k < frames.length; k++) {
      if (!weightRow(weights, k, o, width, w)) continue;
      const frame = frames[k]!;
      if (firsts) {
        expandFixedRow(firsts[k]![0]!, y, t, er);
        expandFixedRow(firsts[k]![1]!, y, t, eg);
        expandFixedRow(firsts[k]![2]!, y, t, eb);
      }
      for (let x = 0, q = o * 3; x < width; x++, q += 3) {
        const wx = w[x]!;
        sr[x]! += wx * (frame[q]! - er[x]!);
        sg[x]! += wx * (frame[q + 1]! - eg[x]!);
        sb[x]! += wx * (frame[q + 2]! - eb[x]!);
      }
    }
    for (let x = 0, q = o * 3; x < width; x++, q += 3) {
      out[q] = toByte(sr[x]!);
      out[q + 1] = toByte(sg[x]!);
      out[q + 2] = toByte(sb[x]!);
    }
  }
}

/** fine[i] += sign · expand(coarser[i]) on rows [y0, y1): collapses (+1) or makes a Laplacian level (−1). */
export function expandIntoRows(fine: Plane[], coarser: Plane[], sign: 1 | -1, y0: number, y1: number): void {
  for (let i = 0; i < fine.length; i++) {
    const f = fine[i]!, c = coarser[i]!, w = f.width, d = f.data;
    const t = new Float64Array(c.width + 2), e = new Float64Array(2 * w + 2);
    for (let y = y0; y < y1; y++) {
      expandRow(c, y, t, e);
      for (let x = 0, o = y * w; x < w; x++) d[o + x]! += sign * e[x]!;
    }
  }
}

/** The Gaussian pyramid of a plane (level 0 is the plane itself), on the calling thread. */
export function gaussianPyramid(plane: Plane): Plane[] {
  const levels = [plane];
  for (const [w, h] of levelSizes(plane.width, plane.height).slice(1)) {
    const next = sharedPlane(w, h);
    reduceRows([levels[levels.length - 1]!], [next], 0, h);
    levels.push(next);
  }
  return levels;
}

/** The Laplacian pyramid of a plane, built in place over its Gaussian pyramid (the plane is copied). */
export function laplacianPyramid(plane: Plane): Plane[] {
  const copy = sharedPlane(plane.width, plane.height);
  copy.data.set(plane.data);
  const levels = gaussianPyramid(copy);
  for (let l = 0; l + 1 < levels.length; l++) expandIntoRows([levels[l]!], [levels[l + 1]!], -1, 0, levels[l]!.height);
  return levels;
}

/** Collapses a Laplacian pyramid in place, coarsest first; returns level 0, the picture. */
export function collapsePyramid(levels: Plane[]): Plane {
  for (let l = levels.length - 2; l >= 0; l--) expandIntoRows([levels[l]!], [levels[l + 1]!], 1, 0, levels[l]!.height);
  return levels[0]!;
}

const clamp = (i: number, last: number): number => (i < 0 ? 0 : i > last ? last : i);

const toByte = (v: number): number => (v <= 0 ? 0 : v >= 255 ? 255 : (v + 0.5) | 0);

function anyWeight(weight: Float32Array | Uint16Array, o: number, width: number): boolean {
  for (let x = o; x < o + width; x++) if (weight[x] !== 0) return true;
  return false;
}

// Frame k's level-0 weights on the row starting at pixel o, into w; false when they are all 0.
function weightRow(weights: LevelZeroWeights, k: number, o: number, width: number, w: Float64Array): boolean {
  if ('planes' in weights) {
    const plane = weights.planes[k]!;
    for (let x = 0; x < width; x++) w[x] = plane[o + x]! * (1 / WEIGHT_ONE);
    return anyWeight(plane, o, width);
  }
  const choice = weights.choice;
  let any = false;
  for (let x = 0; x < width; x++) {
    const chosen = choice[o + x] === k;
    w[x] = chosen ? 1 : 0;
    any ||= chosen;
  }
  return any;
}

// Horizontal 1-4-6-4-1 at even columns of a vertically filtered row t (values at t[2..sw+1], edges
// replicated into t[0..1] and t[sw+2..sw+3]); both passes' 1/16 folded into one 1/256.
function decimate(t: Float64Array, sw: number, out: Float32Array, o: number, dw: number): void {
  t[0] = t[1] = t[2]!;
  t[sw + 2] = t[sw + 3] = t[sw + 1]!;
  for (let x = 0, s = 0; x < dw; x++, s += 2) {
    out[o + x] = (t[s]! + t[s + 4]! + 4 * (t[s + 1]! + t[s + 3]!) + 6 * t[s + 2]!) * (1 / 256);
  }
}

// Row y of expand(c) (c upsampled ×2 with zeros and blurred by 2 · 1-4-6-4-1 each way) into e[0..2·c.width):
// even positions take (1, 6, 1) / 8 of their neighbourhood, odd ones (1, 1) / 2. t is scratch of c.width + 2.
function expandRow(c: Plane, y: number, t: Float64Array, e: Float64Array): void {
  const sw = c.width, last = c.height - 1, d = c.data, j = y >> 1;
  const r1 = clamp(j, last) * sw;
  if (y & 1) {
    const r2 = clamp(j + 1, last) * sw;
    for (let x = 0; x < sw; x++) t[x + 1] = (d[r1 + x]! + d[r2 + x]!) * 0.5;
  } else {
    const r0 = clamp(j - 1, last) * sw, r2 = clamp(j + 1, last) * sw;
    for (let x = 0; x < sw; x++) t[x + 1] = (d[r0 + x]! + d[r2 + x]! + 6 * d[r1 + x]!) * 0.125;
  }
  expandAcross(t, sw, e);
}

// expandRow of a level-1 plane kept in fixed point (LEVEL_ONE_STEPS, a power of two: scaling back is
// exact). A copy rather than a parameter: one function reading both array types runs slower for both.
function expandFixedRow(c: FixedPlane, y: number, t: Float64Array, e: Float64Array): void {
  const unit = 1 / LEVEL_ONE_STEPS;
  const sw = c.width, last = c.height - 1, d = c.data, j = y >> 1;
  const r1 = clamp(j, last) * sw;
  if (y & 1) {
    const r2 = clamp(j + 1, last) * sw, half = 0.5 * unit;
    for (let x = 0; x < sw; x++) t[x + 1] = (d[r1 + x]! + d[r2 + x]!) * half;
  } else {
    const r0 = clamp(j - 1, last) * sw, r2 = clamp(j + 1, last) * sw, eighth = 0.125 * unit;
    for (let x = 0; x < sw; x++) t[x + 1] = (d[r0 + x]! + d[r2 + x]! + 6 * d[r1 + x]!) * eighth;
  }
  expandAcross(t, sw, e);
}

// The horizontal half of expandRow: t[1..sw] (edges replicated into t[0], t[sw + 1]) into e[0..2·sw).
function expandAcross(t: Float64Array, sw: number, e: Float64Array): void {
  t[0] = t[1]!;
  t[sw + 1] = t[sw]!;
  for (let x = 0; x < sw; x++) {
    const a = t[x]!, b = t[x + 1]!, n = t[x + 2]!;
    e[2 * x] = (a + 6 * b + n) * 0.125;
    e[2 * x + 1] = (b + n) * 0.5;
  }
}

import { EPSILON } from './exposure.js';
import { sharedFloats } from './image.js';
import { type Row, type RowMemory, rowMemory } from './pyramid-simd.js';

/**
 * Gaussian and Laplacian pyramids (Burt & Adelson): the 5-tap binomial 1-4-6-4-1 kernel,
 * separable, edges replicated; level l+1 is level l blurred and decimated, ceil(width / 2) ×
 * ceil(height / 2). Kernels work on row ranges of one level so the caller can split a level across
 * pool threads, and take several planes (channels) per call. The arithmetic is WebAssembly SIMD in
 * 32-bit floats (pyramid-simd.ts); JavaScript picks the rows.
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
 * Level 1, the largest level a blend keeps, is stored in 16-bit fixed point, at half the memory of
 * Float32: every frame's R, G, B (LEVEL_ONE_STEPS per unit, exact) and weight (WEIGHT_ONE for 1).
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

/**
 * Every frame's level-0 weights, never stored: Mertens' exposure weights (exposure.ts), computed
 * from the frames row by row where they are needed, or one-hot weights from the index of the frame
 * chosen per pixel.
 */
export type LevelZeroWeights = 'exposure' | { choice: Uint8Array };

/** The value of one step of a fixed-point plane that holds `kind`. */
const unitOf = { level: 1 / LEVEL_ONE_STEPS, weight: 1 / WEIGHT_ONE } as const;

const clamp = (i: number, last: number): number => (i < 0 ? 0 : i > last ? last : i);

/**
 * Level 1 of every frame from the frames (level 0), rows [y0, y1): R, G, B into `firsts[k]`
 * (LEVEL_ONE_STEPS, exact) and the weight into `weights[k]` (WEIGHT_ONE). The level-0 weights
 * are made here, a few rows at a time, and dropped once reduced.
 */
export function levelOneRows(
  frames: Uint8Array[],
  width: number,
  height: number,
  levelZero: LevelZeroWeights,
  firsts: FixedPlane[][],
  weights: FixedPlane[],
  y0: number,
  y1: number,
): void {
  const mem = rowMemory();
  const zero = new LevelZeroRows(mem, frames, width, height, levelZero, 5);
  const dw = weights[0]!.width;
  const sum16 = mem.row(width + 4, 2), sum32 = mem.row(width + 4, 4);
  const even = mem.row(dw + 16, 4), odd = mem.row(dw + 16, 4);
  const out16 = mem.row(dw, 2), out32 = mem.row(dw, 4);
  mem.ready();
  const { run } = mem, last = height - 1;
  zero.start(clamp(2 * y0 - 2, last));
  for (let y = y0; y < y1; y++) {
    zero.weightsUpTo(clamp(2 * y + 2, last));
    const rows = [-2, -1, 0, 1, 2].map((d) => clamp(2 * y + d, last)) as [number, number, number, number, number];
    for (let k = 0; k < frames.length; k++) {
      for (let c = 0; c < 3; c++) {
        const [a, b, m, d, e] = rows.map((r) => zero.planar(k, r)[c]!.at) as [number, number, number, number, number];
        run.sumBytes5(a, b, m, d, e, sum16.at + 4, width);
        mem.replicateShorts(sum16.at + 4, width, 2, 2);
        run.decimateShorts(sum16.at, dw, even.at, odd.at, out16.at);
        mem.take(out16, firsts[k]![c]!.data, y * dw, dw);
      }
      const [a, b, m, d, e] = rows.map((r) => zero.weight(k, r).at) as [number, number, number, number, number];
      run.sumFloats5(a, b, m, d, e, sum32.at + 8, width);
      mem.replicateFloats(sum32.at + 8, width, 2, 2);
      run.decimateFloats(sum32.at, dw, even.at, odd.at, out32.at, WEIGHT_ONE / 256);
      run.floatsToShorts(out32.at, out16.at, dw, 1);
      mem.take(out16, weights[k]!.data, y * dw, dw);
    }
  }
}

/**
 * The finest level of the blend, straight into the 8-bit result, so level 0 is never stored:
 * out = clip(round(expand(coarser) + Σ_k w_k · (frame_k − expand(firsts[k])))) per channel, where
 * `firsts[k]` is level 1 of frame k's R, G, B pyramids (fixed point, LEVEL_ONE_STEPS) and `coarser`
 * level 1 of the collapsed blend (both null when level 0 is the only level).
 */
export function collapseLevelZeroRows(
  frames: Uint8Array[],
  firsts: FixedPlane[][] | null,
  levelZero: LevelZeroWeights,
  coarser: Plane[] | null,
  out: Uint8Array,
  width: number,
  height: number,
  y0: number,
  y1: number,
): void {
  const mem = rowMemory();
  const zero = new LevelZeroRows(mem, frames, width, height, levelZero, 1);
  const expandWidth = 2 * Math.ceil(width / 2);
  const sums = [0, 1, 2].map(() => mem.row(expandWidth, 4));
  const expanded = mem.row(expandWidth, 4), values = mem.row(width, 4);
  const rgb = mem.row(3 * width, 1);
  const loader = new Loader(mem, Math.ceil(width / 2));
  const coarse = coarser?.map((plane) => new Expander(mem, loader, plane, 1));
  const kept = firsts?.map((planes) => planes.map((plane) => new Expander(mem, loader, plane, unitOf.level)));
  mem.ready();
  const { run } = mem, last = height - 1;
  zero.start(y0);
  for (let y = y0; y < y1; y++) {
    const present = zero.weightsUpTo(y);
    for (let c = 0; c < 3; c++) {
      if (coarse) coarse[c]!.expand(y, sums[c]!);
      else run.fill(sums[c]!.at, width, 0);
    }
    if (!kept) run.fill(expanded.at, width, 0);
    for (let k = 0; k < frames.length; k++) {
      if (!present[k]) continue;
      const planar = zero.planar(k, clamp(y, last)), weight = zero.weight(k, y);
      for (let c = 0; c < 3; c++) {
        if (kept) {
          kept[k]![c]!.accumulateBytes(y, sums[c]!, weight, planar[c]!);
        } else {
          run.bytesToFloats(planar[c]!.at, values.at, width);
          run.accumulate(sums[c]!.at, weight.at, values.at, expanded.at, width);
        }
      }
    }
    run.floatsToRgb(sums[0]!.at, sums[1]!.at, sums[2]!.at, rgb.at, width);
    mem.take(rgb, out, y * width * 3, width * 3);
  }
}

/** Level l + 1 from level l: rows [y0, y1) of every `dst[i]` from `src[i]` (fixed-point planes hold `kind`). */
export function reduceRows(src: Array<Plane | FixedPlane>, kind: keyof typeof unitOf, dst: Plane[], y0: number, y1: number): void {
  const mem = rowMemory();
  const sw = src[0]!.width, dw = dst[0]!.width;
  const source = new RowRing(mem, new Loader(mem, sw), sw, 5);
  const sum = mem.row(sw + 4, 4), even = mem.row(dw + 16, 4), odd = mem.row(dw + 16, 4), out = mem.row(dw, 4);
  mem.ready();
  const { run } = mem;
  for (let i = 0; i < src.length; i++) {
    const s = src[i]!, last = s.height - 1;
    source.over(s, unitOf[kind]);
    for (let y = y0; y < y1; y++) {
      const rows = [-2, -1, 0, 1, 2].map((d) => source.row(clamp(2 * y + d, last)).at) as [number, number, number, number, number];
      run.sumFloats5(...rows, sum.at + 8, sw);
      mem.replicateFloats(sum.at + 8, sw, 2, 2);
      run.decimateFloats(sum.at, dw, even.at, odd.at, out.at, 1 / 256);
      mem.take(out, dst[i]!.data, y * dw, dw);
    }
  }
}

/**
 * One level (≥ 1) of a weighted Laplacian blend: acc[i] += weight · (level[i] − expand(coarser[i])),
 * or acc[i] += weight · level[i] at the coarsest level (`coarser` null). Fixed-point planes are
 * level 1's: a frame's R, G, B (LEVEL_ONE_STEPS) and weight (WEIGHT_ONE).
 */
export function accumulateRows(
  acc: Plane[],
  level: Array<Plane | FixedPlane>,
  coarser: Plane[] | null,
  weight: Plane | FixedPlane,
  y0: number,
  y1: number,
): void {
  const mem = rowMemory();
  const w = weight.width;
  const loader = new Loader(mem, w);
  const sum = mem.row(w, 4), values = mem.row(w, 4), weights = mem.row(w, 4), expanded = mem.row(w, 4);
  const expanders = coarser?.map((plane) => new Expander(mem, loader, plane, 1));
  mem.ready();
  const { run } = mem;
  if (!expanders) run.fill(expanded.at, w, 0);
  for (let y = y0; y < y1; y++) {
    // a row where the frame has no weight adds nothing (most rows of a focus stack's frame)
    if (!anyWeight(weight.data, y * w, w)) continue;
    loader.load(weight, unitOf.weight, y, weights);
    for (let i = 0; i < acc.length; i++) {
      mem.put(sum, acc[i]!.data, y * w, w);
      loader.load(level[i]!, unitOf.level, y, values);
      if (expanders) expanders[i]!.accumulate(y, sum, weights, values);
      else run.accumulate(sum.at, weights.at, values.at, expanded.at, w);
      mem.take(sum, acc[i]!.data, y * w, w);
    }
  }
}

/** fine[i] += sign · expand(coarser[i]) on rows [y0, y1): collapses (+1) or makes a Laplacian level (−1). */
export function expandIntoRows(fine: Plane[], coarser: Plane[], sign: 1 | -1, y0: number, y1: number): void {
  const mem = rowMemory();
  const w = fine[0]!.width;
  const sum = mem.row(w, 4), expanded = mem.row(2 * coarser[0]!.width, 4);
  const loader = new Loader(mem, coarser[0]!.width);
  const expanders = coarser.map((plane) => new Expander(mem, loader, plane, 1));
  mem.ready();
  for (let i = 0; i < fine.length; i++) {
    for (let y = y0; y < y1; y++) {
      mem.put(sum, fine[i]!.data, y * w, w);
      expanders[i]!.expand(y, expanded);
      mem.run.addScaled(sum.at, expanded.at, w, sign);
      mem.take(sum, fine[i]!.data, y * w, w);
    }
  }
}

/** The Gaussian pyramid of a plane (level 0 is the plane itself), on the calling thread. */
export function gaussianPyramid(plane: Plane): Plane[] {
  const levels = [plane];
  for (const [w, h] of levelSizes(plane.width, plane.height).slice(1)) {
    const next = sharedPlane(w, h);
    reduceRows([levels[levels.length - 1]!], 'level', [next], 0, h);
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

function anyWeight(weight: Float32Array | Uint16Array, o: number, width: number): boolean {
  for (let x = o; x < o + width; x++) if (weight[x] !== 0) return true;
  return false;
}

/** Copies rows of a plane into float rows of the kernels' memory, scaling fixed-point ones by their unit. */
class Loader {
  private readonly staging: Row;

  constructor(
    private readonly mem: RowMemory,
    width: number,
  ) {
    this.staging = mem.row(width, 2);
  }

  load(plane: Plane | FixedPlane, unit: number, y: number, into: Row): void {
    const w = plane.width;
    if (plane.data instanceof Float32Array) {
      this.mem.put(into, plane.data, y * w, w);
    } else {
      this.mem.put(this.staging, plane.data, y * w, w);
      this.mem.run.shortsToFloats(this.staging.at, into.at, w, unit);
    }
  }
}

/**
 * A ring of `count` float rows of a plane, edges replicated one element either side, each row
 * loaded (and converted) once while the rows asked for move down the plane, not once per use.
 */
class RowRing {
  private readonly rows: Row[];
  private readonly held: number[];
  private plane: Plane | FixedPlane | null = null;
  private unit = 1;

  constructor(
    private readonly mem: RowMemory,
    private readonly loader: Loader,
    width: number,
    count: number,
  ) {
    this.rows = Array.from({ length: count }, () => mem.row(width, 4));
    this.held = new Array<number>(count).fill(-1);
  }

  /** Serves rows of `plane` (values times `unit`) from now on. */
  over(plane: Plane | FixedPlane, unit: number): this {
    this.plane = plane;
    this.unit = unit;
    this.held.fill(-1);
    return this;
  }

  row(y: number): Row {
    const slot = y % this.rows.length, row = this.rows[slot]!;
    if (this.held[slot] !== y) {
      const plane = this.plane!;
      this.loader.load(plane, this.unit, y, row);
      this.mem.replicateFloats(row.at, plane.width, 1, 1);
      this.held[slot] = y;
    }
    return row;
  }
}

/**
 * Rows of expand(c) for one plane c (c upsampled ×2 with zeros and blurred by 2 · 1-4-6-4-1 each
 * way): even rows take (1, 6, 1) / 8 of their neighbourhood, odd ones (1, 1) / 2, then the same
 * across. Fine rows asked for in order read each coarse row once.
 */
class Expander {
  private readonly ring: RowRing;

  constructor(
    private readonly mem: RowMemory,
    loader: Loader,
    private readonly plane: Plane | FixedPlane,
    unit: number,
  ) {
    this.ring = new RowRing(mem, loader, plane.width, 3).over(plane, unit);
  }

  /** Fine row y: 2 · c.width elements into `into`. */
  expand(y: number, into: Row): void {
    this.mem.run.expandRow(...this.around(y), into.at);
  }

  /** acc += w · (g − expand(c)) on fine row y, g floats. */
  accumulate(y: number, acc: Row, w: Row, g: Row): void {
    this.mem.run.expandAccumulate(...this.around(y), acc.at, w.at, g.at);
  }

  /** The same with g bytes. */
  accumulateBytes(y: number, acc: Row, w: Row, g: Row): void {
    this.mem.run.expandAccumulateBytes(...this.around(y), acc.at, w.at, g.at);
  }

  // The coarse rows a, b, c and factors p, q of fine row y's down pass, (a + c)·p + b·q.
  private around(y: number): [number, number, number, number, number, number] {
    const { ring, plane } = this;
    const last = plane.height - 1, j = y >> 1;
    if (y & 1) {
      const a = ring.row(clamp(j, last)).at;
      return [a, a, ring.row(clamp(j + 1, last)).at, plane.width, 0.5, 0];
    }
    const a = ring.row(clamp(j - 1, last)).at, b = ring.row(clamp(j, last)).at;
    return [a, b, ring.row(clamp(j + 1, last)).at, plane.width, 0.125, 0.75];
  }
}

/**
 * Level 0 of every frame, a row at a time in the kernels' memory: the frames' normalised level-0
 * weights (a ring of the last `kept` rows per frame) and planar R, G, B bytes (one row more: the
 * exposure weights of a row need the grey of the next), computed in row order. Exposure weights
 * also keep three grey rows per frame for the Laplacian, and the saturation and well-exposedness
 * of two rows. Rings no longer than needed keep a thread's rows in cache.
 */
class LevelZeroRows {
  private readonly planes: Row[][][];
  private readonly weights: Row[][];
  private readonly greys: Row[][];
  private readonly terms: Array<Array<[saturation: Row, exposedness: Row]>>;
  private readonly source: Row;
  private readonly sum: Row;
  private readonly present: boolean[];
  private planarDone = -1;
  private weightsDone = -1;

  constructor(
    private readonly mem: RowMemory,
    private readonly frames: Uint8Array[],
    private readonly width: number,
    private readonly height: number,
    private readonly levelZero: LevelZeroWeights,
    private readonly kept: number,
  ) {
    const n = frames.length;
    this.planes = frames.map(() => Array.from({ length: kept + 1 }, () => [0, 1, 2].map(() => mem.row(width, 1))));
    this.weights = frames.map(() => Array.from({ length: kept }, () => mem.row(width, 4)));
    const exposure = levelZero === 'exposure';
    this.greys = exposure ? frames.map(() => [0, 1, 2].map(() => mem.row(width, 4))) : [];
    this.terms = exposure ? frames.map(() => [0, 1].map(() => [mem.row(width, 4), mem.row(width, 4)] as [Row, Row])) : [];
    this.source = mem.row(3 * width, 1);
    this.sum = mem.row(width, 4);
    this.present = new Array<boolean>(n).fill(true);
  }

  /** The first row whose weights will be asked for. */
  start(row: number): void {
    this.weightsDone = row - 1;
    this.planarDone = Math.max(0, row - 1) - 1;
  }

  planar(k: number, row: number): Row[] {
    return this.planes[k]![row % (this.kept + 1)]!;
  }

  weight(k: number, row: number): Row {
    return this.weights[k]![row % this.kept]!;
  }

  /** Computes the weights of the rows up to `row`; returns which frames have any weight in that row. */
  weightsUpTo(row: number): boolean[] {
    while (this.weightsDone < row) this.computeWeights(++this.weightsDone);
    return this.present;
  }

  private computeWeights(row: number): void {
    const { mem, frames, width, height } = this;
    const { run } = mem;
    const last = height - 1;
    if (this.levelZero === 'exposure') {
      this.planarUpTo(Math.min(row + 1, last));
      run.fill(this.sum.at, width, EPSILON * frames.length);
      for (let k = 0; k < frames.length; k++) {
        const greys = this.greys[k]!, [saturation, exposedness] = this.terms[k]![row % 2]!;
        const up = greys[Math.max(row - 1, 0) % 3]!, mid = greys[row % 3]!, down = greys[Math.min(row + 1, last) % 3]!;
        run.exposureWeight(up.at, mid.at, down.at, saturation.at, exposedness.at, this.weight(k, row).at, this.sum.at, width);
      }
      for (let k = 0; k < frames.length; k++) run.normalise(this.weight(k, row).at, this.sum.at, width, EPSILON);
    } else {
      this.planarUpTo(row);
      const choice = this.levelZero.choice;
      mem.put(this.source, choice, row * width, width);
      this.present.fill(false);
      for (let x = row * width, end = x + width; x < end; x++) this.present[choice[x]!] = true;
      for (let k = 0; k < frames.length; k++) run.oneHot(this.source.at, k, this.weight(k, row).at, width);
    }
  }

  private planarUpTo(row: number): void {
    const { mem, frames, width } = this;
    while (this.planarDone < row) {
      const r = ++this.planarDone;
      for (let k = 0; k < frames.length; k++) {
        mem.put(this.source, frames[k]!, r * width * 3, width * 3);
        const [red, green, blue] = this.planar(k, r) as [Row, Row, Row];
        mem.run.split(this.source.at, red.at, green.at, blue.at, width);
        if (this.levelZero === 'exposure') {
          const grey = this.greys[k]![r % 3]!, [saturation, exposedness] = this.terms[k]![r % 2]!;
          mem.run.exposurePixels(red.at, green.at, blue.at, grey.at, saturation.at, exposedness.at, width);
          mem.replicateFloats(grey.at, width, 1, 1);
        }
      }
    }
  }
}

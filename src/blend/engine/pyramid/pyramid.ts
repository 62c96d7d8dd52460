import { type StackPart, type LevelZeroWeights, LevelZeroRows } from './level-zero.js';
import { type FixedPlane, LEVEL_ONE_STEPS, type Plane, WEIGHT_ONE } from './planes.js';
import { clamp, Expander, Loader, RowRing } from './rows.js';
import { rowMemory } from './simd.js';

/**
 * Gaussian and Laplacian pyramids (Burt & Adelson): the 5-tap binomial 1-4-6-4-1 kernel,
 * separable, edges replicated; level l+1 is level l blurred and decimated, ceil(width / 2) ×
 * ceil(height / 2). Kernels work on row ranges of one level so the caller can split a level across
 * pool threads, and take several planes (channels) per call. The arithmetic is WebAssembly SIMD in
 * 32-bit floats (pyramid/simd.ts); JavaScript picks the rows (pyramid/rows.ts). The levels' planes
 * are pyramid/planes.ts's; level 0's weights come from pyramid/level-zero.ts.
 */

/** The value of one step of a fixed-point plane that holds `kind`. */
const unitOf = { level: 1 / LEVEL_ONE_STEPS, weight: 1 / WEIGHT_ONE } as const;

/**
 * Level 1 of every frame from the frames (level 0), rows [y0, y1): R, G, B into `firsts[k]`
 * (LEVEL_ONE_STEPS, exact) and the weight into `weights[k]` (WEIGHT_ONE). The level-0 weights
 * are made here, a few rows at a time, and dropped once reduced. `part`: the frames are some of a
 * streamed stack's (pyramid/level-zero.ts).
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
  part: StackPart | null = null,
): void {
  const mem = rowMemory();
  const zero = new LevelZeroRows(mem, frames, width, height, levelZero, 5, part);
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
 *
 * Streamed (`part`, pyramid/level-zero.ts), the frames are some of the stack's and the sums are
 * kept between calls in `level0` (R, G, B floats): the first frames start them from
 * expand(coarser), the others from `level0`; the last frames write `out`, the others `level0`.
 * Each pixel's sum takes the same steps in the same order as when every frame is at hand, so the
 * bytes are the same.
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
  part: StackPart | null = null,
  level0: Plane[] | null = null,
): void {
  const mem = rowMemory();
  const zero = new LevelZeroRows(mem, frames, width, height, levelZero, 1, part);
  const starts = !part || part.first === 0, ends = !part || part.first + frames.length === part.count;
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
    // a streamed frame with no weight in the row leaves its sums as they are (most rows of a focus stack's frame)
    if (!starts && !ends && !present.includes(true)) continue;
    for (let c = 0; c < 3; c++) {
      if (!starts) mem.put(sums[c]!, level0![c]!.data, y * width, width);
      else if (coarse) coarse[c]!.expand(y, sums[c]!);
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
    if (!ends) {
      for (let c = 0; c < 3; c++) mem.take(sums[c]!, level0![c]!.data, y * width, width);
      continue;
    }
    run.floatsToRgb(sums[0]!.at, sums[1]!.at, sums[2]!.at, rgb.at, width);
    mem.take(rgb, out, y * width * 3, width * 3);
  }
}

/**
 * A streamed exposure's first pass (pyramid/level-zero.ts, StackPart): rows [y0, y1) of these
 * frames' raw Mertens weights added to `part.sum`, the per-pixel normaliser of every later pass.
 */
export function exposureSumRows(frames: Uint8Array[], width: number, height: number, levelZero: LevelZeroWeights, part: StackPart, y0: number, y1: number): void {
  const mem = rowMemory();
  const zero = new LevelZeroRows(mem, frames, width, height, levelZero, 1, part);
  mem.ready();
  zero.start(y0);
  for (let y = y0; y < y1; y++) zero.addRawWeights(y);
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

function anyWeight(weight: Float32Array | Uint16Array, o: number, width: number): boolean {
  for (let x = o; x < o + width; x++) if (weight[x] !== 0) return true;
  return false;
}

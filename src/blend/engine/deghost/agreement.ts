import { blockMeans } from '../image/blocks-simd.js';
import {
  AGREEMENT_SIDE,
  BAND_PIXELS,
  BANDS,
  DETAIL_CLASSES,
  DEVIATION_ABS,
  DISAGREE_DEVIATIONS,
  FEATHER,
  HIGH,
  LEAST_NOISE,
  LOW,
  MEAN_ABS,
  QUANTILE_SAMPLE,
  QUARTILE,
  QUARTILE_TO_SIGMA,
  RESIDUAL_BINS,
  RESIDUAL_STEPS,
  WINDOW,
} from './agreement-constants.js';
import { agreementKernel, LEVELS, TABLE, UNITS } from './agreement-kernels.js';

// the masks' upsampling runs as a task of this module (threads/tasks.ts)
export { upsampleMaskRows } from './upsample.js';

/**
 * Where a frame agrees with the reference frame, judged on their thumbnails (image/thumbnails.ts),
 * on the pool's threads. Deghosting (deghost/deghost.ts) keeps a frame only where it shows what the
 * reference shows, so something that moved between the frames is taken from the reference alone.
 *
 * The test, per thumbnail pixel and channel:
 * 1. The frame's channel is brought to the reference's exposure by histogram matching: a value of
 *    the frame goes to the reference's value at the same rank (the middle of the value's ranks), a
 *    monotone mapping fixed by the whole picture, which a moving person (a minority of the pixels)
 *    barely shifts. A mean's frames map about onto themselves, a bracket's onto the reference (a
 *    camera's tone curve acts on each channel; on grey, colours would bend it).
 * 2. The residual (reference − mapped frame) is divided by √(1 + s²), s the mapping's slope at
 *    the frame's value: with sensor noise alike in both frames, that leaves residuals of one
 *    spread at every value (a bracket's dark frame, mapped up, is noisier in the shadows). The
 *    spread is the set's own, measured per band of 16 values (a tone curve bends some bands more
 *    than the mapping can follow) from the lower quartile of |residual| (a normal's is 0.3186 σ),
 *    which a mover filling up to three quarters of a band does not shift. A mover's values can be
 *    rare enough to fill a band of the frame's values, but the scene behind it fills the
 *    reference's (and the other way round where the reference shows the mover): a pixel takes the
 *    smaller spread of its two bands.
 *    A clipped value (within 2 of 0 or 255) says only "this or beyond": the residual is the gap
 *    between the two frames' ranges (none when a clipped value could be the other's), and the
 *    spread is measured on the pixels where neither frame is clipped.
 * 3. The residuals in units of that spread, averaged over a pixel's channels, are averaged
 *    again over 5 × 5 pixels; with independent noise a static scene averages E|z| = √(2/π) with a
 *    deviation of at most √(1 − 2/π) / 5 (channels alike). Real frames' error is neither
 *    independent nor alike everywhere: JPEG shares it within a block and makes more of it where a
 *    block holds detail, and a warped frame is smoothed where the reference is not. So each window
 *    is also judged against windows of like detail (the lesser of the two frames' neighbour
 *    differences, in the same units) in the same pair of frames (`windowLevels`): a window
 *    disagrees when it lies DISAGREE_DEVIATIONS deviations above both the theory's mean and its
 *    class's, the class's deviation read off its lower half, and a quarter of the windows around
 *    it do too (a mover is at least a window across; a lone window is the error's tail). No
 *    constant in grey levels, only the set's own error.
 * 4. The disagreeing pixels are grown by FEATHER pixels, so the feathering below reaches zero at
 *    their edge, and the mask (255 agree, 0 disagree) is blurred twice with a box of ±FEATHER / 2:
 *    the blend shows no seam where a frame stops counting.
 */

/** The mean BT.601 grey of a thumbnail (0..255): how bright the frame came out. */
export function meanGrey(rgb: Uint8Array, width: number, height: number): number {
  let sum = 0;
  for (let q = 0; q < width * height * 3; q += 3) sum += 0.299 * rgb[q]! + 0.587 * rgb[q + 1]! + 0.114 * rgb[q + 2]!;
  return sum / (width * height);
}

/** What the test makes of a frame that disagrees somewhere (`agreementMask`). */
export interface AgreementMask {
  /** 255 where the frame counts, 0 where it shows something else, feathered between (a byte a grid pixel). */
  mask: Uint8Array;
  /** The reference's values brought to the frame's exposure (256 values a channel, R, G, B; histogram matching the other way). */
  toFrame: Uint8Array;
}

/**
 * The agreement mask of a frame against the reference (both on the test's grid, `agreementGrid`,
 * RGB bytes, width × height), with the reference's values brought to the frame's exposure, which
 * stand in for the frame where it does not count; null where the frame agrees everywhere. The
 * per-pixel passes run in the thread's WebAssembly kernels (deghost/agreement-kernels.ts, to the
 * byte of deghost/agreement-reference.ts); what lies between them (histogram matching, the bands'
 * spreads, the detail classes' levels) here. The kernels' memory holds the two frames and six
 * 4-byte grids, 31 bytes a grid pixel, and keeps the size of the largest grid its thread tested.
 */
export function agreementMask(reference: Uint8Array, frame: Uint8Array, width: number, height: number): AgreementMask | null {
  const pixels = width * height;
  const kernel = agreementKernel();
  const arena = kernel.arena.reset();
  const [ref, own] = [arena.alloc(3 * pixels), arena.alloc(3 * pixels)];
  const [tables, units, levels, anyAt] = [arena.alloc(TABLE.bytes), arena.alloc(UNITS.bytes), arena.alloc(LEVELS.bytes), arena.alloc(4)];
  const [refValues, ownValues] = [arena.alloc(4 * 3 * 256), arena.alloc(4 * 3 * 256)];
  const histogramBytes = 4 * BANDS * RESIDUAL_BINS;
  const [byOwn, byRef] = [arena.alloc(histogramBytes), arena.alloc(histogramBytes)];
  const all = new Int32Array(RESIDUAL_BINS);
  // f32 grids, reused once a step is done with them (named below by what they hold at each step)
  const [residual, z, refDetail, ownDetail, rows, counts] = Array.from({ length: 6 }, () => arena.alloc(4 * pixels)) as [number, number, number, number, number, number];
  const [sums, spans, bytes] = [arena.alloc(8 * (width + 1)), arena.alloc(8 * (width + 1)), arena.alloc(pixels)];
  const { u8, i32, f32, f64 } = arena.ready();
  u8.set(reference.subarray(0, 3 * pixels), ref);
  u8.set(frame.subarray(0, 3 * pixels), own);
  for (const grid of [z, refDetail, ownDetail]) f32.fill(0, grid >> 2, (grid >> 2) + pixels);
  const toFrame = new Uint8Array(3 * 256);
  const ints = (at: number, length: number) => i32.subarray(at >> 2, (at >> 2) + length);
  // how many pixels hold each value, per channel: for the histogram matching
  const [refCounts, ownCounts] = [[ref, refValues], [own, ownValues]].map(([rgb, at]) => {
    ints(at!, 3 * 256).fill(0);
    kernel.valueCounts(rgb!, pixels, at!);
    return [0, 1, 2].map((c) => Float64Array.from(ints(at! + 1024 * c, 256)));
  }) as [Float64Array[], Float64Array[]];
  for (let c = 0; c < 3; c++) {
    toFrameValues(histogramMatch(refCounts[c]!, ownCounts[c]!).mapping, toFrame, c);
    const { mapping, clippedLow, clippedHigh } = histogramMatch(ownCounts[c]!, refCounts[c]!);
    const { scale, refLowOf, refHighOf, ownLowOf, ownHighOf } = channelTables(mapping, clippedLow, clippedHigh);
    for (const [table, at] of [[refLowOf, TABLE.refLow], [refHighOf, TABLE.refHigh], [ownLowOf, TABLE.ownLow], [ownHighOf, TABLE.ownHigh], [scale, TABLE.scale], [mapping, TABLE.mapping]] as const) f64.set(table, (tables + at) >> 3);
    const [ownBands, refBands] = [ints(byOwn, BANDS * RESIDUAL_BINS).fill(0), ints(byRef, BANDS * RESIDUAL_BINS).fill(0)];
    kernel.residuals(ref, own, pixels, c, tables, residual, byOwn, byRef);
    all.fill(0);
    for (let b = 0; b < BANDS; b++) for (let bin = 0, at = b * RESIDUAL_BINS; bin < RESIDUAL_BINS; bin++, at++) all[bin]! += ownBands[at]!;
    const spreads = bandUnits(ownBands, refBands, all);
    f64.set(spreads.units, units >> 3);
    f64.set(spreads.refUnits, (units + UNITS.refUnits) >> 3);
    kernel.scores(ref, own, width, height, c, tables, units, residual, z, refDetail, ownDetail);
  }
  const [mean, detail] = [z, refDetail];
  kernel.boxMean(z, mean, rows, sums, spans, width, height, WINDOW);
  kernel.windowCounts(counts, width, height, WINDOW);
  kernel.lesser(refDetail, ownDetail, pixels);
  kernel.boxMean(refDetail, detail, rows, sums, spans, width, height, WINDOW);
  const floats = (at: number) => f32.subarray(at >> 2, (at >> 2) + pixels);
  const { bounds, empirical } = windowLevels(floats(mean), floats(detail));
  f64.set(bounds, levels >> 3);
  f64.set(empirical, (levels + LEVELS.empirical) >> 3);
  f64.set(theoryLevels(), (levels + LEVELS.theory) >> 3);
  const [above, around] = [ownDetail, residual];
  kernel.above(mean, detail, counts, levels, above, pixels);
  // Something that moved is at least a window across, so many of the windows around one above the
  // level are above it too (even where a dark frame shows a person only in patches); one or two
  // alone in their neighbourhood are the tail of the frames' error, not motion.
  kernel.boxMean(above, around, rows, sums, spans, width, height, WINDOW);
  const disagree = around;
  kernel.disagree(above, around, pixels, anyAt);
  if (i32[anyAt >> 2] === 0) return null;
  const mask = disagree;
  kernel.boxMean(disagree, mask, rows, sums, spans, width, height, FEATHER);
  kernel.outside(mask, pixels);
  for (let i = 0; i < 2; i++) kernel.boxMean(mask, mask, rows, sums, spans, width, height, FEATHER / 2);
  kernel.maskBytes(mask, bytes, pixels);
  return { mask: u8.slice(bytes, bytes + pixels), toFrame };
}

/** Channel c of `toFrame` (the `agreementMask` field): a mapping's values rounded into bytes. */
export function toFrameValues(mapping: Float64Array, toFrame: Uint8Array, c: number): void {
  mapping.forEach((v, r) => (toFrame[c * 256 + r] = Math.max(0, Math.min(255, Math.round(v)))));
}

/**
 * A channel's tables by value, from the frame's mapping onto the reference: each value's residual
 * scale, and each frame's value as the range its true value lies in (a clipped value says only
 * "this or beyond"), and whether a value is clipped.
 */
export function channelTables(mapping: Float64Array, clippedLow: number, clippedHigh: number) {
  // The slope is read over unclipped values only: the mapping's step into a clipped value's
  // mass is the spread of what the clip hides, not noise. A clipped value's residual is its gap
  // to a bound fixed by the whole picture (clippedLow, clippedHigh), which carries none of this
  // pixel's noise in the frame: only the reference's, so it is not scaled. Scaled by the slope
  // near the clip, where a bright frame's last few values stand for a wide range of the
  // reference's, it would shrink to nothing, and a person that clips in the bright frame over a
  // darker scene would pass for the scene.
  const scale = Float64Array.from({ length: 256 }, (_, v) => {
    if (v <= LOW || v >= HIGH) return 1;
    const [lo, hi] = [Math.max(LOW + 1, v - 2), Math.min(HIGH - 1, v + 2)];
    const slope = (mapping[hi]! - mapping[lo]!) / (hi - lo);
    return 1 / Math.sqrt(1 + slope * slope);
  });
  const [refLowOf, refHighOf, ownLowOf, ownHighOf] = [new Float64Array(256), new Float64Array(256), new Float64Array(256), new Float64Array(256)];
  const clipped = new Uint8Array(256);
  for (let v = 0; v < 256; v++) {
    refLowOf[v] = v <= LOW ? -Infinity : v;
    refHighOf[v] = v >= HIGH ? Infinity : v;
    ownLowOf[v] = v <= LOW ? -Infinity : v >= HIGH ? clippedHigh : mapping[v]!;
    ownHighOf[v] = v >= HIGH ? Infinity : v <= LOW ? clippedLow : mapping[v]!;
    clipped[v] = v <= LOW || v >= HIGH ? 1 : 0;
  }
  return { scale, refLowOf, refHighOf, ownLowOf, ownHighOf, clipped };
}

/**
 * The units a channel's residuals are counted in, from the histograms of its judged residuals by
 * band of the frame's value, by band of the reference's, and of all: 1 / (3 · spread), per pair of
 * bands (own · BANDS + reference) the smaller band's spread, and per band of the reference alone.
 * A pixel's unit is that of the bands of its two values; for a value clipped in the frame, of the
 * reference's band alone: its gap to the clip's bound carries only the reference's noise, and the
 * frame's bands next to the clip are narrowed by the mapping's steep slope there.
 */
export function bandUnits(byOwn: Int32Array, byRef: Int32Array, whole: Int32Array): { units: Float64Array; refUnits: Float64Array } {
  const all = quantile(whole, QUARTILE);
  const spread = (histograms: Int32Array) =>
    Array.from({ length: BANDS }, (_, b) => {
      const band = histograms.subarray(b * RESIDUAL_BINS, (b + 1) * RESIDUAL_BINS);
      return Math.max(LEAST_NOISE, QUARTILE_TO_SIGMA * (total(band) >= BAND_PIXELS ? quantile(band, QUARTILE) : all));
    });
  const ownNoise = spread(byOwn), refNoise = spread(byRef);
  const units = new Float64Array(BANDS * BANDS), refUnits = new Float64Array(BANDS);
  for (let a = 0; a < BANDS; a++) for (let b = 0; b < BANDS; b++) units[a * BANDS + b] = 1 / (3 * Math.min(ownNoise[a]!, refNoise[b]!));
  for (let b = 0; b < BANDS; b++) refUnits[b] = 1 / (3 * refNoise[b]!);
  return { units, refUnits };
}

/**
 * The levels above which a window's mean residual disagrees. In theory (independent noise) a
 * static window's mean lies within DISAGREE_DEVIATIONS deviations of MEAN_ABS; a compressed
 * frame's error is neither independent (a JPEG block shares it) nor alike everywhere (it grows
 * with the detail a block holds), so the set shows its own: the windows are ranked by the detail
 * around them into DETAIL_CLASSES classes of equal size (`bounds`, sorted: a window's class is
 * `detailClass`), and in each the static windows' spread is read off the lower half (median −
 * lower quartile, a normal's 0.6745 σ), which a mover filling up to half a class does not shift.
 * A window's level is the higher of its class's (`empirical`) and the theory's (`theoryLevels`).
 */
export function windowLevels(mean: Float32Array, detail: Float32Array): { bounds: Float32Array; empirical: Float64Array } {
  const pixels = mean.length;
  // The classes' bounds and their windows' quantiles are read off every stride-th pixel: enough
  // for a quantile, and a sort of all of them would cost more than the rest of the test.
  const stride = Math.max(1, Math.floor(pixels / QUANTILE_SAMPLE));
  const sampled = new Float32Array(Math.ceil(pixels / stride));
  for (let i = 0; i < sampled.length; i++) sampled[i] = detail[i * stride]!;
  const bounds = Float32Array.from(selectFloats(sampled.slice(), Array.from({ length: DETAIL_CLASSES - 1 }, (_, k) => Math.floor(((k + 1) * sampled.length) / DETAIL_CLASSES))));
  // each class's windows among the sampled ones, their means gathered class by class
  const classes = new Uint8Array(sampled.length), starts = new Int32Array(DETAIL_CLASSES + 1);
  for (let i = 0; i < sampled.length; i++) starts[(classes[i] = detailClass(sampled[i]!, bounds)) + 1]!++;
  for (let k = 0; k < DETAIL_CLASSES; k++) starts[k + 1]! += starts[k]!;
  const means = new Float32Array(sampled.length), next = starts.slice(0, DETAIL_CLASSES);
  for (let i = 0; i < sampled.length; i++) means[next[classes[i]!]!++] = mean[i * stride]!;
  const empirical = new Float64Array(DETAIL_CLASSES);
  for (let k = 0; k < DETAIL_CLASSES; k++) {
    const v = means.subarray(starts[k]!, starts[k + 1]!);
    if (v.length === 0) continue;
    const rank = (share: number) => Math.min(v.length - 1, Math.floor(share * v.length));
    const [quartile, median] = selectFloats(v, [rank(0.25), rank(0.5)]) as [number, number];
    empirical[k] = median + (DISAGREE_DEVIATIONS * (median - quartile)) / 0.6745;
  }
  return { bounds, empirical };
}

/**
 * The values of ranks `ranks` (ascending) among `values`, as a sort would place them, found by
 * partitioning in place (Wirth's selection, each rank within the part right of the last): a
 * sort of the test's 37 500 samples and of each class's windows cost more than the rest of
 * these levels. The values are compared with `<`: −0 and +0 count as equal (either may come back
 * where a sort would put the other; the levels compare and subtract them alike).
 */
export function selectFloats(values: Float32Array, ranks: number[]): number[] {
  let from = 0;
  return ranks.map((k) => {
    let l = from, r = values.length - 1;
    while (l < r) {
      const x = values[k]!;
      let i = l, j = r;
      do {
        while (values[i]! < x) i++;
        while (x < values[j]!) j--;
        if (i <= j) {
          const swap = values[i]!;
          values[i++] = values[j]!;
          values[j--] = swap;
        }
      } while (i <= j);
      if (j < k) l = i;
      if (k < i) r = j;
    }
    // everything right of k is at least values[k]: the next rank is among them
    from = k;
    return values[k]!;
  });
}

/** A detail's class: the number of `bounds` (sorted) at or below it, by halving. */
export function detailClass(d: number, bounds: Float32Array): number {
  let k = 0, above = bounds.length;
  while (k < above) {
    const middle = (k + above) >> 1;
    if (d >= bounds[middle]!) k = middle + 1;
    else above = middle;
  }
  return k;
}

/** The theory's level by a window's pixel count (at most (2·WINDOW + 1)²). */
export function theoryLevels(): Float64Array {
  return Float64Array.from({ length: (2 * WINDOW + 1) ** 2 + 1 }, (_, n) => MEAN_ABS + (DISAGREE_DEVIATIONS * DEVIATION_ABS) / Math.sqrt(n));
}

/**
 * A thumbnail brought to the grid the test runs on: the test's work grows with pixels and gains
 * nothing from more than about AGREEMENT_SIDE of them a side, so a thumbnail whose longest side is
 * `step` = round(side / AGREEMENT_SIDE) ≥ 2 times that is reduced to its step × step block means.
 * Made once per frame (the reference's serves every frame's test); a grid pixel stands for
 * `step` thumbnail pixels a side.
 */
export function agreementGrid(rgb: Uint8Array, width: number, height: number): { data: Uint8Array; width: number; height: number; step: number } {
  const step = Math.max(1, Math.round(Math.max(width, height) / AGREEMENT_SIDE));
  if (step === 1) return { data: rgb, width, height, step };
  const [w, h] = [Math.ceil(width / step), Math.ceil(height / step)];
  // the rounded means of step × step blocks, the last ones cut short: the thumbnails' kernel (image/blocks-simd.ts)
  const data = new Uint8Array(3 * w * h);
  for (let by = 0; by < h; by++) blockMeans(rgb, width, by * step, Math.min(step, height - by * step), step, data, 3 * by * w, null, 0, 0);
  return { data, width: w, height: h, step };
}

/**
 * Histogram matching, from the counts of each value of a channel of `own` and of `ref`: for each
 * value of `own`, the value of `ref` at the same rank (the middle of the value's ranks,
 * interpolated between the reference's values), non-decreasing by construction; and the least
 * reference value that `own`'s clipped-high values stand for (at the first of their ranks), the
 * greatest that its clipped-low ones do (at the last of theirs).
 */
export function histogramMatch(ownCounts: Float64Array, refCounts: Float64Array): { mapping: Float64Array; clippedLow: number; clippedHigh: number } {
  // the reference's value r holds ranks [before, before + count): r − ½ … r + ½. The ranks asked
  // for never decrease, so the walk goes on from where the last one stopped.
  let before = 0, r = 0;
  const atRank = (rank: number): number => {
    while (r < 255 && before + refCounts[r]! <= rank) before += refCounts[r++]!;
    return r - 0.5 + (refCounts[r]! > 0 ? Math.min(1, (rank - before) / refCounts[r]!) : 0.5);
  };
  const mapping = new Float64Array(256);
  let below = 0, clippedLow = 0, clippedHigh = 0;
  for (let v = 0; v < 256; v++) {
    if (v === HIGH) clippedHigh = atRank(below);
    mapping[v] = atRank(below + ownCounts[v]! / 2);
    below += ownCounts[v]!;
    if (v === LOW) clippedLow = atRank(below);
  }
  return { mapping, clippedLow, clippedHigh };
}

function total(histogram: Int32Array): number {
  let sum = 0;
  for (let a = 0; a < histogram.length; a++) sum += histogram[a]!;
  return sum;
}

/** The `share` quantile of the values a histogram counts in steps of 1 / RESIDUAL_STEPS. */
function quantile(histogram: Int32Array, share: number): number {
  const wanted = total(histogram) * share;
  let before = 0;
  for (let a = 0; a < histogram.length; a++) {
    const c = histogram[a]!;
    if (c > 0 && before + c >= wanted) return (a + (wanted - before) / c) / RESIDUAL_STEPS;
    before += c;
  }
  return 0;
}

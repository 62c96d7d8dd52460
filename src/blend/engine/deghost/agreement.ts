import { fullOutside } from '../image/image.js';

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
 *    differences, in the same units) in the same pair of frames (`windowLimits`): a window
 *    disagrees when it lies DISAGREE_DEVIATIONS deviations above both the theory's mean and its
 *    class's, the class's deviation read off its lower half, and a quarter of the windows around
 *    it do too (a mover is at least a window across; a lone window is the error's tail). No
 *    constant in grey levels, only the set's own error.
 * 4. The disagreeing pixels are grown by FEATHER pixels, so the feathering below reaches zero at
 *    their edge, and the mask (255 agree, 0 disagree) is blurred twice with a box of ±FEATHER / 2:
 *    the blend shows no seam where a frame stops counting.
 */

/** The test runs on the thumbnail's step × step block means when its longest side is this many times step or more. */
const AGREEMENT_SIDE = 500;
/** Half-width of the averaging window (pixels of the thumbnail). */
const WINDOW = 2;
/** How many deviations of a static window's mean a disagreeing window lies above it. */
const DISAGREE_DEVIATIONS = 5;
const MEAN_ABS = Math.sqrt(2 / Math.PI);
const DEVIATION_ABS = Math.sqrt(1 - 2 / Math.PI);
/** Share of the windows around a window above the level that must be above it too for it to disagree (a quarter: 7 of 25 away from the edges). */
const MOSTLY = 0.25;
/** Growth of the disagreement and reach of the feathering (pixels of the thumbnail). */
const FEATHER = 2;
/** Channel values at most LOW or at least HIGH are clipped. */
const LOW = 2;
const HIGH = 253;
/** The spread is measured per band of 2^BAND_SHIFT values (of the frame, and of the reference) … */
const BAND_SHIFT = 4;
/** … that holds at least BAND_PIXELS judged pixels, else on all of them. */
const BAND_PIXELS = 256;
/** The least noise a set is taken to have (grey levels): the levels are whole. */
const LEAST_NOISE = 1;
/** The spread is read off the lower quartile of |residual|, a normal's at 0.3186 σ. */
const QUARTILE = 0.25;
const QUARTILE_TO_SIGMA = 1 / 0.3186;
/** Residuals are counted in steps of 1 / RESIDUAL_STEPS of a value for their quantiles. */
const RESIDUAL_STEPS = 8;
/** Windows are judged against others of like detail, in this many classes (deghost/agreement.ts `windowLimits`). */
const DETAIL_CLASSES = 8;
/** About how many windows the quantiles of windowLimits are read from. */
const QUANTILE_SAMPLE = 32768;

/** The mean BT.601 grey of a thumbnail (0..255): how bright the frame came out. */
export function meanGrey(rgb: Uint8Array, width: number, height: number): number {
  let sum = 0;
  for (let q = 0; q < width * height * 3; q += 3) sum += 0.299 * rgb[q]! + 0.587 * rgb[q + 1]! + 0.114 * rgb[q + 2]!;
  return sum / (width * height);
}

/**
 * The agreement mask of a frame against the reference (both on the test's grid, `agreementGrid`, RGB bytes, width × height):
 * `mask` 255 where the frame counts, 0 where it shows something else, feathered between; and
 * `toFrame`, the reference's values brought to the frame's exposure (256 values a channel, R, G,
 * B; histogram matching the other way), which stand in for the frame where it does not count.
 * Null where the frame agrees everywhere.
 */
export function agreementMask(reference: Uint8Array, frame: Uint8Array, width: number, height: number): { mask: Uint8Array; toFrame: Uint8Array } | null {
  const pixels = width * height;
  const z = new Float32Array(pixels);
  const toFrame = new Uint8Array(3 * 256);
  // how much detail each pixel's neighbourhood shows in either frame (the lesser of the two), in the reference's values
  const refDetail = new Float32Array(pixels), ownDetail = new Float32Array(pixels);
  // per channel, made once: the residuals, the frame's values in the reference's (for the detail),
  // and histograms of the judged residuals by band of the frame's value, by band of the reference's, and of all
  const residual = new Float32Array(pixels), mapped = new Float64Array(pixels);
  const bins = 256 * RESIDUAL_STEPS, bands = 256 >> BAND_SHIFT;
  const byOwn = new Int32Array(bands * bins), byRef = new Int32Array(bands * bins), whole = new Int32Array(bins);
  for (let c = 0; c < 3; c++) {
    const ref = channel(reference, c, pixels), own = channel(frame, c, pixels);
    histogramMatch(ref, own).mapping.forEach((v, r) => (toFrame[c * 256 + r] = Math.max(0, Math.min(255, Math.round(v)))));
    const { mapping, clippedLow, clippedHigh } = histogramMatch(own, ref);
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
    byOwn.fill(0);
    byRef.fill(0);
    whole.fill(0);
    // each frame's value as the range its true value lies in: a clipped value says only "this or beyond" (by value, looked up per pixel)
    const [refLowOf, refHighOf, ownLowOf, ownHighOf] = [new Float64Array(256), new Float64Array(256), new Float64Array(256), new Float64Array(256)];
    const clipped = new Uint8Array(256);
    for (let v = 0; v < 256; v++) {
      refLowOf[v] = v <= LOW ? -Infinity : v;
      refHighOf[v] = v >= HIGH ? Infinity : v;
      ownLowOf[v] = v <= LOW ? -Infinity : v >= HIGH ? clippedHigh : mapping[v]!;
      ownHighOf[v] = v >= HIGH ? Infinity : v <= LOW ? clippedLow : mapping[v]!;
      clipped[v] = v <= LOW || v >= HIGH ? 1 : 0;
    }
    for (let p = 0; p < pixels; p++) {
      const r = ref[p]!, v = own[p]!;
      mapped[p] = mapping[v]!;
      const e = Math.max(0, ownLowOf[v]! - refHighOf[r]!, refLowOf[r]! - ownHighOf[v]!) * scale[v]!;
      residual[p] = e;
      if (clipped[r]! | clipped[v]!) continue;
      const bin = Math.min(bins - 1, Math.floor(e * RESIDUAL_STEPS));
      byOwn[(v >> BAND_SHIFT) * bins + bin]!++;
      byRef[(r >> BAND_SHIFT) * bins + bin]!++;
      whole[bin]!++;
    }
    const all = quantile(whole, QUARTILE);
    const spread = (histograms: Int32Array) =>
      Array.from({ length: bands }, (_, b) => {
        const band = histograms.subarray(b * bins, (b + 1) * bins);
        return Math.max(LEAST_NOISE, QUARTILE_TO_SIGMA * (total(band) >= BAND_PIXELS ? quantile(band, QUARTILE) : all));
      });
    const ownNoise = spread(byOwn), refNoise = spread(byRef);
    // A pixel's unit by the bands of its two values; for a value clipped in the frame, by the
    // reference's band alone: its gap to the clip's bound carries only the reference's noise, and
    // the frame's bands next to the clip are narrowed by the mapping's steep slope there.
    const units = new Float64Array(bands * bands), refUnits = new Float64Array(bands);
    for (let a = 0; a < bands; a++) for (let b = 0; b < bands; b++) units[a * bands + b] = 1 / (3 * Math.min(ownNoise[a]!, refNoise[b]!));
    for (let b = 0; b < bands; b++) refUnits[b] = 1 / (3 * refNoise[b]!);
    for (let y = 0, p = 0; y < height; y++) {
      for (let x = 0; x < width; x++, p++) {
        const v0 = own[p]!, r0 = ref[p]!;
        const unit = v0 <= LOW || v0 >= HIGH ? refUnits[r0 >> BAND_SHIFT]! : units[(v0 >> BAND_SHIFT) * bands + (r0 >> BAND_SHIFT)]!;
        z[p]! += residual[p]! * unit;
        // detail: the absolute differences to the right and lower neighbours, the frame's in the reference's values
        const r = ref[p]!, v = mapped[p]!;
        let refStep = 0, ownStep = 0;
        if (x + 1 < width) (refStep += Math.abs(ref[p + 1]! - r)), (ownStep += Math.abs(mapped[p + 1]! - v));
        if (y + 1 < height) (refStep += Math.abs(ref[p + width]! - r)), (ownStep += Math.abs(mapped[p + width]! - v));
        refDetail[p]! += refStep * unit;
        ownDetail[p]! += ownStep * unit;
      }
    }
  }
  const [mean, count] = boxMean(z, width, height, WINDOW);
  for (let p = 0; p < pixels; p++) refDetail[p] = Math.min(refDetail[p]!, ownDetail[p]!);
  const detail = boxMean(refDetail, width, height, WINDOW)[0];
  const limit = windowLimits(mean, count, detail);
  const above = new Float32Array(pixels);
  for (let p = 0; p < pixels; p++) if (mean[p]! > limit[p]!) above[p] = 1;
  // Something that moved is at least a window across, so many of the windows around one above the
  // level are above it too (even where a dark frame shows a person only in patches); one or two
  // alone in their neighbourhood are the tail of the frames' error, not motion.
  const around = boxMean(above, width, height, WINDOW)[0];
  const disagree = new Float32Array(pixels);
  let any = false;
  for (let p = 0; p < pixels; p++) {
    if (above[p] && around[p]! >= MOSTLY) (disagree[p] = 1), (any = true);
  }
  if (!any) return null;
  const grown = boxMean(disagree, width, height, FEATHER)[0];
  let mask: Float32Array = new Float32Array(pixels);
  for (let p = 0; p < pixels; p++) mask[p] = grown[p]! > 0 ? 0 : 1;
  for (let i = 0; i < 2; i++) mask = boxMean(mask, width, height, FEATHER / 2)[0];
  const bytes = new Uint8Array(pixels);
  for (let p = 0; p < pixels; p++) bytes[p] = Math.round(255 * mask[p]!);
  return { mask: bytes, toFrame };
}

/**
 * The level above which a window's mean residual disagrees, per pixel. In theory (independent
 * noise) a static window's mean lies within DISAGREE_DEVIATIONS deviations of MEAN_ABS; a
 * compressed frame's error is neither independent (a JPEG block shares it) nor alike everywhere
 * (it grows with the detail a block holds), so the set shows its own: the windows are ranked by the
 * detail around them into DETAIL_CLASSES classes of equal size, and in each the static windows'
 * spread is read off the lower half (median − lower quartile, a normal's 0.6745 σ), which a mover
 * filling up to half a class does not shift. The level is the higher of the two.
 */
function windowLimits(mean: Float32Array, count: Int32Array, detail: Float32Array): Float32Array {
  const pixels = mean.length;
  // The classes' bounds and their windows' quantiles are read off every stride-th pixel: enough
  // for a quantile, and a sort of all of them would cost more than the rest of the test.
  const stride = Math.max(1, Math.floor(pixels / QUANTILE_SAMPLE));
  const sampled = new Float32Array(Math.ceil(pixels / stride));
  for (let i = 0; i < sampled.length; i++) sampled[i] = detail[i * stride]!;
  sampled.sort();
  const bounds = Array.from({ length: DETAIL_CLASSES - 1 }, (_, k) => sampled[Math.floor(((k + 1) * sampled.length) / DETAIL_CLASSES)]!);
  const classOf = new Uint8Array(pixels);
  const members: number[][] = Array.from({ length: DETAIL_CLASSES }, () => []);
  for (let p = 0; p < pixels; p++) {
    // the number of bounds at or below the detail (the bounds are sorted): by halving
    const d = detail[p]!;
    let [k, above] = [0, bounds.length];
    while (k < above) {
      const middle = (k + above) >> 1;
      if (d >= bounds[middle]!) k = middle + 1;
      else above = middle;
    }
    classOf[p] = k;
  }
  for (let p = 0; p < pixels; p += stride) members[classOf[p]!]!.push(mean[p]!);
  const empirical = members.map((list) => {
    const v = Float32Array.from(list).sort();
    const at = (share: number) => v[Math.min(v.length - 1, Math.floor(share * v.length))] ?? 0;
    const median = at(0.5);
    return median + (DISAGREE_DEVIATIONS * (median - at(0.25))) / 0.6745;
  });
  // the theory's level by the window's pixel count (at most (2·WINDOW + 1)²)
  const theory = Float64Array.from({ length: (2 * WINDOW + 1) ** 2 + 1 }, (_, n) => MEAN_ABS + (DISAGREE_DEVIATIONS * DEVIATION_ABS) / Math.sqrt(n));
  const limit = new Float32Array(pixels);
  for (let p = 0; p < pixels; p++) limit[p] = Math.max(empirical[classOf[p]!]!, theory[count[p]!]!);
  return limit;
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
  return { data: blockMeans(rgb, width, height, step), width: Math.ceil(width / step), height: Math.ceil(height / step), step };
}

/** Means (rounded) of step × step blocks of interleaved RGB bytes, the last ones cut short. */
function blockMeans(rgb: Uint8Array, width: number, height: number, step: number): Uint8Array {
  const [w, h] = [Math.ceil(width / step), Math.ceil(height / step)];
  const sums = new Uint32Array(w * h * 3);
  for (let y = 0, q = 0; y < height; y++) {
    const row = Math.floor(y / step) * w * 3;
    for (let x = 0, o = row; x < width; o += 3) {
      const end = Math.min(width, x + step);
      let r = 0, g = 0, b = 0;
      for (; x < end; x++, q += 3) (r += rgb[q]!), (g += rgb[q + 1]!), (b += rgb[q + 2]!);
      sums[o]! += r;
      sums[o + 1]! += g;
      sums[o + 2]! += b;
    }
  }
  const out = new Uint8Array(sums.length);
  for (let by = 0, o = 0; by < h; by++) {
    const rows = Math.min(height, (by + 1) * step) - by * step;
    for (let bx = 0; bx < w; bx++, o += 3) {
      const n = rows * (Math.min(width, (bx + 1) * step) - bx * step);
      out[o] = Math.round(sums[o]! / n);
      out[o + 1] = Math.round(sums[o + 1]! / n);
      out[o + 2] = Math.round(sums[o + 2]! / n);
    }
  }
  return out;
}

/** Channel c (0 R, 1 G, 2 B) of interleaved RGB bytes. */
function channel(rgb: Uint8Array, c: number, pixels: number): Uint8Array {
  const out = new Uint8Array(pixels);
  for (let p = 0, q = c; p < pixels; p++, q += 3) out[p] = rgb[q]!;
  return out;
}

/**
 * Histogram matching: for each value of `own`, the value of `ref` at the same rank (the middle of
 * the value's ranks, interpolated between the reference's values), non-decreasing by construction;
 * and the least reference value that `own`'s clipped-high values stand for (at the first of their
 * ranks), the greatest that its clipped-low ones do (at the last of theirs).
 */
function histogramMatch(own: Uint8Array, ref: Uint8Array): { mapping: Float64Array; clippedLow: number; clippedHigh: number } {
  const [ownCounts, refCounts] = [new Float64Array(256), new Float64Array(256)];
  for (let p = 0; p < own.length; p++) ownCounts[own[p]!]!++, refCounts[ref[p]!]!++;
  // the reference's value r holds ranks [before, before + count): r − ½ … r + ½
  const atRank = (rank: number): number => {
    let before = 0, r = 0;
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

/** The mean of `values` over the (2r + 1)² window around each pixel, cut at the edges, and how many pixels each window holds. */
function boxMean(values: Float32Array, width: number, height: number, r: number): [Float32Array, Int32Array] {
  const rows = new Float32Array(values.length), rowCounts = new Int32Array(width);
  for (let x = 0; x < width; x++) rowCounts[x] = Math.min(width - 1, x + r) - Math.max(0, x - r) + 1;
  for (let y = 0; y < height; y++) {
    const o = y * width;
    let sum = 0;
    for (let x = 0; x < Math.min(r, width); x++) sum += values[o + x]!;
    for (let x = 0; x < width; x++) {
      if (x + r < width) sum += values[o + x + r]!;
      rows[o + x] = sum;
      if (x - r >= 0) sum -= values[o + x - r]!;
    }
  }
  const mean = new Float32Array(values.length), count = new Int32Array(values.length);
  for (let x = 0; x < width; x++) {
    let sum = 0;
    for (let y = 0; y < Math.min(r, height); y++) sum += rows[y * width + x]!;
    for (let y = 0; y < height; y++) {
      if (y + r < height) sum += rows[(y + r) * width + x]!;
      const n = rowCounts[x]! * (Math.min(height - 1, y + r) - Math.max(0, y - r) + 1);
      mean[y * width + x] = sum / n;
      count[y * width + x] = n;
      if (y - r >= 0) sum -= rows[(y - r) * width + x]!;
    }
  }
  return [mean, count];
}

/**
 * Rows [y0, y1) of a full-size mask (width wide) from its small copy (`small`, smallWidth ×
 * smallHeight, `factor` pixels a small pixel): bilinear between the small pixels' centres, edges
 * replicated. A mask is below 255 only where something moved, so each output row is interpolated
 * only across the columns its two small rows are below 255 at (and their neighbours), and is 255
 * elsewhere; `spans` gets, per row y, at 2y and 2y + 1 the columns [x0, x1) outside of which the
 * row is 255 (x0 = x1 where all of it is), for the blends to skip the rest.
 */
export function upsampleMaskRows(small: Uint8Array, smallWidth: number, smallHeight: number, factor: number, out: Uint8Array, width: number, y0: number, y1: number, spans?: Int32Array): void {
  const xs = new Int32Array(width), fx = new Float32Array(width);
  const narrow = smallWidth === 1, short = smallHeight === 1;
  for (let x = 0; x < width; x++) {
    const sx = Math.max(0, Math.min(smallWidth - 1, (x + 0.5) / factor - 0.5));
    xs[x] = narrow ? 0 : Math.min(smallWidth - 2, Math.floor(sx));
    fx[x] = narrow ? 0 : sx - xs[x]!;
  }
  // the first and last column at which each small row is below 255 (first > last: none)
  const extent = new Map<number, [number, number]>();
  const extentOf = (r: number): [number, number] => {
    let e = extent.get(r);
    if (e) return e;
    const [first, end] = fullOutside(small, r * smallWidth, smallWidth);
    e = first < end ? [first, end - 1] : [smallWidth, -1];
    extent.set(r, e);
    return e;
  };
  const upper = new Float64Array(width), lower = new Float64Array(width);
  const next = narrow ? 0 : 1;
  // The output columns come in runs that read the same two small columns. Where the four small
  // pixels a run reads are equal (inside a mover, between movers) the run is that value, as the
  // interpolation would give it exactly: `flat` holds it per run, −1 where the run is interpolated.
  const runStart: number[] = [];
  const runOf = new Int32Array(width);
  for (let x = 0; x < width; x++) {
    if (x === 0 || xs[x] !== xs[x - 1]) runStart.push(x);
    runOf[x] = runStart.length - 1;
  }
  runStart.push(width);
  // the first output column that reads small column s or one after it (xs is non-decreasing), width for none
  const firstReading = new Int32Array(smallWidth + 1);
  for (let c = 0, x = 0; c <= smallWidth; c++) {
    while (x < width && xs[x]! < c) x++;
    firstReading[c] = x;
  }
  const flat = new Int16Array(runStart.length);
  const across = (r0: number, r1: number, x0: number, x1: number) => {
    for (let j = runOf[x0]!, end = x1 > x0 ? runOf[x1 - 1]! + 1 : j; j < end; j++) {
      const [s0, s1] = [runStart[j]!, runStart[j + 1]!];
      const a = r0 * smallWidth + xs[s0]!, b = r1 * smallWidth + xs[s0]!;
      const c = small[a]!;
      if (small[a + next] === c && small[b] === c && small[b + next] === c) {
        flat[j] = c;
        continue;
      }
      flat[j] = -1;
      for (let x = s0; x < s1; x++) {
        upper[x] = small[a]! + fx[x]! * (small[a + next]! - small[a]!);
        lower[x] = small[b]! + fx[x]! * (small[b + next]! - small[b]!);
      }
    }
  };
  let pair = [-1, -1, 0, 0];
  for (let y = y0; y < y1; y++) {
    const sy = Math.max(0, Math.min(smallHeight - 1, (y + 0.5) / factor - 0.5));
    const r0 = short ? 0 : Math.min(smallHeight - 2, Math.floor(sy));
    const r1 = short ? 0 : r0 + 1, fy = short ? 0 : sy - r0;
    const [a0, b0] = extentOf(r0), [a1, b1] = extentOf(r1);
    const first = Math.min(a0, a1), last = Math.max(b0, b1);
    const o = y * width;
    if (first > last) {
      out.fill(255, o, o + width);
      if (spans) (spans[2 * y] = 0), (spans[2 * y + 1] = 0);
      continue;
    }
    // output column x reads small columns xs[x] and xs[x] + 1: it is 255 unless one of them lies in [first, last]
    const x0 = firstReading[Math.max(0, first - 1)]!, x1 = Math.max(x0, firstReading[Math.min(smallWidth, last + 1)]!);
    out.fill(255, o, o + x0);
    out.fill(255, o + x1, o + width);
    // the two small rows interpolated across [x0, x1), kept for the output rows that lie between them too
    if (r0 !== pair[0] || r1 !== pair[1] || x0 !== pair[2] || x1 !== pair[3]) {
      across(r0, r1, x0, x1);
      pair = [r0, r1, x0, x1];
    }
    // x0 and x1 are bounds of runs: which columns a run reads decides both
    for (let j = x1 > x0 ? runOf[x0]! : 0, end = x1 > x0 ? runOf[x1 - 1]! + 1 : 0; j < end; ) {
      const s0 = runStart[j]!, c = flat[j]!;
      if (c < 0) {
        for (let x = s0, s1 = runStart[++j]!; x < s1; x++) out[o + x] = Math.round(upper[x]! + fy * (lower[x]! - upper[x]!));
        continue;
      }
      // a stretch of runs of one value at once (a call of fill costs more than a short loop)
      while (j < end && flat[j] === c) j++;
      const s1 = runStart[j]!;
      if (s1 - s0 >= 64) out.fill(c, o + s0, o + s1);
      else for (let x = s0; x < s1; x++) out[o + x] = c;
    }
    if (spans) (spans[2 * y] = x0), (spans[2 * y + 1] = x1);
  }
}

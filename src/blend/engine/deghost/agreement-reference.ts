import { BAND_SHIFT, BANDS, FEATHER, HIGH, LOW, MOSTLY, RESIDUAL_BINS, RESIDUAL_STEPS, WINDOW } from './agreement-constants.js';
import { type AgreementMask, bandUnits, channelTables, detailClass, histogramMatch, theoryLevels, toFrameValues, windowLevels } from './agreement.js';

/**
 * The agreement test (deghost/agreement.ts) in plain JavaScript, pixel by pixel: the reference the
 * WebAssembly kernels (deghost/agreement-kernels.ts) are held to, byte for byte, by
 * test/blend-deghost.test.ts. The engine runs the kernels; the steps between the per-pixel passes
 * (histogram matching, the bands' spreads, the detail classes' levels) are agreement.ts's, shared.
 */
export function agreementMaskReference(reference: Uint8Array, frame: Uint8Array, width: number, height: number): AgreementMask | null {
  const pixels = width * height;
  const z = new Float32Array(pixels);
  const toFrame = new Uint8Array(3 * 256);
  // how much detail each pixel's neighbourhood shows in either frame (the lesser of the two), in the reference's values
  const refDetail = new Float32Array(pixels), ownDetail = new Float32Array(pixels);
  // per channel, made once: the residuals, the frame's values in the reference's (for the detail),
  // and histograms of the judged residuals by band of the frame's value, by band of the reference's, and of all
  const residual = new Float32Array(pixels), mapped = new Float64Array(pixels);
  const bins = RESIDUAL_BINS, bands = BANDS;
  const byOwn = new Int32Array(bands * bins), byRef = new Int32Array(bands * bins), whole = new Int32Array(bins);
  for (let c = 0; c < 3; c++) {
    const ref = channel(reference, c, pixels), own = channel(frame, c, pixels);
    const ownCounts = valueCounts(own), refCounts = valueCounts(ref);
    toFrameValues(histogramMatch(refCounts, ownCounts).mapping, toFrame, c);
    const { mapping, clippedLow, clippedHigh } = histogramMatch(ownCounts, refCounts);
    const { scale, refLowOf, refHighOf, ownLowOf, ownHighOf, clipped } = channelTables(mapping, clippedLow, clippedHigh);
    byOwn.fill(0);
    byRef.fill(0);
    whole.fill(0);
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
    const { units, refUnits } = bandUnits(byOwn, byRef, whole);
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

/** The level above which each window's mean residual disagrees (agreement.ts `windowLevels`): its detail class's, or the theory's for its pixel count, the higher. */
function windowLimits(mean: Float32Array, count: Int32Array, detail: Float32Array): Float32Array {
  const { bounds, empirical } = windowLevels(mean, detail);
  const theory = theoryLevels();
  const limit = new Float32Array(mean.length);
  for (let p = 0; p < mean.length; p++) limit[p] = Math.max(empirical[detailClass(detail[p]!, bounds)]!, theory[count[p]!]!);
  return limit;
}

/** Means (rounded) of step × step blocks of interleaved RGB bytes, the last ones cut short: what agreement.ts `agreementGrid` makes with the thumbnails' kernel. */
export function blockMeansReference(rgb: Uint8Array, width: number, height: number, step: number): Uint8Array {
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

/** How many of `values` hold each value. */
function valueCounts(values: Uint8Array): Float64Array {
  const counts = new Float64Array(256);
  for (let p = 0; p < values.length; p++) counts[values[p]!]!++;
  return counts;
}

/** Channel c (0 R, 1 G, 2 B) of interleaved RGB bytes. */
function channel(rgb: Uint8Array, c: number, pixels: number): Uint8Array {
  const out = new Uint8Array(pixels);
  for (let p = 0, q = c; p < pixels; p++, q += 3) out[p] = rgb[q]!;
  return out;
}

/** The mean of `values` over the (2r + 1)² window around each pixel, cut at the edges, and how many pixels each window holds. */
export function boxMean(values: Float32Array, width: number, height: number, r: number): [Float32Array, Int32Array] {
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

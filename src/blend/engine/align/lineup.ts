import { agreeingShare, agreementAsIs, agreementLevel, soften, toHalved } from './global.js';
import { multiply, normalise, type Homography } from './homography.js';
import { ENOUGH_SAMPLES, correlation, gridStep, halve, sampleThroughHomography, smooth } from './grey.js';
import { sharedFloats } from '../image/image.js';
import { solveSymmetric } from './linear.js';

/**
 * Whether a frame already lines up with the reference, measured on the grey thumbnails in a pool
 * thread without OpenCV: the cheap test that lets static-camera sets skip feature matching and
 * warping altogether.
 */

export interface LineUp {
  /** Normalised correlation of the smoothed thumbnails, frame unwarped. */
  correlation: number;
  /**
   * How far (thumbnail pixels, at the worst corner) the frame's residual motion moves it, from
   * shifts measured block by block, leaving out blocks whose content changed; Infinity when too
   * few blocks have texture to tell, or when the motion is beyond what that measure can see
   * (checked at half the resolution first).
   */
  drift: number;
  /** Share of the reference's textured blocks that agree with the frame as it is (align/global.ts). */
  agreement: number;
  /** The frame's smoothed thumbnail, in shared memory: the estimates that follow reuse it rather than smooth the frame again. */
  smoothed: Float32Array;
  /** The level block agreement is measured on (align/global.ts agreementLevel), in shared memory, reused likewise. */
  level: Float32Array;
}

/** The thumbnail is cut into BLOCKS × BLOCKS blocks, each measuring its own shift. */
const BLOCKS = 6;
/** Fewest agreeing textured blocks for a drift measurement. */
const MIN_BLOCKS = 6;
/** Thumbnail pixels within which a block's shift agrees with a motion. */
const AGREEMENT = 0.25;
/** Thumbnail pixels of motion (seen at half the resolution) within which one step measures it exactly. */
const REACH = 1;
/**
 * How many times the residual of the quietest quarter of the blocks a block's fit may leave
 * before its content is taken as changed (someone walked in or out), not moved.
 */
const CHANGED = 4;
/** Mean square (grey levels²) that rounding both thumbnails to whole levels leaves after the blur: the least residual a fit can have. */
const ROUNDING = 2 * (1 / 12) * (6 / 16) ** 2;

/** What one block tells of the motion. */
interface BlockShift {
  /** The block's centre. */
  x: number;
  y: number;
  /** The frame's shift there: frame(p) ≈ gain · ref(p + shift) + offset. */
  dx: number;
  dy: number;
  /** Mean square the fit leaves per sample: the noise where the block's content stayed, far more where it changed. */
  residual: number;
  /** Inverse covariance of (dx, dy) as [xx, xy, yy]: how closely the block's texture, against that residual, pins its shift down. */
  information: [number, number, number];
}

/** Counts of clipped pixels of a thumbnail (width × height) over each rectangle from its top left corner: (width + 1) × (height + 1), the first row and column 0. */
interface ClippedSums {
  sums: Int32Array;
  width: number;
  height: number;
}

/**
 * A block's samples, gathered by one of the loops below: the reference pixel each is taken at
 * and the frame's value there. Each loop is a small function of its own, so that V8 optimises
 * it whole and at once in every pool thread (one large function with all three loops ran its
 * first calls in each thread in the interpreter, ~60 ms each, and lost its optimised code
 * whenever a call took another path).
 */
interface Gathered {
  at: Int32Array;
  value: Float64Array;
}

/** The block's samples, the frame as it is. */
function gatherAsIs({ at, value }: Gathered, frame: Float32Array, width: number, x0: number, x1: number, y0: number, y1: number, step: number): number {
  let n = 0;
  for (let y = y0; y < y1; y += step) {
    for (let x = x0, i = y * width + x0; x < x1; x += step, i += step) {
      const f = frame[i]!;
      if (Number.isNaN(f)) continue;
      at[n] = i;
      value[n++] = f;
    }
  }
  return n;
}

/** The block's samples taken through homography `h` (reference pixel → frame pixel), rounded to float32 as a warped thumbnail holds them. */
function gatherThrough({ at, value }: Gathered, frame: Float32Array, width: number, height: number, h: Homography, x0: number, x1: number, y0: number, y1: number, step: number): number {
  let n = 0;
  for (let y = y0; y < y1; y += step) {
    for (let x = x0, i = y * width + x0; x < x1; x += step, i += step) {
      const f = Math.fround(sampleThroughHomography(frame, width, height, h, x, y));
      if (Number.isNaN(f)) continue;
      at[n] = i;
      value[n++] = f;
    }
  }
  return n;
}

/** The block's samples that draw on no pixel `clipped` flags (through `h` where one is given). */
function gatherUnclipped(into: Gathered, frame: Float32Array, width: number, height: number, h: Homography | null, clipped: ClippedSums, scale: number, x0: number, x1: number, y0: number, y1: number, step: number): number {
  const { sums, width: fullWidth, height: fullHeight } = clipped;
  const stride = fullWidth + 1;
  // Thumbnail pixels a sample reaches beyond its own: the blur's one, then the gradient's one at this scale.
  const before = scale + 1;
  const after = 2 * scale;
  let n = 0;
  for (let y = y0; y < y1; y += step) {
    for (let x = x0; x < x1; x += step) {
      const xa = Math.max(0, scale * x - before), xb = Math.min(fullWidth, scale * x + after + 1);
      const ya = Math.max(0, scale * y - before) * stride, yb = Math.min(fullHeight, scale * y + after + 1) * stride;
      if (sums[yb + xb]! - sums[ya + xb]! - sums[yb + xa]! + sums[ya + xa]! !== 0) continue;
      const i = y * width + x;
      const f = h ? Math.fround(sampleThroughHomography(frame, width, height, h, x, y)) : frame[i]!;
      if (Number.isNaN(f)) continue;
      into.at[n] = i;
      into.value[n++] = f;
    }
  }
  return n;
}

/** What a block's fit sums over its samples: products of (ref, 1, gx, gy) with each other and with the frame, and the frame's squares. */
interface BlockSums {
  rr: number;
  r1: number;
  rgx: number;
  rgy: number;
  count: number;
  sgx: number;
  sgy: number;
  gxx: number;
  gxy: number;
  gyy: number;
  rf: number;
  sf: number;
  gxf: number;
  gyf: number;
  ff: number;
}

/**
 * The sums over the first `n` gathered samples (the fit's, and the frame's squares for what it
 * leaves), each in sample order. In locals declared one by one: taken from an array literal
 * (`let [a, b] = [0, 0]`), V8 kept them boxed and allocated a number for every sum of every
 * sample (the loop took 4 × as long).
 */
function sumSamples(ref: Float32Array, width: number, { at, value }: Gathered, n: number): BlockSums {
  let rr = 0, r1 = 0, rgx = 0, rgy = 0, count = 0, sgx = 0, sgy = 0, gxx = 0, gxy = 0, gyy = 0, rf = 0, sf = 0, gxf = 0, gyf = 0, ff = 0;
  for (let s = 0; s < n; s++) {
    const i = at[s]!;
    const f = value[s]!;
    const r = ref[i]!;
    const gx = (ref[i + 1]! - ref[i - 1]!) / 2;
    const gy = (ref[i + width]! - ref[i - width]!) / 2;
    rr += r * r;
    r1 += r;
    rgx += r * gx;
    rgy += r * gy;
    count += 1;
    sgx += gx;
    sgy += gy;
    gxx += gx * gx;
    gxy += gx * gy;
    gyy += gy * gy;
    rf += r * f;
    sf += f;
    gxf += gx * f;
    gyf += gy * f;
    ff += f * f;
  }
  return { rr, r1, rgx, rgy, count, sgx, sgy, gxx, gxy, gyy, rf, sf, gxf, gyf, ff };
}

/**
 * One Lucas–Kanade step per block, taken at integer positions (no interpolation, which would
 * bias a noisy frame towards half-pixel shifts): least squares of
 * frame ≈ gain·ref + offset + gain·(gx·dx + gy·dy). Exact for sub-pixel shifts, which are the
 * ones that decide whether a frame already lines up. `ref` and `frame` are the smoothed
 * thumbnails, or those halved `scale` − 1 times; a sample is skipped where its value or its
 * gradient draws on a pixel `clipped` flags, or where the frame is NaN (a warped frame that does
 * not cover it). With `through`, `frame` is the unwarped frame and each sample is taken through
 * that homography (reference pixel → frame pixel) as it is read, the value warpedOnto would have
 * put there: only the samples are warped (a quarter of the pixels at full resolution), not the
 * whole thumbnail.
 */
function blockShifts(ref: Float32Array, frame: Float32Array, width: number, height: number, clipped: ClippedSums | null, scale: number, through: Homography | null = null): BlockShift[] {
  const shifts: BlockShift[] = [];
  let gathered: Gathered = { at: new Int32Array(0), value: new Float64Array(0) };
  for (let by = 0; by < BLOCKS; by++) {
    for (let bx = 0; bx < BLOCKS; bx++) {
      const x0 = Math.max(1, Math.floor((bx * width) / BLOCKS));
      const x1 = Math.min(width - 1, Math.floor(((bx + 1) * width) / BLOCKS));
      const y0 = Math.max(1, Math.floor((by * height) / BLOCKS));
      const y1 = Math.min(height - 1, Math.floor(((by + 1) * height) / BLOCKS));
      const step = gridStep((x1 - x0) * (y1 - y0), ENOUGH_SAMPLES / (BLOCKS * BLOCKS));
      const most = Math.ceil(Math.max(0, x1 - x0) / step) * Math.ceil(Math.max(0, y1 - y0) / step);
      if (gathered.at.length < most) gathered = { at: new Int32Array(most), value: new Float64Array(most) };
      const samples = clipped
        ? gatherUnclipped(gathered, frame, width, height, through, clipped, scale, x0, x1, y0, y1, step)
        : through
          ? gatherThrough(gathered, frame, width, height, through, x0, x1, y0, y1, step)
          : gatherAsIs(gathered, frame, width, x0, x1, y0, y1, step);
      const { rr, r1, rgx, rgy, count, sgx, sgy, gxx, gxy, gyy, rf, sf, gxf, gyf, ff } = sumSamples(ref, width, gathered, samples);
      const m = Float64Array.of(rr, r1, rgx, rgy, 0, count, sgx, sgy, 0, 0, gxx, gxy, 0, 0, 0, gyy);
      const t = Float64Array.of(rf, sf, gxf, gyf);
      const n = m[5]!;
      for (const [j, k] of [[1, 4], [2, 8], [3, 12], [6, 9], [7, 13], [11, 14]] as const) m[k] = m[j]!;
      // Gradient spread under a grey level per pixel in some direction cannot tell a shift.
      const cxx = (m[10]! - (m[6]! * m[6]!) / n) / n;
      const cxy = (m[11]! - (m[6]! * m[7]!) / n) / n;
      const cyy = (m[15]! - (m[7]! * m[7]!) / n) / n;
      if (!(n > 4) || (cxx + cyy) / 2 - Math.sqrt(((cxx - cyy) / 2) ** 2 + cxy * cxy) < 1) continue;
      const p = solveSymmetric(m, t, 4);
      if (!p || !(p[0]! > 0.1)) continue;
      const [gain, offset, c, d] = [p[0]!, p[1]!, p[2]!, p[3]!];
      const residual = Math.max(ROUNDING, (ff - gain * rf - offset * sf - c * gxf - d * gyf) / (n - 4));
      // The shift's inverse covariance: the gradients' sums less what gain and offset explain of
      // them (a Schur complement of m), times gain² (the shift is (c, d) / gain) over the residual.
      const det = rr * n - r1 * r1;
      const explained = (a1: number, a2: number, b1: number, b2: number) => (n * a1 * b1 - r1 * (a1 * b2 + a2 * b1) + rr * a2 * b2) / det;
      const weight = (gain * gain) / residual;
      shifts.push({
        x: (x0 + x1 - 1) / 2,
        y: (y0 + y1 - 1) / 2,
        dx: c / gain,
        dy: d / gain,
        residual,
        information: [
          (gxx - explained(rgx, sgx, rgx, sgx)) * weight,
          (gxy - explained(rgx, sgx, rgy, sgy)) * weight,
          (gyy - explained(rgy, sgy, rgy, sgy)) * weight,
        ],
      });
    }
  }
  return shifts;
}

/** Affine motion, the x and then the y part of the shift: (x0, x1, x2) · (1, u, v), u and v centred and scaled by half the longest side. */
type Affine = Float64Array;

/**
 * The blocks whose content stayed: those whose fit leaves at most CHANGED times the residual of
 * the quietest quarter. Someone walking into a block leaves a residual hundreds of times the
 * noise's, and drags its shift wherever their edges are, so those blocks would read as motion;
 * the quarter (rather than the median) keeps the noise level even when most blocks changed.
 */
function unchangedBlocks(shifts: BlockShift[]): BlockShift[] {
  const residuals = Float64Array.from(shifts, (b) => b.residual).sort();
  const quiet = residuals[Math.floor(residuals.length / 4)] ?? 0;
  return shifts.filter((b) => b.residual <= CHANGED * quiet);
}

/** A thumbnail pixel (x, y) in the centred coordinates of an Affine, scaled by half the longest side. */
const unitOf =
  (width: number, height: number) =>
  (x: number, y: number): [number, number] => {
    const half = Math.max(width, height) / 2;
    return [(x - (width - 1) / 2) / half, (y - (height - 1) / 2) / half];
  };

/**
 * The affine motion most blocks agree with (each triple of blocks proposes one; with ≤ 36 blocks
 * trying them all is cheap), refitted to those blocks, so moving objects covering many blocks do
 * not pull it; null when too few agree.
 */
function residualMotion(shifts: BlockShift[], textured: number, width: number, height: number): Affine | null {
  const unit = unitOf(width, height);
  // Weighted by each block's information, so blocks that pin their shift down (texture, low
  // noise) count for more, and in the direction they pin it (an edge tells nothing along itself).
  const fit = (kept: BlockShift[]): Affine | null => {
    const m = new Float64Array(36);
    const t = new Float64Array(6);
    for (const { x, y, dx, dy, information: [ixx, ixy, iyy] } of kept) {
      const row = [1, ...unit(x, y)];
      for (let j = 0; j < 3; j++) {
        for (let k = 0; k < 3; k++) {
          const uv = row[j]! * row[k]!;
          m[j * 6 + k]! += ixx * uv;
          m[j * 6 + k + 3]! += ixy * uv;
          m[(j + 3) * 6 + k]! += ixy * uv;
          m[(j + 3) * 6 + k + 3]! += iyy * uv;
        }
        t[j]! += row[j]! * (ixx * dx + ixy * dy);
        t[j + 3]! += row[j]! * (ixy * dx + iyy * dy);
      }
    }
    return solveSymmetric(m, t, 6);
  };
  const n = shifts.length;
  if (n < MIN_BLOCKS) return null;
  const us = new Float64Array(n);
  const vs = new Float64Array(n);
  shifts.forEach(({ x, y }, k) => ([us[k], vs[k]] = unit(x, y)));
  const dxs = Float64Array.from(shifts, (b) => b.dx);
  const dys = Float64Array.from(shifts, (b) => b.dy);
  // The affine motion through blocks i, j, k exactly (Cramer's rule), and how many blocks agree
  // with it. Written out rather than with a helper for x and y: it runs for every triple.
  const votes = (i: number, j: number, k: number): number => {
    const ui = us[i]!, vi = vs[i]!, uj = us[j]!, vj = vs[j]!, uk = us[k]!, vk = vs[k]!;
    const det = (uj - ui) * (vk - vi) - (uk - ui) * (vj - vi);
    if (Math.abs(det) < 1e-6) return 0;
    const xi = dxs[i]!, xj = dxs[j]!, xk = dxs[k]!, yi = dys[i]!, yj = dys[j]!, yk = dys[k]!;
    const x1 = ((xj - xi) * (vk - vi) - (xk - xi) * (vj - vi)) / det;
    const x2 = ((uj - ui) * (xk - xi) - (uk - ui) * (xj - xi)) / det;
    const x0 = xi - x1 * ui - x2 * vi;
    const y1 = ((yj - yi) * (vk - vi) - (yk - yi) * (vj - vi)) / det;
    const y2 = ((uj - ui) * (yk - yi) - (uk - ui) * (yj - yi)) / det;
    const y0 = yi - y1 * ui - y2 * vi;
    let count = 0;
    for (let m = 0; m < n; m++) {
      const ex = dxs[m]! - (x0 + x1 * us[m]! + x2 * vs[m]!);
      const ey = dys[m]! - (y0 + y1 * us[m]! + y2 * vs[m]!);
      if (ex * ex + ey * ey <= AGREEMENT * AGREEMENT) count++;
    }
    return count;
  };
  let most = 0;
  let seed: [number, number, number] = [0, 1, 2];
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      for (let k = j + 1; k < n; k++) {
        const v = votes(i, j, k);
        if (v > most) (most = v), (seed = [i, j, k]);
      }
    }
  }
  const seedModel = fit(seed.map((k) => shifts[k]!));
  const best = seedModel
    ? shifts.filter(({ x, y, dx, dy }) => {
        const [fx, fy] = shiftAt(seedModel, unit(x, y));
        return Math.hypot(dx - fx, dy - fy) <= AGREEMENT;
      })
    : [];
  // A third of all the textured blocks, not only of those left: when the blocks that moved are
  // the ones left out (their fit at no motion leaves far more than the still ones'), a still third
  // must not speak for the frame.
  if (best.length < Math.max(MIN_BLOCKS, textured / 3)) return null;
  return fit(best);
}

/** The shift an Affine gives at centred coordinates (u, v). */
const shiftAt = (a: Affine, [u, v]: [number, number]): [number, number] => [a[0]! + a[1]! * u + a[2]! * v, a[3]! + a[4]! * u + a[5]! * v];

/** How far `motion` moves the worst corner (thumbnail pixels); Infinity without a motion. */
function cornerDrift(motion: Affine | null, width: number, height: number): number {
  if (!motion) return Infinity;
  const unit = unitOf(width, height);
  let drift = 0;
  for (const [x, y] of [[0, 0], [width - 1, 0], [0, height - 1], [width - 1, height - 1]] as const) drift = Math.max(drift, Math.hypot(...shiftAt(motion, unit(x, y))));
  return drift;
}

/** Grey levels (thumbnail means) from which a pixel may hold clipped shadows or highlights. */
const DARKEST = 4;
const BRIGHTEST = 247;
/** 1 for the grey levels that may be clipped, by level. */
const CLIPPED_LEVEL = Uint8Array.from({ length: 256 }, (_, v) => (v < DARKEST || v > BRIGHTEST ? 1 : 0));

/** Counts of each grey level. */
function histogram(grey: Uint8Array): Float64Array {
  const counts = new Int32Array(256);
  for (let i = 0; i < grey.length; i++) counts[grey[i]!]!++;
  return Float64Array.from(counts);
}

/**
 * The grey levels of the frame mapped onto the reference's by their ranks (histogram
 * specification): each frame level goes to the reference level at the same middle quantile.
 * Another exposure of the same scene is a monotone tone curve of it, not a gain and offset (a
 * colour channel saturates long before the grey does), and the shift fit reads the difference as
 * motion wherever the curve bends; ranks need no correspondence, so moving objects barely move it.
 */
function toneMap(frameCounts: Float64Array, refCounts: Float64Array): Uint8Array {
  const lut = new Uint8Array(256);
  const total = frameCounts.reduce((a, b) => a + b, 0);
  const refTotal = refCounts.reduce((a, b) => a + b, 0);
  let below = 0;
  let u = 0;
  let refBelow = 0;
  for (let v = 0; v < 256; v++) {
    const middle = ((below + frameCounts[v]! / 2) / total) * refTotal;
    below += frameCounts[v]!;
    while (u < 255 && refBelow + refCounts[u]! < middle) refBelow += refCounts[u++]!;
    // Within reference level u, interpolate between u − ½ and u + ½ by how far into its count the quantile falls.
    const inside = refCounts[u]! > 0 ? (middle - refBelow) / refCounts[u]! : 0.5;
    lut[v] = Math.max(0, Math.min(255, Math.round(u - 0.5 + inside)));
  }
  return lut;
}

/** The reference's half of every line-up check, made once per job: its smoothed thumbnail, that halved, and its tones. */
export interface LineUpReference {
  smoothed: Float32Array;
  halved: Float32Array;
  /** The level block agreement is measured on (align/global.ts agreementLevel). */
  level: Float32Array;
  /** The grey thumbnail itself (where it is clipped) and its histogram. */
  grey: Uint8Array;
  counts: Float64Array;
}

/** A copy of `a` in shared memory, for the tasks of every thread. */
function shared(a: Float32Array): Float32Array {
  const copy = sharedFloats(a.length);
  copy.set(a);
  return copy;
}

/** The reference's smoothed and halved thumbnails, in shared memory for the checks in every thread. */
export function lineUpReference(grey: Uint8Array, width: number, height: number): LineUpReference {
  const smoothed = smooth(grey, width, height);
  const halved = halve(smoothed, width, height);
  return { smoothed: shared(smoothed), halved: shared(halved), level: shared(agreementLevel(smoothed, width, height)), grey, counts: histogram(grey) };
}

/** Mean distance (grey levels) of the frame's tones from the reference's beyond which it is taken as another exposure. */
const OTHER_EXPOSURE = 10;

/** Mean |lut(v) − v| over the frame's pixels: how far its tones lie from the reference's. */
function toneDistance(lut: Uint8Array, frameCounts: Float64Array): number {
  let sum = 0;
  let total = 0;
  for (let v = 0; v < 256; v++) {
    sum += Math.abs(lut[v]! - v) * frameCounts[v]!;
    total += frameCounts[v]!;
  }
  return total > 0 ? sum / total : 0;
}

/**
 * The frame's grey, smoothed, in the reference's tones, with its clipped pixels (ClippedSums);
 * null when it is the same exposure (its tones within OTHER_EXPOSURE of the reference's), for
 * which the gain and offset of the shift fit suffice: frames of one exposure are measured as they are.
 */
function inReferenceTones(ref: LineUpReference, frame: Uint8Array, width: number, height: number): { mapped: Float32Array; clipped: ClippedSums } | null {
  const counts = histogram(frame);
  const lut = toneMap(counts, ref.counts);
  if (toneDistance(lut, counts) <= OTHER_EXPOSURE) return null;
  const tones = new Uint8Array(frame.length);
  // Pixels clipped in either frame, summed over the rectangle above and left of each corner.
  const refGrey = ref.grey;
  const stride = width + 1;
  const sums = new Int32Array(stride * (height + 1));
  for (let y = 0, i = 0; y < height; y++) {
    let row = 0;
    for (let x = 0, o = (y + 1) * stride + 1; x < width; x++, i++, o++) {
      const v = frame[i]!;
      tones[i] = lut[v]!;
      row += CLIPPED_LEVEL[v]! | CLIPPED_LEVEL[refGrey[i]!]!;
      sums[o] = sums[o - stride]! + row;
    }
  }
  return { mapped: smooth(tones, width, height), clipped: { sums, width, height } };
}

/**
 * How well `frame` lines up with the reference as it is. Correlation alone is fooled both ways (a
 * shifted sky still correlates at 0.99; sensor noise, a passer-by or another exposure pull an
 * aligned frame well below), so the residual motion is measured too, robust to all three (another
 * exposure: on the frame's tones mapped onto the reference's, away from pixels clipped in either).
 */
export function checkLineUp(ref: LineUpReference, frame: Uint8Array, width: number, height: number): LineUp {
  const b = smooth(frame, width, height);
  const other = inReferenceTones(ref, frame, width, height);
  const halved = halve(b, width, height);
  const [w, h] = [width >> 1, height >> 1];
  const level = soften(halved, w, h); // agreementLevel(b)
  const asIs = agreementAsIs(ref.level, level, w, h);
  return {
    correlation: correlation(ref.smoothed, b),
    drift: cornerDrift(
      other ? residualOf(ref, other.mapped, null, halve(other.mapped, width, height), other.clipped, width, height) : residualOf(ref, b, null, halved, null, width, height),
      width,
      height,
    ),
    agreement: agreeingShare(asIs, asIs.scores[0]!),
    smoothed: shared(b),
    level: shared(level),
  };
}

/**
 * The residual motion of `measured` (a smoothed thumbnail in the reference's tones, seen through
 * homography `through` where one is given; `halved`, that halved and brought onto the reference)
 * against the reference, leaving out blocks whose content changed and samples that draw on a pixel
 * `clipped` flags: at half the resolution first and, where that sees a motion within REACH, at
 * full resolution (one Lucas–Kanade step measures a sub-pixel shift exactly), its samples taken
 * through `through` as they are read (blockShifts); null when too few blocks agree or the motion
 * is beyond that reach.
 */
function residualOf(ref: LineUpReference, measured: Float32Array, through: Homography | null, halved: Float32Array, clipped: ClippedSums | null, width: number, height: number): Affine | null {
  const [w, h] = [width >> 1, height >> 1];
  const shifts = blockShifts(ref.halved, halved, w, h, clipped, 2);
  const coarse = 2 * cornerDrift(residualMotion(unchangedBlocks(shifts), shifts.length, w, h), w, h);
  return coarse <= REACH ? residualMotion(...fineShifts(ref, measured, through, width, height, clipped)) : null;
}

/** residualMotion's arguments for the blocks' shifts at full resolution. */
function fineShifts(ref: LineUpReference, measured: Float32Array, through: Homography | null, width: number, height: number, clipped: ClippedSums | null = null): [BlockShift[], number, number, number] {
  const shifts = blockShifts(ref.smoothed, measured, width, height, clipped, 1, through);
  return [unchangedBlocks(shifts), shifts.length, width, height];
}

/** `image` (width × height) brought onto the reference by `h`, bilinear: NaN where `h` takes a pixel outside it. */
function warpedOnto(image: Float32Array, width: number, height: number, h: Homography): Float32Array {
  const out = new Float32Array(width * height);
  for (let y = 0, i = 0; y < height; y++) for (let x = 0; x < width; x++, i++) out[i] = sampleThroughHomography(image, width, height, h, x, y);
  return out;
}

/** What lineUpAfter makes of a motion. */
export interface LinedUpMotion {
  /** The motion corrected by the residual it leaves (reference thumbnail pixel → frame thumbnail pixel). */
  homography: Homography;
  /** The drift (LineUp.drift) the corrected motion leaves; Infinity where it cannot be measured. */
  drift: number;
}

/**
 * Motion `h` (reference thumbnail pixel → frame thumbnail pixel) corrected by the residual motion
 * the line-up check measures once the frame is brought onto the reference by it, and the drift
 * left after the correction. The blocks measure each its own shift and those whose content
 * changed (someone walked in or out) are left out, so passers-by do not pull the correction, where
 * Lucas–Kanade over all pixels (align/refine.ts) only clips their residuals. `smoothed` is the
 * frame's smoothed thumbnail (LineUp.smoothed), `grey` its grey thumbnail: a frame of another
 * exposure is left to the global estimate (drift Infinity), as its tones and clipping would have
 * to be mapped and warped as well.
 */
export function lineUpAfter(ref: LineUpReference, grey: Uint8Array, smoothed: Float32Array, width: number, height: number, h: Homography): LinedUpMotion {
  const counts = histogram(grey);
  const unmeasured = { homography: h, drift: Infinity };
  if (toneDistance(toneMap(counts, ref.counts), counts) > OTHER_EXPOSURE) return unmeasured;
  // At half the resolution the frame's own halved thumbnail is warped: a quarter of the pixels.
  const halved = warpedOnto(halve(smoothed, width, height), width >> 1, height >> 1, toHalved(h, 1));
  const residual = residualOf(ref, smoothed, h, halved, null, width, height);
  if (!residual) return unmeasured;
  // The warped frame at p shows the reference at p + s(p): the reference at q is the frame at h(q − s(q)).
  const half = Math.max(width, height) / 2;
  const [x0, y0] = shiftAt(residual, unitOf(width, height)(0, 0));
  const back = [1 - residual[1]! / half, -residual[2]! / half, -x0, -residual[4]! / half, 1 - residual[5]! / half, -y0, 0, 0, 1];
  const corrected = normalise(multiply(h, back));
  return {
    homography: corrected,
    // What is left after the correction is within the reach the first measure already saw.
    drift: cornerDrift(residualMotion(...fineShifts(ref, smoothed, corrected, width, height)), width, height),
  };
}

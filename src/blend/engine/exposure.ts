import { WEIGHT_ONE } from './pyramid.js';

/**
 * Exposure fusion weights (Mertens, Kautz & Van Reeth 2007): per pixel and frame,
 * contrast^wc · saturation^ws · well-exposedness^we, normalised to sum 1 over the frames.
 * The blend itself (Laplacian pyramids of the frames, Gaussian pyramids of these weights) is
 * pyramid.ts driven by blend.ts.
 */

/** The exponents wc, ws, we (Mertens' defaults: all 1). */
export interface FusionExponents {
  contrast: number;
  saturation: number;
  exposedness: number;
}

export const MERTENS_EXPONENTS: FusionExponents = { contrast: 1, saturation: 1, exposedness: 1 };

const SIGMA = 0.2;
// Keeps a pixel where every frame scores 0 (flat and clipped) an equal mix instead of 0 / 0.
const EPSILON = 1e-12;
const GREY_R = 0.299 / 255, GREY_G = 0.587 / 255, GREY_B = 0.114 / 255;

// Well-exposedness of one channel value: exp(−(v/255 − ½)² / 2σ²).
const EXPOSEDNESS = Float64Array.from({ length: 256 }, (_, v) => Math.exp(-((v / 255 - 0.5) ** 2) / (2 * SIGMA * SIGMA)));

/**
 * Rows [y0, y1) of every frame's normalised weight plane (`weights[k]`, width × height, fixed
 * point: WEIGHT_ONE is 1, pyramid.ts).
 * Contrast is |4-neighbour Laplacian| of BT.601 grey (0..1, edges replicated), saturation the
 * standard deviation of R, G and B (0..1).
 */
export function exposureWeightRows(
  frames: Uint8Array[],
  width: number,
  height: number,
  weights: Uint16Array[],
  y0: number,
  y1: number,
  exponents: FusionExponents = MERTENS_EXPONENTS,
): void {
  const n = frames.length;
  const { contrast: wc, saturation: ws, exposedness: we } = exponents;
  const plain = wc === 1 && ws === 1 && we === 1;
  // three grey rows per frame (above, this, below), rotated as y advances
  const grey = frames.map((frame) => [greyRow(frame, width, Math.max(0, y0 - 1)), greyRow(frame, width, y0), new Float64Array(width)]);
  // this row's weights of every frame before normalisation: the planes are written once, normalised
  const raw = frames.map(() => new Float64Array(width));
  const sum = new Float64Array(width);
  for (let y = y0; y < y1; y++) {
    const o = y * width;
    sum.fill(EPSILON * n);
    for (let k = 0; k < n; k++) {
      const frame = frames[k]!, rows = grey[k]!, v = raw[k]!;
      const up = rows[0]!, mid = rows[1]!, down = rows[2]!;
      greyRow(frame, width, Math.min(height - 1, y + 1), down);
      laplacianRow(up, mid, down, width, v);
      for (let x = 0, q = o * 3; x < width; x++, q += 3) {
        const r = frame[q]!, g = frame[q + 1]!, b = frame[q + 2]!;
        // std of R, G, B = √(3·Σv² − (Σv)²) / 3, exact in integers so never √(negative)
        const s = r + g + b;
        const saturation = Math.sqrt(3 * (r * r + g * g + b * b) - s * s) * (1 / 765);
        const exposedness = EXPOSEDNESS[r]! * EXPOSEDNESS[g]! * EXPOSEDNESS[b]!;
        const weight = plain ? v[x]! * saturation * exposedness : v[x]! ** wc * saturation ** ws * exposedness ** we;
        v[x] = weight;
        sum[x]! += weight;
      }
      rows[0] = mid;
      rows[1] = down;
      rows[2] = up;
    }
    for (let x = 0; x < width; x++) sum[x] = WEIGHT_ONE / sum[x]!;
    for (let k = 0; k < n; k++) {
      const w = weights[k]!, v = raw[k]!;
      for (let x = 0; x < width; x++) w[o + x] = (v[x]! + EPSILON) * sum[x]! + 0.5;
    }
  }
}

/** |4-neighbour Laplacian| of the middle of three rows, edges replicated. */
export function laplacianRow(up: Float64Array, mid: Float64Array, down: Float64Array, width: number, out: Float64Array): void {
  let left = mid[0]!, centre = left;
  for (let x = 0; x < width; x++) {
    const right = x + 1 < width ? mid[x + 1]! : centre;
    out[x] = Math.abs(up[x]! + down[x]! + left + right - 4 * centre);
    left = centre;
    centre = right;
  }
}

/** Row y of the frame in BT.601 grey, 0..1. */
export function greyRow(frame: Uint8Array, width: number, y: number, into: Float64Array = new Float64Array(width)): Float64Array {
  for (let x = 0, q = y * width * 3; x < width; x++, q += 3) {
    into[x] = GREY_R * frame[q]! + GREY_G * frame[q + 1]! + GREY_B * frame[q + 2]!;
  }
  return into;
}

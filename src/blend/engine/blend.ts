import { type RgbImage, rowRanges, sharedImage, toShared } from './image/image.js';
import type { TaskArgs, TaskName, TaskResult, WorkerPool } from './threads/pool.js';
import type { LevelZeroWeights } from './pyramid/level-zero.js';
import { type FixedPlane, levelSizes, type Plane, sharedFixedPlane, sharedPlane } from './pyramid/planes.js';
import { BLEND_REGISTRY, type BlendTypeOf } from './registry.js';
import { deghostMasks, type DeghostMasks, gridMasks } from './deghost/deghost.js';

/** The blend types computed from the frames' pixels alone (alignment and segmentation come before): the registry's point and pyramid families. */
export type PixelBlendType = BlendTypeOf<'point' | 'pyramid'>;

// The pyramid blends by name: a pyramid type the registry declares must have its function here.
const PYRAMID_BLENDS: Record<BlendTypeOf<'pyramid'>, (pool: WorkerPool, frames: RgbImage[], masks: DeghostMasks | null) => Promise<RgbImage>> = {
  exposure: fuseExposures,
  focus: stackFocus,
};

// The kernel of a deghosted point type: each frame counted only where its mask lets it (point/stack-weighted.ts).
const WEIGHTED_KERNELS = { mean: 'weightedMeanRows' } as const;

// Levels shorter than this run as one task: splitting them costs more in messages than it saves.
const MIN_SPLIT_ROWS = 64;
const TALL_ROWS = 512;

/**
 * Blends same-sized frames into a new image, the pixel loops on the pool's threads. Point-wise
 * types split the rows across the threads, each running the type's kernel (engine/registry.ts);
 * exposure and focus split each pyramid level's rows and stream the frames one at a time into one
 * accumulating pyramid per channel. With `deghost`, the types the registry declares deghosted
 * (`mean`, `exposure`) count each frame only where it agrees with the reference (deghost/deghost.ts);
 * the other types ignore it. `thumbnails` are the frames' (image/thumbnails.ts), where the caller
 * has them already; deghosting makes them otherwise.
 */
export async function blendFrames(pool: WorkerPool, type: PixelBlendType, frames: RgbImage[], deghost = false, thumbnails?: RgbImage[]): Promise<RgbImage> {
  if (frames.length === 0) throw new Error('blendFrames needs at least one frame');
  const shared = frames.map((f) => toShared(f.width, f.height, f.data));
  const { width, height } = shared[0]!;
  const { kernel, deghost: reference } = BLEND_REGISTRY[type];
  const deghosted = deghost && reference !== null && frames.length > 1;
  if (!kernel) return PYRAMID_BLENDS[type as BlendTypeOf<'pyramid'>](pool, shared, deghosted ? await deghostMasks(pool, shared, reference, thumbnails) : null);
  // overRows covers every row, and a point kernel writes every byte of its rows (the byte tests on odd sizes would see one it left)
  const out = sharedImage(width, height, true);
  const data = shared.map((f) => f.data);
  // a point type's masks stay on the test's grid: its kernel brings them to full size row by row
  const masks = deghosted ? await gridMasks(pool, shared, reference, thumbnails) : null;
  if (masks) {
    const weighted = WEIGHTED_KERNELS[type as keyof typeof WEIGHTED_KERNELS];
    if (!weighted) throw new Error(`${type} has no kernel for deghosted frames`);
    await overRows(pool, weighted, height, (y0, y1) => [data, masks.masks, width, out.data, y0, y1]);
    return out;
  }
  await overRows(pool, kernel, height, (y0, y1) => [data, width, out.data, y0, y1]);
  return out;
}

/** Mertens exposure fusion: the pyramid blend of the normalised weights (pyramid/exposure.ts), made where they are needed; deghosted with `masks`. */
function fuseExposures(pool: WorkerPool, frames: RgbImage[], masks: DeghostMasks | null): Promise<RgbImage> {
  return pyramidBlend(pool, frames, masks ? { exposure: masks } : 'exposure');
}

/** Focus stacking: the sharpest frame per pixel, then the pyramid blend of one-hot weights. */
async function stackFocus(pool: WorkerPool, frames: RgbImage[]): Promise<RgbImage> {
  const { width, height } = frames[0]!;
  const data = frames.map((f) => f.data);
  const choice = new Uint8Array(new SharedArrayBuffer(width * height));
  await overRows(pool, 'sharpestFrameRows', height, (y0, y1) => [data, width, height, choice, y0, y1]);
  return pyramidBlend(pool, frames, { choice });
}

/**
 * out = collapse(Σ_k Gaussian(weight_k) · Laplacian(frame_k)) per channel, clipped to 0..255.
 * Level 0 is only read, never stored: one pass over the frames makes every frame's level 1 of
 * R, G, B and weight (`firsts`, `weights`, 16-bit fixed point), computing the level-0 weights a
 * few rows at a time; frames then stream one at a time through scratch pyramids into one
 * accumulator pyramid per channel for levels ≥ 1; the last pass computes the level-0 weights
 * again, row by row, and writes level 0 of the blend straight into `out`. Recomputing the weights
 * costs less than storing them (2 bytes a pixel and frame: 120 MB for five 12 MP frames).
 * Memory: the scratch that is dead by the last pass (levels ≥ 2 of the accumulators and of the
 * frame's R, G, B and weight) is carved out of one buffer, which the last pass then reuses for
 * `out`, so the result adds no memory of its own at the peak.
 */
async function pyramidBlend(pool: WorkerPool, frames: RgbImage[], levelZero: LevelZeroWeights): Promise<RgbImage> {
  const { width, height } = frames[0]!;
  const sizes = levelSizes(width, height);
  const top = sizes.length - 1;
  const area = ([w, h]: [number, number]) => w * h;
  const scratchFloats = sizes.reduce((n, size, l) => n + (l >= 2 ? 7 * area(size) : 0), 0);
  const arena = new SharedArrayBuffer(Math.max(scratchFloats * 4, width * height * 3));
  let used = 0;
  const upper = upperLevels(pool, sizes, ([w, h]) => {
    const data = new Float32Array(arena, used, w * h);
    used += w * h * 4;
    return { data, width: w, height: h };
  });
  const out: RgbImage = { width, height, data: new Uint8Array(arena, 0, width * height * 3) };
  const data = frames.map((f) => f.data);
  const firsts = top > 0 ? frames.map(() => levelOnePlanes(sizes)) : null;
  const rgb = firsts?.map((planes) => planes.slice(0, 3)) ?? null;
  const weights = firsts?.map((planes) => planes[3]!);
  if (rgb && weights) {
    await overRows(pool, 'levelOneRows', sizes[1]![1], (y0, y1) => [data, width, height, levelZero, rgb, weights, y0, y1]);
  }
  for (const planes of firsts ?? []) await upper.add(planes);
  const coarser = await upper.collapse();
  // from here on the scratch is dead and `out` overwrites it
  await overRows(pool, 'collapseLevelZeroRows', height, (y0, y1) => [
    data,
    rgb,
    levelZero,
    coarser,
    out.data,
    width,
    height,
    y0,
    y1,
  ]);
  return out;
}

/** A frame's level 1 as the blend keeps it: R, G, B and its weight, 16-bit fixed point (pyramid/planes.ts). */
export function levelOnePlanes(sizes: Array<[number, number]>): FixedPlane[] {
  return [0, 1, 2, 3].map(() => sharedFixedPlane(...sizes[1]!));
}

/** Levels ≥ 1 of a pyramid blend: `add` each frame's level 1 (R, G, B, weight), then `collapse` to the blend's level 1 (null when level 0 is the only level). */
export interface UpperLevels {
  add(level1: FixedPlane[]): Promise<void>;
  collapse(): Promise<Plane[] | null>;
}

/**
 * The accumulator pyramid per channel for levels ≥ 1 (level 1 outlives the scratch: the last pass
 * reads it), and the current frame's R, G, B and weight at levels ≥ 2, made by `scratch` (reused by
 * every frame). Frames stream through one at a time.
 */
export function upperLevels(pool: WorkerPool, sizes: Array<[number, number]>, scratch: (size: [number, number]) => Plane): UpperLevels {
  const top = sizes.length - 1;
  const scratchRgb = (size: [number, number]): Plane[] => [scratch(size), scratch(size), scratch(size)];
  const acc = sizes.map((size, l) => (l === 0 ? [] : l === 1 ? [sharedPlane(...size), sharedPlane(...size), sharedPlane(...size)] : scratchRgb(size)));
  const gauss = sizes.map((size, l) => (l < 2 ? [] : scratchRgb(size)));
  const w = sizes.map((size, l) => (l < 2 ? null : scratch(size)));
  return {
    async add(level1) {
      const kept = level1.slice(0, 3), weight = level1[3]!;
      for (let l = 1; l < top; l++) {
        const next = sizes[l + 1]![1];
        await Promise.all([
          overRows(pool, 'reduceRows', next, (y0, y1) => [l === 1 ? kept : gauss[l]!, 'level', gauss[l + 1]!, y0, y1]),
          overRows(pool, 'reduceRows', next, (y0, y1) => [[l === 1 ? weight : w[l]!], 'weight', [w[l + 1]!], y0, y1]),
        ]);
      }
      // the levels' contributions are independent of each other: one batch for the whole pyramid
      await Promise.all(
        sizes.slice(1).map(([, h], i) => {
          const l = i + 1;
          const coarser = l < top ? gauss[l + 1]! : null;
          return overRows(pool, 'accumulateRows', h, (y0, y1) => [acc[l]!, l === 1 ? kept : gauss[l]!, coarser, l === 1 ? weight : w[l]!, y0, y1]);
        }),
      );
    },
    async collapse() {
      for (let l = top - 1; l >= 1; l--) {
        await overRows(pool, 'expandIntoRows', sizes[l]![1], (y0, y1) => [acc[l]!, acc[l + 1]!, 1, y0, y1]);
      }
      return acc[1] ?? null;
    },
  };
}

/**
 * Runs thread task `name` over rows [0, height) in row ranges: one for short levels, one per
 * thread, or four per thread for tall ones so that a thread slowed down by other work leaves rows
 * to the others. The task table (threads/tasks.ts) ties the argument list to the kernel's signature.
 */
export function overRows<N extends TaskName>(pool: WorkerPool, name: N, height: number, args: (y0: number, y1: number) => TaskArgs<N>): Promise<Array<TaskResult<N>>> {
  const parts = height < MIN_SPLIT_ROWS ? 1 : height < TALL_ROWS ? pool.size : pool.size * 4;
  return pool.all(name, rowRanges(height, parts).map(([y0, y1]) => args(y0, y1)));
}

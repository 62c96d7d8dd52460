import { overRows, levelOnePlanes, upperLevels } from './blend.js';
import type { DeghostMasks } from './deghost/deghost.js';
import { type RgbImage, sharedImage } from './image/image.js';
import { SHARPNESS_RADIUS } from './pyramid/focus.js';
import type { LevelZeroWeights, StackPart } from './pyramid/level-zero.js';
import { levelSizes, type Plane, sharedPlane } from './pyramid/planes.js';
import type { BlendTypeOf } from './registry.js';
import type { WorkerPool } from './threads/pool.js';

/**
 * Exposure fusion and focus stacking of a stack read back one frame at a time (the job's spool,
 * blend/stream.ts), so memory does not grow with the frame count: the frame being used, the
 * deghosting reference, and one accumulator pyramid per channel, level 0 included.
 *
 * Three passes over the frames, in frame order:
 *  1. the per-pixel normaliser: exposure, the sum of every frame's raw Mertens weights; focus, the
 *     best sharpness so far and the frame it belongs to (the frame's sharpness window reads its
 *     neighbour rows, all in the frame at hand);
 *  2. each frame's normalised level-0 weights, its level 1 (R, G, B, weight), then its Laplacian
 *     and its weight's Gaussian pyramids added into the accumulators of levels ≥ 1, which are then
 *     collapsed to the blend's level 1;
 *  3. level 0: each frame's weights made again, its level 1 read back (pass 2 kept it beside the
 *     frames: 1.5 bytes a pixel, where making it again cost a sixth of the blend's time) and its
 *     detail added into the level-0 accumulator, started from the expanded level 1, the last
 *     frame writing the 8-bit result.
 * Every sum takes the same float steps in the same order as engine/blend.ts's blend of held
 * frames, so the result is byte for byte the same (docs/blend.md, "Memory"). Level 0 could be
 * added in pass 2 and the expanded level 1 last, saving pass 3, but the floats would then be added
 * in another order and a few pixels would differ by one.
 */

/** The frames of a stack as the passes read them. */
export interface StackFrames {
  width: number;
  height: number;
  count: number;
  /** Reads frame k's interleaved RGB bytes into `into`. */
  read(k: number, into: Uint8Array): Promise<void>;
  /** Keeps frame k's level 1 (its R, G, B planes) for the last pass; `recall` reads it back into `into`. */
  keep(k: number, planes: Uint16Array[]): Promise<void>;
  recall(k: number, into: Uint16Array[]): Promise<void>;
  /** Deghosting (exposure): the reference frame's index, and frame k's full-size mask against it (null where it agrees everywhere). */
  deghost: { reference: number; mask(k: number): Promise<FrameMask | null> } | null;
}

/** A frame's deghosting mask at full size, the spans of its rows below 255, and the reference's tones brought to its exposure (deghost/masks.ts). */
export interface FrameMask {
  mask: Uint8Array;
  spans: Int32Array;
  toFrame: Uint8Array;
}

/** Passes over the frames a stack takes. */
export const PYRAMID_PASSES = 3;

export async function streamPyramid(
  pool: WorkerPool,
  type: BlendTypeOf<'pyramid'>,
  stack: StackFrames,
  signal: AbortSignal,
  onFrame: (done: number, total: number) => void,
): Promise<RgbImage> {
  // `onFrame` hears of frames' worth of work in the stack's own count: a frame is a third of a
  // frame each pass, reported when a whole one more is done (1, 2, …, count, as a fold reports)
  const { width, height, count } = stack;
  const sizes = levelSizes(width, height);
  const frame = new Uint8Array(new SharedArrayBuffer(width * height * 3));
  let used = 0, reported = 0;
  /** Runs `use` on each frame in order, read into `frame`. */
  const pass = async (use: (k: number) => Promise<unknown>) => {
    for (let k = 0; k < count; k++) {
      signal.throwIfAborted();
      await stack.read(k, frame);
      await use(k);
      const done = Math.floor(++used / PYRAMID_PASSES);
      if (done > reported) onFrame((reported = done), count);
    }
  };

  // deghosting: the reference's pixels stand in where a frame disagrees
  const reference = stack.deghost ? new Uint8Array(new SharedArrayBuffer(width * height * 3)) : null;
  if (reference) await stack.read(stack.deghost!.reference, reference);
  const sum = type === 'exposure' ? new Float32Array(new SharedArrayBuffer(width * height * 4)) : null;
  const choice = type === 'focus' ? new Uint8Array(new SharedArrayBuffer(width * height)) : null;
  const part = (k: number): StackPart => ({ first: k, count, sum, reference });
  const levelZero = async (k: number): Promise<LevelZeroWeights> => {
    if (choice) return { choice };
    const mask = await stack.deghost?.mask(k);
    if (!mask) return 'exposure';
    const one = <T>(value: T) => Array.from({ length: count }, (_, j) => (j === k ? value : null));
    const masks: DeghostMasks = { reference: stack.deghost!.reference, masks: one(mask.mask), spans: one(mask.spans), toFrame: one(mask.toFrame) };
    return { exposure: masks };
  };

  // 1: the normalisers
  if (choice) {
    const best = new Int32Array(new SharedArrayBuffer(width * height * 4));
    await pass((k) => overRows(pool, 'sharpestFrameRows', height, (y0, y1) => [[frame], width, height, choice, y0, y1, SHARPNESS_RADIUS, { first: k, best }]));
  } else {
    await pass(async (k) => {
      const zero = await levelZero(k);
      await overRows(pool, 'exposureSumRows', height, (y0, y1) => [[frame], width, height, zero, part(k), y0, y1]);
    });
  }

  // 2: levels ≥ 1 (their scratch pyramids are dropped once collapsed: only level 1 of the blend is kept)
  const top = sizes.length - 1;
  const level1 = top > 0 ? levelOnePlanes(sizes) : null;
  const rgb = level1?.slice(0, 3) ?? null;
  const coarser = await (async () => {
    const upper = upperLevels(pool, sizes, (size) => sharedPlane(...size));
    await pass(async (k) => {
      if (!level1 || !rgb) return;
      const zero = await levelZero(k);
      await overRows(pool, 'levelOneRows', sizes[1]![1], (y0, y1) => [[frame], width, height, zero, [rgb], [level1[3]!], y0, y1, part(k)]);
      await Promise.all([upper.add(level1), stack.keep(k, rgb.map((plane) => plane.data))]);
    });
    return upper.collapse();
  })();

  // 3: level 0
  const level0: Plane[] = [0, 1, 2].map(() => sharedPlane(width, height));
  const out = sharedImage(width, height);
  const firsts = rgb ? [rgb] : null;
  await pass(async (k) => {
    const [zero] = await Promise.all([levelZero(k), rgb && stack.recall(k, rgb.map((plane) => plane.data))]);
    await overRows(pool, 'collapseLevelZeroRows', height, (y0, y1) => [[frame], firsts, zero, coarser, out.data, width, height, y0, y1, part(k), level0]);
  });
  return out;
}

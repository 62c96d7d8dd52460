import { type RgbImage, rowRanges } from '../image/image.js';
import { makeThumbnails, thumbnailFactor } from '../image/thumbnails.js';
import type { TaskArgs, TaskResult, WorkerPool } from '../threads/pool.js';
import type { DeghostMasks, DeghostReference } from './masks.js';

export type { DeghostMasks, DeghostReference } from './masks.js';

/**
 * Deghosting for `mean` and `exposure`: a person who walks through the frames must not leave a
 * ghost. Each frame counts only where it agrees with the reference frame (deghost/agreement.ts
 * says how that is judged, on thumbnails). Where it does not, a mean leaves it out (point/stack-weighted.ts);
 * an exposure fusion puts in its place the reference's pixels brought to the frame's exposure
 * (pyramid/level-zero.ts), so Mertens' weights see a bracket that agrees and the tones stay those
 * of a full bracket. The masks are made on the thumbnails (reduced to the test's grid) and brought
 * to full size here, one byte a pixel, only for the frames that disagree somewhere, with each row's
 * span of columns below 255 so that the blends pass over the rest.
 *
 * The reference: for `mean`, frame 0 (the frame alignment brings the others onto); for `exposure`,
 * the middle exposure of the bracket (the frame of median brightness; of two middle ones the darker,
 * and the first of equals), whatever the frames' order: a bracket is taken around the exposure the
 * camera metered, the frame that shows most of the scene unclipped on either side, so the one the
 * others are best compared with, and the one whose content is kept where they disagree.
 */

/** The frames' agreement masks against the reference, at full size, with their spans; null when every frame agrees everywhere. `thumbnails`: the frames' (image/thumbnails.ts), made here when not given. */
export async function deghostMasks(pool: WorkerPool, frames: RgbImage[], choose: DeghostReference, thumbnails?: RgbImage[]): Promise<DeghostMasks | null> {
  const { width, height } = frames[0]!;
  const small = thumbnails ?? (await makeThumbnails(pool, frames, false)).map((t) => t.rgb);
  const { width: sw, height: sh } = small[0]!;
  // each frame on the test's grid once (agreement.ts, agreementGrid): the reference's serves every test
  const [grids, reference] = await Promise.all([
    pool.all('agreementGrid', small.map((t): TaskArgs<'agreementGrid'> => [t.data, sw, sh])),
    choose === 'first' ? 0 : middleExposure(pool, small),
  ]);
  const { width: gw, height: gh, step } = grids[0]!;
  const agreements = await Promise.all(
    grids.map((g, k) => (k === reference ? null : pool.run('agreementMask', [grids[reference]!.data, g.data, gw, gh]))),
  );
  if (agreements.every((a) => a === null)) return null;
  // a grid pixel stands for step thumbnail pixels a side, each of them for thumbnailFactor frame pixels
  const factor = thumbnailFactor(width, height) * step;
  const full = await Promise.all(agreements.map((a) => (a ? upsample(pool, a.mask, gw, gh, factor, width, height) : null)));
  return { reference, masks: full.map((f) => f?.mask ?? null), spans: full.map((f) => f?.spans ?? null), toFrame: agreements.map((a) => a?.toFrame ?? null) };
}

/**
 * One frame's mask against frame 0, for a stack that streams its frames (pipeline/stream.ts):
 * `reference` is frame 0's thumbnail on the test's grid (the `agreementGrid` task), `small` the
 * frame's aligned thumbnail; the same mask deghostMasks makes for it with reference 'first', at
 * full size (`width` × `height`), or null where the frame agrees everywhere.
 */
export async function frameMask(pool: WorkerPool, reference: TaskResult<'agreementGrid'>, small: RgbImage, width: number, height: number): Promise<Uint8Array | null> {
  const grid = await pool.run('agreementGrid', [small.data, small.width, small.height]);
  const agreement = await pool.run('agreementMask', [reference.data, grid.data, grid.width, grid.height]);
  if (!agreement) return null;
  return (await upsample(pool, agreement.mask, grid.width, grid.height, thumbnailFactor(width, height) * grid.step, width, height)).mask;
}

/** The frame of median mean grey (agreement.ts `meanGrey`): the darker of the two middle ones, the first of equals. */
async function middleExposure(pool: WorkerPool, small: RgbImage[]): Promise<number> {
  const brightness = await pool.all(
    'meanGrey',
    small.map((t): TaskArgs<'meanGrey'> => [t.data, t.width, t.height]),
  );
  const order = brightness.map((b, k) => [b, k] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return order[(order.length - 1) >> 1]![1];
}

async function upsample(pool: WorkerPool, small: Uint8Array, sw: number, sh: number, factor: number, width: number, height: number): Promise<{ mask: Uint8Array; spans: Int32Array }> {
  const shared = new Uint8Array(new SharedArrayBuffer(small.length));
  shared.set(small);
  const mask = new Uint8Array(new SharedArrayBuffer(width * height));
  const spans = new Int32Array(new SharedArrayBuffer(8 * height));
  await pool.all(
    'upsampleMaskRows',
    rowRanges(height, pool.size).map(([y0, y1]): TaskArgs<'upsampleMaskRows'> => [shared, sw, sh, factor, mask, width, y0, y1, spans]),
  );
  return { mask, spans };
}

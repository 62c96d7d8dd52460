import { type RgbImage, rowRanges } from '../image/image.js';
import { makeThumbnails, thumbnailFactor } from '../image/thumbnails.js';
import type { TaskArgs, TaskResult, WorkerPool } from '../threads/pool.js';
import type { DeghostMasks, DeghostReference, GridMask, GridMasks } from './masks.js';

export type { DeghostMasks, DeghostReference, GridMask, GridMasks } from './masks.js';

/**
 * Deghosting for `mean` and `exposure`: a person who walks through the frames must not leave a
 * ghost. Each frame counts only where it agrees with the reference frame (deghost/agreement.ts
 * says how that is judged, on thumbnails). Where it does not, a mean leaves it out (point/stack-weighted.ts);
 * an exposure fusion puts in its place the reference's pixels brought to the frame's exposure
 * (pyramid/level-zero.ts), so Mertens' weights see a bracket that agrees and the tones stay those
 * of a full bracket. The masks are made on the thumbnails (reduced to the test's grid), only for
 * the frames that disagree somewhere. A fusion's are brought to full size here, one byte a pixel,
 * with each row's span of columns below 255 so that it passes over the rest; a mean, held
 * (`gridMasks`) or streamed (`frameMask`), brings them to full size a row at a time as it averages
 * or folds, writing none.
 *
 * The reference: for `mean`, frame 0 (the frame alignment brings the others onto); for `exposure`,
 * the middle exposure of the bracket (the frame of median brightness; of two middle ones the darker,
 * and the first of equals), whatever the frames' order: a bracket is taken around the exposure the
 * camera metered, the frame that shows most of the scene unclipped on either side, so the one the
 * others are best compared with, and the one whose content is kept where they disagree.
 */

/**
 * The frames' agreement masks against the reference on the test's grid, with the reference's
 * values brought to each frame's exposure; null when every frame agrees everywhere.
 * `thumbnails`: the frames' (image/thumbnails.ts), made here when not given.
 */
export async function gridMasks(pool: WorkerPool, frames: RgbImage[], choose: DeghostReference, thumbnails?: RgbImage[]): Promise<GridMasks | null> {
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
  return {
    reference,
    masks: agreements.map((a) => (a ? { data: shared(a.mask), width: gw, height: gh, factor } : null)),
    toFrame: agreements.map((a) => a?.toFrame ?? null),
  };
}

/** The frames' agreement masks against the reference, at full size, with their spans (gridMasks brought to full size); null when every frame agrees everywhere. */
export async function deghostMasks(pool: WorkerPool, frames: RgbImage[], choose: DeghostReference, thumbnails?: RgbImage[]): Promise<DeghostMasks | null> {
  const { width, height } = frames[0]!;
  const grid = await gridMasks(pool, frames, choose, thumbnails);
  if (!grid) return null;
  const full = await Promise.all(grid.masks.map((m) => (m ? upsample(pool, m, width, height) : null)));
  return { reference: grid.reference, masks: full.map((f) => f?.mask ?? null), spans: full.map((f) => f?.spans ?? null), toFrame: grid.toFrame };
}

/**
 * One frame's mask against frame 0, for a mean that streams its frames (pipeline/stream.ts):
 * `reference` is frame 0's thumbnail on the test's grid (the `agreementGrid` task), `small` the
 * frame's aligned thumbnail; the mask deghostMasks makes for it with reference 'first', left on
 * the test's grid as gridMasks leaves it (for frames `width` × `height`: point/fold.ts brings it to
 * full size a row at a time as it folds), or null where the frame agrees everywhere.
 */
export async function frameMask(pool: WorkerPool, reference: TaskResult<'agreementGrid'>, small: RgbImage, width: number, height: number): Promise<GridMask | null> {
  const grid = await pool.run('agreementGrid', [small.data, small.width, small.height]);
  const agreement = await pool.run('agreementMask', [reference.data, grid.data, grid.width, grid.height]);
  if (!agreement) return null;
  return { data: shared(agreement.mask), width: grid.width, height: grid.height, factor: thumbnailFactor(width, height) * grid.step };
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

/** A mask brought to full size (width × height) on the pool's threads, with its spans (deghost/upsample.ts). */
async function upsample(pool: WorkerPool, small: GridMask, width: number, height: number): Promise<{ mask: Uint8Array; spans: Int32Array }> {
  const mask = new Uint8Array(new SharedArrayBuffer(width * height));
  const spans = new Int32Array(new SharedArrayBuffer(8 * height));
  await pool.all(
    'upsampleMaskRows',
    rowRanges(height, pool.size).map(([y0, y1]): TaskArgs<'upsampleMaskRows'> => [small.data, small.width, small.height, small.factor, mask, width, y0, y1, spans]),
  );
  return { mask, spans };
}

/** A copy of `bytes` the pool's threads share instead of each receiving its own. */
function shared(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(new SharedArrayBuffer(bytes.length));
  copy.set(bytes);
  return copy;
}

import { type RgbImage, rowRanges } from '../image/image.js';
import { makeThumbnails, thumbnailFactor } from '../image/thumbnails.js';
import type { TaskArgs, WorkerPool } from '../threads/pool.js';
import type { DeghostMasks, DeghostReference } from './masks.js';

export type { DeghostMasks, DeghostReference } from './masks.js';

/**
 * Deghosting for `mean` and `exposure`: a person who walks through the frames must not leave a
 * ghost. Each frame counts only where it agrees with the reference frame (deghost/agreement.ts
 * says how that is judged, on thumbnails). Where it does not, a mean leaves it out (point/stack-weighted.ts);
 * an exposure fusion puts in its place the reference's pixels brought to the frame's exposure
 * (pyramid/level-zero.ts), so Mertens' weights see a bracket that agrees and the tones stay those
 * of a full bracket. The masks are made on the thumbnails and brought to full size here, one byte
 * a pixel, only for the frames that disagree somewhere.
 *
 * The reference: for `mean`, frame 0 (the frame alignment brings the others onto); for `exposure`,
 * the middle exposure of the bracket (the frame of median brightness; of two middle ones the darker,
 * and the first of equals), whatever the frames' order: a bracket is taken around the exposure the
 * camera metered, the frame that shows most of the scene unclipped on either side, so the one the
 * others are best compared with, and the one whose content is kept where they disagree.
 */

/** The frames' agreement masks against the reference, at full size; null when every frame agrees everywhere. `thumbnails`: the frames' (image/thumbnails.ts), made here when not given. */
export async function deghostMasks(pool: WorkerPool, frames: RgbImage[], choose: DeghostReference, thumbnails?: RgbImage[]): Promise<DeghostMasks | null> {
  const { width, height } = frames[0]!;
  const small = thumbnails ?? (await makeThumbnails(pool, frames, false)).map((t) => t.rgb);
  const { width: sw, height: sh } = small[0]!;
  const reference = choose === 'first' ? 0 : await middleExposure(pool, small);
  const agreements = await Promise.all(
    small.map((t, k) =>
      k === reference
        ? null
        : pool.run('agreementMask', [small[reference]!.data, t.data, sw, sh]),
    ),
  );
  if (agreements.every((a) => a === null)) return null;
  const factor = thumbnailFactor(width, height);
  const masks = await Promise.all(agreements.map((a) => (a ? upsample(pool, a.mask, sw, sh, factor, width, height) : null)));
  return { reference, masks, toFrame: agreements.map((a) => a?.toFrame ?? null) };
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

async function upsample(pool: WorkerPool, small: Uint8Array, sw: number, sh: number, factor: number, width: number, height: number): Promise<Uint8Array> {
  const shared = new Uint8Array(new SharedArrayBuffer(small.length));
  shared.set(small);
  const out = new Uint8Array(new SharedArrayBuffer(width * height));
  await pool.all(
    'upsampleMaskRows',
    rowRanges(height, pool.size).map(([y0, y1]): TaskArgs<'upsampleMaskRows'> => [shared, sw, sh, factor, out, width, y0, y1]),
  );
  return out;
}

/**
 * The `composite` blend: every frame's people placed onto one background with multi-band seams
 * (Burt & Adelson), and `preserveBackground`'s restriction of any blend to the people. The pixel
 * work runs in pool threads (composite/kernels.ts, composite/pyramid.ts, their WebAssembly in
 * composite/simd.ts); this file plans it.
 */
import type { HaloGrid, Layer } from './kernels.js';
import type { Plane } from './pyramid.js';
import { type RgbImage, rowRanges, sharedFloats, sharedImage } from '../image/image.js';
import type { TaskArgs, TaskName, TaskResult, WorkerPool } from '../threads/pool.js';

/** Pyramid depth below full size: the coarsest band is about 1/100 of the short side (2..5 levels). */
function levelCount(width: number, height: number): number {
  return Math.min(5, Math.max(2, Math.round(Math.log2(Math.min(width, height) / 100))));
}

function sharedBytes(length: number): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(length));
}

function plane(width: number, height: number, channels: number): Plane {
  return { width, height, channels, data: sharedFloats(width * height * channels) };
}

/**
 * Bands of rows per thread a row kernel is split into: the people, and so most of the work, lie in
 * a few bands of the frame, and with one band per thread one thread would wait for the other.
 */
const BANDS_PER_THREAD = 4;

/** Runs a row kernel (a thread task, threads/tasks.ts) over `rows` rows, split among the pool's threads. */
function overRows<N extends TaskName>(pool: WorkerPool, name: N, rows: number, args: (r0: number, r1: number) => TaskArgs<N>): Promise<Array<TaskResult<N>>> {
  return pool.all(name, rowRanges(rows, pool.size * BANDS_PER_THREAD).map(([r0, r1]) => args(r0, r1)));
}

/**
 * A frame's pyramid of (difference, weight) on the coarse grid, its bands blended and collapsed
 * back to the base level: one task, the frames' side by side (the levels are small, and split
 * into bands of rows they cost more in messages than they gain).
 */
async function buildLayer(pool: WorkerPool, index: number, base: Plane, levels: number): Promise<Layer> {
  const bands = plane(base.width, base.height, 3);
  await pool.run('collapse', [base, levels, bands]);
  return { index, base, bands };
}

/**
 * Places every frame's people onto the background: frame 0 (`first`) or the per-pixel median of
 * the frames (`median`, a clean plate). Where people of several frames overlap, the strongest
 * mask wins. Each frame also brings a ring of its own background around its people, so the seams
 * run through scenery the frames share. The blend is multi-band: the bands coarser than a small
 * grid (1/2 to 1/4 of full size) are blended through Laplacian pyramids weighted by the weights'
 * Gaussian pyramids; the finer detail is blended with the full-size weight.
 */
export async function compositePeople(pool: WorkerPool, frames: RgbImage[], masks: Uint8Array[], background: 'first' | 'median'): Promise<RgbImage> {
  const { width, height } = frames[0]!;
  const levels = levelCount(width, height);
  const haloFactor = Math.max(1, Math.min(1 << (levels - 1), Math.floor(Math.min(width, height) / 2)));
  const grid: HaloGrid = { factor: haloFactor, width: Math.ceil(width / haloFactor), height: Math.ceil(height / haloFactor) };
  const halos = masks.map(() => sharedFloats(grid.width * grid.height));
  const plate = background === 'first' ? frames[0]! : sharedImage(width, height);
  const data = frames.map((f) => f.data);
  await Promise.all([
    background === 'median' ? overRows(pool, 'plateMedianRows', height, (r0, r1) => [data, plate.data, width, r0, r1]) : null,
    pool.all('haloPlane', masks.map((mask, i) => [mask, width, height, grid, halos[i]!])),
  ]);
  const winner = sharedBytes(width * height);
  const weight = sharedBytes(width * height);
  // The coarse grid: 1/4 of full size (1/2 for small images), with the remaining pyramid levels below it.
  const detailLevels = Math.min(2, levels - 1);
  const factor = 1 << detailLevels;
  const [cw, ch] = [Math.ceil(width / factor), Math.ceil(height / factor)];
  // The background's cell sums serve every frame's base level (baseRows).
  const plateSums = sharedFloats(cw * ch * 3);
  const [owns] = await Promise.all([
    overRows(pool, 'ownerRows', height, (r0, r1) => [masks, halos, grid, winner, weight, width, r0, r1]),
    overRows(pool, 'cellSumRows', ch, (r0, r1) => [plate.data, width, height, factor, cw, plateSums, r0, r1]),
  ]);
  const layers = await Promise.all(
    frames.map(async (frame, index) => {
      // Frame 0 as the background adds nothing to itself; a frame that owns no pixel adds nothing.
      if (frame === plate || !owns.some((part) => part[index])) return null;
      const base = plane(cw, ch, 4);
      await overRows(pool, 'baseRows', ch, (r0, r1) => [frame.data, plateSums, winner, weight, index, width, height, factor, base, r0, r1]);
      return buildLayer(pool, index, base, levels - detailLevels + 1);
    }),
  );
  const out = sharedImage(width, height);
  const used = layers.filter((l): l is Layer => l !== null);
  await overRows(pool, 'finishRows', height, (r0, r1) => [plate.data, data, winner, weight, used, factor, out.data, width, r0, r1]);
  return out;
}

/**
 * `preserveBackground` for the other blend types: every pixel outside the union of the people
 * masks is exactly the first frame's; inside, the blend, feathered by the masks' soft edges.
 */
export async function keepBackground(pool: WorkerPool, first: RgbImage, blended: RgbImage, masks: Uint8Array[]): Promise<RgbImage> {
  const out = sharedImage(first.width, first.height);
  await overRows(pool, 'keepRows', first.height, (r0, r1) => [first.data, blended.data, masks, out.data, first.width, r0, r1]);
  return out;
}

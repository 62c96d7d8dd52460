import { engineModule, type WorkerPool } from './pool.js';
import type { RgbImage } from './image.js';

/**
 * One person mask per frame (0 background .. 255 person, the frame's size, in shared memory),
 * each computed on a pool thread by the selfie segmentation model (segment-model.ts).
 */
export async function segmentPeople(pool: WorkerPool, frames: RgbImage[]): Promise<Uint8Array[]> {
  const masks = frames.map((f) => new Uint8Array(new SharedArrayBuffer(f.width * f.height)));
  await pool.all<void>(
    engineModule('segment-model'),
    'personMask',
    frames.map((frame, i) => [frame, masks[i]]),
  );
  return masks;
}

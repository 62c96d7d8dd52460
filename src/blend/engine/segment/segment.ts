import type { RgbImage } from '../image/image.js';
import type { WorkerPool } from '../threads/pool.js';

/**
 * One person mask per frame (0 background .. 255 person, the frame's size, in shared memory). The
 * selfie segmentation model (segment/model.ts) runs on the pool's last thread only, which alone
 * loads it (threads/pool.ts), and so beside OpenCV's first thread: a mask can be made while alignment
 * runs. The full-size loops before and after the model (segment/mask.ts) run on any thread.
 */
export function segmentPeople(pool: WorkerPool, frames: RgbImage[]): Promise<Uint8Array[]> {
  return Promise.all(frames.map((frame) => personMask(pool, frame)));
}

async function personMask(pool: WorkerPool, frame: RgbImage): Promise<Uint8Array> {
  const { width, height } = frame;
  const mask = new Uint8Array(new SharedArrayBuffer(width * height));
  const work = await pool.run('workingCopy', [frame]);
  const weights = await pool.run('personWeights', [work], { slot: pool.size - 1 });
  await pool.run('maskFromWeights', [weights, work.width, work.height, mask, width, height]);
  return mask;
}

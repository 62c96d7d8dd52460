import type { RgbImage } from '../image/image.js';
import { engineModule, type WorkerPool } from '../threads/pool.js';
import type { maskFromWeights, Working } from './mask.js';

const MASK = engineModule('segment/mask');
const MODEL = engineModule('segment/model');

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
  const work = await pool.run<Working>(MASK, 'workingCopy', [frame]);
  const weights = await pool.run<Float32Array>(MODEL, 'personWeights', [work], { slot: pool.size - 1 });
  const args: Parameters<typeof maskFromWeights> = [weights, work.width, work.height, mask, width, height];
  await pool.run(MASK, 'maskFromWeights', args);
  return mask;
}

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { BufferPool, bufferDone, sharedBuffer } from '../src/blend/engine/image/buffers.js';
import { REFERENCE_REPORT, warpFrame } from '../src/blend/engine/align/align.js';
import { blendFrames } from '../src/blend/engine/blend.js';
import { sharedImage } from '../src/blend/engine/image/image.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { random } from './blend-scenes.js';

const MB = 1024 * 1024;

/** The buffers `job` allocates, each written over so a reuse would show. */
function dirty(...sizes: number[]): SharedArrayBuffer[] {
  return sizes.map((bytes) => {
    const buffer = sharedBuffer(bytes);
    new Uint8Array(buffer).fill(7);
    return buffer;
  });
}

describe('the blend engine\'s kept buffers (engine/image/buffers.ts)', () => {
  test('a later job gets an earlier job\'s buffer of the same size, zeroed unless its caller overwrites it', async () => {
    const pool = new BufferPool(64 * MB, 60_000);
    const [first] = await pool.run(async () => dirty(8 * MB));
    assert.equal(pool.kept, 8 * MB);
    const again = await pool.run(async () => sharedBuffer(8 * MB));
    assert.equal(again, first);
    assert.ok(new Uint8Array(again).every((b) => b === 0));
    const [kept] = await pool.run(async () => dirty(8 * MB));
    const overwritten = await pool.run(async () => sharedBuffer(8 * MB, true));
    assert.equal(overwritten, kept);
    assert.equal(new Uint8Array(overwritten)[0], 7);
  });

  test('small buffers and buffers outside a job are fresh; work a job left running gets fresh ones', async () => {
    const pool = new BufferPool(64 * MB, 60_000);
    await pool.run(async () => dirty(MB, 8 * MB));
    assert.equal(pool.kept, 8 * MB);
    dirty(8 * MB);
    assert.equal(pool.kept, 8 * MB, 'outside a job the pool is neither used nor filled');
    let late!: Promise<SharedArrayBuffer>;
    await pool.run(async () => {
      late = new Promise((resolve) => setTimeout(() => resolve(sharedBuffer(8 * MB)), 10));
    });
    const [kept] = await pool.run(async () => [sharedBuffer(8 * MB)]);
    assert.ok(new Uint8Array(await late).every((b) => b === 0));
    assert.notEqual(await late, kept);
    assert.equal(pool.kept, 8 * MB);
  });

  test('a buffer given back in a job serves the job\'s next allocation of its size', async () => {
    const pool = new BufferPool(64 * MB, 60_000);
    await pool.run(async () => {
      const [frame] = dirty(8 * MB);
      bufferDone(frame!);
      const next = sharedBuffer(8 * MB);
      assert.equal(next, frame);
      assert.ok(new Uint8Array(next).every((b) => b === 0));
      bufferDone(new SharedArrayBuffer(8 * MB));
      assert.notEqual(sharedBuffer(8 * MB), frame);
    });
    assert.equal(pool.kept, 16 * MB);
  });

  test('the pool keeps at most its bytes; a job\'s fresh buffer makes room by dropping kept ones of other sizes', async () => {
    const pool = new BufferPool(20 * MB, 60_000);
    await pool.run(async () => dirty(8 * MB, 8 * MB, 8 * MB));
    assert.equal(pool.kept, 16 * MB);
    await pool.run(async () => {
      sharedBuffer(6 * MB);
      assert.equal(pool.kept, 8 * MB);
    });
    assert.equal(pool.kept, 14 * MB);
  });

  test('the pool drops what it keeps once no job has run for its idle time, and a job in between keeps it', async () => {
    const pool = new BufferPool(64 * MB, 100);
    await pool.run(async () => dirty(8 * MB));
    await sleep(60);
    await pool.run(async () => dirty(8 * MB));
    await sleep(60);
    assert.equal(pool.kept, 8 * MB);
    await sleep(100);
    assert.equal(pool.kept, 0);
  });

  test('a warped frame and a point blend\'s result, which take a reused buffer without zeroing it, come out as in fresh buffers', async () => {
    const workers = new WorkerPool(2);
    try {
      // 37 × 29: odd sizes, so a row's last pixels and a band's last rows would show any byte left unwritten
      const [width, height] = [37, 29];
      const next = random(5);
      const frames = [0, 1, 2].map(() => {
        const image = sharedImage(width, height);
        for (let i = 0; i < image.data.length; i++) image.data[i] = Math.floor(next() * 256);
        return image;
      });
      const moved = { ...REFERENCE_REPORT, index: 1, method: 'homography' as const, homography: [0.99, 0.02, 1.3, -0.02, 1.01, -0.8, 1e-4, -2e-4, 1] };
      const made = async () => {
        const warped = await warpFrame(workers, frames[1]!, moved);
        const blended = await blendFrames(workers, 'median', [frames[0]!, warped.image, frames[2]!]);
        return { warped: warped.image.data, thumbnail: warped.thumbnail!.data, blended: blended.data };
      };
      const fresh = await made();
      // minBytes 1: this pool keeps buffers of any size, so the small frame's buffers are reused
      const pool = new BufferPool(64 * MB, 60_000, 1);
      // three: the warped frame, its thumbnail (as large: the thumbnail of so small a frame is the frame) and the result
      const left = await pool.run(async () => dirty(width * height * 3, width * height * 3, width * height * 3));
      const reused = await pool.run(made);
      assert.ok(left.includes(reused.warped.buffer as SharedArrayBuffer) && left.includes(reused.blended.buffer as SharedArrayBuffer), 'both took a buffer the earlier job left dirty');
      assert.deepEqual(reused.warped, fresh.warped);
      assert.deepEqual(reused.thumbnail, fresh.thumbnail);
      assert.deepEqual(reused.blended, fresh.blended);
    } finally {
      await workers.close();
    }
  });
});

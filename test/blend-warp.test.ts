import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { warpRows } from '../src/blend/engine/align/warp.js';
import { sharedImage, toShared, type RgbImage } from '../src/blend/engine/image/image.js';

/**
 * The full-size warp (align/warp.ts): its positions saturate far outside the frame.
 */

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');

async function load(file: string, width: number, height: number): Promise<RgbImage> {
  const { data, info } = await sharp(path.join(FIXTURES, file)).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
}

function warped(frame: RgbImage, h: number[], warp = warpRows): RgbImage {
  const out = sharedImage(frame.width, frame.height);
  warp(frame, out, h, 0, frame.height);
  return out;
}

describe('warp', () => {
  it('takes a position beyond ±2^31 / 256 pixels to the frame edge instead of wrapping it back inside', async () => {
    const frame = await load('handheld-mean/1.png', 64, 48);
    // x + 2^24 + 10 pixels: in 1/256 pixel, 2^32 + 2560 wraps (modulo 2^32) to column 10
    const far = warped(frame, [1, 0, 2 ** 24 + 10, 0, 1, 0, 0, 0, 1]);
    const { width, height, data } = frame;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const o = (y * width + x) * 3;
        const edge = (y * width + width - 1) * 3;
        assert.deepEqual([...far.data.subarray(o, o + 3)], [...data.subarray(edge, edge + 3)], `(${x}, ${y})`);
      }
    }
    // x − 2^24 + 10 pixels: −2^32 + 2560 wraps to column 10 as well; saturated, the left edge
    const left = warped(frame, [1, 0, 10 - 2 ** 24, 0, 1, 0, 0, 0, 1]);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const o = (y * width + x) * 3;
        const edge = y * width * 3;
        assert.deepEqual([...left.data.subarray(o, o + 3)], [...data.subarray(edge, edge + 3)], `(${x}, ${y})`);
      }
    }
  });
});

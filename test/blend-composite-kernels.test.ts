import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { baseRows, cellSumRows } from '../src/blend/engine/composite-kernels.js';
import type { Plane } from '../src/blend/engine/composite-pyramid.js';
import { maskFromWeights, workingCopy } from '../src/blend/engine/segment-mask.js';

// The composite's and segmentation's loops, written for speed, against their plain definitions on odd sizes.

function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
}

function bytes(length: number, next: () => number): Uint8Array {
  return Uint8Array.from({ length }, () => Math.floor(next() * 256));
}

describe('segmentation pixel loops', () => {
  test('workingCopy is the box average of the frame, value for value', () => {
    const next = random(1);
    const [width, height] = [733, 411];
    const frame = { width, height, data: bytes(width * height * 3, next) };
    const work = workingCopy(frame);
    for (let oy = 0; oy < work.height; oy++) {
      const y0 = Math.floor((oy * height) / work.height);
      const y1 = Math.max(y0 + 1, Math.floor(((oy + 1) * height) / work.height));
      for (let ox = 0; ox < work.width; ox++) {
        const x0 = Math.floor((ox * width) / work.width);
        const x1 = Math.max(x0 + 1, Math.floor(((ox + 1) * width) / work.width));
        for (let k = 0; k < 3; k++) {
          let sum = 0;
          for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) sum += frame.data[(y * width + x) * 3 + k]!;
          assert.equal(work.rgb[(oy * work.width + ox) * 3 + k], Math.fround(sum * (1 / (255 * (y1 - y0) * (x1 - x0)))), `cell ${ox},${oy}`);
        }
      }
    }
  });

  test('maskFromWeights is the feathered weights upscaled bilinearly, byte for byte (runs of equal weights included)', () => {
    const next = random(2);
    const [gw, gh, width, height] = [37, 23, 301, 197];
    // plateaus of 0 and 1 with a few soft values, as the model's ramped probabilities are
    const weights = Float32Array.from({ length: gw * gh }, (_, i) => (i % gw < 12 ? 0 : i % gw > 25 ? 1 : next() < 0.5 ? next() : 1));
    const mask = new Uint8Array(width * height);
    maskFromWeights(weights, gw, gh, mask, width, height);
    const feathered = new Float32Array(gw * gh);
    for (let y = 0; y < gh; y++) {
      for (let x = 0; x < gw; x++) {
        let sum = 0;
        for (let dy = -1; dy <= 1; dy++) {
          for (let dx = -1; dx <= 1; dx++) sum += weights[Math.min(gh - 1, Math.max(0, y + dy)) * gw + Math.min(gw - 1, Math.max(0, x + dx))]!;
        }
        feathered[y * gw + x] = sum / 9;
      }
    }
    const row = new Float32Array(gw);
    for (let y = 0; y < height; y++) {
      const v = Math.min(gh - 1, Math.max(0, ((y + 0.5) * gh) / height - 0.5));
      const top = Math.floor(v);
      const bottom = Math.min(gh - 1, top + 1);
      for (let u = 0; u < gw; u++) row[u] = 255 * (feathered[top * gw + u]! * (1 - (v - top)) + feathered[bottom * gw + u]! * (v - top));
      for (let x = 0; x < width; x++) {
        const u = Math.min(gw - 1, Math.max(0, ((x + 0.5) * gw) / width - 0.5));
        const left = Math.floor(u);
        const a = row[left]!;
        const expected = Math.trunc(a + (row[Math.min(gw - 1, left + 1)]! - a) * Math.fround(u - left) + 0.5);
        assert.equal(mask[y * width + x], expected, `pixel ${x},${y}`);
      }
    }
  });
});

describe('composite pixel loops', () => {
  test('baseRows from the background cell sums is the mean difference and owned weight of each cell', () => {
    const next = random(3);
    const [width, height, factor, index] = [203, 97, 4, 2];
    const [cw, ch] = [Math.ceil(width / factor), Math.ceil(height / factor)];
    const frame = bytes(width * height * 3, next);
    const background = bytes(width * height * 3, next);
    const winner = Uint8Array.from({ length: width * height }, () => Math.floor(next() * 4));
    const weight = bytes(width * height, next);
    const sums = new Float32Array(cw * ch * 3);
    cellSumRows(background, width, height, factor, cw, sums, 0, ch);
    const base: Plane = { width: cw, height: ch, channels: 4, data: new Float32Array(cw * ch * 4) };
    baseRows(frame, sums, winner, weight, index, width, height, factor, base, 0, 10);
    baseRows(frame, sums, winner, weight, index, width, height, factor, base, 10, ch);
    for (let cy = 0; cy < ch; cy++) {
      for (let cx = 0; cx < cw; cx++) {
        const d = [0, 0, 0];
        let w = 0;
        let n = 0;
        for (let y = cy * factor; y < Math.min(height, (cy + 1) * factor); y++) {
          for (let x = cx * factor; x < Math.min(width, (cx + 1) * factor); x++, n++) {
            const p = y * width + x;
            for (let k = 0; k < 3; k++) d[k]! += frame[p * 3 + k]! - background[p * 3 + k]!;
            if (winner[p] === index) w += weight[p]!;
          }
        }
        const o = (cy * cw + cx) * 4;
        for (let k = 0; k < 3; k++) assert.equal(base.data[o + k], Math.fround(d[k]! * (1 / n)), `cell ${cx},${cy}`);
        assert.equal(base.data[o + 3], Math.fround((w * (1 / n)) / 255), `cell ${cx},${cy} weight`);
      }
    }
  });
});

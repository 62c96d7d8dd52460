import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SHARPNESS_RADIUS, sharpestFrameRows } from '../src/blend/engine/pyramid/focus.js';

/** The sharpness choice by its definition: Σ over the (2r+1)² window of |4-neighbour Laplacian| of grey, edges replicated, in exact integers. */
function reference(frames: Uint8Array[], width: number, height: number, radius: number): Uint8Array {
  const clamp = (v: number, last: number) => Math.max(0, Math.min(last, v));
  const grey = (f: Uint8Array, x: number, y: number) => {
    const q = (clamp(y, height - 1) * width + clamp(x, width - 1)) * 3;
    return 299 * f[q]! + 587 * f[q + 1]! + 114 * f[q + 2]!;
  };
  const laplacian = (f: Uint8Array, x: number, y: number) =>
    Math.abs(grey(f, x - 1, y) + grey(f, x + 1, y) + grey(f, x, y - 1) + grey(f, x, y + 1) - 4 * grey(f, x, y));
  const choice = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let best = -1;
      frames.forEach((f, k) => {
        let sum = 0;
        for (let v = y - radius; v <= y + radius; v++) {
          for (let u = x - radius; u <= x + radius; u++) sum += laplacian(f, clamp(u, width - 1), clamp(v, height - 1));
        }
        if (sum > best) (best = sum), (choice[y * width + x] = k);
      });
    }
  }
  return choice;
}

function random(seed: number): () => number {
  return () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed >>> 24;
  };
}

describe('focus stacking: the sharpest frame per pixel (SIMD kernels)', () => {
  it('matches the definition on odd sizes, radii and frame counts, in any row ranges', () => {
    for (const [width, height, count, radius] of [
      [37, 23, 3, SHARPNESS_RADIUS],
      [17, 9, 2, 1],
      [70, 40, 5, 2],
      [1, 5, 2, SHARPNESS_RADIUS],
      [16, 1, 3, SHARPNESS_RADIUS],
      [33, 140, 4, 3],
    ] as const) {
      const next = random(width * 1000 + height);
      // Smooth frames blurred by different amounts here and there, plus exact copies (ties go to the earlier frame).
      const base = Array.from({ length: width * height * 3 }, () => next());
      const frames = Array.from({ length: count }, (_, k) =>
        k === count - 1 && count > 2 ? Uint8Array.from(base) : Uint8Array.from(base, (v, i) => (Math.floor(i / 3 / width) % (k + 2) === 0 ? v : (v + next()) >> 1)),
      );
      const expected = reference(frames, width, height, radius);
      const whole = new Uint8Array(width * height);
      sharpestFrameRows(frames, width, height, whole, 0, height, radius);
      assert.deepEqual(whole, expected, `${width} × ${height}, ${count} frames, radius ${radius}`);
      const parts = new Uint8Array(width * height);
      const cut = Math.floor(height / 3);
      for (const [y0, y1] of [[0, cut], [cut, height]] as const) sharpestFrameRows(frames, width, height, parts, y0, y1, radius);
      assert.deepEqual(parts, expected);
    }
  });

  it('keeps the earliest of identical frames and finds the sharp one', () => {
    const [width, height] = [300, 200];
    const next = random(7);
    const sharp = Uint8Array.from({ length: width * height * 3 }, () => next());
    const flat = new Uint8Array(width * height * 3).fill(128);
    const choice = new Uint8Array(width * height);
    sharpestFrameRows([flat, flat], width, height, choice, 0, height);
    assert.ok(choice.every((c) => c === 0));
    sharpestFrameRows([flat, sharp, flat], width, height, choice, 0, height);
    assert.ok(choice.every((c) => c === 1));
  });
});

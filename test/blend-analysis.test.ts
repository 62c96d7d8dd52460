import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockCorrelation, frameStats, ghosting, ghostingSum, thumbnailRows } from '../src/blend/engine/image/analysis.js';
import { chooseBlendType } from '../src/blend/choose.js';
import { scoreQuality } from '../src/blend/quality.js';

/** A deterministic textured RGB image. */
function texture(width: number, height: number, seed: number, noise = 0, period = 3): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  let state = seed;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      state = (state * 1103515245 + 12345) >>> 0;
      const grain = noise ? ((state >>> 16) % (2 * noise + 1)) - noise : 0;
      const v = 128 + 60 * Math.sin(x / period) * Math.cos(y / (period * 1.3)) + grain;
      for (let c = 0; c < 3; c++) out[(y * width + x) * 3 + c] = Math.max(0, Math.min(255, Math.round(v + c * 10)));
    }
  }
  return out;
}

describe('analysis', () => {
  /** Checks thumbnailRows, one output row a call, against block means computed here. */
  function expectBlockMeans(width: number, height: number, factor: number, source: Uint8Array): void {
    const [outWidth, outHeight] = [Math.ceil(width / factor), Math.ceil(height / factor)];
    const out = new Uint8Array(outWidth * outHeight * 3);
    for (let oy = 0; oy < outHeight; oy++) thumbnailRows(source, width, height, factor, out, oy, oy + 1);
    for (let oy = 0; oy < outHeight; oy++) {
      for (let ox = 0; ox < outWidth; ox++) {
        for (let c = 0; c < 3; c++) {
          let sum = 0;
          let n = 0;
          for (let y = oy * factor; y < Math.min(height, (oy + 1) * factor); y++) {
            for (let x = ox * factor; x < Math.min(width, (ox + 1) * factor); x++, n++) sum += source[(y * width + x) * 3 + c]!;
          }
          assert.equal(out[(oy * outWidth + ox) * 3 + c], Math.round(sum / n), `block ${ox},${oy} channel ${c}`);
        }
      }
    }
  }

  it('thumbnails are exact block means, the last blocks cut short', () => {
    expectBlockMeans(9, 7, 4, texture(9, 7, 1));
    // an odd factor: means that fall on a half are rounded up, as Math.round does
    expectBlockMeans(61, 23, 7, texture(61, 23, 4, 90));
  });

  it("thumbnails of rows too wide for one call's 16-bit column sums are still exact", () => {
    // 60,000 pixels wide: 23 rows a call (image/blocks-simd.ts), so each block of 30 rows takes two
    expectBlockMeans(60_000, 45, 30, texture(60_000, 45, 3, 100));
  });

  it("the same pass gives alignment's grey thumbnail: BT.601 luma of whole blocks only", () => {
    const [width, height, factor] = [9, 7, 4];
    const source = texture(width, height, 5, 30);
    const out = new Uint8Array(3 * 2 * 3);
    const grey = new Uint8Array(2 * 1);
    thumbnailRows(source, width, height, factor, out, 0, 1, grey);
    thumbnailRows(source, width, height, factor, out, 1, 2, grey);
    for (let ox = 0; ox < 2; ox++) {
      let sum = 0;
      for (let y = 0; y < factor; y++) {
        for (let x = ox * factor; x < (ox + 1) * factor; x++) {
          const i = (y * width + x) * 3;
          sum += 77 * source[i]! + 150 * source[i + 1]! + 29 * source[i + 2]!;
        }
      }
      assert.equal(grey[ox], Math.round(sum / (256 * factor * factor)), `block ${ox}`);
    }
  });

  it('noise is estimated, and taken out of sharpness', () => {
    // Fine detail: where noise swamps the detail, the correction is as uncertain as the noise estimate.
    const clean = frameStats(texture(200, 150, 2, 0, 1.5), 200, 150);
    const noisy = frameStats(texture(200, 150, 2, 20, 1.5), 200, 150);
    assert.ok(clean.noise < 2, `clean noise ${clean.noise}`);
    assert.ok(noisy.noise > 6, `noisy noise ${noisy.noise}`);
    assert.ok(Math.abs(noisy.sharpness - clean.sharpness) / clean.sharpness < 0.35, `${noisy.sharpness} vs ${clean.sharpness}`);
  });

  it('a frame without interior (a side under 3 pixels) has no sharpness or noise, rather than NaN or its border read across rows', () => {
    for (const [width, height] of [
      [1, 1],
      [1, 5],
      [5, 1],
      [2, 7],
      [7, 2],
    ] as const) {
      const stats = frameStats(texture(width, height, 3, 10), width, height);
      assert.equal(stats.sharpness, 0, `${width}×${height}: sharpness`);
      assert.equal(stats.noise, 0, `${width}×${height}: noise`);
      assert.ok(stats.tileSharpness.every((t) => t === 0), `${width}×${height}: tile sharpness`);
      assert.ok(Number.isFinite(stats.meanLuma), `${width}×${height}: mean luma`);
    }
  });

  it('block correlation ignores noise and a passer-by, and drops for a shifted frame', () => {
    const [w, h] = [240, 160];
    const reference = texture(w, h, 3, 8);
    const other = texture(w, h, 4, 8);
    const withPasserBy = other.slice();
    for (let y = 20; y < 60; y++) withPasserBy.fill(250, (y * w + 20) * 3, (y * w + 70) * 3);
    const shifted = new Uint8Array(reference.length);
    shifted.set(reference.subarray(5 * 3));
    const noise = frameStats(reference, w, h).noise;
    assert.ok(blockCorrelation(reference, other, w, h, noise, noise) > 0.9);
    assert.ok(blockCorrelation(reference, withPasserBy, w, h, noise, noise) > 0.9);
    assert.ok(blockCorrelation(reference, shifted, w, h, noise, noise) < 0.5);
  });

  it('ghosting is the median residual: a minority of frames does not count', () => {
    const base = texture(50, 40, 5);
    const odd = base.map((v) => 255 - v);
    assert.equal(ghosting([base, base, odd], base, 50 * 40), 0);
    assert.ok(ghosting([base, odd, odd], base, 50 * 40) > 50);
  });

  it('ghosting shared between threads by pixel ranges adds up to the same figure, to the bit', () => {
    const frames = [1, 2, 3, 4].map((seed) => texture(120, 90, seed, 12));
    const result = texture(120, 90, 9, 12);
    const pixels = 120 * 90;
    for (const cut of [1, 4321, pixels - 1]) {
      assert.equal((ghostingSum(frames, result, 0, cut) + ghostingSum(frames, result, cut, pixels)) / pixels, ghosting(frames, result, pixels));
    }
  });

  it('auto picks exposure for brackets, median for a steady scene of three', () => {
    const frame = texture(120, 90, 6);
    const darker = frame.map((v) => v >> 2);
    const stats = (frames: Uint8Array[]) => frames.map((f) => frameStats(f, 120, 90));
    assert.equal(chooseBlendType(stats([darker, frame, frame.map((v) => Math.min(255, v * 2))])).type, 'exposure');
    assert.equal(chooseBlendType(stats([frame, frame, frame])).type, 'median');
    assert.equal(chooseBlendType(stats([frame, frame])).type, 'mean');
  });

  it('the score is deterministic, in 0..1, and one bad component pulls it down', () => {
    const s = frameStats(texture(120, 90, 7, 4), 120, 90);
    const good = scoreQuality({ correlation: 0.99, inputs: [s, s], result: s, ghosting: 1 });
    assert.deepEqual(good, scoreQuality({ correlation: 0.99, inputs: [s, s], result: s, ghosting: 1 }));
    assert.ok(good.score > 0.95 && good.score <= 1);
    const misaligned = scoreQuality({ correlation: 0.55, inputs: [s, s], result: s, ghosting: 1 });
    assert.ok(misaligned.score < 0.6, `${misaligned.score}`);
    const ghosted = scoreQuality({ correlation: 0.99, inputs: [s, s], result: s, ghosting: 24 });
    assert.ok(ghosted.score < good.score && ghosted.ghosting! < 0.3);
  });
});

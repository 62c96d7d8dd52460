import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { baseRows, cellSumRows, finishRows, type HaloGrid, haloPlane, type Layer, ownerRows } from '../src/blend/engine/composite/kernels.js';
import { bandRows, type Plane, reducedSize, reduceRows } from '../src/blend/engine/composite/pyramid.js';
import { maskFromWeights, workingCopy } from '../src/blend/engine/segment/mask.js';

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

// The composite's loops as first written, in plain JavaScript: the kernels (WebAssembly, skipping
// the pixels nobody owns) must give the same values, bit for bit.

function mirror(i: number, n: number): number {
  if (n === 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
  return i;
}

function referenceHalo(mask: Uint8Array, width: number, height: number, grid: HaloGrid): Float32Array {
  const { factor, width: gw, height: gh } = grid;
  const halo = new Float32Array(gw * gh);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) halo[Math.floor(y / factor) * gw + Math.floor(x / factor)]! += mask[y * width + x]!;
  }
  for (let cy = 0; cy < gh; cy++) {
    for (let cx = 0; cx < gw; cx++) halo[cy * gw + cx]! /= 255 * Math.min(factor, height - cy * factor) * Math.min(factor, width - cx * factor);
  }
  const blur = (count: number, stride: number, lines: number, lineStride: number) => {
    const line = new Float32Array(count);
    for (let l = 0; l < lines; l++) {
      for (let pass = 0; pass < 3; pass++) {
        for (let i = 0; i < count; i++) line[i] = halo[l * lineStride + i * stride]!;
        for (let i = 0; i < count; i++) {
          let sum = 0;
          for (let d = -2; d <= 2; d++) sum += line[Math.min(count - 1, Math.max(0, i + d))]!;
          halo[l * lineStride + i * stride] = sum / 5;
        }
      }
    }
  };
  blur(gw, 1, gh, gw);
  blur(gh, gw, gw, 1);
  for (let i = 0; i < halo.length; i++) halo[i] = Math.min(1, 2 * halo[i]!);
  return halo;
}

/** Bilinear taps: the left and right cells of pixel x on a grid of `cells`, one per `factor` pixels, and the weight of the right one. */
function taps(x: number, cells: number, factor: number): [number, number, number] {
  const u = Math.min(cells - 1, Math.max(0, (x + 0.5) / factor - 0.5));
  const left = Math.floor(u);
  return [left, Math.min(cells - 1, left + 1), Math.fround(u - left)];
}

function referenceOwners(masks: Uint8Array[], halos: Float32Array[], grid: HaloGrid, width: number, height: number) {
  const { factor, width: gw, height: gh } = grid;
  const winner = new Uint8Array(width * height).fill(255);
  const weight = new Uint8Array(width * height);
  const owned = masks.map(() => false);
  for (let y = 0; y < height; y++) {
    const [top, bottom] = taps(y, gh, factor);
    const v = Math.min(gh - 1, Math.max(0, (y + 0.5) / factor - 0.5));
    const rows = halos.map((h) => Float32Array.from({ length: gw }, (_, u) => 255 * (h[top * gw + u]! + (h[bottom * gw + u]! - h[top * gw + u]!) * (v - top))));
    for (let x = 0; x < width; x++) {
      const p = y * width + x;
      masks.forEach((mask, k) => {
        if (mask[p]! > weight[p]!) [weight[p], winner[p]] = [mask[p]!, k];
      });
      const u = Math.floor(x / factor);
      let cell = 0;
      rows.forEach((r, k) => {
        if (r[u]! > rows[cell]![u]!) cell = k;
      });
      const owner = winner[p] === 255 ? cell : winner[p]!;
      const [l, r, fx] = taps(x, gw, factor);
      const halo = rows[owner]![l]! + (rows[owner]![r]! - rows[owner]![l]!) * fx + 0.5;
      if (halo >= weight[p]! + 1) [weight[p], winner[p]] = [halo, owner];
      if (weight[p]! > 0) owned[winner[p]!] = true;
    }
  }
  return { winner, weight, owned };
}

function referenceReduce(src: Plane): Plane {
  const { width: sw, height: sh, channels: ch, data } = src;
  const [dw, dh] = [reducedSize(sw), reducedSize(sh)];
  const column = new Float32Array(dw * 0 + sw * ch);
  const out = new Float32Array(dw * dh * ch);
  for (let y = 0; y < dh; y++) {
    const [a, b, c, d, e] = [-2, -1, 0, 1, 2].map((k) => mirror(2 * y + k, sh) * sw * ch) as [number, number, number, number, number];
    for (let i = 0; i < sw * ch; i++) column[i] = (data[a + i]! + data[e + i]! + 4 * (data[b + i]! + data[d + i]!) + 6 * data[c + i]!) * (1 / 16);
    for (let x = 0; x < dw; x++) {
      const [xa, xb, xc, xd, xe] = [-2, -1, 0, 1, 2].map((k) => mirror(2 * x + k, sw) * ch) as [number, number, number, number, number];
      for (let k = 0; k < ch; k++) out[(y * dw + x) * ch + k] = (column[xa + k]! + column[xe + k]! + 4 * (column[xb + k]! + column[xd + k]!) + 6 * column[xc + k]!) * (1 / 16);
    }
  }
  return { width: dw, height: dh, channels: ch, data: out };
}

function referenceExpand(src: Plane, y: number, width: number): Float32Array {
  const { width: sw, height: sh, channels: ch, data } = src;
  const half = y >> 1;
  const odd = (y & 1) === 1;
  const a = (odd ? half : mirror(half - 1, sh)) * sw * ch;
  const b = (odd ? mirror(half + 1, sh) : half) * sw * ch;
  const c = mirror(half + 1, sh) * sw * ch;
  const column = new Float32Array(sw * 3);
  for (let x = 0; x < sw; x++) {
    for (let k = 0; k < 3; k++) {
      const s = x * ch + k;
      column[x * 3 + k] = odd ? (data[a + s]! + data[b + s]!) * 0.5 : (data[a + s]! + data[c + s]!) * 0.125 + data[b + s]! * 0.75;
    }
  }
  const out = new Float32Array(width * 3);
  for (let x = 0; x < width; x++) {
    const h = (x >> 1) * 3;
    const r = mirror((x >> 1) + 1, sw) * 3;
    const l = mirror((x >> 1) - 1, sw) * 3;
    for (let k = 0; k < 3; k++) out[x * 3 + k] = (x & 1) === 1 ? (column[h + k]! + column[r + k]!) * 0.5 : (column[l + k]! + column[r + k]!) * 0.125 + column[h + k]! * 0.75;
  }
  return out;
}

function referenceBands(level: Plane, next: Plane | null, sumNext: Plane | null): Plane {
  const { width, height, data: g } = level;
  const sum = new Float32Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const expandedLevel = next ? referenceExpand(next, y, width) : new Float32Array(width * 3);
    const expandedSum = sumNext ? referenceExpand(sumNext, y, width) : new Float32Array(width * 3);
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      for (let k = 0; k < 3; k++) sum[(y * width + x) * 3 + k] = (g[i + k]! - expandedLevel[x * 3 + k]!) * g[i + 3]! + expandedSum[x * 3 + k]!;
    }
  }
  return { width, height, channels: 3, data: sum };
}

function referenceFinish(background: Uint8Array, frames: Uint8Array[], winner: Uint8Array, weight: Uint8Array, layers: Layer[], factor: number, width: number, height: number): Uint8Array {
  const { width: cw, height: ch } = layers[0]?.base ?? { width: 1, height: 1 };
  const out = new Uint8Array(width * height * 3);
  const summed = new Float32Array(cw * ch * 3);
  for (const layer of layers) for (let i = 0; i < summed.length; i++) summed[i]! += layer.bands.data[i]!;
  const lerp = (plane: Float32Array, channels: number, top: number, bottom: number, fy: number, c: number, k: number) =>
    Math.fround(plane[(top * cw + c) * channels + k]! + (plane[(bottom * cw + c) * channels + k]! - plane[(top * cw + c) * channels + k]!) * fy);
  for (let y = 0; y < height; y++) {
    const v = Math.min(ch - 1, Math.max(0, (y + 0.5) / factor - 0.5));
    const [top, bottom] = taps(y, ch, factor);
    const fy = v - top;
    for (let x = 0; x < width; x++) {
      const p = y * width + x;
      const [l, r, f] = taps(x, cw, factor);
      const layer = weight[p]! > 0 ? layers.find((candidate) => candidate.index === winner[p]) : undefined;
      for (let k = 0; k < 3; k++) {
        const q = p * 3 + k;
        const bl = lerp(summed, 3, top, bottom, fy, l, k);
        let value = background[q]! + bl + (lerp(summed, 3, top, bottom, fy, r, k) - bl) * f;
        if (layer) {
          const ol = lerp(layer.base.data, 4, top, bottom, fy, l, k);
          value += (weight[p]! / 255) * (frames[winner[p]!]![q]! - background[q]! - (ol + (lerp(layer.base.data, 4, top, bottom, fy, r, k) - ol) * f));
        }
        out[q] = value < 0 ? 0 : value > 255 ? 255 : value + 0.5;
      }
    }
  }
  return out;
}

/** Masks as the segmentation leaves them: mostly empty, a soft-edged blob of full weight per frame. */
function blobMasks(count: number, width: number, height: number, next: () => number): Uint8Array[] {
  return Array.from({ length: count }, () => {
    const mask = new Uint8Array(width * height);
    const [cx, cy, r] = [next() * width, next() * height, 1 + next() * Math.max(width, height) * 0.3];
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const d = Math.hypot(x - cx, y - cy);
        mask[y * width + x] = d < r ? 255 : d < r + 6 ? Math.floor(next() * 256) : 0;
      }
    }
    return mask;
  });
}

/** A plane of random values, zero outside a rectangle (the part a frame's people reach). */
function patchPlane(width: number, height: number, channels: number, next: () => number): Plane {
  const [x0, x1] = [Math.floor(next() * width), Math.floor(next() * width)].sort((a, b) => a - b) as [number, number];
  const [y0, y1] = [Math.floor(next() * height), Math.floor(next() * height)].sort((a, b) => a - b) as [number, number];
  const data = new Float32Array(width * height * channels);
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) for (let k = 0; k < channels; k++) data[(y * width + x) * channels + k] = next() < 0.1 ? 0 : (next() - 0.5) * 80;
  }
  return { width, height, channels, data };
}

const SIZES: Array<[number, number]> = [[1, 1], [2, 3], [3, 2], [17, 1], [37, 3], [203, 29], [61, 97]];

function sameFloats(actual: Float32Array, expected: Float32Array, what: string): void {
  for (let i = 0; i < expected.length; i++) if (!Object.is(actual[i], expected[i])) assert.fail(`${what}: value ${i} is ${actual[i]}, expected ${expected[i]}`);
}

function sameBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  for (let i = 0; i < expected.length; i++) if (actual[i] !== expected[i]) assert.fail(`${what}: byte ${i} is ${actual[i]}, expected ${expected[i]}`);
}

describe('composite pixel loops', () => {
  test('haloPlane is the blurred, doubled mean of the mask per cell, value for value', () => {
    const next = random(4);
    for (const [width, height] of SIZES) {
      for (const factor of [1, 3, 4, 16]) {
        const grid = { factor, width: Math.ceil(width / factor), height: Math.ceil(height / factor) };
        const [mask] = blobMasks(1, width, height, next);
        const halo = new Float32Array(grid.width * grid.height);
        haloPlane(mask!, width, height, grid, halo);
        sameFloats(halo, referenceHalo(mask!, width, height, grid), `${width}×${height} by ${factor}`);
      }
    }
  });

  test('ownerRows gives each pixel the owner and weight of the plain definition, and who owns anything', () => {
    const next = random(5);
    for (const [width, height] of SIZES) {
      for (const [factor, count] of [[1, 1], [3, 2], [4, 3], [16, 5]] as const) {
        const grid = { factor, width: Math.ceil(width / factor), height: Math.ceil(height / factor) };
        const masks = blobMasks(count, width, height, next);
        // the masks' own halos, and halos with hard edges (a cell of halo beside cells of none)
        const smooth = masks.map((mask) => referenceHalo(mask, width, height, grid));
        const hard = masks.map(() => patchPlane(grid.width, grid.height, 1, next).data.map((v) => Math.min(1, Math.abs(v) / 40)));
        for (const [kind, halos] of [['smooth', smooth], ['hard', hard]] as const) {
          const winner = new Uint8Array(width * height);
          const weight = new Uint8Array(width * height);
          const cut = Math.floor(height / 2);
          const owns = [ownerRows(masks, halos, grid, winner, weight, width, 0, cut), ownerRows(masks, halos, grid, winner, weight, width, cut, height)];
          const expected = referenceOwners(masks, halos, grid, width, height);
          const what = `${width}×${height}, ${count} frames by ${factor}, ${kind} halos`;
          sameBytes(winner, expected.winner, `${what} winner`);
          sameBytes(weight, expected.weight, `${what} weight`);
          assert.deepEqual(masks.map((_, k) => owns.some((part) => part[k])), expected.owned, what);
        }
      }
    }
  });

  test('baseRows from the background cell sums is the mean difference and owned weight of each cell', () => {
    const next = random(3);
    for (const [width, height, factor, index] of [[203, 97, 4, 2], [37, 3, 4, 0], [17, 1, 2, 1], [61, 29, 3, 3], [5, 2, 4, 2], [3, 20_001, 2, 1]] as const) {
      const [cw, ch] = [Math.ceil(width / factor), Math.ceil(height / factor)];
      const frame = bytes(width * height * 3, next);
      const background = bytes(width * height * 3, next);
      const winner = Uint8Array.from({ length: width * height }, () => Math.floor(next() * 4));
      const weight = bytes(width * height, next);
      const sums = new Float32Array(cw * ch * 3);
      cellSumRows(background, width, height, factor, cw, sums, 0, ch);
      const base: Plane = { width: cw, height: ch, channels: 4, data: new Float32Array(cw * ch * 4) };
      const cut = Math.floor(ch / 2);
      baseRows(frame, sums, winner, weight, index, width, height, factor, base, 0, cut);
      baseRows(frame, sums, winner, weight, index, width, height, factor, base, cut, ch);
      for (let cy = 0; cy < ch; cy++) {
        for (let cx = 0; cx < cw; cx++) {
          const d = [0, 0, 0];
          const b = [0, 0, 0];
          let w = 0;
          let n = 0;
          for (let y = cy * factor; y < Math.min(height, (cy + 1) * factor); y++) {
            for (let x = cx * factor; x < Math.min(width, (cx + 1) * factor); x++, n++) {
              const p = y * width + x;
              for (let k = 0; k < 3; k++) d[k]! += frame[p * 3 + k]! - background[p * 3 + k]!;
              for (let k = 0; k < 3; k++) b[k]! += background[p * 3 + k]!;
              if (winner[p] === index) w += weight[p]!;
            }
          }
          const o = (cy * cw + cx) * 4;
          const what = `${width}×${height} by ${factor}, cell ${cx},${cy}`;
          for (let k = 0; k < 3; k++) assert.equal(sums[(cy * cw + cx) * 3 + k], b[k], `${what} background sum`);
          for (let k = 0; k < 3; k++) assert.equal(base.data[o + k], Math.fround(d[k]! * (1 / n)), what);
          assert.equal(base.data[o + 3], Math.fround((w * (1 / n)) / 255), `${what} weight`);
        }
      }
    }
  });

  test('reduceRows and bandRows give the plain pyramid, bit for bit, with weights on a small part of the level', () => {
    const next = random(6);
    for (const [width, height] of SIZES) {
      const base = patchPlane(width, height, 4, next);
      const pyramid = [base];
      for (let l = 1; l < 3; l++) {
        const src = pyramid[l - 1]!;
        const dst: Plane = { width: reducedSize(src.width), height: reducedSize(src.height), channels: 4, data: new Float32Array(reducedSize(src.width) * reducedSize(src.height) * 4) };
        reduceRows(src, dst, 0, 1);
        reduceRows(src, dst, 1, dst.height);
        sameFloats(dst.data, referenceReduce(src).data, `${width}×${height} level ${l}`);
        pyramid.push(dst);
      }
      let sumNext: Plane | null = null;
      for (let l = pyramid.length - 1; l >= 0; l--) {
        const level = pyramid[l]!;
        const sum: Plane = { width: level.width, height: level.height, channels: 3, data: new Float32Array(level.width * level.height * 3) };
        const cut = Math.floor(level.height / 2);
        bandRows(level, pyramid[l + 1] ?? null, sumNext, sum, 0, cut);
        bandRows(level, pyramid[l + 1] ?? null, sumNext, sum, cut, level.height);
        sameFloats(sum.data, referenceBands(level, pyramid[l + 1] ?? null, sumNext).data, `${width}×${height} band ${l}`);
        sumNext = sum;
      }
    }
  });

  test('a tall, narrow image, taken many rows a kernel call and a band in slices, gives the plain definitions', () => {
    const next = random(8);
    // one pixel wide: a kernel call takes thousands of rows, and a band of more grid rows than a slice holds is cut
    const [width, height] = [1, 140_001];
    const frames = Array.from({ length: 3 }, () => bytes(width * height * 3, next));
    const background = bytes(width * height * 3, next);
    // people all the way down: runs of full weight with soft ends, a different period per frame
    const masks = [0, 1, 2].map(() => {
      const [period, on] = [200 + Math.floor(next() * 2000), 50 + Math.floor(next() * 150)];
      return Uint8Array.from({ length: height }, (_, y) => (y % period < on ? 255 : y % period < on + 6 ? Math.floor(next() * 256) : 0));
    });
    const haloGrid = { factor: 2, width: 1, height: Math.ceil(height / 2) };
    const halo = new Float32Array(haloGrid.height);
    haloPlane(masks[0]!, width, height, haloGrid, halo);
    sameFloats(halo, referenceHalo(masks[0]!, width, height, haloGrid), 'halo');
    const grid = { factor: 1, width, height };
    const halos = masks.map((mask) => referenceHalo(mask, width, height, grid));
    const winner = new Uint8Array(width * height);
    const weight = new Uint8Array(width * height);
    const owns = ownerRows(masks, halos, grid, winner, weight, width, 0, height);
    const expected = referenceOwners(masks, halos, grid, width, height);
    sameBytes(winner, expected.winner, 'winner');
    sameBytes(weight, expected.weight, 'weight');
    assert.deepEqual(owns, expected.owned);
    // the pyramid of a frame's base level, two levels, against the plain one
    const base = patchPlane(width, Math.ceil(height / 2), 4, next);
    const level: Plane = { width: 1, height: reducedSize(base.height), channels: 4, data: new Float32Array(reducedSize(base.height) * 4) };
    reduceRows(base, level, 0, level.height);
    sameFloats(level.data, referenceReduce(base).data, 'reduce');
    const top: Plane = { ...level, channels: 3, data: new Float32Array(level.height * 3) };
    bandRows(level, null, null, top, 0, level.height);
    const bands: Plane = { ...base, channels: 3, data: new Float32Array(base.height * 3) };
    bandRows(base, level, top, bands, 0, base.height);
    sameFloats(bands.data, referenceBands(base, level, referenceBands(level, null, null)).data, 'bands');
    const layers: Layer[] = [1, 2].map((index) => ({ index, base: patchPlane(width, height, 4, next), bands: patchPlane(width, height, 3, next) }));
    const out = new Uint8Array(width * height * 3);
    finishRows(background, frames, winner, weight, layers, 1, out, width, 0, height);
    sameBytes(out, referenceFinish(background, frames, winner, weight, layers, 1, width, height), 'result');
  });

  test('finishRows gives the plain result byte for byte, owners with and without a layer, bands on part of the frame', () => {
    const next = random(7);
    for (const [width, height] of SIZES) {
      for (const factor of [2, 4]) {
        const [cw, ch] = [Math.ceil(width / factor), Math.ceil(height / factor)];
        const frames = Array.from({ length: 3 }, () => bytes(width * height * 3, next));
        const background = bytes(width * height * 3, next);
        const masks = blobMasks(3, width, height, next);
        const grid = { factor: 2 * factor, width: Math.ceil(width / (2 * factor)), height: Math.ceil(height / (2 * factor)) };
        const halos = masks.map((mask) => referenceHalo(mask, width, height, grid));
        const { winner, weight } = referenceOwners(masks, halos, grid, width, height);
        // frame 0 has no layer, as when it is the background
        const layers: Layer[] = [1, 2].map((index) => ({ index, base: patchPlane(cw, ch, 4, next), bands: patchPlane(cw, ch, 3, next) }));
        const out = new Uint8Array(width * height * 3);
        const cut = Math.floor(height / 3);
        finishRows(background, frames, winner, weight, layers, factor, out, width, 0, cut);
        finishRows(background, frames, winner, weight, layers, factor, out, width, cut, height);
        sameBytes(out, referenceFinish(background, frames, winner, weight, layers, factor, width, height), `${width}×${height} by ${factor}`);
      }
    }
  });
});

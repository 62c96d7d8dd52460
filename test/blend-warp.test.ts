import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { cubicWeights } from '../src/blend/engine/align/cubic.js';
import { translationShift, warpRows, warpRowsJs, warpThumbnailRows } from '../src/blend/engine/align/warp.js';
import { thumbnailRows } from '../src/blend/engine/image/analysis.js';
import { thumbnailFactor } from '../src/blend/engine/image/thumbnails.js';
import { sourceRows } from '../src/blend/engine/align/warp-wasm.js';
import { sharedImage, toShared, type RgbImage } from '../src/blend/engine/image/image.js';
import { random } from './blend-scenes.js';

/**
 * The full-size warp (align/warp.ts): its positions saturate far outside the frame, and the
 * WebAssembly kernel (align/warp-wasm.ts) gives the JavaScript definition's bytes, band by band,
 * on real images of odd sizes under random homographies: translations, rotations, projective
 * ones, some with a horizon inside the frame, some far outside it, degenerate and NaN ones.
 */

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');

async function load(file: string, width: number, height: number): Promise<RgbImage> {
  const { data, info } = await sharp(path.join(FIXTURES, file)).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
}

/** Random homographies of each kind, for a `width` × `height` frame. */
function homographies(width: number, height: number, next: () => number): Array<[string, number[]]> {
  const between = (a: number, b: number) => a + (b - a) * next();
  const out: Array<[string, number[]]> = [];
  for (let i = 0; i < 6; i++) {
    out.push([`translation ${i}`, [1, 0, between(-width / 4, width / 4), 0, 1, between(-height / 4, height / 4), 0, 0, 1]]);
    const angle = between(-0.3, 0.3);
    const scale = between(0.8, 1.25);
    const [c, s] = [scale * Math.cos(angle), scale * Math.sin(angle)];
    out.push([`rotation ${i}`, [c, -s, between(-width / 8, width / 8), s, c, between(-height / 8, height / 8), 0, 0, 1]]);
    out.push([`projective ${i}`, [c, -s, between(-9, 9), s, c, between(-9, 9), between(-1e-3, 1e-3), between(-1e-3, 1e-3), between(0.9, 1.1)]]);
    // a horizon (w = 0) crossing the frame
    out.push([`horizon ${i}`, [c, -s, between(-9, 9), s, c, between(-9, 9), between(-4, 4) / width, between(-4, 4) / height, between(-1, 1)]]);
    out.push([`far ${i}`, [between(-1e6, 1e6), between(-1e6, 1e6), between(-1e12, 1e12), between(-1e6, 1e6), between(-1e6, 1e6), between(-1e12, 1e12), 0, 0, 1]]);
  }
  out.push(['zero', [0, 0, 0, 0, 0, 0, 0, 0, 0]]);
  out.push(['NaN', [1, 0, Number.NaN, 0, 1, 0, 0, 0, 1]]);
  out.push(['NaN divisor', [1, 0, 0, 0, 1, 0, 0, 0, Number.NaN]]);
  out.push(['infinite', [1, 0, Number.POSITIVE_INFINITY, 0, 1, Number.NEGATIVE_INFINITY, 0, 0, 1]]);
  out.push(['collapsed', [0, 0, width / 2, 0, 0, height / 2, 0, 0, 1]]);
  out.push(['affine in disguise', [1, 0, 3.25, 0, 1, -2.5, -0, 0, 1]]);
  return out;
}

function warped(frame: RgbImage, h: number[], warp = warpRows): RgbImage {
  const out = sharedImage(frame.width, frame.height);
  warp(frame, out, h, 0, frame.height);
  return out;
}

/** What the kernel makes of a group of four output pixels (countGroups). */
type GroupKind = 'consecutive' | 'consecutive, right edge' | 'consecutive, top edge' | 'consecutive, bottom edge' | 'across rows' | 'repeated or skipped';

/**
 * Counts into `kinds` the groups of four output pixels the kernel (align/warp-wasm.ts) takes in
 * rows of `width` columns of a `width` × `height` frame under `h`, by what it makes of them: four
 * consecutive top-left samples in one source row (its fast path), some clamped at the right,
 * top or bottom edge (a group is counted once for each) or none, or samples gathered one by one
 * because the group crosses a source row or repeats or skips a column (a sample clamped at the left
 * edge repeats column 0; the last group of a row whose width is not a multiple of 4 repeats its
 * last position). Positions as warpRowsJs computes and clamps them.
 */
function countGroups(width: number, height: number, h: number[], kinds: Record<GroupKind, number>): void {
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h as [number, number, number, number, number, number, number, number, number];
  const fixed = (t: number) => Math.max(-2147483648, Math.min(2147483647, t)) | 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x += 4) {
      const samples = [0, 1, 2, 3].map((k) => {
        const c = Math.min(x + k, width - 1);
        const w = h6 * c + (h7 * y + h8);
        const [X, Y] = [fixed(((h0 * c + (h1 * y + h2)) / w) * 256 + 0.5), fixed(((h3 * c + (h4 * y + h5)) / w) * 256 + 0.5)];
        const [x0, y0] = [Math.min(width - 1, Math.max(0, X >> 8)), Math.min(height - 1, Math.max(0, Y >> 8))];
        return { x0, y0, right: X >> 8 >= width - 1, top: Y >> 8 < 0, bottom: Y >> 8 >= height - 1 };
      });
      const [first] = samples as [(typeof samples)[0]];
      if (samples.some((s) => s.y0 !== first.y0)) kinds['across rows']++;
      else if (samples.some((s, k) => s.x0 !== first.x0 + k)) kinds['repeated or skipped']++;
      else {
        const edges = (['right', 'top', 'bottom'] as const).filter((edge) => samples.some((s) => s[edge]));
        for (const edge of edges) kinds[`consecutive, ${edge} edge`]++;
        if (edges.length === 0) kinds.consecutive++;
      }
    }
  }
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

  it('the kernel gives the JavaScript definition\'s bytes, whole frames and bands, on odd sizes', async () => {
    const next = random(19);
    for (const [width, height] of [
      [1, 1],
      [1, 7],
      [9, 1],
      [37, 23],
      // widths 2 and 3 past a multiple of 4: the kernel's last group of four pixels reaches 2 and 1 beyond the row
      [38, 17],
      [39, 13],
      [101, 67],
      [320, 213],
    ] as const) {
      const frame = await load('handheld-mean/2.png', width, height);
      for (const [kind, h] of homographies(width, height, next)) {
        const expected = warped(frame, h, warpRowsJs);
        assert.deepEqual(warped(frame, h), expected, `${width}×${height} ${kind}: whole frame`);
        // in bands, as the pool warps a frame: each band only sees the source rows it reaches
        const banded = sharedImage(width, height);
        const cuts = [0, Math.floor(height / 3), Math.floor(height / 2) + 1, height];
        for (let b = 0; b + 1 < cuts.length; b++) warpRows(frame, banded, h, cuts[b]!, cuts[b + 1]!);
        assert.ok(Buffer.from(banded.data).equals(Buffer.from(expected.data)), `${width}×${height} ${kind}: in bands`);
      }
    }
  });

  it('a turned or slightly tilted frame\'s groups of four consecutive samples (the kernel\'s fast path) give the definition\'s bytes: at its edges, across source rows, in bands down to the frame\'s bottom', async () => {
    const degrees = (a: number) => (a * Math.PI) / 180;
    /** A turn by `angle` about the frame's centre, then a shift by (tx, ty), tilted by (h6, h7) and scaled by `scale`, as an output → source homography. */
    const turn = (width: number, height: number, angle: number, tx: number, ty: number, scale = 1, h6 = 0, h7 = 0) => {
      const [c, s] = [scale * Math.cos(degrees(angle)), scale * Math.sin(degrees(angle))];
      const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
      return [c, -s, cx - c * cx + s * cy + tx, s, c, cy - s * cx - c * cy + ty, h6, h7, 1];
    };
    const kinds: Record<GroupKind, number> = { consecutive: 0, 'consecutive, right edge': 0, 'consecutive, top edge': 0, 'consecutive, bottom edge': 0, 'across rows': 0, 'repeated or skipped': 0 };
    // widths 1, 2 and 3 past a multiple of 4: the last group repeats the row's last position, never consecutive
    for (const [width, height] of [
      [4000, 64],
      [1001, 37],
      [1002, 29],
      [1003, 41],
    ] as const) {
      const frame = await load('handheld-mean/3.png', width, height);
      const cases: Array<[string, number[]]> = [];
      for (const angle of [0.05, 0.2, 0.5, 1, -0.5]) {
        cases.push([`turned ${angle}°`, turn(width, height, angle, 0.37, -0.61)]);
        // shifted by a few pixels: columns and rows at each edge sample clamped
        cases.push([`turned ${angle}°, shifted`, turn(width, height, angle, -3.3, 2.8)]);
        cases.push([`turned ${angle}°, shifted the other way`, turn(width, height, angle, 4.6, -3.9)]);
      }
      cases.push(['tilted', turn(width, height, 0.2, 1.4, -0.3, 1, 1e-6, -2e-6)]);
      cases.push(['tilted the other way', turn(width, height, -0.5, -2.1, 1.7, 1, -1.5e-6, 1e-6)]);
      // columns 0.99 and 1.01 apart: a sample repeated or skipped every ~100 columns, those groups gathered
      cases.push(['scaled 0.99', turn(width, height, 0.2, 0.5, 0.5, 0.99)]);
      cases.push(['scaled 1.01', turn(width, height, -0.3, 0.5, 0.5, 1.01)]);
      for (const [kind, h] of cases) {
        countGroups(width, height, h, kinds);
        const expected = warped(frame, h, warpRowsJs);
        assert.ok(Buffer.from(warped(frame, h).data).equals(Buffer.from(expected.data)), `${width}×${height} ${kind}: whole frame`);
        // in bands, the last ones the frame's last rows: what a band copies in ends there, and its last group reads furthest
        const banded = sharedImage(width, height);
        const cuts = [0, 1, Math.floor(height / 3), height - 5, height - 1, height];
        for (let b = 0; b + 1 < cuts.length; b++) warpRows(frame, banded, h, cuts[b]!, cuts[b + 1]!);
        assert.ok(Buffer.from(banded.data).equals(Buffer.from(expected.data)), `${width}×${height} ${kind}: in bands`);
      }
    }
    // the cases reach every kind of group the kernel tells apart
    for (const [kind, count] of Object.entries(kinds)) assert.ok(count > 100, `${kind}: ${count} groups`);
  });

  it('the fast path\'s blend gives the definition\'s bytes at the extremes: every byte 0 or 255, turned frames', () => {
    // bytes 0 and 255 side by side make every sum's extremes, and the kernel's overshoot past 0 and 255 (clamped)
    const [width, height] = [1001, 23];
    const next = random(37);
    const frame = sharedImage(width, height);
    for (let i = 0; i < frame.data.length; i++) frame.data[i] = next() < 0.5 ? 0 : 255;
    for (const angle of [0.05, 0.2, -0.5, 1]) {
      const [c, s] = [Math.cos((angle * Math.PI) / 180), Math.sin((angle * Math.PI) / 180)];
      const h = [c, -s, 0.3 + next(), s, c, -0.2 - next(), 0, 0, 1];
      assert.ok(Buffer.from(warped(frame, h).data).equals(Buffer.from(warped(frame, h, warpRowsJs).data)), `turned ${angle}°`);
    }
  });

  it('makes the warped frame\'s thumbnail as it warps, band by band, with the bytes of a warp and then a thumbnail of the whole', async () => {
    const next = random(23);
    // factors 1, 2 and 3 (thumbnailFactor: the longest side over 1000 px, rounded)
    for (const [width, height] of [
      [37, 23],
      [1700, 41],
      [2731, 97],
    ] as const) {
      const frame = await load('handheld-mean/2.png', width, height);
      const factor = thumbnailFactor(width, height);
      const [thumbWidth, thumbHeight] = [Math.ceil(width / factor), Math.ceil(height / factor)];
      for (const [kind, h] of homographies(width, height, next).filter(([kind]) => /^(rotation|projective|horizon) [01]$/.test(kind))) {
        const expected = warped(frame, h, warpRowsJs);
        const expectedThumbnail = new Uint8Array(thumbWidth * thumbHeight * 3);
        thumbnailRows(expected.data, width, height, factor, expectedThumbnail, 0, thumbHeight);
        // in bands of whole thumbnail rows, as align.ts warpFrame cuts them, each longer than one step of 8 rows
        const out = sharedImage(width, height);
        const thumbnail = new Uint8Array(thumbWidth * thumbHeight * 3);
        const cuts = [0, Math.floor(thumbHeight / 4), Math.floor(thumbHeight / 2) + 1, thumbHeight];
        for (let b = 0; b + 1 < cuts.length; b++) warpThumbnailRows(frame, out, h, thumbnail, factor, cuts[b]!, cuts[b + 1]!);
        assert.ok(Buffer.from(out.data).equals(Buffer.from(expected.data)), `${width}×${height} ${kind}: the warped frame`);
        assert.ok(Buffer.from(thumbnail).equals(Buffer.from(expectedThumbnail)), `${width}×${height} ${kind}: its thumbnail`);
      }
    }
  });

  it('a translation takes the translation path, with the JavaScript definition\'s bytes: whole and fractional shifts, either way, beyond the frame, on tiny and odd sizes, in bands', async () => {
    const next = random(29);
    for (const [width, height] of [
      [1, 1],
      [2, 3],
      [3, 2],
      [1, 7],
      [9, 1],
      // row bytes not a multiple of 16 (the kernel's step), widths not a multiple of 4 or 16
      [5, 4],
      [17, 9],
      [38, 17],
      [101, 67],
      [320, 213],
    ] as const) {
      const frame = await load('handheld-mean/2.png', width, height);
      const shifts: number[][] = [];
      for (const [a, b] of [
        [0, 0],
        [1, 0],
        [0, -1],
        [3, -4],
        [-7, 6],
        [width + 3, -height - 2],
        [-width - 5, height + 1],
      ]) {
        shifts.push([a!, b!]);
        // the same shifts with fractions, and fractions alone: each of fx, fy from 1 to 255 over the run
        shifts.push([a! + Math.floor(next() * 255 + 1) / 256, b! - Math.floor(next() * 255 + 1) / 256]);
        shifts.push([a! + next() - 0.5, b! + next() - 0.5]);
      }
      for (const [tx, ty] of shifts) {
        const h = [1, 0, tx!, 0, 1, ty!, 0, 0, 1];
        assert.notEqual(translationShift(h, width, width, 0, height), null, `${width}×${height} by (${tx}, ${ty}): a translation`);
        const expected = warped(frame, h, warpRowsJs);
        assert.ok(Buffer.from(warped(frame, h).data).equals(Buffer.from(expected.data)), `${width}×${height} by (${tx}, ${ty}): whole frame`);
        // in bands: one row, a few, and across the 16-row steps of warpTranslationRows
        const banded = sharedImage(width, height);
        const cuts = [...new Set([0, Math.min(1, height), Math.floor(height / 3), Math.floor(height / 2) + 1, Math.min(height, 40), height])].sort((p, q) => p - q);
        for (let b = 0; b + 1 < cuts.length; b++) warpRows(frame, banded, h, cuts[b]!, cuts[b + 1]!);
        assert.ok(Buffer.from(banded.data).equals(Buffer.from(expected.data)), `${width}×${height} by (${tx}, ${ty}): in bands`);
      }
    }
  });

  it('a translation into an output of another size than the frame gives the definition\'s bytes', async () => {
    const frame = await load('handheld-mean/2.png', 40, 30);
    for (const [columns, rows] of [
      [17, 50],
      [64, 9],
      [1, 1],
    ] as const) {
      for (const h of [
        [1, 0, 2.75, 0, 1, -3.5, 0, 0, 1],
        [1, 0, -6, 0, 1, 4, 0, 0, 1],
      ]) {
        const [a, b] = [sharedImage(columns, rows), sharedImage(columns, rows)];
        warpRowsJs(frame, a, h, 0, rows);
        warpRows(frame, b, h, 0, rows);
        assert.ok(Buffer.from(b.data).equals(Buffer.from(a.data)), `${columns}×${rows} by ${String(h)}`);
      }
    }
  });

  it('the translation path gives the definition\'s bytes at the extremes: every byte 0 or 255, every fraction', () => {
    // bytes 0 and 255 side by side make every sum's extremes, and the kernel's overshoot past 0 and 255 (clamped)
    const [width, height] = [53, 19];
    const next = random(31);
    const frame = sharedImage(width, height);
    for (let i = 0; i < frame.data.length; i++) frame.data[i] = next() < 0.5 ? 0 : 255;
    for (let f = 0; f < 256; f += 3) {
      const h = [1, 0, 2 + f / 256, 0, 1, -1 + (255 - f) / 256, 0, 0, 1];
      assert.ok(Buffer.from(warped(frame, h).data).equals(Buffer.from(warped(frame, h, warpRowsJs).data)), `fx ${f}`);
    }
  });

  it('checks the shift column by column: where f64 rounding moves some columns\' positions, or an entry is not a translation\'s, the general kernel warps', async () => {
    // h2 a hair below half of 1/256: (x + h2)·256 + 0.5 truncates to 256·x for small x, but x + h2 rounds up to x + 1/512 from x = 512 on
    const h2 = 1 / 512 - 2 ** -45;
    assert.equal(translationShift([1, 0, h2, 0, 1, 0, 0, 0, 1], 256, 256, 0, 10), 0);
    assert.equal(translationShift([1, 0, h2, 0, 1, 0, 0, 0, 1], 1000, 1000, 0, 10), null);
    // left of the frame a negative position is truncated toward zero, not 256·x + D, and clamped to column 0 all the same
    assert.equal(translationShift([1, 0, -2.7, 0, 1, 7, 0, 0, 1], 1000, 1000, 0, 10), -691);
    for (const h of [
      [1 + 2 ** -52, 0, 3, 0, 1, 0, 0, 0, 1],
      [1, 1e-12, 3, 0, 1, 0, 0, 0, 1],
      [1, 0, 3, 0, 1, 0, 1e-15, 0, 1],
      [1, 0, Number.NaN, 0, 1, 0, 0, 0, 1],
    ]) {
      assert.equal(translationShift(h, 40, 40, 0, 10), null, String(h));
    }
    // positions that saturate: every column clamped to the same edge, which a shift describes as well
    assert.notEqual(translationShift([1, 0, Number.POSITIVE_INFINITY, 0, 1, 0, 0, 0, 1], 40, 40, 0, 10), null);
    assert.notEqual(translationShift([1, 0, -(2 ** 30), 0, 1, 0, 0, 0, 1], 40, 40, 0, 10), null);
    const frame = await load('handheld-mean/2.png', 1000, 9);
    for (const h of [
      [1, 0, h2, 0, 1, 0.25, 0, 0, 1],
      [1, 0, 2 ** 30, 0, 1, 0, 0, 0, 1],
      [1, 0, Number.NEGATIVE_INFINITY, 0, 1, 2 ** 40, 0, 0, 1],
      [1, 0, 3, 0, 1, Number.NaN, 0, 0, 1],
      [1, 0, 3.5, 0, 1, Number.NEGATIVE_INFINITY, 0, 0, 1],
    ]) {
      assert.ok(Buffer.from(warped(frame, h).data).equals(Buffer.from(warped(frame, h, warpRowsJs).data)), String(h));
    }
  });

  it('makes a translated frame\'s thumbnail as it warps, with the bytes of a warp and then a thumbnail of the whole', async () => {
    for (const [width, height] of [
      [37, 23],
      [1700, 41],
      [2731, 97],
    ] as const) {
      const frame = await load('handheld-mean/2.png', width, height);
      const factor = thumbnailFactor(width, height);
      const [thumbWidth, thumbHeight] = [Math.ceil(width / factor), Math.ceil(height / factor)];
      for (const [tx, ty] of [
        [3, -4],
        [-7.3, 6.6],
        [11.5, 0],
      ]) {
        const h = [1, 0, tx!, 0, 1, ty!, 0, 0, 1];
        const expected = warped(frame, h, warpRowsJs);
        const expectedThumbnail = new Uint8Array(thumbWidth * thumbHeight * 3);
        thumbnailRows(expected.data, width, height, factor, expectedThumbnail, 0, thumbHeight);
        const out = sharedImage(width, height);
        const thumbnail = new Uint8Array(thumbWidth * thumbHeight * 3);
        const cuts = [0, Math.floor(thumbHeight / 4), Math.floor(thumbHeight / 2) + 1, thumbHeight];
        for (let b = 0; b + 1 < cuts.length; b++) warpThumbnailRows(frame, out, h, thumbnail, factor, cuts[b]!, cuts[b + 1]!);
        assert.ok(Buffer.from(out.data).equals(Buffer.from(expected.data)), `${width}×${height} by (${tx}, ${ty}): the warped frame`);
        assert.ok(Buffer.from(thumbnail).equals(Buffer.from(expectedThumbnail)), `${width}×${height} by (${tx}, ${ty}): its thumbnail`);
      }
    }
  });

  it('weighs the taps by the Catmull–Rom kernel: four weights summing to 1024 at every fraction, the pixel itself at fraction 0, linear ramps reproduced', () => {
    assert.deepEqual(cubicWeights(0), [0, 1024, 0, 0]);
    assert.deepEqual(cubicWeights(128), [-64, 576, 576, -64]);
    for (let f = 0; f < 256; f++) {
      const w = cubicWeights(f);
      assert.equal(w[0] + w[1] + w[2] + w[3], 1024, `f ${f}`);
      // taps at −1, 0, 1, 2: the weights' first moment is the fraction (1024·f/256), within their rounding
      assert.ok(Math.abs(-w[0] + w[2] + 2 * w[3] - 4 * f) <= 2, `f ${f}: moment ${-w[0] + w[2] + 2 * w[3]}`);
      // mirror: the weights at 256 − f are the same taps the other way round, the outer ones exactly
      if (f > 0) assert.equal(cubicWeights(256 - f)[3], w[0], `f ${f}`);
    }
    // a horizontal ramp moved by a fraction of a pixel is the ramp at the moved positions, within a level
    const [width, height] = [64, 8];
    const ramp = sharedImage(width, height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) ramp.data.fill(3 * x + 20, (y * width + x) * 3, (y * width + x) * 3 + 3);
    for (const dx of [0.25, 0.5, 0.8, 3.3]) {
      const moved = warped(ramp, [1, 0, dx, 0, 1, 0.4, 0, 0, 1]);
      for (let x = 2; x < width - 6; x++) assert.ok(Math.abs(moved.data[(3 * width + x) * 3]! - (3 * (x + dx) + 20)) <= 1, `dx ${dx}, x ${x}: ${moved.data[(3 * width + x) * 3]}`);
    }
  });

  it('keeps fine detail that a bilinear warp blurs: a stripe pattern of period 4 px moved half a pixel and back keeps over 70 % of its contrast (bilinear: 50 %)', () => {
    const [width, height] = [64, 16];
    const stripes = sharedImage(width, height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) stripes.data.fill(Math.round(128 + 100 * Math.cos((Math.PI * x) / 2)), (y * width + x) * 3, (y * width + x) * 3 + 3);
    const there = warped(stripes, [1, 0, 0.5, 0, 1, 0, 0, 0, 1]);
    const back = warped(there, [1, 0, -0.5, 0, 1, 0, 0, 0, 1]);
    // the amplitude of the period-4 component in the middle of a row (away from the replicated edges)
    let [c, s] = [0, 0];
    for (let x = 8; x < 56; x++) {
      const v = back.data[(8 * width + x) * 3]! - 128;
      c += v * Math.cos((Math.PI * x) / 2);
      s += v * Math.sin((Math.PI * x) / 2);
    }
    const kept = Math.hypot(c, s) / (48 / 2) / 100;
    assert.ok(kept > 0.7 && kept <= 1.01, `contrast kept: ${kept.toFixed(3)}`);
  });

  it('copies in only the source rows a band reaches when the divisor stays positive over it', () => {
    // a shift down by 100.5 rows: output rows [10, 20) read source rows 110..121 (with slack)
    assert.deepEqual(sourceRows([1, 0, 0, 0, 1, 100.5, 0, 0, 1], 50, 10, 20, 1000), [108, 122]);
    // beyond the bottom: the last row only
    assert.deepEqual(sourceRows([1, 0, 0, 0, 1, 5000, 0, 0, 1], 50, 10, 20, 1000), [999, 999]);
    // a horizon through the band: every row
    assert.deepEqual(sourceRows([1, 0, 0, 0, 1, 0, 0.01, 0, -0.2], 50, 10, 20, 1000), [0, 999]);
  });
});

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { compositePeople, keepBackground } from '../src/blend/engine/composite/composite.js';
import { type RgbImage, sharedImage } from '../src/blend/engine/image/image.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { segmentPeople } from '../src/blend/engine/segment/segment.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');
/** NASA portrait of astronaut Eileen Collins (public domain), 416 × 416. */
const PORTRAIT = path.join(FIXTURES, 'exposure-bracket/gt.png');
/** A coffee photo: the scene the people are placed in. */
const SCENE = path.join(FIXTURES, 'median-crowd/gt.png');
const WIDTH = 640;
const HEIGHT = 360;

/** Hand-traced outline of the astronaut in the portrait (head ellipse + body polygon), so the cut-out's mask is known. */
const HEAD = { cx: 185, cy: 82, rx: 58, ry: 70 };
const BODY: Array<[number, number]> = [
  [150, 128], [220, 128], [240, 150], [250, 175], [255, 215], [290, 245], [300, 270], [305, 416],
  [12, 416], [15, 330], [30, 268], [90, 215], [95, 180], [120, 150], [145, 138],
];

function onPerson(x: number, y: number): boolean {
  if (((x - HEAD.cx) / HEAD.rx) ** 2 + ((y - HEAD.cy) / HEAD.ry) ** 2 <= 1) return true;
  let inside = false;
  for (let i = 0, j = BODY.length - 1; i < BODY.length; j = i++) {
    const [xi, yi] = BODY[i]!;
    const [xj, yj] = BODY[j]!;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

async function rgb(file: string, width: number, height: number, flip = false): Promise<Uint8Array> {
  const { data } = await sharp(file).removeAlpha().resize(width, height, { fit: 'fill' }).flop(flip).raw().toBuffer({ resolveWithObject: true });
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A frame: the scene with the astronaut, `size` px tall, pasted with her left edge at `left` (standing on the bottom edge). */
interface Scene {
  frame: RgbImage;
  /** 1 where the pasted person is. */
  person: Uint8Array;
}

async function scene(pastes: Array<{ left: number; size: number; flip: boolean }>): Promise<Scene> {
  const frame = sharedImage(WIDTH, HEIGHT);
  frame.data.set(await rgb(SCENE, WIDTH, HEIGHT));
  const person = new Uint8Array(WIDTH * HEIGHT);
  for (const { left, size, flip } of pastes) {
    const pixels = await rgb(PORTRAIT, size, size, flip);
    const top = HEIGHT - size;
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        const u = (((flip ? size - 1 - x : x) + 0.5) * 416) / size;
        if (!onPerson(u, ((y + 0.5) * 416) / size)) continue;
        const p = (top + y) * WIDTH + left + x;
        person[p] = 1;
        frame.data.set(pixels.subarray((y * size + x) * 3, (y * size + x) * 3 + 3), p * 3);
      }
    }
  }
  return { frame, person };
}

function iou(mask: Uint8Array, truth: Uint8Array): number {
  let both = 0;
  let either = 0;
  for (let i = 0; i < truth.length; i++) {
    const m = mask[i]! >= 128 ? 1 : 0;
    both += m & truth[i]!;
    either += m | truth[i]!;
  }
  return both / either;
}

/** `region` shrunk (erode) or grown (dilate) by `r` pixels with a square window. */
function morph(region: Uint8Array, r: number, grow: boolean): Uint8Array {
  const out = new Uint8Array(region.length);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      let hit = grow ? 0 : 1;
      for (let dy = -r; dy <= r && hit === (grow ? 0 : 1); dy++) {
        for (let dx = -r; dx <= r; dx++) {
          const v = region[Math.min(HEIGHT - 1, Math.max(0, y + dy)) * WIDTH + Math.min(WIDTH - 1, Math.max(0, x + dx))]!;
          if (grow ? v === 1 : v === 0) {
            hit = grow ? 1 : 0;
            break;
          }
        }
      }
      out[y * WIDTH + x] = hit;
    }
  }
  return out;
}

/** Mean absolute difference per channel between two images over the pixels where `where` is 1. */
function meanAbsDiff(a: Uint8Array, b: Uint8Array, where: Uint8Array): number {
  let sum = 0;
  let n = 0;
  for (let p = 0; p < where.length; p++) {
    if (!where[p]) continue;
    for (let k = 0; k < 3; k++) sum += Math.abs(a[p * 3 + k]! - b[p * 3 + k]!);
    n += 3;
  }
  return sum / n;
}

const not = (region: Uint8Array) => region.map((v) => 1 - v);

describe('composite blend', () => {
  let pool: WorkerPool;
  let left: Scene;
  let right: Scene;
  let empty: Scene;
  let masks: Uint8Array[];

  before(async () => {
    pool = new WorkerPool(2);
    left = await scene([{ left: 20, size: 320, flip: false }]);
    right = await scene([{ left: 360, size: 280, flip: true }]);
    empty = await scene([]);
    masks = await segmentPeople(pool, [left.frame, right.frame, empty.frame]);
  });
  after(() => pool.close());

  test('the selfie model finds each pasted person and nothing in the empty scene', () => {
    assert.equal(masks.length, 3);
    for (const m of masks) assert.ok(m.buffer instanceof SharedArrayBuffer);
    const scores = [iou(masks[0]!, left.person), iou(masks[1]!, right.person)];
    for (const s of scores) assert.ok(s >= 0.7, `mask IoU ${scores.map((v) => v.toFixed(3)).join(', ')}`);
    const covered = masks[2]!.reduce((n, v) => n + (v >= 128 ? 1 : 0), 0);
    assert.ok(covered < 0.05 * WIDTH * HEIGHT, `${covered} px of the empty scene taken for a person`);
  });

  for (const background of ['first', 'median'] as const) {
    test(`composite on the ${background === 'first' ? 'first frame' : 'median clean plate'} holds both people and the scene`, async () => {
      const frames = background === 'first' ? [left.frame, right.frame] : [left.frame, right.frame, empty.frame];
      const out = await compositePeople(pool, frames, masks.slice(0, frames.length), background);
      assert.equal(out.width, WIDTH);
      assert.ok(out.data.buffer instanceof SharedArrayBuffer);
      const leftCore = morph(left.person, 3, false);
      const rightCore = morph(right.person, 3, false);
      const people = morph(left.person.map((v, i) => v | right.person[i]!), 24, true);
      const diffs = {
        leftPerson: meanAbsDiff(out.data, left.frame.data, leftCore),
        rightPerson: meanAbsDiff(out.data, right.frame.data, rightCore),
        scene: meanAbsDiff(out.data, empty.frame.data, not(people)),
      };
      assert.ok(diffs.leftPerson < 4 && diffs.rightPerson < 4 && diffs.scene < 1, JSON.stringify(diffs));
    });
  }

  test('a frame whose mask covers everything comes through exactly (the pyramid collapses back)', async () => {
    const full = new Uint8Array(new SharedArrayBuffer(WIDTH * HEIGHT)).fill(255);
    const none = new Uint8Array(new SharedArrayBuffer(WIDTH * HEIGHT));
    const out = await compositePeople(pool, [left.frame, right.frame], [none, full], 'first');
    let worst = 0;
    for (let i = 0; i < out.data.length; i++) worst = Math.max(worst, Math.abs(out.data[i]! - right.frame.data[i]!));
    assert.ok(worst <= 1, `max difference ${worst}`);
  });

  test('keepBackground keeps every pixel outside the masks byte for byte and takes the blend inside', async () => {
    const blended = await compositePeople(pool, [left.frame, right.frame], masks.slice(0, 2), 'median');
    const out = await keepBackground(pool, left.frame, blended, masks.slice(0, 2));
    let outside = 0;
    let inside = 0;
    for (let p = 0; p < WIDTH * HEIGHT; p++) {
      const a = Math.max(masks[0]![p]!, masks[1]![p]!);
      if (a !== 0 && a !== 255) continue;
      outside += a === 0 ? 1 : 0;
      inside += a === 255 ? 1 : 0;
      const expected = a === 0 ? left.frame.data : blended.data;
      for (let k = 0; k < 3; k++) assert.equal(out.data[p * 3 + k], expected[p * 3 + k], `pixel ${p} (mask ${a})`);
    }
    assert.ok(outside > 0.3 * WIDTH * HEIGHT && inside > 0.1 * WIDTH * HEIGHT, `${outside} outside, ${inside} inside`);
  });
});

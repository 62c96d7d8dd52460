import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { AUTO_CHOICES } from '../src/blend/choose.js';
import { blendFrames } from '../src/blend/engine/blend.js';
import { type RgbImage, sharedImage } from '../src/blend/engine/image/image.js';
import type { PointKernel } from '../src/blend/engine/point/stack.js';
import { alignsByDefault, BLEND_REGISTRY, BLEND_TYPES, type BlendTypeOf, ENGINE_BLEND_TYPES, resolveBlendType } from '../src/blend/engine/registry.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { TASKS } from '../src/blend/engine/threads/tasks.js';
import { JOB_BASE_BYTES, jobMemory } from '../src/blend/memory.js';
import { loadPhoto, random, withNoise } from './blend-scenes.js';

/**
 * The blend-type registry (engine/registry.ts) is the one list: the docs name exactly its types,
 * every point type's kernel runs through the pool as called directly, every type the engine
 * computes blends, and the memory estimates and alignment defaults are its figures.
 */

const DOCS = fs.readFileSync(new URL('../docs/blend.md', import.meta.url), 'utf8');

/** The rows of the first table after `heading` in docs/blend.md, header and rule left out, as cells. */
function tableAfter(heading: string): string[][] {
  const from = DOCS.indexOf(heading);
  assert.ok(from >= 0, `docs/blend.md has no ${heading}`);
  const lines = DOCS.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end).map((l) => l.split('|').slice(1, -1));
}

/** The names in a first cell: `a`, `b` … `c` (c included, in registry order), `auto`. */
function namesIn(cell: string): string[] {
  const names = [...cell.matchAll(/`([a-z-]+)`(\s*…\s*`([a-z-]+)`)?/g)].flatMap((m) => {
    if (!m[3]) return [m[1]!];
    const all = ENGINE_BLEND_TYPES as string[];
    return all.slice(all.indexOf(m[1]!), all.indexOf(m[3]) + 1);
  });
  return names.filter((n) => n !== 'preserveBackground');
}

/** `count` frames of a fixture photo at `width` × `height`, each with its own sensor noise. */
async function noisyFrames(count: number, width: number, height: number): Promise<RgbImage[]> {
  const photo = await loadPhoto(new URL('./fixtures/blend/handheld-mean/gt.png', import.meta.url).pathname, width, height);
  const next = random(width * height);
  return Array.from({ length: count }, () => withNoise(photo, 12, next));
}

let pool: WorkerPool;
before(() => {
  pool = new WorkerPool(2);
});
after(() => pool.close());

describe('blend-type registry', () => {
  it('docs/blend.md\'s "Blend types" table names exactly the types a job may ask for', () => {
    const documented = tableAfter('## Blend types').flatMap(([first]) => namesIn(first!));
    assert.deepEqual([...documented].sort(), [...BLEND_TYPES].sort());
  });

  it('docs/blend.md\'s memory tables give each type the bytes per pixel memory.ts uses, held and streaming', () => {
    const rows = tableAfter('| blend type | bytes per pixel (× frames × pixels)');
    const documented = new Map(rows.flatMap(([first, figure]) => namesIn(first!).map((n) => [n, Number(figure)] as const)));
    for (const type of ENGINE_BLEND_TYPES) {
      const figure = documented.get(type);
      assert.equal(figure, BLEND_REGISTRY[type].bytesPerPixel, `${type}: docs say ${figure}`);
    }
    assert.equal(documented.get('auto'), Math.max(...AUTO_CHOICES.map((t) => BLEND_REGISTRY[t].bytesPerPixel)));
    const streaming = tableAfter('| blend type | bytes per pixel (× 5 × frame pixels)');
    const streamed = new Map(streaming.flatMap(([first, figure]) => namesIn(first!).map((n) => [n, Number.parseInt(figure!.trim(), 10)] as const)));
    for (const type of ENGINE_BLEND_TYPES) {
      assert.equal(streamed.get(type) ?? null, BLEND_REGISTRY[type].streamBytesPerPixel, `${type}: streaming docs say ${streamed.get(type)}`);
    }
  });

  it('every point type runs its kernel through the pool with the bytes of calling it directly', async () => {
    const frames = await noisyFrames(5, 61, 37);
    const point = ENGINE_BLEND_TYPES.filter((t): t is BlendTypeOf<'point'> => BLEND_REGISTRY[t].family === 'point');
    assert.ok(point.length >= 8);
    for (const type of point) {
      const { load, fn } = TASKS[BLEND_REGISTRY[type].kernel];
      const kernel = ((await load()) as Record<string, unknown>)[fn] as PointKernel;
      assert.equal(typeof kernel, 'function', `${type}: its task's module exports no ${fn}`);
      const direct = sharedImage(61, 37);
      kernel(frames.map((f) => f.data), 61, direct.data, 0, 37);
      assert.deepEqual((await blendFrames(pool, type, frames)).data, direct.data, type);
    }
  });

  it('every pyramid type blends, to an image of the frames\' size', async () => {
    const frames = await noisyFrames(3, 70, 45);
    for (const type of ENGINE_BLEND_TYPES.filter((t): t is BlendTypeOf<'pyramid'> => BLEND_REGISTRY[t].family === 'pyramid')) {
      const out = await blendFrames(pool, type, frames);
      assert.deepEqual([out.width, out.height, out.data.length], [70, 45, 70 * 45 * 3], type);
    }
  });

  it('aliases resolve to their type; auto stays auto', () => {
    assert.equal(resolveBlendType('average'), 'mean');
    assert.equal(resolveBlendType('auto'), 'auto');
    for (const type of ENGINE_BLEND_TYPES) assert.equal(resolveBlendType(type), type);
  });

  it('memory estimates and alignment defaults are those each type declares', () => {
    // per megapixel: 200 MB of base, then the type's bytes per pixel; auto takes the largest of
    // what it may choose holding every frame (exposure's 11), preserveBackground at least
    // composite's 9; exposure carries a byte a pixel for deghosting's full-size masks (a mean's stay
    // on the test's grid and count nothing); a streaming
    // type (exposure and focus too) its streaming figure, and a median its band memory on top
    const mb = (type: (typeof BLEND_TYPES)[number], preserveBackground = false) => jobMemory(type, preserveBackground, 1e6, 50e6) / 1e6;
    assert.deepEqual([mb('mean'), mb('average'), mb('overlay'), mb('median'), mb('focus'), mb('exposure'), mb('auto')], [210, 210, 212, 257, 210, 210, 211]);
    assert.deepEqual([mb('average', true), mb('composite', true), mb('exposure', true)], [209, 209, 211]);
    assert.equal(JOB_BASE_BYTES, 200e6);
    assert.deepEqual(BLEND_TYPES.filter((t) => !alignsByDefault(t)), ['lighten', 'darken']);
  });
});

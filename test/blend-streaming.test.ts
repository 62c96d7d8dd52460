import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import sharp from 'sharp';
import { stackFrameFiles } from './blend-scenes.js';
import { alignFrames } from '../src/blend/engine/align/align.js';
import { BufferPool } from '../src/blend/engine/image/buffers.js';
import { blendFrames, type PixelBlendType } from '../src/blend/engine/blend.js';
import { type RgbImage, sharedImage } from '../src/blend/engine/image/image.js';
import { lightenRows } from '../src/blend/engine/point/stack.js';
import { type StackFrames, streamPyramid } from '../src/blend/engine/pyramid-stream.js';
import { BLEND_REGISTRY } from '../src/blend/engine/registry.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { decodeImage, resizeTo } from '../src/blend/media.js';
import { HELD_FRAMES, imageLimit, jobMemory, jobPixels, largestImageLimit, streamOf } from '../src/blend/memory.js';
import type { BlendFailure } from '../src/blend/failures.js';
import { BlendEngine, type BlendSpec } from '../src/blend/pipeline.js';
import { Spool } from '../src/blend/spool.js';
import { type BlendProgress, ghostingFrames, GHOSTING_FRAMES, streamStack } from '../src/blend/stream.js';
import { loadConfig } from '../src/config.js';
import { addressPolicy } from '../src/net/safe-http.js';
import { ENGINES, freshStorage, onCleanup, settledJob, startApp, type TestApp, until, fileServer } from './helpers.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');
const LIMITS = loadConfig({}).blend;

let pool: WorkerPool;
/**
 * The streamed stacks run as a job would, their buffers from an arena, every size kept: a case after
 * another of the same frame size reuses its buffers as they were left, so a byte read before it is
 * written would change the result.
 */
const buffers = new BufferPool(Infinity, 60_000, 0);
before(() => {
  pool = new WorkerPool(2);
});
after(() => pool.close());

/** A fixture set's JPEG frames, as fetched bytes. */
function jpegs(name: string): Buffer[] {
  const dir = path.join(FIXTURES, name);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { imagesJpeg: string[] };
  return manifest.imagesJpeg.map((f) => fs.readFileSync(path.join(dir, f)));
}

/** What the engine does with every frame held (pipeline.ts): decode, bring to frame 0's size, align, blend. */
async function held(type: PixelBlendType, sources: Buffer[], align: boolean, deghost: boolean): Promise<{ image: RgbImage; methods: string[] | null }> {
  const decoded = await Promise.all(sources.map((b, i) => decodeImage(b, i, LIMITS.maxPixels)));
  const frames = await Promise.all(decoded.map((f) => resizeTo(f, decoded[0]!.width, decoded[0]!.height)));
  const aligned = align ? await alignFrames(pool, frames) : null;
  const image = await blendFrames(pool, type, aligned?.frames ?? frames, deghost);
  return { image, methods: aligned ? aligned.frameReports.map((r) => r.method) : null };
}

async function streamed(t: TestContext, type: PixelBlendType, sources: Array<Buffer | string>, align: boolean, deghost: boolean, limits = LIMITS) {
  const spool = await Spool.create();
  onCleanup(t, () => spool.discard());
  const progress: BlendProgress[] = [];
  // the result is copied out before the job's buffers go back (nothing reads them after)
  const stack = await buffers.run(async () => {
    const made = await streamStack({ pool, limits, type, align, deghost, sources, spool, signal: new AbortController().signal, onProgress: (p) => progress.push(p) });
    return { ...made, result: { ...made.result, data: made.result.data.slice() } };
  });
  return { ...stack, progress };
}

describe('streaming stacks: the same bytes as the blends that hold every frame', () => {
  const cases: Array<[PixelBlendType, string, boolean, boolean]> = [
    ['mean', 'handheld-mean', true, false],
    ['mean', 'median-crowd', true, true],
    ['lighten', 'star-trails', false, false],
    ['darken', 'handheld-mean', true, false],
    ['overlay', 'handheld-mean', true, false],
    ['soft-light', 'star-trails', false, false],
    ['exposure', 'exposure-bracket', true, false],
    ['exposure', 'exposure-bracket', true, true],
    ['exposure', 'median-crowd', true, true],
    ['focus', 'focus-stack', true, false],
  ];
  for (const [type, set, align, deghost] of cases) {
    test(`${type} of ${set} (align ${align}, deghost ${deghost})`, async (t) => {
      const sources = jpegs(set);
      const expected = await held(type, sources, align, deghost);
      const stack = await streamed(t, type, sources, align, deghost);
      assert.deepEqual(stack.result.data, expected.image.data);
      assert.deepEqual(stack.reports?.map((r) => r.method) ?? null, expected.methods);
      const n = sources.length;
      // a pyramid type spools each frame as it is aligned, then reports its passes over them in frames' worth
      const frames = (stage: string) => Array.from({ length: n }, (_, i) => [stage, i + 1, n]);
      assert.deepEqual(
        stack.progress.map((p) => [p.stage, p.done, p.total]),
        BLEND_REGISTRY[type].stream === 'pyramid' ? [...frames('aligning'), ...frames('blending')] : frames('blending'),
      );
      assert.ok(stack.quality.score > 0 && stack.quality.score <= 1);
    });
  }

  test('a deghosted mean counts a walker out where the plain mean keeps it (the weights of point/fold.ts are used)', async (t) => {
    const sources = jpegs('median-crowd');
    const [on, off] = [await streamed(t, 'mean', sources, true, true), await streamed(t, 'mean', sources, true, false)];
    assert.notDeepEqual(on.result.data, off.result.data);
  });

  test('a deghosted exposure stands the reference in for the walkers (the masks reach the streamed passes)', async (t) => {
    const sources = jpegs('median-crowd');
    const [on, off] = [await streamed(t, 'exposure', sources, true, true), await streamed(t, 'exposure', sources, true, false)];
    assert.notDeepEqual(on.result.data, off.result.data);
  });

  test('exposure and focus passes over frames of odd and tiny sizes (one pyramid level) give the held bytes; an abort stops them between frames', async () => {
    let seed = 11;
    const byte = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24);
    for (const [width, height] of [[12, 10], [37, 29], [70, 41]] as const) {
      const frames = Array.from({ length: 5 }, () => {
        const image = sharedImage(width, height);
        for (let i = 0; i < image.data.length; i++) image.data[i] = byte();
        return image;
      });
      const memory = new Map<number, Uint16Array[]>();
      const stack: StackFrames = {
        width,
        height,
        count: frames.length,
        read: async (k, into) => into.set(frames[k]!.data),
        keep: async (k, planes) => void memory.set(k, planes.map((plane) => plane.slice())),
        recall: async (k, into) => into.forEach((plane, c) => plane.set(memory.get(k)![c]!)),
        deghost: null,
      };
      for (const type of ['exposure', 'focus'] as const) {
        const expected = await blendFrames(pool, type, frames);
        const done: number[] = [];
        const result = await streamPyramid(pool, type, stack, new AbortController().signal, (n) => done.push(n));
        assert.deepEqual(result.data, expected.data, `${type} ${width}×${height}`);
        assert.deepEqual(done, [1, 2, 3, 4, 5]);
      }
      const abort = new AbortController();
      const read: number[] = [];
      const stopping = { ...stack, read: async (k: number, into: Uint8Array) => (read.push(k), read.length === 7 && abort.abort(new Error('cancelled')), into.set(frames[k]!.data)) };
      await assert.rejects(streamPyramid(pool, 'focus', stopping, abort.signal, () => {}), /cancelled/);
      assert.equal(read.length, 7, 'no frame is read after the abort');
    }
  });

  test('median by bands of a few rows equals the median of the held frames, from spooled files', async (t) => {
    const sources = jpegs('median-crowd');
    const expected = await held('median', sources, true, false);
    // bands of 7 rows: many bands, the last one shorter
    const { width } = expected.image;
    const limits = { ...LIMITS, medianBandBytes: sources.length * width * 3 * 7 };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-stream-'));
    onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
    const files = sources.map((b, i) => {
      const file = path.join(dir, `${i}.jpg`);
      fs.writeFileSync(file, b);
      return file;
    });
    const stack = await streamed(t, 'median', files, true, false, limits);
    assert.deepEqual(stack.result.data, expected.image.data);
    const bands = stack.progress.filter((p) => p.stage === 'blending');
    assert.equal(bands.length, Math.ceil(expected.image.height / 7));
    assert.deepEqual(stack.progress.filter((p) => p.stage === 'aligning').map((p) => p.done), sources.map((_, i) => i + 1));
  });

  test('ghosting is measured on every frame up to GHOSTING_FRAMES, then on that many evenly spaced', () => {
    assert.deepEqual([...ghostingFrames(5)], [0, 1, 2, 3, 4]);
    const many = [...ghostingFrames(500)];
    assert.equal(many.length, GHOSTING_FRAMES);
    assert.deepEqual([many[0], many.at(-1)], [0, 499]);
  });
});

describe('streaming stacks: limits and memory', () => {
  test('a streaming job\'s memory estimate does not grow with its frame count; a held job\'s does', () => {
    const frames = (n: number) => Array.from({ length: n }, () => ({ width: 4000, height: 3000 }));
    for (const type of ['lighten', 'mean', 'overlay', 'median', 'exposure', 'focus'] as const) {
      const five = jobMemory(type, false, jobPixels(frames(5), true), LIMITS.medianBandBytes);
      assert.equal(jobMemory(type, false, jobPixels(frames(500), true), LIMITS.medianBandBytes), five, type);
    }
    assert.ok(jobMemory('median', false, 60e6, 256e6) > jobMemory('median', false, 60e6, 0), 'a median adds its band memory');
    assert.ok(jobPixels(frames(10)) > jobPixels(frames(5)));
  });

  test('every type that can stream holds up to HELD_FRAMES frames (faster, the same bytes) and streams longer stacks', () => {
    for (const [type, way] of [['exposure', 'pyramid'], ['focus', 'pyramid'], ['mean', 'fold'], ['lighten', 'fold'], ['overlay', 'fold'], ['median', 'bands']] as const) {
      assert.equal(streamOf(type, false, HELD_FRAMES), null, type);
      assert.equal(streamOf(type, false, 2), null, type);
      assert.equal(streamOf(type, false, HELD_FRAMES + 1), way, type);
      assert.equal(streamOf(type, false), way, `${type}: a job of any length`);
      // held, the estimate grows with the frames; streamed, it does not
      const px = (n: number) => jobPixels(Array.from({ length: n }, () => ({ width: 4000, height: 3000 })), streamOf(type, false, n) !== null);
      assert.ok(jobMemory(type, false, px(10), 0, 10) > jobMemory(type, false, px(5), 0, 5), type);
      assert.equal(jobMemory(type, false, px(11), 0, 11), jobMemory(type, false, px(90), 0, 90), type);
    }
    assert.equal(streamOf('exposure', true, 50), null, 'preserveBackground holds every frame');
    assert.equal(streamOf('composite', false, 50), null, 'composite holds every frame');
  });

  test('per-type image limits: the largest is the schema\'s, each type has its own, preserveBackground holds every frame', () => {
    const limits = loadConfig({ MONTAGE_BLEND_MAX_STREAMING_IMAGES: '300', MONTAGE_BLEND_MAX_MEDIAN_IMAGES: '50' }).blend;
    assert.deepEqual([LIMITS.maxImages, LIMITS.maxStreamingImages, LIMITS.maxMedianImages, LIMITS.maxPyramidImages], [10, 500, 100, 100]);
    assert.equal(largestImageLimit(limits), 300);
    assert.deepEqual(imageLimit(limits, 'lighten', false), { max: 300, variable: 'MONTAGE_BLEND_MAX_STREAMING_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'average', false), { max: 300, variable: 'MONTAGE_BLEND_MAX_STREAMING_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'median', false), { max: 50, variable: 'MONTAGE_BLEND_MAX_MEDIAN_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'mean', true), { max: 10, variable: 'MONTAGE_BLEND_MAX_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'auto', false), { max: 10, variable: 'MONTAGE_BLEND_MAX_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'exposure', false), { max: 100, variable: 'MONTAGE_BLEND_MAX_PYRAMID_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'focus', false), { max: 100, variable: 'MONTAGE_BLEND_MAX_PYRAMID_IMAGES' });
    assert.deepEqual(imageLimit(limits, 'composite', false), { max: 10, variable: 'MONTAGE_BLEND_MAX_IMAGES' });
    assert.throws(() => loadConfig({ MONTAGE_BLEND_MAX_PYRAMID_IMAGES: '257' }), /MONTAGE_BLEND_MAX_PYRAMID_IMAGES/);
    assert.throws(() => loadConfig({ MONTAGE_BLEND_MAX_MEDIAN_IMAGES: '1' }), /MONTAGE_BLEND_MAX_MEDIAN_IMAGES/);
  });
});

/** The spool directories in `dir` (the worker threads' TypeScript loader keeps its cache there too). */
const spools = (dir: string) => fs.readdirSync(dir).filter((name) => name.startsWith('montage-blend-')).sort();

/** A temporary directory that os.tmpdir(), and so every spool made during the test, points to (TMPDIR restored after). */
function spoolsInTempDir(t: TestContext): string {
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-tmp-'));
  onCleanup(t, () => fs.rmSync(temp, { recursive: true, force: true }));
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = temp;
  onCleanup(t, () => (previous === undefined ? delete process.env.TMPDIR : (process.env.TMPDIR = previous)));
  return temp;
}

describe('the spool of a streaming job', () => {
  test('a job refused after its first image waits for the fetches still writing, then leaves no spool behind', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-stack-'));
    onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
    // a long stack (more than HELD_FRAMES) streams: its images go to the spool as they arrive
    const files = await smallFrames(dir, HELD_FRAMES + 2);
    // The first frame comes at once; the others only after a while, so they are still arriving when the job is refused.
    let started = 0;
    let answered = 0;
    const server = http.createServer((req, res) => {
      started++;
      const bytes = fs.readFileSync(path.join(dir, path.basename(req.url ?? '/')));
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'image/png' }).end(bytes, () => answered++);
      }, req.url === '/0.png' ? 0 : 400);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const temp = spoolsInTempDir(t);
    const engine = new BlendEngine({ ...LIMITS, maxJobPixels: 64 * 48 - 1 }, addressPolicy(true), 'http://montage.invalid');
    onCleanup(t, () => engine.close());
    await engine.orphansRemoved;
    const spec = { images: files.map((f) => `${base}/${path.basename(f)}`), blendType: 'lighten', align: false, deghost: false, preserveBackground: false, outputFormat: 'png' } as BlendSpec;
    await assert.rejects(engine.fetch(spec), (err: BlendFailure) => err.code === 'job_too_large');
    assert.ok(started > 1, 'other images were being fetched when the first refused the job');
    assert.equal(answered, started, 'the refusal came once every fetch begun had ended');
    assert.deepEqual(spools(temp), [], 'the spool is removed');
  });
});

describe('short stacks are held unless they only fit streamed', () => {
  test('a short stack over the job pixel budget held streams from its fetched bytes, with the bytes a held job gives', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-stack-'));
    onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
    const files = await smallFrames(dir, 8);
    const base = await fileServer(t, dir);
    const spec = { images: files.map((f) => `${base}/${path.basename(f)}`), blendType: 'mean', align: false, deghost: true, preserveBackground: false, outputFormat: 'png' } as BlendSpec;
    const frame = 64 * 48;
    const results: Buffer[] = [];
    // held: 8 frames' pixels fit; then a budget of 6 frames, which eight held exceed and five (what a stream holds) do not
    for (const [maxJobPixels, streams] of [[8 * frame, false], [6 * frame, true]] as const) {
      const engine = new BlendEngine({ ...LIMITS, maxJobPixels }, addressPolicy(true), 'http://montage.invalid');
      onCleanup(t, () => engine.close());
      const fetched = await engine.fetch(spec);
      onCleanup(t, () => fetched.discard());
      assert.equal(fetched.spool !== null, streams, `budget ${maxJobPixels}: streams`);
      // held, its images stay in memory; streamed, they wait in its spool as a long stack's do
      assert.ok(fetched.sources.every((s) => (streams ? typeof s === 'string' && s.startsWith(fetched.spool!.dir) : Buffer.isBuffer(s))));
      assert.equal(fetched.pixels, (streams ? 5 : 8) * frame);
      results.push((await engine.run(spec, fetched)).image);
    }
    assert.ok(results[0]!.equals(results[1]!), 'held and streamed give the same bytes');
    // a budget under what even a stream holds refuses the job
    const small = new BlendEngine({ ...LIMITS, maxJobPixels: 5 * frame - 1 }, addressPolicy(true), 'http://montage.invalid');
    onCleanup(t, () => small.close());
    await assert.rejects(small.fetch(spec), (err: BlendFailure) => err.code === 'job_too_large');
  });

  test('a damaged frame in an aligned streamed stack fails the job with unsupported_image, naming it, and leaves no rejection unhandled', async (t) => {
    // Found by a QA run: the aligner's line-up reference, a pool task awaited only once a frame is
    // checked, was rejected with the job's failure when frame 1 could not be decoded first, and that
    // unhandled rejection ended the server, again at every retry of the job.
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    onCleanup(t, () => process.off('unhandledRejection', listener));
    const frames = jpegs('median-crowd');
    const damaged = frames[2]!.subarray(0, Math.floor(frames[2]!.length / 2));
    const engine = new BlendEngine(LIMITS, addressPolicy(true), 'http://montage.invalid');
    onCleanup(t, () => engine.close());
    for (const [blendType, at] of [['mean', 1], ['exposure', 1], ['lighten', 6], ['mean', HELD_FRAMES]] as const) {
      const sources = Array.from({ length: HELD_FRAMES + 1 }, (_, i) => (i === at ? damaged : frames[i % frames.length]!));
      assert.ok(streamOf(blendType, false, sources.length) !== null, `${blendType} of ${sources.length} frames streams`);
      const spool = await Spool.create();
      onCleanup(t, () => spool.discard());
      const spooled = await Promise.all(sources.map((b, i) => spool.write(`image-${i}`, b)));
      const spec = { images: sources.map((_, i) => `frame-${i}.jpg`), blendType, align: true, deghost: true, preserveBackground: false, outputFormat: 'jpeg' } as BlendSpec;
      await assert.rejects(
        engine.run(spec, { sources: spooled, pixels: 0, spool, discard: async () => {} }),
        (err: BlendFailure) => err.code === 'unsupported_image' && err.imageIndex === at,
      );
      // a rejection nobody handles is reported once the microtasks of its turn have run
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, [], `${blendType}, damaged frame ${at}`);
    }
  });

  test('a short stack refused only once every image is in (its first image the smallest) leaves no spool behind', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-stack-'));
    onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
    const files = await smallFrames(dir, 8);
    // frame 0 at a quarter of the others' size: the refusal from it alone cannot come early
    await sharp(await sharp(files[0]!).resize(32, 24).png().toBuffer()).toFile(files[0]!);
    const base = await fileServer(t, dir);
    const temp = spoolsInTempDir(t);
    // held: 8 frames of 64 × 48 (frame 0 counts as one of them too); streamed: five of them, one pixel over
    const engine = new BlendEngine({ ...LIMITS, maxJobPixels: 5 * 64 * 48 - 1 }, addressPolicy(true), 'http://montage.invalid');
    onCleanup(t, () => engine.close());
    await engine.orphansRemoved;
    const spec = { images: files.map((f) => `${base}/${path.basename(f)}`), blendType: 'median', align: false, deghost: false, preserveBackground: false, outputFormat: 'png' } as BlendSpec;
    await assert.rejects(engine.fetch(spec), (err: BlendFailure) => err.code === 'job_too_large' && /pixels each/.test(err.message));
    assert.deepEqual(spools(temp), [], 'no spool is left');
  });
});

describe('spool directories left by processes that died', () => {
  test('an engine removes those whose process is gone or started before this one, and keeps those of running processes', async (t) => {
    const temp = spoolsInTempDir(t);
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => gone.once('exit', r));
    const dir = (pid: number, suffix: string) => {
      const name = `montage-blend-${pid}-${suffix}`;
      fs.mkdirSync(path.join(temp, name));
      fs.writeFileSync(path.join(temp, name, 'image-0'), 'x');
      return name;
    };
    const dead = dir(gone.pid!, 'aB3dE9');
    const earlier = dir(process.pid, 'q1W2e3');
    const then = new Date(Date.now() - process.uptime() * 1000 - 60_000);
    fs.utimesSync(path.join(temp, earlier), then, then);
    const ours = dir(process.pid, 'Zx8yW7');
    const parents = dir(process.ppid, 'Kk4Ll5');
    fs.mkdirSync(path.join(temp, 'montage-blend-Ab12Cd'), { recursive: true }); // not one of this naming: left alone

    const engine = new BlendEngine(LIMITS, addressPolicy(true), 'http://montage.invalid');
    onCleanup(t, () => engine.close());
    assert.deepEqual((await engine.orphansRemoved).sort(), [dead, earlier].sort());
    assert.deepEqual(spools(temp), ['montage-blend-Ab12Cd', ours, parents].sort());
  });
});

/** `count` small frames of a real photo (the star-trails fixture's first frame at 64×48), each with its own noise, as PNG files. */
async function smallFrames(dir: string, count: number): Promise<string[]> {
  const { data, info } = await sharp(path.join(FIXTURES, 'star-trails/1.jpg')).resize(64, 48, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let seed = 7;
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const frame = Buffer.from(data);
    for (let p = 0; p < frame.length; p++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      frame[p] = Math.max(0, Math.min(255, frame[p]! + ((seed >>> 24) % 41) - 20));
    }
    const file = path.join(dir, `${i}.png`);
    await sharp(frame, { raw: { width: info.width, height: info.height, channels: 3 } }).png().toFile(file);
    files.push(file);
  }
  return files;
}


async function start(api: TestApp, key: string, images: string[], options: Record<string, unknown>) {
  return api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'stream', images, options } });
}

for (const engine of ENGINES) {
  describe(`streaming stacks over the API (${engine})`, () => {
    test('120 frames of lighten complete, with the bytes of the per-pixel maximum; types over their own limit are refused naming it', async (t) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-stack-'));
      onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
      const files = await smallFrames(dir, 120);
      const base = await fileServer(t, dir);
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
      const { key } = await api.account();
      const images = files.map((f) => `${base}/${path.basename(f)}`);

      const res = await start(api, key, images, { blendType: 'lighten', outputFormat: 'png' });
      assert.equal(res.status, 202, await res.clone().text());
      const { jobId } = await res.json();
      const job = await until(
        async () => {
          const j = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
          return j.status === 'completed' || j.status === 'failed' ? j : null;
        },
        120_000,
        `blend job ${jobId}`,
      );
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      // the result URL names the configured public address, whose port 0 was chosen at listen
      const { pathname, search } = new URL(job.resultUrl as string);
      const result = await sharp(Buffer.from(await (await fetch(`${api.url}${pathname}${search}`)).arrayBuffer())).raw().toBuffer();
      const frames = await Promise.all(files.map((f) => sharp(f).removeAlpha().raw().toBuffer()));
      const expected = sharedImage(64, 48);
      lightenRows(frames.map((f) => new Uint8Array(f)), 64, expected.data, 0, 48);
      assert.deepEqual(new Uint8Array(result), expected.data);

      const refusals: Array<[string, number, Record<string, unknown>, RegExp]> = [
        ['median', 101, { blendType: 'median' }, /median jobs take at most 100 images \(MONTAGE_BLEND_MAX_MEDIAN_IMAGES\); this one has 101/],
        ['exposure', 101, { blendType: 'exposure' }, /exposure jobs take at most 100 images \(MONTAGE_BLEND_MAX_PYRAMID_IMAGES\)/],
        ['focus', 101, { blendType: 'focus' }, /focus jobs take at most 100 images \(MONTAGE_BLEND_MAX_PYRAMID_IMAGES\)/],
        ['composite', 11, { blendType: 'composite' }, /composite jobs take at most 10 images \(MONTAGE_BLEND_MAX_IMAGES\)/],
        ['mean with preserveBackground', 11, { blendType: 'mean', preserveBackground: true }, /mean jobs with preserveBackground take at most 10 images \(MONTAGE_BLEND_MAX_IMAGES\)/],
        ['auto', 11, {}, /auto jobs take at most 10 images \(MONTAGE_BLEND_MAX_IMAGES\)/],
      ];
      const many = Array.from({ length: 501 }, (_, i) => images[i % images.length]!);
      for (const [name, count, options, message] of refusals) {
        const refused = await start(api, key, many.slice(0, count), options);
        assert.equal(refused.status, 400, name);
        const problem = await refused.json();
        assert.equal(problem.code, 'invalid_request', name);
        assert.match(JSON.stringify(problem), message, name);
      }
      // the schema takes the largest limit
      const tooMany = await start(api, key, many, { blendType: 'lighten' });
      assert.equal(tooMany.status, 400);
    });

    test('24 frames of exposure (deghosted) and of focus complete with the bytes of the blends that hold every frame', async (t) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-stack-'));
      onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
      const base = await fileServer(t, dir);
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
      const { key } = await api.account();
      for (const type of ['exposure', 'focus'] as const) {
        const files = await stackFrameFiles(dir, type, 24, { photo: 'astronaut.jpg', width: 128, height: 96, brighterBy: 0.02 });
        const res = await start(
          api,
          key,
          files.map((f) => `${base}/${path.basename(f)}`),
          { blendType: type, outputFormat: 'png', align: false },
        );
        assert.equal(res.status, 202, await res.clone().text());
        const { jobId } = await res.json();
        const job = await settledJob(api, key, jobId, 120_000);
        assert.equal(job.status, 'completed', JSON.stringify(job.error));
        const { pathname, search } = new URL(job.resultUrl as string);
        const result = await sharp(Buffer.from(await (await fetch(`${api.url}${pathname}${search}`)).arrayBuffer())).removeAlpha().raw().toBuffer();
        const expected = await held(type, files.map((f) => fs.readFileSync(f)), false, type === 'exposure');
        assert.deepEqual(new Uint8Array(result), expected.image.data, type);
      }
    });
  });
}

import type { FileHandle } from 'node:fs/promises';
import type { BlendLimits } from '../config.js';
import { AlignmentFailed, type FrameAligner, frameAligner, type FrameReport, REFERENCE_REPORT, warpFrame } from './engine/align/align.js';
import { overRows } from './engine/blend.js';
import { frameMask, type GridMask } from './engine/deghost/deghost.js';
import type { FrameStats } from './engine/image/analysis.js';
import { bufferDone, sharedBuffer } from './engine/image/buffers.js';
import { type RgbImage, rowRanges, sharedImage } from './engine/image/image.js';
import { makeThumbnail, type Thumbnail, thumbnailFactor } from './engine/image/thumbnails.js';
import { collectGarbage } from './engine/threads/gc.js';
import type { FoldAccumulator, FoldType } from './engine/point/fold.js';
import { type FrameMask, type StackFrames, streamPyramid } from './engine/pyramid-stream.js';
import { BLEND_REGISTRY, type BlendTypeOf, type EngineBlendType } from './engine/registry.js';
import type { TaskArgs, TaskResult, WorkerPool } from './engine/threads/pool.js';
import { BlendFailure } from './failures.js';
import { decodeImage, resizeTo } from './media.js';
import { type Quality, scoreQuality } from './quality.js';
import { STREAM_HELD_FRAMES } from './memory.js';
import type { Spool } from './spool.js';

/**
 * Streaming stacks (docs/blend.md, "Memory"): a job whose type folds frames one at a time (mean,
 * lighten, darken, the layer modes), takes its median by bands of rows, or blends pyramids
 * (exposure, focus) in passes over its spooled frames decodes, aligns and uses each frame as it
 * comes, so its memory does not grow with the frame count. WINDOW frames
 * are decoded and aligned ahead of the one being folded (libvips decodes while the pool aligns
 * and folds); a fold takes the frames in order, so the layer modes fold left to right as the
 * kernels that see every frame do, and every type gives the same bytes as they do. A median
 * writes each aligned frame to the job's spool on disk and then reads every frame's band of rows
 * at a time, within MONTAGE_BLEND_MEDIAN_BAND_MEMORY; exposure and focus write them to the spool
 * too and read them back one at a time, pass after pass (engine/pyramid-stream.ts).
 *
 * The quality score is measured as for a job that holds its frames (pipeline.ts): every frame's
 * statistics and correlation with frame 0 on its aligned thumbnail, kept as numbers; ghosting,
 * which needs the result, on the thumbnails of at most GHOSTING_FRAMES frames evenly spaced through
 * the stack (every frame up to that count, so a short stack scores exactly as it did held).
 */

/** What a job's progress callback is told (the contract of `BlendEngine.run`). */
/**
 * How far a job's work has come, as the engine reports it: `done` of `total` within `stage`, in
 * frames for fetching, aligning (decoded and, when the job aligns, brought onto frame 0) and
 * blending (a streaming job: each frame folded; an in-memory one works on every frame at once:
 * 0, then all of them); 0 or 1 of 1 for encoding.
 */
export interface BlendProgress {
  stage: 'fetching' | 'aligning' | 'blending' | 'encoding';
  done: number;
  total: number;
}

/** Called by the engine at each step of a job; it must return at once (the job's worker throttles what it writes, progress.ts). */
export type OnProgress = (progress: BlendProgress) => void;

/** Frames decoded and aligned ahead of the one being used: enough to keep libvips and the pool busy at once (memory.ts counts them). */
const WINDOW = STREAM_HELD_FRAMES - 2;
/**
 * Frames used between two full collections: a frame's buffers (decoded, resized, warped, its
 * thumbnails) are SharedArrayBuffers, which V8 frees only after a collection it seldom runs for
 * them, so without one the frames used pile up (about 5 MB a frame of a megapixel, measured) and memory
 * grows with the frame count after all. A collection costs milliseconds; a frame, a second at 12 MP.
 */
const COLLECT_EVERY = WINDOW;
/** Frames whose aligned thumbnails the ghosting term is measured on: ~2 MB each at 12 MP. */
export const GHOSTING_FRAMES = 32;

/** What a streamed stack made: the result, the score and, when it aligned, each frame's report. */
export interface StreamedStack {
  result: RgbImage;
  quality: Quality;
  reports: FrameReport[] | null;
  /** Milliseconds spent using the frames as they came, finishing the result (a median's bands), and scoring. */
  stages: { frames: number; finish: number; score: number };
}

/** Frame 0 as every later frame needs it: its size, thumbnail and statistics, and what alignment and deghosting keep of it. */
interface Reference {
  width: number;
  height: number;
  thumbnail: Thumbnail;
  stats: FrameStats;
  aligner: FrameAligner | null;
  grid: TaskResult<'agreementGrid'> | null;
}

/** A frame decoded, aligned and measured, ready to be used. */
interface Prepared {
  frame: RgbImage;
  /** Its deghosting mask (a deghosted mean) on the agreement test's grid, null where it counts everywhere. */
  mask: GridMask | null;
  /** Its aligned thumbnail and the statistics of it. */
  small: RgbImage;
  stats: FrameStats;
  /** Block correlation with frame 0 (aligned jobs). */
  correlation: number | null;
  report: FrameReport | null;
}

/** The evenly spaced frame indexes the ghosting term is measured on. */
export function ghostingFrames(count: number): Set<number> {
  if (count <= GHOSTING_FRAMES) return new Set(Array.from({ length: count }, (_, i) => i));
  return new Set(Array.from({ length: GHOSTING_FRAMES }, (_, i) => Math.round((i * (count - 1)) / (GHOSTING_FRAMES - 1))));
}

interface StackJob {
  pool: WorkerPool;
  limits: BlendLimits;
  type: EngineBlendType;
  align: boolean;
  deghost: boolean;
  sources: Array<Buffer | string>;
  spool: Spool;
  signal: AbortSignal;
  onProgress?: OnProgress | undefined;
}

/** Runs a streaming stack (`type` must stream: engine/registry.ts `stream`). */
export async function streamStack(job: StackJob): Promise<StreamedStack> {
  const { pool, sources, type } = job;
  const started = performance.now();
  const count = sources.length;
  const deghost = job.deghost && BLEND_REGISTRY[type].deghost === 'first' && count > 1;
  const decode = (i: number) => decodeImage(sources[i]!, i, job.limits.maxPixels);

  const first = await decode(0);
  const thumbnail = await makeThumbnail(pool, first, job.align);
  const reference: Reference = {
    width: first.width,
    height: first.height,
    thumbnail,
    stats: await stats(pool, thumbnail.rgb),
    aligner: job.align ? frameAligner(pool, first.width, first.height, thumbnail.grey!) : null,
    grid: deghost ? await pool.run('agreementGrid', [thumbnail.rgb.data, thumbnail.rgb.width, thumbnail.rgb.height]) : null,
  };
  const prepare = (i: number): Promise<Prepared> =>
    i === 0
      ? Promise.resolve({ frame: first, mask: null, small: thumbnail.rgb, stats: reference.stats, correlation: null, report: job.align ? REFERENCE_REPORT : null })
      : prepareFrame(pool, reference, i, decode(i), deghost);

  const how = BLEND_REGISTRY[type].stream;
  const use =
    how === 'bands'
      ? await bandedMedian(job, reference)
      : how === 'pyramid'
        ? await spooledPyramid(job, reference)
        : foldInto(pool, type as FoldType, reference, count);
  // only the types whose score measures ghosting keep thumbnails for it
  const sampled = BLEND_REGISTRY[type].ghosting ? ghostingFrames(count) : new Set<number>();
  const inputs: FrameStats[] = [];
  const correlations: number[] = [];
  const ghostSmalls: RgbImage[] = [];
  const reports: FrameReport[] = [];
  try {
    const ahead: Array<Promise<Prepared> | undefined> = [];
    const start = (i: number) => {
      if (i >= count) return;
      const work = prepare(i);
      // a frame that fails while an earlier one is used is reported when its turn comes
      work.catch(() => {});
      ahead[i] = work;
    };
    for (let i = 0; i < WINDOW; i++) start(i);
    for (let i = 0; i < count; i++) {
      job.signal.throwIfAborted();
      const frame = await ahead[i]!;
      ahead[i] = undefined;
      start(i + WINDOW);
      await use.add(i, frame);
      // the frame's pixels are used: the frames still to come take their buffer (image/buffers.ts)
      bufferDone(frame.frame.data.buffer);
      inputs.push(frame.stats);
      if (frame.correlation !== null) correlations.push(frame.correlation);
      if (frame.report) reports.push(frame.report);
      if (sampled.has(i)) ghostSmalls.push(frame.small);
      job.onProgress?.({ stage: use.stage, done: i + 1, total: count });
      if ((i + 1) % COLLECT_EVERY === 0) await collectEverywhere(pool);
    }
    const framesDone = performance.now();
    const result = await use.finish(job.onProgress);
    const finished = performance.now();
    const quality = await score(pool, inputs, job.align ? correlations : null, BLEND_REGISTRY[type].ghosting ? ghostSmalls : null, result);
    const stages = { frames: Math.round(framesDone - started), finish: Math.round(finished - framesDone), score: Math.round(performance.now() - finished) };
    return { result, quality, reports: job.align ? reports : null, stages };
  } finally {
    await use.close();
  }
}

function stats(pool: WorkerPool, small: RgbImage): Promise<FrameStats> {
  return pool.run('frameStats', [small.data, small.width, small.height]);
}

/** Decodes frame `index` to frame 0's size, aligns it to frame 0 (when the job aligns), measures it and makes its deghosting mask. */
async function prepareFrame(pool: WorkerPool, ref: Reference, index: number, decoding: Promise<RgbImage>, deghost: boolean): Promise<Prepared> {
  const decoded = await decoding;
  const frame = await resizeTo(decoded, ref.width, ref.height);
  if (frame !== decoded) bufferDone(decoded.data.buffer);
  const thumbnail = await makeThumbnail(pool, frame, ref.aligner !== null);
  const before = stats(pool, thumbnail.rgb);
  // not awaited when alignment moves the frame: its failure (the job stopped) must not go unhandled
  before.catch(() => {});
  let aligned = frame;
  let warpedThumbnail: RgbImage | null = null;
  let report: FrameReport | null = null;
  if (ref.aligner) {
    const grey = thumbnail.grey!;
    report = await ref.aligner.decide(index, grey, ref.aligner.check(grey)).catch((err: unknown) => {
      if (err instanceof AlignmentFailed) throw new BlendFailure('alignment_failed', err.message, err.index);
      throw err;
    });
    const warped = await warpFrame(pool, frame, report);
    aligned = warped.image;
    warpedThumbnail = warped.thumbnail;
    if (aligned !== frame) bufferDone(frame.data.buffer);
  }
  // A frame alignment moved is measured again (on the thumbnail made as it was warped), as the held pipeline measures it.
  const small = warpedThumbnail ?? thumbnail.rgb;
  const measured = aligned === frame ? await before : await stats(pool, small);
  const correlation = ref.aligner
    ? await pool.run('blockCorrelation', [ref.thumbnail.rgb.data, small.data, small.width, small.height, ref.stats.noise, measured.noise])
    : null;
  const mask = deghost ? await frameMask(pool, ref.grid!, small, ref.width, ref.height) : null;
  return { frame: aligned, mask, small, stats: measured, correlation, report };
}

/** How a stack uses its prepared frames: `add` each in order, then `finish` the result; `close` gives back what it held. */
interface StackUse {
  stage: BlendProgress['stage'];
  add(index: number, frame: Prepared): Promise<void>;
  finish(onProgress?: OnProgress): Promise<RgbImage>;
  close(): Promise<void>;
}

/** A fold (point/fold.ts): each frame folded into the accumulator as it comes, then the result written from it. */
function foldInto(pool: WorkerPool, type: FoldType, ref: Reference, count: number): StackUse {
  const { width, height } = ref;
  const values = width * height * 3;
  // the first frame's fold writes every value (point/fold.ts foldFirstRows): a reused buffer needs no zeroing
  const acc: FoldAccumulator = {
    type,
    width,
    values:
      type === 'lighten' || type === 'darken'
        ? new Uint8Array(sharedBuffer(values, true))
        : type === 'mean'
          ? new Uint32Array(sharedBuffer(values * 4, true))
          : new Float64Array(sharedBuffer(values * 8, true)),
    weights: null,
  };
  return {
    stage: 'blending',
    async add(index, { frame, mask }) {
      if (index === 0) {
        await overRows(pool, 'foldFirstRows', height, (y0, y1) => [acc, frame.data, y0, y1]);
        return;
      }
      // the first frame with a mask starts the weights: every frame before it counted everywhere
      if (mask && !acc.weights) acc.weights = new Uint32Array(sharedBuffer(width * height * 4, true)).fill(255 * index);
      await overRows(pool, 'foldFrameRows', height, (y0, y1) => [acc, frame.data, mask, y0, y1]);
    },
    async finish() {
      // lighten and darken hold the result itself
      const out = acc.values instanceof Uint8Array ? { width, height, data: acc.values } : sharedImage(width, height);
      await overRows(pool, 'finishFoldRows', height, (y0, y1) => [acc, count, out.data, y0, y1]);
      return out;
    },
    close: async () => {},
  };
}

/**
 * A median by bands: each aligned frame is written to the job's spool as it comes, frame after
 * frame in one file; then, band after band of rows, every frame's band is read back and the
 * band's median computed across the pool (point/stack.ts medianRows). The bands are as tall as
 * MONTAGE_BLEND_MEDIAN_BAND_MEMORY allows for the frame count (at least one row).
 */
async function bandedMedian(job: StackJob, ref: Reference): Promise<StackUse> {
  const { pool } = job;
  const { width, height } = ref;
  const count = job.sources.length;
  const rowBytes = width * 3;
  const frameBytes = rowBytes * height;
  const file: FileHandle = await job.spool.open('frames');
  return {
    stage: 'aligning',
    async add(index, { frame }) {
      await file.write(frame.data, 0, frameBytes, index * frameBytes);
    },
    async finish(onProgress) {
      const out = sharedImage(width, height);
      const bandRows = Math.max(1, Math.min(height, Math.floor(job.limits.medianBandBytes / (count * rowBytes))));
      const bands = rowRanges(height, Math.ceil(height / bandRows));
      const tallest = Math.max(...bands.map(([y0, y1]) => y1 - y0));
      // each band's rows are read in before medianRows reads them, and rows past a shorter band are never read: no zeroing
      const buffers = Array.from({ length: count }, () => new Uint8Array(sharedBuffer(tallest * rowBytes, true)));
      for (const [b, [y0, y1]] of bands.entries()) {
        job.signal.throwIfAborted();
        const bytes = (y1 - y0) * rowBytes;
        await Promise.all(buffers.map((buffer, k) => readFully(file, buffer, bytes, k * frameBytes + y0 * rowBytes)));
        const band = out.data.subarray(y0 * rowBytes, y1 * rowBytes);
        await overRows(pool, 'medianRows', y1 - y0, (r0, r1) => [buffers, width, band, r0, r1]);
        onProgress?.({ stage: 'blending', done: b + 1, total: bands.length });
      }
      return out;
    },
    close: () => file.close(),
  };
}

/**
 * Exposure fusion or focus stacking by passes over the spooled frames (engine/pyramid-stream.ts):
 * each aligned frame is written to the job's spool as it comes (and, in the second pass, its level
 * 1, for the third: 1.5 bytes a pixel beside the frame's 3); a deghosted exposure also keeps
 * each frame's thumbnail on the agreement test's grid and its brightness (a few hundred kilobytes
 * a frame), since its reference, the middle exposure, is known only once every frame is in.
 */
async function spooledPyramid(job: StackJob, ref: Reference): Promise<StackUse> {
  const { pool } = job;
  const { width, height } = ref;
  const count = job.sources.length;
  const frameBytes = width * height * 3;
  const type = job.type as BlendTypeOf<'pyramid'>;
  const deghost = job.deghost && BLEND_REGISTRY[type].deghost === 'middle-exposure' && count > 1;
  const grids: Array<TaskResult<'agreementGrid'>> = [];
  const brightness: number[] = [];
  const file: FileHandle = await job.spool.open('frames');
  const levels: FileHandle = await job.spool.open('level-one');
  // a frame's level 1, R, G and B planes of 16 bits
  const [lw, lh] = [Math.ceil(width / 2), Math.ceil(height / 2)];
  const levelBytes = 3 * lw * lh * 2;
  const bytesOf = (plane: Uint16Array) => new Uint8Array(plane.buffer, plane.byteOffset, plane.byteLength);
  return {
    stage: 'aligning',
    async add(index, { frame, small }) {
      const writing = file.write(frame.data, 0, frameBytes, index * frameBytes);
      if (deghost) {
        const args: TaskArgs<'meanGrey'> = [small.data, small.width, small.height];
        [grids[index], brightness[index]] = await Promise.all([pool.run('agreementGrid', args), pool.run('meanGrey', args)]);
      }
      await writing;
    },
    async finish(onProgress) {
      // the last frames' buffers go before the passes' accumulators come
      await collectEverywhere(pool);
      const stack: StackFrames = {
        width,
        height,
        count,
        read: (k, into) => readFully(file, into, frameBytes, k * frameBytes),
        keep: async (k, planes) => {
          for (const [c, plane] of planes.entries()) await levels.write(bytesOf(plane), 0, plane.byteLength, k * levelBytes + c * plane.byteLength);
        },
        recall: async (k, into) => {
          for (const [c, plane] of into.entries()) await readFully(levels, bytesOf(plane), plane.byteLength, k * levelBytes + c * plane.byteLength);
        },
        deghost: deghost ? await agreements(pool, grids, brightness, width, height) : null,
      };
      return streamPyramid(pool, type, stack, job.signal, (done, total) => onProgress?.({ stage: 'blending', done, total }));
    },
    close: async () => {
      await Promise.all([file.close(), levels.close()]);
    },
  };
}

/**
 * A streamed exposure's deghosting, as deghost/deghost.ts `deghostMasks` makes it for held frames:
 * the reference is the middle exposure (the frame of median brightness, the darker of two middle
 * ones, the first of equals); each frame's agreement with it is tested on the grids now, and its
 * mask brought to full size when a pass reaches the frame.
 */
async function agreements(pool: WorkerPool, grids: Array<TaskResult<'agreementGrid'>>, brightness: number[], width: number, height: number): Promise<StackFrames['deghost']> {
  const order = brightness.map((b, k) => [b, k] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const reference = order[(order.length - 1) >> 1]![1];
  const { width: gw, height: gh, step } = grids[reference]!;
  const small = await Promise.all(grids.map((g, k) => (k === reference ? null : pool.run('agreementMask', [grids[reference]!.data, g.data, gw, gh]))));
  const factor = thumbnailFactor(width, height) * step;
  const mask = async (k: number): Promise<FrameMask | null> => {
    const agreement = small[k];
    if (!agreement) return null;
    const shared = new Uint8Array(new SharedArrayBuffer(agreement.mask.length));
    shared.set(agreement.mask);
    const full = new Uint8Array(new SharedArrayBuffer(width * height));
    const spans = new Int32Array(new SharedArrayBuffer(8 * height));
    await pool.all('upsampleMaskRows', rowRanges(height, pool.size).map(([y0, y1]): TaskArgs<'upsampleMaskRows'> => [shared, gw, gh, factor, full, width, y0, y1, spans]));
    return { mask: full, spans, toFrame: agreement.toFrame };
  };
  return { reference, mask };
}

/** A full collection in every thread and this one (engine/threads/gc.ts): a buffer is freed once no thread holds it. */
async function collectEverywhere(pool: WorkerPool): Promise<void> {
  const threads = pool.everyThread('collectGarbage').catch(() => {});
  collectGarbage();
  await threads;
}

/** Reads `length` bytes at `position` of the file into the start of `buffer`. */
async function readFully(file: FileHandle, buffer: Uint8Array, length: number, position: number): Promise<void> {
  for (let read = 0; read < length; ) {
    const { bytesRead } = await file.read(buffer, read, length - read, position + read);
    if (bytesRead === 0) throw new Error('the spooled frames ended early');
    read += bytesRead;
  }
}

/** The quality score (quality.ts) from what was kept of each frame, the result measured on its thumbnail. */
async function score(pool: WorkerPool, inputs: FrameStats[], correlations: number[] | null, ghostSmalls: RgbImage[] | null, result: RgbImage): Promise<Quality> {
  const smallResult = (await makeThumbnail(pool, result, false)).rgb;
  const pixels = smallResult.width * smallResult.height;
  const ghostingSums = ghostSmalls
    ? pool.all('ghostingSum', rowRanges(pixels, pool.size).map(([start, end]) => [ghostSmalls.map((f) => f.data), smallResult.data, start, end]))
    : null;
  // awaited after the result's statistics, which fail first when the job is stopped
  ghostingSums?.catch(() => {});
  const resultStats = await stats(pool, smallResult);
  const correlation = correlations && correlations.length ? correlations.reduce((sum, c) => sum + c, 0) / correlations.length : null;
  const ghosting = ghostingSums ? (await ghostingSums).reduce((sum, s) => sum + s, 0) / pixels : null;
  return scoreQuality({ correlation, inputs, result: resultStats, ghosting });
}

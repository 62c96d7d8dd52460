import type { BlendLimits } from '../config.js';
import type { AddressPolicy } from '../net/safe-http.js';
import { chooseBlendType } from './choose.js';
import { alignFrames, checkLineUps, type FrameReport, type LineUps } from './engine/align/align.js';
import type { FrameStats } from './engine/image/analysis.js';
import { BufferPool } from './engine/image/buffers.js';
import { collectGarbage } from './engine/threads/gc.js';
import { blendFrames, type PixelBlendType } from './engine/blend.js';
import { BLEND_REGISTRY, type BlendType, type EngineBlendType, resolveBlendType } from './engine/registry.js';
import { compositePeople, keepBackground } from './engine/composite/composite.js';
import type { RgbImage } from './engine/image/image.js';
import { WorkerPool } from './engine/threads/pool.js';
import { rowRanges } from './engine/image/image.js';
import { segmentPeople } from './engine/segment/segment.js';
import { makeThumbnail, type Thumbnail } from './engine/image/thumbnails.js';
import { BlendFailure, firstFailureInOrder } from './failures.js';
import { fetchImage } from './fetcher.js';
import { configureMedia, decodeImage, encodeImage, type OutputFormat, readHeader, resizeTo } from './media.js';
import { jobMemory, jobPixels, MemoryBudget, type FrameSize, streamOf } from './memory.js';
import { removeOrphanSpools, Spool } from './spool.js';
import { type OnProgress, streamStack } from './stream.js';
import { type Quality, scoreQuality } from './quality.js';
import type { ObjectStore } from './storage.js';

export type { BlendType, EngineBlendType };
export type { BlendProgress, OnProgress } from './stream.js';

/** A job's work, with every default already resolved. */
export interface BlendSpec {
  images: string[];
  blendType: BlendType;
  align: boolean;
  preserveBackground: boolean;
  /** Count each frame of a mean or exposure fusion only where it agrees with the reference (engine/deghost/). */
  deghost: boolean;
  outputFormat: OutputFormat;
}

export interface BlendResult {
  image: Buffer;
  format: OutputFormat;
  width: number;
  height: number;
  blendTypeUsed: EngineBlendType;
  autoReason: string | null;
  quality: Quality;
  /** How each frame was brought onto frame 0; null when the job did not align. */
  alignment: FrameAlignment[] | null;
  /** Milliseconds spent in each stage. */
  stages: Record<string, number>;
}

/** What a client is told of a frame's alignment (align/align.ts FrameReport). */
export type FrameAlignment = Pick<FrameReport, 'index' | 'method' | 'shiftPx' | 'confidence'>;

/**
 * A frame whose line-up check finds it related to frame 0 (align/align.ts's correlation for that) and
 * off by at most a thumbnail pixel is almost always left unwarped: its mask is made before
 * alignment has decided. A wrong guess costs one segmentation more, not a different result.
 */
const RELATED_CORRELATION = 0.5;
const LIKELY_UNWARPED_DRIFT = 1;

/** What was measured on the frames before alignment: their thumbnails, statistics and block correlations with frame 0 (frames 1..; none without alignment). */
interface Measured {
  frames: RgbImage[];
  thumbnails: Thumbnail[];
  stats: Array<Promise<FrameStats>>;
  /** Frame k + 1's, measured once alignment has left it as it is; null for a frame it warped, or that it has not decided yet. */
  correlations: Array<Promise<number> | null>;
}

const noProgress: OnProgress = () => {};

/** A job's images as fetched, headers read, within the job pixel budget. */
export interface FetchedImages {
  /**
   * Each image's bytes or, for a streaming job (memory.ts, `streamOf`), the file of the job's
   * spool they were written to, so that a long stack's compressed bytes are never all in memory.
   */
  sources: Array<Buffer | string>;
  /** The job's pixels (memory.ts, `jobPixels`). */
  pixels: number;
  /** The job's scratch on disk (streaming jobs); null for the others. */
  spool: Spool | null;
  /** Removes the spool, once the job is over (again: nothing). */
  discard(): Promise<void>;
}

/** Time without a job after which the engine's kept buffers are given back (engine/image/buffers.ts). */
const BUFFERS_IDLE_MS = 30_000;

/** Images a streaming job fetches at once: its bytes go to disk, so more at once would only add memory. */
const STREAM_FETCHES = 4;

/** Runs the work it is given with at most `slots` at once, the others waiting in the order given. */
function limiter(slots: number): <T>(work: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (work) => {
    if (active < slots) active++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      // the slot passes straight to the next in line
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** `work`, marked as handled: a job that fails early leaves it unawaited, which must not be an unhandled rejection. */
function handled<T>(work: Promise<T>): Promise<T> {
  work.catch(() => {});
  return work;
}

/**
 * The blend engine of one process: fetch, decode, align, blend, score and encode, with pixel
 * work on a fixed pool of worker threads (never on the event loop).
 */
export class BlendEngine {
  private readonly pool: WorkerPool;
  /** Large buffers kept from job to job: at most a job's share of the memory budget, dropped when idle (docs/blend.md, "Memory"). */
  readonly buffers: BufferPool;
  /** This process's blend memory (memory.ts): jobs wait for their estimate to fit. */
  readonly memory: MemoryBudget;
  /** The spool directories of processes that died, removed as the engine starts (spool.ts): their names. */
  readonly orphansRemoved: Promise<string[]>;

  constructor(
    private readonly limits: BlendLimits,
    private readonly policy: AddressPolicy,
    /** The server's own address: images under its `/samples/` are read from disk (samples.ts). */
    private readonly publicUrl: string,
    /** Where uploaded images are read from (fetcher.ts); null: a job names URLs only. */
    private readonly store: ObjectStore | null = null,
  ) {
    configureMedia(limits.threads);
    this.pool = new WorkerPool(limits.threads);
    this.memory = new MemoryBudget(limits.memoryBytes);
    this.buffers = new BufferPool(Math.floor(limits.memoryBytes / limits.concurrency), BUFFERS_IDLE_MS);
    this.orphansRemoved = removeOrphanSpools();
  }

  /**
   * Runs a job whose images `fetch` has brought (or fetches them itself): decodes, aligns, blends,
   * scores and encodes. A caller that shares the process with other jobs first waits for its
   * memory (`admit`). Once `signal` aborts, the job's pixel work stops (threads/pool.ts, `forJob`)
   * and the run fails with the signal's reason; a job that fails stops the rest of its work the
   * same way. Either way the run settles only when none of its tasks runs any more, so the memory
   * it held is free. `onProgress` hears of each stage and frame done (BlendProgress); a streaming
   * job (stream.ts) of each frame it uses and of its encoding. The job's large buffers come from
   * its arena and return to `buffers` once it has settled and its result is encoded.
   */
  run(spec: BlendSpec, fetched?: FetchedImages, signal = new AbortController().signal, onProgress = noProgress): Promise<BlendResult> {
    return this.buffers.run(() => this.runJob(spec, fetched, signal, onProgress));
  }

  private async runJob(spec: BlendSpec, fetched: FetchedImages | undefined, signal: AbortSignal, onProgress: OnProgress): Promise<BlendResult> {
    const failed = new AbortController();
    const stopped = AbortSignal.any([signal, failed.signal]);
    const pool = this.pool.forJob(stopped);
    // Images this run fetched itself are its own to discard; a caller's are the caller's.
    let own: FetchedImages | null = null;
    try {
      const images = fetched ?? (own = await this.fetch(spec, onProgress));
      const result = images.spool
        ? await this.stream(pool, spec, images.sources, images.spool, stopped, onProgress)
        : await this.blend(pool, spec, images.sources as Buffer[], onProgress);
      signal.throwIfAborted();
      return result;
    } catch (err) {
      // Whatever failed first once the job was stopped, the job failed for being stopped.
      const reason: unknown = signal.aborted ? signal.reason : err;
      failed.abort(reason);
      throw reason;
    } finally {
      await pool.settled();
      await own?.discard();
      // Give this job's frames back now (threads/gc.ts says why).
      await this.collectGarbage();
    }
  }

  /** A streaming job (stream.ts): its frames decoded, aligned and used one at a time, then its result scored and encoded. */
  private async stream(pool: WorkerPool, spec: BlendSpec, sources: Array<Buffer | string>, spool: Spool, signal: AbortSignal, onProgress?: OnProgress): Promise<BlendResult> {
    const started = performance.now();
    const type = resolveBlendType(spec.blendType) as EngineBlendType;
    const { result, quality, reports, stages } = await streamStack({ pool, limits: this.limits, type, align: spec.align, deghost: spec.deghost, sources, spool, signal, onProgress });
    const streamed = Math.round(performance.now() - started);
    onProgress?.({ stage: 'encoding', done: 0, total: 1 });
    const image = await encodeImage(result, spec.outputFormat);
    onProgress?.({ stage: 'encoding', done: 1, total: 1 });
    return {
      image,
      format: spec.outputFormat,
      width: result.width,
      height: result.height,
      blendTypeUsed: type,
      autoReason: null,
      quality,
      alignment: reports ? reports.map(({ index, method, shiftPx, confidence }) => ({ index, method, shiftPx, confidence })) : null,
      stages: { ...stages, encode: Math.round(performance.now() - started - streamed) },
    };
  }

  /**
   * Every image of the job, fetched, with its header read (nothing decoded yet), within the job
   * pixel budget. A job whose first image alone shows it too large (frames × the first frame's
   * pixels, or its streamed count for a type that can stream) is refused then, without waiting for
   * the others. A long stack's images (memory.ts `streamOf`) are fetched STREAM_FETCHES at a time
   * and each written to the job's spool as it arrives; once one fails, those not started yet are
   * not fetched. A short stack of a type that can stream is fetched into memory and held, unless
   * its frames together exceed the job pixel budget: then it streams as a long stack would, its
   * images written to a spool made then. `onProgress` hears of each image fetched.
   */
  async fetch(spec: BlendSpec, onProgress = noProgress): Promise<FetchedImages> {
    const total = spec.images.length;
    let done = 0;
    onProgress({ stage: 'fetching', done, total });
    // A long stack fetches a few images at a time and writes each to its spool; the others fetch every image at once.
    const streaming = streamOf(spec.blendType, spec.preserveBackground, total) !== null;
    const canStream = streamOf(spec.blendType, spec.preserveBackground) !== null;
    const spool = streaming ? await Spool.create() : null;
    const slot = limiter(streaming ? STREAM_FETCHES : spec.images.length);
    let failed = false;
    const fetchOne = (url: string, i: number) =>
      slot(async () => {
        // once one has failed, the ones still waiting are not worth fetching (their failure is never the one reported: it names a later image)
        if (failed) throw new Error('an earlier image failed');
        try {
          const bytes = await fetchImage(url, i, this.limits, this.policy, this.publicUrl, this.store);
          const size = await readHeader(bytes, i, this.limits.maxPixels);
          onProgress({ stage: 'fetching', done: ++done, total });
          return { source: spool ? await spool.write(`image-${i}`, bytes) : bytes, size };
        } catch (err) {
          failed = true;
          throw err;
        }
      });
    const fetching = spec.images.map((url, i) => handled(fetchOne(url, i)));
    const tooLargeAlready = handled(
      fetching[0]!.then((first) => {
        this.checkJobPixels(spec.images.map(() => first.size), canStream);
        return new Promise<never>(() => {});
      }),
    );
    try {
      const fetched = await Promise.race([firstFailureInOrder(fetching), tooLargeAlready]);
      const sizes = fetched.map((f) => f.size);
      const sources = fetched.map((f) => f.source);
      if (!streaming && canStream && jobPixels(sizes) > this.limits.maxJobPixels) {
        // Too large to hold: streamed if it fits so (refused here otherwise, before any spool
        // exists), its images written to a spool as a long stack's are, so that its memory is
        // what a streaming job's estimate counts.
        const pixels = this.checkJobPixels(sizes, true);
        const late = await Spool.create();
        try {
          const files = await Promise.all(sources.map((bytes, i) => late.write(`image-${i}`, bytes as Buffer)));
          return { sources: files, pixels, spool: late, discard: () => late.discard() };
        } catch (err) {
          await late.discard().catch(() => {});
          throw err;
        }
      }
      return { sources, pixels: this.checkJobPixels(sizes, streaming), spool, discard: () => spool?.discard() ?? Promise.resolve() };
    } catch (err) {
      failed = true;
      if (spool) {
        // The fetches still running write into the spool: it is removed once they have ended (each is
        // bounded by the fetch time-out, and none starts any more), and its removal never replaces
        // the refusal the client must hear.
        await Promise.allSettled(fetching);
        await spool.discard().catch(() => {});
      }
      throw err;
    }
  }

  /**
   * Waits until the job's memory estimate fits beside the jobs this process is running
   * (memory.ts); resolves to the function that gives it back, once the job is over.
   */
  admit(spec: BlendSpec, fetched: FetchedImages, signal?: AbortSignal): Promise<() => void> {
    // a job with a spool streams, whatever its length (fetch)
    const frames = fetched.spool ? Infinity : spec.images.length;
    return this.memory.acquire(jobMemory(spec.blendType, spec.preserveBackground, fetched.pixels, this.limits.medianBandBytes, frames), signal);
  }

  /** The job's pixels (memory.ts; a streaming job's: its largest frame's), or `job_too_large` when they exceed the budget. */
  private checkJobPixels(sizes: FrameSize[], streaming: boolean): number {
    const pixels = jobPixels(sizes, streaming);
    if (pixels > this.limits.maxJobPixels) {
      const { width, height } = sizes[0]!;
      throw new BlendFailure(
        'job_too_large',
        streaming
          ? `the job's frames are ${pixels} pixels each (each frame counts at least the ${width}×${height} of the first), more than the job limit of ${this.limits.maxJobPixels}: send smaller images`
          : `the job's ${sizes.length} images make ${pixels} pixels (each frame counts at least the ${width}×${height} of the first), more than the job limit of ${this.limits.maxJobPixels}: send fewer or smaller images`,
      );
    }
    return pixels;
  }

  /** A full collection in every thread and this one: a buffer is freed once no thread holds it. */
  private async collectGarbage(): Promise<void> {
    // The threads collect while this one does.
    const threads = this.pool.everyThread('collectGarbage').catch(() => {});
    collectGarbage();
    await threads;
  }

  private async blend(pool: WorkerPool, spec: BlendSpec, images: Buffer[], onProgress: OnProgress): Promise<BlendResult> {
    const total = images.length;
    // A frame is lined up once decoded and, when the job aligns, once alignment is done with it.
    let lined = 0;
    const frameLinedUp = () => onProgress({ stage: 'aligning', done: ++lined, total });
    onProgress({ stage: 'aligning', done: 0, total });
    const stages: Record<string, number> = {};
    let mark = performance.now();
    const stage = (name: string) => {
      const now = performance.now();
      stages[name] = Math.round(now - mark);
      mark = now;
    };

    // Every image is decoded at once; each frame's thumbnail, statistics and line-up check are
    // made in the pool's threads as soon as it is decoded, while libvips decodes the rest. Work
    // on a frame whose image fails is dropped: the failure is reported in image order once every
    // image has settled.
    const decoding = images.map((bytes, i) => decodeImage(bytes, i, this.limits.maxPixels));
    const framing = decoding.map((frame, i) =>
      i === 0 ? frame : handled(Promise.all([decoding[0]!, frame]).then(([first, f]) => resizeTo(f, first.width, first.height))),
    );
    if (!spec.align) framing.forEach((frame) => void frame.then(frameLinedUp, () => {}));
    const thumbnailing = framing.map((frame) => handled(frame.then((f) => makeThumbnail(pool, f, spec.align))));
    const measuring = thumbnailing.map((thumbnail) => handled(thumbnail.then((t) => this.stats(pool, t.rgb))));
    const lineUps = spec.align ? checkLineUps(pool, framing[0]!, thumbnailing.map((t) => t.then((x) => x.grey!))) : null;
    if (lineUps) [lineUps.reference as Promise<unknown>, ...lineUps.checks].forEach(handled);
    // The score's correlation of each frame with frame 0: of a frame alignment leaves as it is,
    // measured as soon as alignment says so (at once for a frame its line-up check finds lined up,
    // most frames of a tripod set), while other frames are still aligned; of a frame it warps, on
    // the warped thumbnail only (score).
    const correlating: Array<Promise<number> | null> = images.slice(1).map(() => null);
    const frameAligned = (index: number, warped: boolean) => {
      frameLinedUp();
      if (index === 0 || warped) return;
      correlating[index - 1] = handled(
        Promise.all([thumbnailing[0]!, thumbnailing[index]!, measuring[0]!, measuring[index]!]).then(([first, t, firstStats, stats]) =>
          pool.run('blockCorrelation', [first.rgb.data, t.rgb.data, t.rgb.width, t.rgb.height, firstStats.noise, stats.noise]),
        ),
      );
    };
    // A composite (or preserveBackground) needs every frame's person mask, and most frames keep
    // their pixels through alignment: each frame's mask is made as soon as the frame is decoded
    // (without alignment) or its line-up check finds it (nearly) lined up, while the others are
    // still decoded and aligned. A frame alignment then warps is segmented again below; one
    // thought to move but left as it is, once alignment has said so.
    const early = spec.blendType === 'composite' || spec.preserveBackground ? this.earlyMasks(pool, framing, lineUps) : null;
    const decoded = await firstFailureInOrder(decoding);
    const { width, height } = decoded[0]!;
    const frames = await Promise.all(framing);
    stage('decode');

    // One set of thumbnails serves `auto`, alignment and the score (image/thumbnails.ts).
    const thumbnails = await Promise.all(thumbnailing);
    stage('thumbnails');

    let blendTypeUsed: EngineBlendType;
    let autoReason: string | null = null;
    if (spec.blendType === 'auto') {
      const choice = chooseBlendType(await Promise.all(measuring));
      blendTypeUsed = choice.type;
      autoReason = choice.reason;
      stage('choose');
    } else {
      blendTypeUsed = resolveBlendType(spec.blendType) as EngineBlendType;
    }

    const withMasks = blendTypeUsed === 'composite' || spec.preserveBackground;
    // Frame 0 is alignment's reference and never moves: its mask is made while the others are aligned.
    const firstMask = withMasks ? (early?.first ?? handled(this.mask(pool, frames[0]!))) : null;

    let aligned = frames;
    // the warped frames' thumbnails, made as they were warped; null for a frame left as it is
    let warpedThumbnails: Array<RgbImage | null> = frames.map(() => null);
    let frameAlignment: FrameAlignment[] | null = null;
    if (spec.align) {
      const greys = thumbnails.map((t) => t.grey!);
      const alignment = await alignFrames(pool, frames, greys, lineUps!, frameAligned).catch((err: Error & { code?: string; index?: number }) => {
        if (err.code !== 'alignment_failed') throw err;
        throw new BlendFailure('alignment_failed', err.message, err.index ?? null);
      });
      aligned = alignment.frames;
      warpedThumbnails = alignment.thumbnails;
      frameAlignment = alignment.frameReports.map(({ index, method, shiftPx, confidence }) => ({ index, method, shiftPx, confidence }));
      stage('align');
    }

    // Thumbnails of the aligned frames, for deghosting and the score: a frame alignment left as it
    // was keeps the one made on decoding; a warped frame has the one made as it was warped.
    const alignedThumbnails = warpedThumbnails.map((t, i) => t ?? thumbnails[i]!.rgb);

    onProgress({ stage: 'blending', done: 0, total });
    let result: RgbImage;
    let masks: Uint8Array[] | null = null;
    if (firstMask) {
      const others = aligned.slice(1).map(async (frame, k) => (frame === frames[k + 1] ? await early?.others[k] : null) ?? this.mask(pool, frame));
      masks = await Promise.all([firstMask, ...others]);
      stage('segment');
    }
    if (blendTypeUsed === 'composite') {
      result = await compositePeople(pool, aligned, masks!, spec.preserveBackground ? 'first' : 'median');
    } else {
      result = await blendFrames(pool, blendTypeUsed as PixelBlendType, aligned, spec.deghost, spec.deghost ? alignedThumbnails : undefined);
      if (masks) result = await keepBackground(pool, aligned[0]!, result, masks);
    }
    // The blend's scratch (weights, pyramids: up to ~500 MB) is given back before scoring and
    // encoding add theirs, so the two never add up. Per-pixel blends make none beyond their result.
    if (BLEND_REGISTRY[blendTypeUsed].largeScratch || masks) await this.collectGarbage();
    stage('blend');
    onProgress({ stage: 'blending', done: total, total });

    // Encoding runs on libvips' threads while scoring runs on the pool's: together, not in turn.
    onProgress({ stage: 'encoding', done: 0, total: 1 });
    const scoring = this.score(pool, { frames, thumbnails, stats: measuring, correlations: correlating }, alignedThumbnails, result, spec.align, BLEND_REGISTRY[blendTypeUsed].ghosting);
    const [quality, image] = await Promise.all([scoring, encodeImage(result, spec.outputFormat)]);
    onProgress({ stage: 'encoding', done: 1, total: 1 });
    stage('score+encode');
    return { image, format: spec.outputFormat, width, height, blendTypeUsed, autoReason, quality, alignment: frameAlignment, stages };
  }

  private mask(pool: WorkerPool, frame: RgbImage): Promise<Uint8Array> {
    return segmentPeople(pool, [frame]).then(([mask]) => mask!);
  }

  /**
   * Each frame's person mask, started while the job is still decoding and aligning: frame 0's and,
   * without alignment, every frame's as soon as it is decoded; with alignment, a frame's once its
   * line-up check expects alignment to leave it as it is (LIKELY_UNWARPED_DRIFT). Null for a
   * frame the check expects to move: its mask waits for its aligned pixels.
   */
  private earlyMasks(pool: WorkerPool, framing: Array<Promise<RgbImage>>, lineUps: LineUps | null): { first: Promise<Uint8Array>; others: Array<Promise<Uint8Array | null>> } {
    const [first, ...others] = framing;
    return {
      first: handled(first!.then((f) => this.mask(pool, f))),
      others: others.map((frame, k) =>
        handled(
          lineUps
            ? Promise.all([frame, lineUps.checks[k]!]).then(([f, check]) => {
                const stays = check.correlation >= RELATED_CORRELATION && check.drift <= LIKELY_UNWARPED_DRIFT;
                return stays ? this.mask(pool, f) : null;
              })
            : frame.then((f) => this.mask(pool, f)),
        ),
      ),
    };
  }

  private stats(pool: WorkerPool, frame: RgbImage): Promise<FrameStats> {
    return pool.run('frameStats', [frame.data, frame.width, frame.height]);
  }

  /**
   * Scores the result against the aligned frames, on their thumbnails (`small`): a frame that
   * alignment left as it was keeps what was measured on it before alignment; warped frames and the
   * result are measured anew.
   */
  private async score(pool: WorkerPool, before: Measured, small: RgbImage[], result: RgbImage, wasAligned: boolean, withGhosting: boolean): Promise<Quality> {
    const { thumbnails } = before;
    const smallResult = (await makeThumbnail(pool, result, false)).rgb;
    const { width, height } = smallResult;
    const pixels = width * height;
    const ghostingSums = withGhosting
      ? pool.all('ghostingSum', rowRanges(pixels, pool.size).map(([start, end]) => [small.map((f) => f.data), smallResult.data, start, end]))
      : null;
    const [inputs, resultStats] = await Promise.all([Promise.all(small.map((f, i) => (f === thumbnails[i]!.rgb ? before.stats[i]! : this.stats(pool, f)))), this.stats(pool, smallResult)]);
    let correlation: number | null = null;
    if (wasAligned) {
      const correlations = await Promise.all(
        small.slice(1).map((f, k) =>
          (f === thumbnails[k + 1]!.rgb ? before.correlations[k] : null) ??
          pool.run('blockCorrelation', [small[0]!.data, f.data, width, height, inputs[0]!.noise, inputs[k + 1]!.noise]),
        ),
      );
      correlation = correlations.reduce((sum, c) => sum + c, 0) / correlations.length;
    }
    const ghosting = ghostingSums ? (await ghostingSums).reduce((sum, s) => sum + s, 0) / pixels : null;
    return scoreQuality({ correlation, inputs, result: resultStats, ghosting });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

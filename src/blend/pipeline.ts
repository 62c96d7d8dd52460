import type { BlendLimits } from '../config.js';
import type { AddressPolicy } from '../net/safe-http.js';
import { chooseBlendType } from './choose.js';
import { alignFrames } from './engine/align.js';
import type { FrameStats } from './engine/analysis.js';
import { collectGarbage } from './engine/gc.js';
import { blendFrames, type PixelBlendType } from './engine/blend.js';
import { compositePeople, keepBackground } from './engine/composite.js';
import type { RgbImage } from './engine/image.js';
import { engineModule, WorkerPool } from './engine/pool.js';
import { segmentPeople } from './engine/segment.js';
import { makeThumbnails, type Thumbnail } from './engine/thumbnails.js';
import { BlendFailure, firstFailureInOrder } from './failures.js';
import { fetchImage } from './fetcher.js';
import { configureMedia, decodeImage, encodeImage, type OutputFormat, resizeTo } from './media.js';
import { type Quality, scoreQuality } from './quality.js';

export const BLEND_TYPES = ['auto', 'mean', 'average', 'median', 'lighten', 'darken', 'exposure', 'focus', 'composite', 'multiply', 'screen', 'overlay', 'soft-light'] as const;
export type BlendType = (typeof BLEND_TYPES)[number];
export type EngineBlendType = Exclude<BlendType, 'auto' | 'average'>;

/** A job's work, with every default already resolved. */
export interface BlendSpec {
  images: string[];
  blendType: BlendType;
  align: boolean;
  preserveBackground: boolean;
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
  /** Milliseconds spent in each stage. */
  stages: Record<string, number>;
}

const GHOSTING_TYPES = new Set<EngineBlendType>(['mean', 'median', 'composite']);

/**
 * The blend engine of one process: fetch, decode, align, blend, score and encode, with pixel
 * work on a fixed pool of worker threads (never on the event loop).
 */
export class BlendEngine {
  private readonly pool: WorkerPool;

  constructor(
    private readonly limits: BlendLimits,
    private readonly policy: AddressPolicy,
  ) {
    configureMedia(limits.threads);
    this.pool = new WorkerPool(limits.threads);
  }

  async run(spec: BlendSpec): Promise<BlendResult> {
    try {
      return await this.blend(spec);
    } finally {
      // Give this job's frames back now (gc.ts says why).
      await this.collectGarbage();
    }
  }

  /** A full collection in every thread and this one: a buffer is freed once no thread holds it. */
  private async collectGarbage(): Promise<void> {
    await this.pool.everyThread(engineModule('gc'), 'collectGarbage').catch(() => {});
    collectGarbage();
  }

  private async blend(spec: BlendSpec): Promise<BlendResult> {
    const stages: Record<string, number> = {};
    let mark = performance.now();
    const stage = (name: string) => {
      const now = performance.now();
      stages[name] = Math.round(now - mark);
      mark = now;
    };

    // Each image is decoded as soon as it has arrived, while the others are still on their way.
    const decoded = await firstFailureInOrder(spec.images.map((url, i) => fetchImage(url, i, this.limits, this.policy).then((bytes) => decodeImage(bytes, i, this.limits.maxPixels))));
    const { width, height } = decoded[0]!;
    const frames = await Promise.all(decoded.map((f) => resizeTo(f, width, height)));
    stage('fetch+decode');

    // One set of thumbnails serves `auto`, alignment and the score (thumbnails.ts).
    const thumbnails = await makeThumbnails(this.pool, frames, spec.align);
    stage('thumbnails');

    let blendTypeUsed: EngineBlendType;
    let autoReason: string | null = null;
    if (spec.blendType === 'auto') {
      const choice = chooseBlendType(await this.stats(thumbnails.map((t) => t.rgb)));
      blendTypeUsed = choice.type;
      autoReason = choice.reason;
      stage('choose');
    } else {
      blendTypeUsed = spec.blendType === 'average' ? 'mean' : spec.blendType;
    }

    const withMasks = blendTypeUsed === 'composite' || spec.preserveBackground;
    // Frame 0 is alignment's reference and never moves: its mask is made while the others are aligned.
    const firstMask = withMasks ? segmentPeople(this.pool, frames.slice(0, 1)) : null;
    firstMask?.catch(() => {}); // awaited below, unless alignment fails first

    let aligned = frames;
    if (spec.align) {
      const greys = thumbnails.map((t) => t.grey!);
      const alignment = await alignFrames(this.pool, frames, greys).catch((err: Error & { code?: string; index?: number }) => {
        if (err.code !== 'alignment_failed') throw err;
        throw new BlendFailure('alignment_failed', err.message, err.index ?? null);
      });
      aligned = alignment.frames;
      stage('align');
    }

    let result: RgbImage;
    let masks: Uint8Array[] | null = null;
    if (firstMask) {
      masks = [...(await firstMask), ...(await segmentPeople(this.pool, aligned.slice(1)))];
      stage('segment');
    }
    if (blendTypeUsed === 'composite') {
      result = await compositePeople(this.pool, aligned, masks!, spec.preserveBackground ? 'first' : 'median');
    } else {
      result = await blendFrames(this.pool, blendTypeUsed as PixelBlendType, aligned);
      if (masks) result = await keepBackground(this.pool, aligned[0]!, result, masks);
    }
    // The blend's scratch (weights, pyramids: up to ~500 MB) is given back before scoring and
    // encoding add theirs, so the two never add up.
    await this.collectGarbage();
    stage('blend');

    // Encoding runs on libvips' threads while scoring runs on the pool's: together, not in turn.
    const scoring = this.score(frames, thumbnails, aligned, result, spec.align, GHOSTING_TYPES.has(blendTypeUsed));
    const [quality, image] = await Promise.all([scoring, encodeImage(result, spec.outputFormat)]);
    stage('score+encode');
    return { image, format: spec.outputFormat, width, height, blendTypeUsed, autoReason, quality, stages };
  }

  private stats(frames: RgbImage[]): Promise<FrameStats[]> {
    return this.pool.all<FrameStats>(
      engineModule('analysis'),
      'frameStats',
      frames.map((f) => [f.data, f.width, f.height]),
    );
  }

  /**
   * Scores the result against the aligned frames, on thumbnails: a frame that alignment left as
   * it was keeps the thumbnail made before alignment; warped frames and the result get new ones.
   */
  private async score(frames: RgbImage[], thumbnails: Thumbnail[], aligned: RgbImage[], result: RgbImage, wasAligned: boolean, withGhosting: boolean): Promise<Quality> {
    const fresh = [result, ...aligned.filter((f, i) => f !== frames[i])];
    const made = (await makeThumbnails(this.pool, fresh, false)).map((t) => t.rgb);
    const smallResult = made.shift()!;
    const small = aligned.map((f, i) => (f === frames[i] ? thumbnails[i]!.rgb : made.shift()!));
    const { width, height } = smallResult;
    const analysis = engineModule('analysis');
    const [inputs, [resultStats], ghosting] = await Promise.all([
      this.stats(small),
      this.stats([smallResult]),
      withGhosting ? this.pool.run<number>(analysis, 'ghosting', [small.map((f) => f.data), smallResult.data, width * height]) : Promise.resolve(null),
    ]);
    let correlation: number | null = null;
    if (wasAligned) {
      const args = small.slice(1).map((f, i) => [small[0]!.data, f.data, width, height, inputs[0]!.noise, inputs[i + 1]!.noise]);
      const correlations = await this.pool.all<number>(analysis, 'blockCorrelation', args);
      correlation = correlations.reduce((sum, c) => sum + c, 0) / correlations.length;
    }
    return scoreQuality({ correlation, inputs, result: resultStats!, ghosting });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

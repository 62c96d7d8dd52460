import type { BlendLimits } from '../config.js';
import { AUTO_CHOICES } from './choose.js';
import { BLEND_REGISTRY, type BlendType, type EngineBlendType, resolveBlendType } from './engine/registry.js';

/**
 * What a blend job holds in memory, and how much of it a process lets run at once.
 *
 * A job's pixels are known from the images' headers before anything is decoded: each frame is
 * decoded at its own size and then brought to the first frame's, so a frame costs the larger of
 * its own and the first frame's pixel count. A job that holds every frame counts them all; a
 * streaming job (`streamOf`: folded one frame at a time, a median by bands, or an exposure or focus stack blended in passes over its spool) holds a few
 * frames at a time whatever their number, and counts its largest frame alone (`jobPixels`). The
 * job pixel budget (`MONTAGE_BLEND_MAX_JOB_PIXELS`) refuses more; below it, a job's memory is
 * estimated from its pixels and blend type as measured (`jobMemory`), and a process admits jobs
 * while their estimates fit in `MONTAGE_BLEND_MEMORY` (`MemoryBudget`).
 */

/**
 * A job's peak memory is about JOB_BASE_BYTES plus its pixels times its blend type's
 * `bytesPerPixel` (engine/registry.ts): the job's share of the process's peak resident set (every
 * thread, libvips included), measured by `bench/blend-memory.mjs` at 15, 60 and 120 megapixels in
 * 5 and 10 frames, every frame shifted so that alignment warps it (docs/blend.md, "Memory"). The
 * base is what a job costs beyond its pixels (threads' scratch, libvips' buffers); the per-pixel
 * figures are the smallest that, with that base, cover every measurement of the type, rounded up.
 * `exposure` adds one byte a pixel to what was measured without deghosting: its full-size masks, a
 * byte a pixel of each frame that disagrees with the reference (engine/deghost/deghost.ts). A
 * `mean`, held or streamed, adds nothing: its masks stay on the agreement test's grid (~190 KB a
 * 12 MP frame) and are brought to full size a row at a time as they are used (point/stack-weighted.ts,
 * point/fold.ts), with about 30 bytes a column of scratch per running task (~120 KB at 4000 wide).
 */
export const JOB_BASE_BYTES = 200e6;

/** The estimate's bytes per pixel: `auto` may become any type it chooses; `preserveBackground` adds the segmentation of every frame that `composite` does, so it costs at least as much as either. */
function bytesPerPixel(blendType: BlendType, preserveBackground: boolean): number {
  const type = resolveBlendType(blendType);
  const own = Math.max(...(type === 'auto' ? AUTO_CHOICES : [type]).map((t) => BLEND_REGISTRY[t].bytesPerPixel));
  // With preserveBackground the type's own blend runs and every frame is segmented as well.
  return preserveBackground ? Math.max(own, BLEND_REGISTRY.composite.bytesPerPixel) : own;
}

export interface FrameSize {
  width: number;
  height: number;
}

/**
 * How a job of `frames` frames holds them (engine/registry.ts, `stream`): `auto` and
 * preserveBackground need every frame at once. A type that can stream holds a stack of up to
 * HELD_FRAMES frames and streams longer ones: both give the same bytes, and holding is faster
 * (frames decoded at once while the pool works, no spool, no passes over it; measured for five
 * 12 MP frames in one process, interleaved: a mean 1.36 s held against 2.74 s streamed, a median
 * 1.07 against 1.91 s, lighten 0.86 against 1.17 s, multiply 1.76 against 2.62 s) at a memory that
 * grows with the frames. A short stack whose frames together exceed the job pixel budget streams
 * as well (pipeline.ts `fetch`), so holding never refuses a job that streaming takes. Without
 * `frames`, the way of a job of any length (the type's image limit).
 */
export function streamOf(blendType: BlendType, preserveBackground: boolean, frames = Infinity): 'fold' | 'bands' | 'pyramid' | null {
  const type = resolveBlendType(blendType);
  if (type === 'auto' || preserveBackground) return null;
  const { stream } = BLEND_REGISTRY[type];
  return frames <= HELD_FRAMES ? null : stream;
}

/** The longest stack that is held rather than streamed: the most any held job took before stacks streamed (MONTAGE_BLEND_MAX_IMAGES' default). */
export const HELD_FRAMES = 10;

export type ImageLimits = Pick<BlendLimits, 'maxImages' | 'maxStreamingImages' | 'maxMedianImages' | 'maxPyramidImages'>;

/** The most images a job of this type may have, and the variable that sets it (docs/blend.md, "Limits"). */
export function imageLimit(limits: ImageLimits, blendType: BlendType, preserveBackground: boolean): { max: number; variable: string } {
  switch (streamOf(blendType, preserveBackground)) {
    case 'fold':
      return { max: limits.maxStreamingImages, variable: 'MONTAGE_BLEND_MAX_STREAMING_IMAGES' };
    case 'bands':
      return { max: limits.maxMedianImages, variable: 'MONTAGE_BLEND_MAX_MEDIAN_IMAGES' };
    case 'pyramid':
      return { max: limits.maxPyramidImages, variable: 'MONTAGE_BLEND_MAX_PYRAMID_IMAGES' };
    default:
      return { max: limits.maxImages, variable: 'MONTAGE_BLEND_MAX_IMAGES' };
  }
}

/** The most images any job may have: what the start schema takes before the type's own limit is checked. */
export function largestImageLimit(limits: ImageLimits): number {
  return Math.max(limits.maxImages, limits.maxStreamingImages, limits.maxMedianImages, limits.maxPyramidImages);
}

/**
 * Frames' worth of pixels a streaming job holds at once, whatever its frame count: the frames
 * decoded and aligned ahead (stream.ts, WINDOW), the one being used, and the accumulator or result.
 */
export const STREAM_HELD_FRAMES = 5;

/**
 * Pixels a job holds: each frame at the larger of its own and the first frame's size; a
 * streaming job (`streaming`) holds STREAM_HELD_FRAMES of its largest at most, whatever its
 * frame count.
 */
export function jobPixels(frames: FrameSize[], streaming = false): number {
  const reference = frames[0]!.width * frames[0]!.height;
  const held = frames.map((f) => Math.max(f.width * f.height, reference));
  return streaming ? Math.max(...held) * Math.min(held.length, STREAM_HELD_FRAMES) : held.reduce((sum, p) => sum + p, 0);
}

/**
 * The memory a job of `frames` frames is expected to hold at its peak, in bytes; a median by bands
 * adds the bytes its bands may take (`bandBytes`, MONTAGE_BLEND_MEDIAN_BAND_MEMORY).
 */
export function jobMemory(blendType: BlendType, preserveBackground: boolean, pixels: number, bandBytes = 0, frames = Infinity): number {
  const stream = streamOf(blendType, preserveBackground, frames);
  if (stream === null) return Math.ceil(JOB_BASE_BYTES + pixels * bytesPerPixel(blendType, preserveBackground));
  const perPixel = BLEND_REGISTRY[resolveBlendType(blendType) as EngineBlendType].streamBytesPerPixel!;
  return Math.ceil(JOB_BASE_BYTES + pixels * perPixel + (stream === 'bands' ? bandBytes : 0));
}

/**
 * The blend memory of one process: jobs reserve their estimate before they decode, and wait, in
 * the order they asked, while it does not fit beside the jobs already running. A job larger than
 * the whole budget runs alone rather than never. Nothing fails for want of memory; a waiting job
 * gives up its place only when its signal aborts (the process is stopping).
 */
export class MemoryBudget {
  private reserved = 0;
  private running = 0;
  private readonly waiting: Array<{ bytes: number; admit: () => void }> = [];

  constructor(readonly bytes: number) {}

  /** Resolves, once `bytes` fit, to the function that gives them back (call it once). */
  acquire(bytes: number, signal?: AbortSignal): Promise<() => void> {
    return new Promise((resolve, reject) => {
      const waiter = {
        bytes,
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          this.reserved += bytes;
          this.running += 1;
          let released = false;
          resolve(() => {
            if (released) return;
            released = true;
            this.reserved -= bytes;
            this.running -= 1;
            this.admitWaiting();
          });
        },
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(signal!.reason ?? new Error('aborted'));
        this.admitWaiting();
      };
      if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      this.admitWaiting();
    });
  }

  /** Admits waiting jobs in order while the first of them fits. */
  private admitWaiting(): void {
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      if (this.running > 0 && this.reserved + next.bytes > this.bytes) return;
      this.waiting.shift();
      next.admit();
    }
  }

  /** Bytes reserved by running jobs, and jobs waiting (for metrics and tests). */
  get state(): { reserved: number; running: number; waiting: number } {
    return { reserved: this.reserved, running: this.running, waiting: this.waiting.length };
  }
}

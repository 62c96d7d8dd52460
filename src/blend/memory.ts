import { AUTO_CHOICES } from './choose.js';
import { BLEND_REGISTRY, type BlendType, resolveBlendType } from './engine/registry.js';

/**
 * What a blend job holds in memory, and how much of it a process lets run at once.
 *
 * A job's pixels are known from the images' headers before anything is decoded: each frame is
 * decoded at its own size and then brought to the first frame's, so a frame costs the larger of
 * its own and the first frame's pixel count (`jobPixels`). The job pixel budget
 * (`MONTAGE_BLEND_MAX_JOB_PIXELS`) refuses more; below it, a job's memory is estimated from its
 * pixels and blend type as measured (`jobMemory`), and a process admits jobs while their
 * estimates fit in `MONTAGE_BLEND_MEMORY` (`MemoryBudget`).
 */

/**
 * A job's peak memory is about JOB_BASE_BYTES plus its pixels times its blend type's
 * `bytesPerPixel` (engine/registry.ts): the job's share of the process's peak resident set (every
 * thread, libvips included), measured by `bench/blend-memory.mjs` at 15, 60 and 120 megapixels in
 * 5 and 10 frames, every frame shifted so that alignment warps it (docs/blend.md, "Memory"). The
 * base is what a job costs beyond its pixels (threads' scratch, libvips' buffers); the per-pixel
 * figures are the smallest that, with that base, cover every measurement of the type, rounded up.
 * `mean` and `exposure` add one byte a pixel to what was measured without deghosting: its full-size
 * masks, a byte a pixel of each frame that disagrees with the reference (engine/deghost/deghost.ts).
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

/** Pixels a job holds: each frame at the larger of its own and the first frame's size. */
export function jobPixels(frames: FrameSize[]): number {
  const reference = frames[0]!.width * frames[0]!.height;
  return frames.reduce((sum, f) => sum + Math.max(f.width * f.height, reference), 0);
}

/** The memory a job is expected to hold at its peak, in bytes. */
export function jobMemory(blendType: BlendType, preserveBackground: boolean, pixels: number): number {
  return Math.ceil(JOB_BASE_BYTES + pixels * bytesPerPixel(blendType, preserveBackground));
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

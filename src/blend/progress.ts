import type { Logger } from '../logger.js';
import type { BlendProgress } from './pipeline.js';

export const PROGRESS_STAGES = ['fetching', 'aligning', 'blending', 'encoding'] as const;

/** What a job's status record says of its progress (BlendJobSchema's `progress`). */
export interface JobProgress {
  stage: BlendProgress['stage'];
  /** Share of the stage done, 0..1. */
  fraction: number;
  /** Frames done in the stage (all of them while encoding). */
  framesDone: number;
  framesTotal: number;
}

/** The engine's report (pipeline.ts) as the status record shows it, for a job of `frames` images. */
export function jobProgress(p: BlendProgress, frames: number): JobProgress {
  return {
    stage: p.stage,
    fraction: p.total > 0 ? Math.round((p.done / p.total) * 1000) / 1000 : 0,
    framesDone: p.stage === 'encoding' ? frames : p.done,
    framesTotal: frames,
  };
}

/** A job's progress once it completed: encoding done, every frame in. */
export const finalProgress = (frames: number): JobProgress => jobProgress({ stage: 'encoding', done: 1, total: 1 }, frames);

/** Writes at most one report per WRITE_GAP_MS within a stage; a new stage is written at once. */
const WRITE_GAP_MS = 250;

/**
 * Keeps a job's row up to date with its progress without slowing the engine: `report` (the
 * engine's onProgress) only decides whether to write and never waits; one write is in flight at a
 * time, and a report made meanwhile is written after it (the latest only). A failed write is
 * logged, never the job's failure.
 */
export class ProgressWriter {
  private lastStage: string | null = null;
  private lastAt = -Infinity;
  private writing: Promise<void> | null = null;
  private next: JobProgress | null = null;

  constructor(
    private readonly frames: number,
    private readonly write: (progress: JobProgress) => Promise<void>,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  readonly report = (p: BlendProgress): void => {
    const now = performance.now();
    if (p.stage === this.lastStage && now - this.lastAt < WRITE_GAP_MS) return;
    this.lastStage = p.stage;
    this.lastAt = now;
    this.next = jobProgress(p, this.frames);
    this.writing ??= this.drain();
  };

  /** Resolves once no write is in flight (before the job's outcome is recorded). */
  async flush(): Promise<void> {
    await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.next) {
      const progress = this.next;
      this.next = null;
      await this.write(progress).catch((err) => this.log.warn({ err }, 'could not record blend progress'));
    }
    this.writing = null;
  }
}

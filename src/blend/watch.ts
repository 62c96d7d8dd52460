import type { Db } from '../db/database.js';
import type { Logger } from '../logger.js';
import { type WatchedJob, watchedJobs } from './blend.repository.js';

export type { WatchedJob } from './blend.repository.js';

/** How often the followed rows are read: the bound on how late a cancel or a progress step is seen. */
export const WATCH_MS = 200;
const READ_BATCH = 500;

/**
 * Follows blend jobs that may be worked, or cancelled, by another process: one read of every
 * followed row per WATCH_MS, however many followers (a job's worker waiting for a cancel, event
 * streams of its progress), and none while nobody follows. Each follower hears the row's state at
 * every read (null once the row is gone) and decides for itself what changed. Reading the rows
 * works on both engines and cannot miss a change the way a lost notification can; the cost is one
 * indexed read per interval per process.
 */
export class BlendJobWatch {
  private readonly followers = new Map<string, Set<(job: WatchedJob | null) => void>>();
  private timer: NodeJS.Timeout | null = null;
  private reading = false;

  constructor(
    private readonly db: Db,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  /** Calls `listener` with the job's state at each read until the returned function is called. */
  follow(jobId: string, listener: (job: WatchedJob | null) => void): () => void {
    let set = this.followers.get(jobId);
    if (!set) this.followers.set(jobId, (set = new Set()));
    set.add(listener);
    this.timer ??= setInterval(() => void this.read(), WATCH_MS);
    this.timer.unref();
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.followers.get(jobId) === set) this.followers.delete(jobId);
      if (this.followers.size === 0) this.stop();
    };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async read(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const ids = [...this.followers.keys()];
      for (let i = 0; i < ids.length; i += READ_BATCH) {
        const batch = ids.slice(i, i + READ_BATCH);
        const rows = new Map((await watchedJobs(this.db, batch)).map((row) => [row.id, row]));
        for (const id of batch) {
          for (const listener of this.followers.get(id) ?? []) {
            try {
              listener(rows.get(id) ?? null);
            } catch (err) {
              this.log.warn({ err, jobId: id }, 'a blend job follower failed');
            }
          }
        }
      }
    } catch (err) {
      this.log.warn({ err }, 'could not read followed blend jobs');
    } finally {
      this.reading = false;
    }
  }
}

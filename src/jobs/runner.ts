import os from 'node:os';
import type { Db, Engine } from '../db/database.js';
import { newId } from '../ids.js';
import type { Logger } from '../logger.js';
import { claimJobs, CompletionBatcher, extendLease, failJob, type JobRow, releaseJob, retryJob } from './queue.js';
import { onJobsQueued } from './signal.js';

/** How long a failed attempt waits before the next: 2 s after the first, doubling each time. */
export const retryDelayMs = (attempts: number) => 1000 * 2 ** attempts;

export type JobOutcome = { status: 'done' } | { status: 'retry'; delayMs: number; error: string } | { status: 'failed'; error: string };

export interface JobHandler {
  /** Jobs of this kind worked at once by one process. */
  concurrency: number;
  /**
   * Works one job. `handedBack` is aborted when the runner stops and hands the job back to the
   * queue before the handler finished: from then on the job is not this worker's, so the handler
   * must not settle its own rows (another worker will run the job again).
   */
  work(job: JobRow, handedBack: AbortSignal): Promise<JobOutcome>;
  /** Records the failure where the handler's own rows need it, when the queue gives a job up: its last worker died holding it, or its last attempt threw. */
  giveUp?(job: JobRow, error: string): Promise<void>;
}

export interface RunnerOptions {
  leaseMs: number;
  /** How often an idle runner looks for due jobs. */
  pollMs?: number;
  log: Pick<Logger, 'warn' | 'error'>;
}

/**
 * Works jobs from the queue: claims due jobs with a lease up to each kind's concurrency,
 * renews the lease while a job runs, settles it (done, retry later, failed) and, on stop,
 * waits for jobs in flight up to a grace period and hands the rest back to the queue.
 */
export class JobRunner {
  readonly workerId = `${os.hostname()}:${process.pid}:${newId('queuedJob').slice(-8)}`;
  private readonly active = new Map<string, { job: JobRow; done: Promise<void>; renew: NodeJS.Timeout; handedBack: AbortController }>();
  private readonly perKind = new Map<string, number>();
  private running = false;
  private wakeUp: (() => void) | null = null;
  /** A wake that came while the loop was claiming: the loop claims again instead of sleeping. */
  private wakePending = false;
  private loop: Promise<void> | null = null;
  private stopListening: (() => void) | null = null;
  private readonly completions: CompletionBatcher;

  constructor(
    private readonly db: Db,
    private readonly engine: Engine,
    private readonly handlers: Record<string, JobHandler>,
    private readonly options: RunnerOptions,
  ) {
    this.completions = new CompletionBatcher(db, this.workerId);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // Jobs this process queues are claimed at once; others' at the next poll.
    this.stopListening = onJobsQueued(() => this.wake());
    this.loop = this.run();
  }

  /** Looks for work now instead of at the next poll. */
  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.wakePending = true;
  }

  private async run(): Promise<void> {
    const pollMs = this.options.pollMs ?? 100;
    while (this.running) {
      this.wakePending = false;
      let claimed = 0;
      try {
        claimed = await this.claim();
      } catch (err) {
        this.options.log.warn({ err }, 'could not claim jobs');
      }
      if (!this.running) break;
      // Nothing to do, and nobody said otherwise while the claim ran: sleep until the poll or a wake.
      if (claimed === 0 && !this.wakePending) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollMs);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeUp = null;
      }
    }
  }

  /** Claims come in batches (a quarter of a kind's slots at least): one claim query per job would cost more than the jobs. */
  private batchOf(handler: JobHandler): number {
    return Math.max(1, Math.ceil(handler.concurrency / 4));
  }

  private async claim(): Promise<number> {
    let claimed = 0;
    for (const [kind, handler] of Object.entries(this.handlers)) {
      const running = this.perKind.get(kind) ?? 0;
      const free = handler.concurrency - running;
      if (free <= 0 || (running > 0 && free < this.batchOf(handler))) continue;
      const jobs = await claimJobs(this.db, this.engine, [kind], this.workerId, free, this.options.leaseMs);
      for (const job of jobs) this.begin(kind, handler, job);
      claimed += jobs.length;
    }
    return claimed;
  }

  private begin(kind: string, handler: JobHandler, job: JobRow): void {
    this.perKind.set(kind, (this.perKind.get(kind) ?? 0) + 1);
    const renew = setInterval(() => {
      extendLease(this.db, job, this.options.leaseMs).catch((err) => this.options.log.warn({ err, jobId: job.id }, 'could not extend a job lease'));
    }, Math.max(1000, Math.floor(this.options.leaseMs / 3)));
    const handedBack = new AbortController();
    const done = this.work(handler, job, handedBack.signal).finally(() => {
      clearInterval(renew);
      this.active.delete(job.id);
      const running = (this.perKind.get(kind) ?? 1) - 1;
      this.perKind.set(kind, running);
      if (running === 0 || handler.concurrency - running === this.batchOf(handler)) this.wake();
    });
    this.active.set(job.id, { job, done, renew, handedBack });
  }

  private async work(handler: JobHandler, job: JobRow, handedBack: AbortSignal): Promise<void> {
    let outcome: JobOutcome;
    if (job.attempts > job.maxAttempts) {
      outcome = { status: 'failed', error: `gave up after ${job.maxAttempts} attempts (the last worker died holding it)` };
      await handler.giveUp?.(job, outcome.error).catch((err) => this.options.log.error({ err, jobId: job.id }, 'could not record a job given up'));
    } else {
      try {
        outcome = await handler.work(job, handedBack);
      } catch (err) {
        // Handed back (a stopping process closes what its handlers use): not this worker's to settle.
        if (handedBack.aborted) return;
        this.options.log.error({ err, jobId: job.id, kind: job.kind }, 'job handler failed');
        const error = err instanceof Error ? err.message : String(err);
        outcome = job.attempts < job.maxAttempts ? { status: 'retry', delayMs: retryDelayMs(job.attempts), error } : { status: 'failed', error };
        // The handler never settled its own rows (a blend job would stay "processing" for ever).
        if (outcome.status === 'failed') {
          await handler.giveUp?.(job, error).catch((giveUpErr) => this.options.log.error({ err: giveUpErr, jobId: job.id }, 'could not record a job given up'));
        }
      }
    }
    if (handedBack.aborted) return;
    try {
      if (outcome.status === 'done') await this.completions.complete(job);
      else if (outcome.status === 'retry') await retryJob(this.db, job, outcome.delayMs, outcome.error);
      else await failJob(this.db, job, outcome.error);
    } catch (err) {
      // The lease will expire and another worker will take the job over.
      this.options.log.error({ err, jobId: job.id }, 'could not settle a job');
    }
  }

  /** Stops claiming, lets jobs in flight finish for up to `graceMs`, then hands the rest back. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopListening?.();
    this.stopListening = null;
    this.wake();
    await this.loop;
    const inFlight = [...this.active.values()];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), graceMs)));
    await Promise.race([Promise.all(inFlight.map((a) => a.done)), timeout]);
    clearTimeout(timer);
    // Handed back: this worker no longer renews their leases (nor keeps the process alive for
    // them), and their handlers are told, so that finishing later settles nothing.
    await Promise.all(
      [...this.active.values()].map(({ job, renew, handedBack }) => {
        clearInterval(renew);
        handedBack.abort();
        return releaseJob(this.db, job).catch(() => {});
      }),
    );
  }

  get busy(): number {
    return this.active.size;
  }
}

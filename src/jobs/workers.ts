import type { Config } from '../config.js';
import type { DatabaseHandle, Db } from '../db/database.js';
import type { Logger } from '../logger.js';
import { JobRunner, type JobHandler } from './runner.js';
import { jobsQueued, listenForQueuedJobs } from './signal.js';

/** What a process works in the background, given by its composition (src/workers.ts). */
export interface BackgroundWork {
  /** The handler of each job kind. */
  handlers: Record<string, JobHandler>;
  /** Periodic clean-up, run in this order: each removes what has expired and says how many rows, by name. */
  sweeps: Record<string, (db: Db) => Promise<number>>;
  /** Called last on stop, once no job runs any more. */
  close(): Promise<void>;
}

export interface Workers {
  runner: JobRunner;
  /** Stops claiming, finishes or hands back jobs in flight within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const SWEEP_MS = 15 * 60_000;

/** Runs the job queue's handlers and the periodic clean-up of one process. */
export function runWorkers(handle: DatabaseHandle, config: Config, log: Logger, work: BackgroundWork): Workers {
  const runner = new JobRunner(handle.db, handle.engine, work.handlers, { leaseMs: config.jobLeaseMs, log });
  runner.start();
  // On PostgreSQL, jobs queued by other processes wake this one (main.ts announces this one's).
  const stopListening = listenForQueuedJobs(config, handle, () => runner.wake(), log);
  const sweep = async () => {
    try {
      const purged: Record<string, number> = {};
      let total = 0;
      for (const [name, purge] of Object.entries(work.sweeps)) total += purged[name] = await purge(handle.db);
      if (total > 0) log.info(purged, 'purged expired rows');
    } catch (err) {
      log.warn({ err }, 'clean-up failed');
    }
  };
  void sweep();
  const timer = setInterval(sweep, SWEEP_MS);
  timer.unref();
  return {
    runner,
    async stop(graceMs) {
      clearInterval(timer);
      await stopListening();
      await runner.stop(graceMs);
      // What it handed back is for the workers of other processes.
      jobsQueued();
      await work.close();
    },
  };
}

import { eraseRetiredWebhookSecrets } from '../accounts/webhook-secret.repository.js';
import { blendJobHandler } from '../blend/blend.job.js';
import { BLEND_KIND, purgeExpiredBlendJobs } from '../blend/blend.service.js';
import { createResultStore } from '../blend/storage.js';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';
import { purgeExpiredIdempotencyKeys } from '../http/idempotency.js';
import { DELIVER_KIND, purgeOldWebhookMessages, webhookDeliveryHandler } from '../webhooks/delivery.js';
import { purgeFinishedJobs } from './queue.js';
import { JobRunner } from './runner.js';
import { jobsQueued, listenForQueuedJobs } from './signal.js';

export interface WorkerLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface Workers {
  runner: JobRunner;
  /** Stops claiming, finishes or hands back jobs in flight within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const SWEEP_MS = 15 * 60_000;

/** The background work of a process: the job queue's handlers and periodic clean-up. */
export function startWorkers(handle: DatabaseHandle, config: Config, log: WorkerLog): Workers {
  const store = createResultStore(config);
  const blend = blendJobHandler(handle.db, config, store, log);
  const handlers = { [DELIVER_KIND]: webhookDeliveryHandler(handle.db, config, log), [BLEND_KIND]: blend };
  const runner = new JobRunner(handle.db, handle.engine, handlers, { leaseMs: config.jobLeaseMs, log });
  runner.start();
  // On PostgreSQL, jobs queued by other processes wake this one (main.ts announces this one's).
  const stopListening = listenForQueuedJobs(config, handle, () => runner.wake(), log);
  const sweep = async () => {
    try {
      const keys = await purgeExpiredIdempotencyKeys(handle.db);
      const jobs = await purgeFinishedJobs(handle.db);
      const messages = await purgeOldWebhookMessages(handle.db);
      const blendJobs = await purgeExpiredBlendJobs(handle.db, store, config.blend.retentionMs);
      const retiredSecrets = await eraseRetiredWebhookSecrets(handle.db);
      if (keys + jobs + messages + blendJobs + retiredSecrets > 0) {
        log.info({ idempotencyKeys: keys, jobs, webhookMessages: messages, blendJobs, retiredSecrets }, 'purged expired rows');
      }
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
      await blend.close();
    },
  };
}

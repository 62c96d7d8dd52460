import type { Config } from '../config.js';
import type { Tx } from '../db/database.js';
import type { TenantScope } from '../db/tenant.js';
import { AppError, notFound } from '../errors.js';
import { fanOut } from '../webhooks/outbox.js';
import * as repo from './blend.repository.js';
import { type BlendJobRow, presentJob, type PresentedJob } from './blend.service.js';

/** The webhook message of a cancelled job, to the account's subscriptions and the job's own URL. */
async function announceCancelled(tx: TenantScope['db'], row: BlendJobRow, config: Config, now: number): Promise<void> {
  await fanOut.inTransaction(tx, row.accountId, [{ event: 'blend.cancelled', jobId: row.id, data: presentJob(row, config, null), ...(row.webhookUrl ? { webhookUrl: row.webhookUrl } : {}) }], now);
}

/**
 * Cancels the account's job, in one transaction: a queued job is cancelled at once (200, with
 * blend.cancelled); a processing one is asked to stop (202): its worker, in whichever process,
 * sees the request within a fraction of a second (watch.ts), stops the engine and records
 * `cancelled` with blend.cancelled. Asking again is harmless, and a cancelled job answers as it is.
 * A job that completed or failed first cannot be cancelled (409 job_not_cancellable).
 */
export async function cancelJob(scope: TenantScope, id: string, config: Config, now = Date.now()): Promise<{ accepted: boolean; job: PresentedJob }> {
  return scope.transaction(async (tx) => {
    const cancelled = await repo.cancelQueuedJob(tx, id, now);
    if (cancelled) {
      await announceCancelled(tx.db, cancelled, config, now);
      return { accepted: false, job: presentJob(cancelled, config, null) };
    }
    const stopping = await repo.requestCancel(tx, id, now);
    if (stopping) return { accepted: true, job: presentJob(stopping, config, null) };
    const row = await repo.findJob(tx, id);
    if (!row) throw notFound('blend job', id);
    if (row.status === 'cancelled') return { accepted: false, job: presentJob(row, config, null) };
    throw new AppError('job_not_cancellable', `The blend job ${id} has already ${row.status === 'completed' ? 'completed' : 'failed'}; only a queued or processing job can be cancelled.`, { jobStatus: row.status });
  });
}

/**
 * The worker's side: records the open job as cancelled with blend.cancelled, inside `tx`. Nothing
 * when it is no longer open (its owner cancelled it while queued, and that was announced then).
 */
export async function recordCancelled(tx: Tx, id: string, config: Config, now = Date.now()): Promise<BlendJobRow | undefined> {
  const row = await repo.cancelOpenJob(tx, id, now);
  if (row) await announceCancelled(tx, row, config, now);
  return row;
}

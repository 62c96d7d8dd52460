import type { Db } from '../db/database.js';
import type { JobHandler, JobOutcome } from '../jobs/runner.js';
import { SETTLE_REFUND_KIND, type SettleRefundPayload, settlePendingRefund } from './refunds.service.js';

export { SETTLE_REFUND_KIND };

/** How long a refund waits before its provider is asked again, by attempt: a minute, growing to an hour. */
export function settleRetryDelay(attempt: number): number {
  return Math.min(3_600_000, 60_000 * 2 ** Math.max(0, attempt - 1));
}

/**
 * Settles refunds left `pending`: each refund's job is queued with it (refunds.service.ts,
 * reserveRefunds). The caller usually settles the refund at once and the job finds it done; if the
 * process died before the provider answered, or the provider gave no answer to be sure of, the job
 * asks again with the refund's id as the idempotency key (the provider pays once) and records the
 * outcome. Given up after its attempts, the refund stays `pending` (its money may have moved): an
 * operator looks at it with the provider.
 */
export function refundSettleHandler(db: Db, concurrency = 4): JobHandler {
  return {
    concurrency,
    async work(job): Promise<JobOutcome> {
      const outcome = await settlePendingRefund(db, JSON.parse(job.payload) as SettleRefundPayload);
      return outcome.status === 'settled' ? { status: 'done' } : { status: 'retry', delayMs: settleRetryDelay(job.attempts), error: outcome.reason };
    },
  };
}

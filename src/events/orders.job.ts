import type { Db } from '../db/database.js';
import type { JobHandler, JobOutcome } from '../jobs/runner.js';
import { EXPIRE_ORDER_KIND, type ExpireOrderPayload, expireOrder } from './orders.service.js';

export { EXPIRE_ORDER_KIND };

/**
 * Ends pending orders whose hold ran out: each order's job is queued with it, due at its
 * `expiresAt` (a durable job: whichever worker process is up expires it, the claim's lease keeps
 * two from doing it at once, and the order's conditional update keeps a late second run a no-op).
 * A job that comes early (a worker's clock ahead) waits for the rest of the hold.
 */
export function orderExpiryHandler(db: Db, concurrency = 8): JobHandler {
  return {
    concurrency,
    async work(job): Promise<JobOutcome> {
      const wait = await expireOrder(db, JSON.parse(job.payload) as ExpireOrderPayload);
      return wait > 0 ? { status: 'retry', delayMs: wait, error: 'the hold has not run out yet' } : { status: 'done' };
    },
  };
}

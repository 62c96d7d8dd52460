import type { Db } from '../db/database.js';
import type { JobHandler, JobOutcome } from '../jobs/runner.js';
import type { Logger } from '../logger.js';
import { forgetEndedPlans, overduePendingOrders } from './orders.repository.js';
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

/** How long past its `expiresAt` a pending order waits for its own job before the sweep expires it. */
export const OVERDUE_MARGIN_MS = 10 * 60_000;
/**
 * How long an order that ended unpaid keeps its plan: a payment may still arrive for it (a Stripe
 * Checkout Session lives 24 hours at most) and is honoured from the plan while the places are free.
 */
export const PLAN_KEPT_MS = 25 * 3_600_000;
const SWEEP_BATCH = 500;

/**
 * The workers' sweep of pending orders (workers.ts): those still pending `OVERDUE_MARGIN_MS` after
 * their hold ran out (their expiry job gave up after its attempts) are expired the way the job
 * does it (places returned, `order.expired`), so no hold is kept forever; and the plan of orders
 * that ended unpaid more than `PLAN_KEPT_MS` ago (attendees' personal data and answers) is
 * forgotten. How many rows changed.
 */
export async function sweepPendingOrders(db: Db, now: number, log: Pick<Logger, 'warn'>): Promise<number> {
  let changed = 0;
  for (const order of await overduePendingOrders(db, now - OVERDUE_MARGIN_MS, SWEEP_BATCH)) {
    // One order that cannot be expired (its transaction fails) must not keep the others pending.
    try {
      if ((await expireOrder(db, { accountId: order.accountId, eventId: order.eventId, orderId: order.id }, now)) === 0) changed++;
    } catch (err) {
      log.warn({ err, orderId: order.id, eventId: order.eventId }, 'could not expire an overdue pending order');
    }
  }
  return changed + (await forgetEndedPlans(db, now - PLAN_KEPT_MS));
}

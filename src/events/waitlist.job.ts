import type { Db } from '../db/database.js';
import type { JobHandler, JobOutcome } from '../jobs/runner.js';
import type { Logger } from '../logger.js';
import { eventsToServe } from './waitlist.repository.js';
import { EXPIRE_OFFER_KIND, type ExpireOfferPayload, expireOffer, OFFER_KIND, type OfferPayload, offerPlaces } from './waitlist.service.js';

export { EXPIRE_OFFER_KIND, OFFER_KIND };

/**
 * Offers freed places to those waiting: the job is queued in the transaction that freed them (a
 * durable job: whichever worker is up runs it once it commits). Runs of one event queue behind its
 * lock, and each offers only what is free and not yet offered, so concurrent or repeated runs
 * never offer a place twice.
 */
export function waitlistOfferHandler(db: Db, concurrency = 4): JobHandler {
  return {
    concurrency,
    async work(job): Promise<JobOutcome> {
      await offerPlaces(db, JSON.parse(job.payload) as OfferPayload);
      return { status: 'done' };
    },
  };
}

/** Ends an offer nobody took, at its `offerExpiresAt`, and offers its place to the next; early (a clock ahead), it waits the rest. */
export function waitlistExpiryHandler(db: Db, concurrency = 4): JobHandler {
  return {
    concurrency,
    async work(job): Promise<JobOutcome> {
      const wait = await expireOffer(db, JSON.parse(job.payload) as ExpireOfferPayload);
      return wait > 0 ? { status: 'retry', delayMs: wait, error: 'the offer has not run out yet' } : { status: 'done' };
    },
  };
}

const SWEEP_BATCH = 500;

/**
 * The workers' periodic sweep (workers.ts), a safety net behind the jobs: every published event
 * that has people waiting, or offers run out by `asOf`, is served as the offer job does it; this
 * also catches places freed without a job (a reserving voucher whose validity ended, an offer job
 * that gave up). How many entries changed.
 */
export async function sweepWaitlists(db: Db, asOf: number, log: Pick<Logger, 'warn'>): Promise<number> {
  let changed = 0;
  let after = '';
  for (;;) {
    const batch = await eventsToServe(db, asOf, after, SWEEP_BATCH);
    for (const { accountId, eventId } of batch) {
      // One event whose serving fails must not keep the others' places from those waiting.
      try {
        changed += await offerPlaces(db, { accountId, eventId }, asOf);
      } catch (err) {
        log.warn({ err, eventId }, 'could not serve the waiting list of an event');
      }
    }
    if (batch.length < SWEEP_BATCH) return changed;
    after = batch[batch.length - 1]!.eventId;
  }
}

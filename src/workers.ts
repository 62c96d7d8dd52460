import { eraseRetiredWebhookSecrets } from './accounts/webhook-secret.repository.js';
import { blendJobHandler } from './blend/blend.job.js';
import { BLEND_KIND, purgeExpiredBlendJobs } from './blend/blend.service.js';
import { createResultStore } from './blend/storage.js';
import { purgeExpiredUploads } from './blend/uploads.service.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import { EXPIRE_ORDER_KIND, orderExpiryHandler, sweepPendingOrders } from './events/orders.job.js';
import { refundSettleHandler, SETTLE_REFUND_KIND } from './events/refunds.job.js';
import { EXPIRE_OFFER_KIND, OFFER_KIND, sweepWaitlists, waitlistExpiryHandler, waitlistOfferHandler } from './events/waitlist.job.js';
import { purgeOldStripeEvents } from './events/payments/stripe-webhook.service.js';
import { purgeExpiredIdempotencyKeys } from './http/idempotency.js';
import { purgeFinishedJobs } from './jobs/queue.js';
import { runWorkers, type Workers } from './jobs/workers.js';
import type { Logger } from './logger.js';
import { DELIVER_KIND, purgeOldWebhookMessages, webhookDeliveryHandler } from './webhooks/delivery.js';

export type { Workers } from './jobs/workers.js';

/**
 * The background work of a process, as app.ts is its HTTP side: the job handlers of each area
 * (webhook deliveries, blend jobs, the expiry of pending orders, the settling of refunds, the
 * waiting list's offers and their expiry) and the clean-up of what expires.
 */
export function startWorkers(handle: DatabaseHandle, config: Config, log: Logger): Workers {
  const store = createResultStore(config);
  const blend = blendJobHandler(handle.db, config, store, log);
  return runWorkers(handle, config, log, {
    handlers: {
      [DELIVER_KIND]: webhookDeliveryHandler(handle.db, config, log),
      [BLEND_KIND]: blend,
      [EXPIRE_ORDER_KIND]: orderExpiryHandler(handle.db),
      [SETTLE_REFUND_KIND]: refundSettleHandler(handle.db),
      [OFFER_KIND]: waitlistOfferHandler(handle.db),
      [EXPIRE_OFFER_KIND]: waitlistExpiryHandler(handle.db),
    },
    sweeps: {
      idempotencyKeys: (db) => purgeExpiredIdempotencyKeys(db),
      jobs: (db) => purgeFinishedJobs(db),
      webhookMessages: (db) => purgeOldWebhookMessages(db),
      blendJobs: (db) => purgeExpiredBlendJobs(db, store, config.blend.retentionMs),
      blendUploads: (db) => purgeExpiredUploads(db, store, log),
      retiredSecrets: (db) => eraseRetiredWebhookSecrets(db),
      stripeEvents: (db) => purgeOldStripeEvents(db),
      overdueOrders: (db) => sweepPendingOrders(db, Date.now(), log),
      waitlists: (db) => sweepWaitlists(db, Date.now(), log),
    },
    close: async () => {
      await blend.close();
      store.close?.();
    },
  });
}

import { createHmac } from 'node:crypto';
import { secretsInUse, signingSecrets } from '../accounts/webhook-secret.repository.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { ReadBatcher, WriteBatcher } from '../db/batcher.js';
import { newId } from '../ids.js';
import type { JobHandler, JobOutcome } from '../jobs/runner.js';
import type { Logger } from '../logger.js';
import { addressPolicy, SafeFetchError, safeFetch } from '../net/safe-http.js';
import * as repo from './webhooks.repository.js';
import type { DeliveryMessage as Message, DeliverySubscription as Subscription, NewAttempt as Attempt } from './webhooks.repository.js';

export const DELIVER_KIND = 'webhook.deliver';

/** A ceiling only: the retry schedule decides how often a delivery is tried. */
export const DELIVERY_MAX_ATTEMPTS = 50;
const TIMEOUT_MS = 10_000;
const SNIPPET_BYTES = 1024;

export interface DeliveryPayload {
  messageId: string;
  /** A subscription's delivery; absent for a blend job's own `webhookUrl`. */
  subscriptionId?: string;
  url?: string;
}

const byId = <T extends { id: string }>(rows: T[]) => new Map(rows.map((row) => [row.id, row]));

/**
 * A worker starts its claimed deliveries together: their messages and subscriptions are read in
 * one query each, and their attempts written many to a statement (db/batcher.ts), so a delivery
 * costs the database a share of four statements instead of two of its own.
 */
function deliveryStore(db: Db) {
  const messages = new ReadBatcher<string, Message>(async (ids) => byId(await repo.messagesByIds(db, ids)));
  const subscriptions = new ReadBatcher<string, Subscription>(async (ids) => byId(await repo.subscriptionsByIds(db, ids)));
  const attempts = new WriteBatcher<Attempt>((rows) => repo.insertAttempts(db, rows), 200);
  return {
    message: (id: string) => messages.load(id),
    subscription: (id: string) => subscriptions.load(id),
    recordAttempt: (attempt: Attempt) => attempts.add(attempt),
  };
}

/** A delivery counts when the endpoint answers 2xx. */
export const succeeded = (statusCode: number | null) => statusCode !== null && statusCode >= 200 && statusCode < 300;

/**
 * Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the
 * secret's bytes. A delivery signed with several secrets (during a rotation's overlap) carries
 * their signatures separated by spaces; a receiver accepts any one that verifies.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * Delivers one message to one endpoint. 2xx: delivered. 410: the subscription is disabled at
 * once. Anything else (another status, a timeout, a refused connection, a refused address) is
 * retried on the configured schedule with the same `webhook-id`; a subscription that has kept
 * failing for the configured span is disabled, not deleted. Every attempt is recorded.
 */
export function webhookDeliveryHandler(db: Db, config: Config, log?: Pick<Logger, 'warn'>, concurrency = 64): JobHandler {
  const policy = addressPolicy(config.allowPrivateNetwork);
  const store = deliveryStore(db);
  return {
    concurrency,
    async work(job): Promise<JobOutcome> {
      const payload = JSON.parse(job.payload) as DeliveryPayload;
      const [message, found] = await Promise.all([store.message(payload.messageId), payload.subscriptionId ? store.subscription(payload.subscriptionId) : undefined]);
      if (!message) return { status: 'failed', error: 'message no longer exists' };
      // A subscription of another account is no subscription of this message's.
      const subscription = found?.accountId === message.accountId ? found : undefined;
      if (payload.subscriptionId && (!subscription || subscription.status !== 'enabled')) {
        return { status: 'failed', error: subscription ? 'subscription is disabled' : 'subscription was deleted' };
      }
      const url = subscription?.url ?? payload.url;
      const secrets = subscription
        ? secretsInUse(subscription.secret, subscription.previousSecret, subscription.previousSecretUntil, Date.now())
        : await signingSecrets(db, message.accountId, Date.now());
      if (!url || secrets.length === 0) return { status: 'failed', error: 'nowhere to deliver' };

      const timestamp = Math.floor(Date.now() / 1000);
      const started = Date.now();
      let statusCode: number | null = null;
      let error: string | null = null;
      let snippet: string | null = null;
      try {
        const response = await safeFetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Montage-Webhooks/1.0',
            'webhook-id': message.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': secrets.map((secret) => signWebhook(secret, message.id, timestamp, message.payload)).join(' '),
          },
          body: message.payload,
          timeoutMs: TIMEOUT_MS,
          maxBytes: SNIPPET_BYTES,
          truncate: true,
          maxRedirects: 0,
          policy,
        });
        statusCode = response.status;
        snippet = storable(response.body.toString('utf8'));
      } catch (err) {
        // The tenant reads `error` (GET deliveries, the dashboard): it never names the address their
        // host name resolved to; the log does, with the delivery's job and message (not the URL).
        error = storable(err instanceof SafeFetchError ? `${err.code}: ${err.message}` : String(err));
        if (err instanceof SafeFetchError && err.internal !== err.message) {
          log?.warn({ jobId: job.id, messageId: message.id, subscriptionId: subscription?.id, reason: err.internal }, 'webhook delivery failed');
        }
      }
      const now = Date.now();
      // The outcome stands whatever happens to its record: a delivered message must not be sent again.
      await store
        .recordAttempt({
          id: newId('delivery'),
          accountId: message.accountId,
          subscriptionId: subscription?.id ?? null,
          messageId: message.id,
          eventType: message.eventType,
          attempt: job.attempts,
          url,
          statusCode,
          durationMs: now - started,
          error,
          responseSnippet: snippet,
          createdAt: now,
        })
        .catch(() => undefined);

      if (succeeded(statusCode)) {
        if (subscription?.failingSince) {
          await repo.clearFailing(db, subscription.id, now);
        }
        return { status: 'done' };
      }
      const reason = error ?? `endpoint answered ${statusCode}`;
      if (subscription && statusCode === 410) {
        await repo.disableSubscription(db, subscription.id, 'gone', now);
        return { status: 'failed', error: reason };
      }
      if (subscription) {
        const failingSince = subscription.failingSince ?? now;
        if (now - failingSince >= config.webhookDisableAfterMs) {
          await repo.disableSubscription(db, subscription.id, 'failing', now);
          return { status: 'failed', error: `${reason}; subscription disabled after failing since ${new Date(failingSince).toISOString()}` };
        }
        if (subscription.failingSince === null) {
          await repo.markFailing(db, subscription.id, failingSince, now);
        }
      }
      const delay = config.webhookRetrySchedule[job.attempts - 1];
      return delay === undefined ? { status: 'failed', error: `${reason}; gave up after ${job.attempts} attempts` } : { status: 'retry', delayMs: delay, error: reason };
    },
  };
}

/** What a receiver sent, as text the database can hold (PostgreSQL refuses NUL). */
const storable = (text: string) => text.replace(/\u0000/g, '');

/** Messages and their attempts are kept 30 days (retries end after about a day), then removed. */
export async function purgeOldWebhookMessages(db: Db, keepMs = 30 * 86_400_000, now = Date.now()): Promise<number> {
  return repo.deleteMessagesBefore(db, now - keepMs);
}

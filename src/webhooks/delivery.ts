import { createHmac } from 'node:crypto';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { newId } from '../ids.js';
import type { JobHandler, JobOutcome } from '../jobs/runner.js';
import { addressPolicy, SafeFetchError, safeFetch } from '../net/safe-http.js';

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

// Every delivery runs these; they are prepared (db/prepared.ts) so a worker spends its time on HTTP.
/** The message, and in the same round trip the subscription it goes to (of the message's account only). */
const messageAndSubscription = prepared((db: Db, messageId: string, subscriptionId: string) =>
  db
    .selectFrom('webhookMessages as m')
    .leftJoin('webhookSubscriptions as s', (join) => join.on('s.id', '=', subscriptionId).onRef('s.accountId', '=', 'm.accountId'))
    .select(['m.id', 'm.accountId', 'm.eventType', 'm.payload', 's.id as subscriptionId', 's.url', 's.secret', 's.status', 's.failingSince'])
    .where('m.id', '=', messageId),
);
const recordAttempt = prepared(
  (
    db: Db,
    id: string,
    accountId: string,
    subscriptionId: string | null,
    messageId: string,
    eventType: string,
    attempt: number,
    url: string,
    statusCode: number | null,
    durationMs: number,
    error: string | null,
    responseSnippet: string | null,
    createdAt: number,
  ) =>
    db.insertInto('webhookAttempts').values({ id, accountId, subscriptionId, messageId, eventType, attempt, url, statusCode, durationMs, error, responseSnippet, createdAt }),
);

/** A delivery counts when the endpoint answers 2xx. */
export const succeeded = (statusCode: number | null) => statusCode !== null && statusCode >= 200 && statusCode < 300;

/** Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's bytes. */
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
export function webhookDeliveryHandler(db: Db, config: Config, concurrency = 64): JobHandler {
  const policy = addressPolicy(config.allowPrivateNetwork);
  return {
    concurrency,
    async work(job): Promise<JobOutcome> {
      const payload = JSON.parse(job.payload) as DeliveryPayload;
      const [message] = await messageAndSubscription(db, payload.messageId, payload.subscriptionId ?? '');
      if (!message) return { status: 'failed', error: 'message no longer exists' };
      const subscription =
        payload.subscriptionId && message.subscriptionId !== null
          ? { id: message.subscriptionId, url: message.url!, secret: message.secret!, status: message.status!, failingSince: message.failingSince }
          : undefined;
      if (payload.subscriptionId && (!subscription || subscription.status !== 'enabled')) {
        return { status: 'failed', error: subscription ? 'subscription is disabled' : 'subscription was deleted' };
      }
      const url = subscription?.url ?? payload.url;
      const secret = subscription?.secret ?? (await accountSecret(db, message.accountId));
      if (!url || !secret) return { status: 'failed', error: 'nowhere to deliver' };

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
            'webhook-signature': signWebhook(secret, message.id, timestamp, message.payload),
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
        error = storable(err instanceof SafeFetchError ? `${err.code}: ${err.message}` : String(err));
      }
      const now = Date.now();
      // The outcome stands whatever happens to its record: a delivered message must not be sent again.
      await recordAttempt(db, newId('delivery'), message.accountId, subscription?.id ?? null, message.id, message.eventType, job.attempts, url, statusCode, now - started, error, snippet, now).catch(
        () => undefined,
      );

      if (succeeded(statusCode)) {
        if (subscription?.failingSince) {
          await db.updateTable('webhookSubscriptions').set({ failingSince: null, updatedAt: now }).where('id', '=', subscription.id).execute();
        }
        return { status: 'done' };
      }
      const reason = error ?? `endpoint answered ${statusCode}`;
      if (subscription && statusCode === 410) {
        await disable(db, subscription.id, 'gone', now);
        return { status: 'failed', error: reason };
      }
      if (subscription) {
        const failingSince = subscription.failingSince ?? now;
        if (now - failingSince >= config.webhookDisableAfterMs) {
          await disable(db, subscription.id, 'failing', now);
          return { status: 'failed', error: `${reason}; subscription disabled after failing since ${new Date(failingSince).toISOString()}` };
        }
        if (subscription.failingSince === null) {
          await db.updateTable('webhookSubscriptions').set({ failingSince, updatedAt: now }).where('id', '=', subscription.id).where('failingSince', 'is', null).execute();
        }
      }
      const delay = config.webhookRetrySchedule[job.attempts - 1];
      return delay === undefined ? { status: 'failed', error: `${reason}; gave up after ${job.attempts} attempts` } : { status: 'retry', delayMs: delay, error: reason };
    },
  };
}

/** What a receiver sent, as text the database can hold (PostgreSQL refuses NUL). */
const storable = (text: string) => text.replace(/\u0000/g, '');

async function disable(db: Db, id: string, reason: 'gone' | 'failing', now: number): Promise<void> {
  await db
    .updateTable('webhookSubscriptions')
    .set({ status: 'disabled', disabledAt: now, disabledReason: reason, updatedAt: now })
    .where('id', '=', id)
    .where('status', '=', 'enabled')
    .execute();
}

/** The per-account secret that signs deliveries to a blend job's own `webhookUrl` (blend area). */
async function accountSecret(db: Db, accountId: string): Promise<string | null> {
  const account = await db.selectFrom('accounts').select('webhookSecret').where('id', '=', accountId).executeTakeFirst();
  return account?.webhookSecret ?? null;
}

/** Messages and their attempts are kept 30 days (retries end after about a day), then removed. */
export async function purgeOldWebhookMessages(db: Db, keepMs = 30 * 86_400_000, now = Date.now()): Promise<number> {
  await db.deleteFrom('webhookAttempts').where('createdAt', '<', now - keepMs).execute();
  const result = await db.deleteFrom('webhookMessages').where('createdAt', '<', now - keepMs).executeTakeFirst();
  return Number(result.numDeletedRows);
}

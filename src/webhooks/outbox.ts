import { sql } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { newId } from '../ids.js';
import { enqueueJobs, type NewJob } from '../jobs/queue.js';
import { iso } from '../time.js';
import { DELIVER_KIND, DELIVERY_MAX_ATTEMPTS } from './delivery.js';

export const EVENT_AREA_EVENTS = [
  'event.created',
  'event.published',
  'event.cancelled',
  'ticket.purchased',
  'ticket.cancelled',
  'ticket.transferred',
  'checkin.completed',
  'checkin.undone',
  'payment.completed',
  'payment.refunded',
  'payout.processed',
  'rsvp.submitted',
] as const;
export const BLEND_EVENTS = ['blend.started', 'blend.completed', 'blend.failed'] as const;
export const WEBHOOK_EVENTS = [...EVENT_AREA_EVENTS, ...BLEND_EVENTS] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface OutboxMessage {
  event: WebhookEvent;
  data: unknown;
  /** Blend events carry their job id at the top of the body. */
  jobId?: string;
  /** A blend job's own endpoint, besides the account's subscriptions. */
  webhookUrl?: string;
}

const BATCH = 200;

// Most changes write one message: that insert and the subscription lookup are prepared (db/prepared.ts).
const insertMessage = prepared((db: Db | Tx, id: string, accountId: string, eventType: string, payload: string, createdAt: number) =>
  db.insertInto('webhookMessages').values({ id, accountId, eventType, payload, createdAt }),
);
const enabledSubscriptions = prepared((db: Db | Tx, accountId: string) =>
  db.selectFrom('webhookSubscriptions').select(['id', 'events']).where('accountId', '=', accountId).where('status', '=', 'enabled'),
);
/** On PostgreSQL, the insert and the lookup in one statement (a data-modifying CTE): one round trip, not two. */
const insertMessageListingSubscriptions = prepared((db: Db | Tx, id: string, accountId: string, eventType: string, payload: string, createdAt: number) =>
  db
    .with('inserted', (qc) => qc.insertInto('webhookMessages').values({ id, accountId, eventType, payload, createdAt }))
    .selectFrom('webhookSubscriptions')
    .select(['id', 'events'])
    .where('accountId', '=', accountId)
    .where('status', '=', 'enabled'),
);

/**
 * PostgreSQL: the enabled subscriptions of the account in `accountColumn` as one JSON column
 * (`[[id, events], ...]`), for a read that brings a change's rows and its fan-out in one round trip.
 */
export function enabledSubscriptionsColumn(accountColumn: string) {
  return sql<Array<[string, string]>>`(select coalesce(json_agg(json_build_array(s.id, s.events)), '[]') from webhook_subscriptions s where s.account_id = ${sql.ref(accountColumn)} and s.status = 'enabled')`;
}

/** A message's outbox row, written at `now`: its id, and its body exactly as it will be delivered. */
export function outboxRow(accountId: string, message: OutboxMessage, now: number) {
  const id = newId('message');
  const body = { id, event: message.event, ...(message.jobId ? { jobId: message.jobId } : {}), timestamp: iso(now), data: message.data };
  return { id, accountId, eventType: message.event, payload: JSON.stringify(body), createdAt: now };
}

export type OutboxRow = ReturnType<typeof outboxRow>;

/**
 * The delivery jobs of written messages: one per (message, subscription whose `events` list
 * wants it), and one per message with a job's own webhookUrl.
 */
export function deliveryJobs(subscriptions: ReadonlyArray<{ id: string; events: string }>, messages: OutboxMessage[], rows: OutboxRow[]): NewJob[] {
  const jobs: NewJob[] = [];
  for (const subscription of subscriptions) {
    const events = JSON.parse(subscription.events) as string[];
    for (const row of rows) {
      if (events.includes('*') || events.includes(row.eventType)) {
        jobs.push({ kind: DELIVER_KIND, payload: { messageId: row.id, subscriptionId: subscription.id }, maxAttempts: DELIVERY_MAX_ATTEMPTS });
      }
    }
  }
  messages.forEach((message, i) => {
    if (message.webhookUrl) jobs.push({ kind: DELIVER_KIND, payload: { messageId: rows[i]!.id, url: message.webhookUrl }, maxAttempts: DELIVERY_MAX_ATTEMPTS });
  });
  return jobs;
}

/**
 * Writes webhook messages into the outbox. Call it with the transaction that makes the change
 * the messages report: a crash can then delay a message, never lose it or send a phantom one.
 */
export async function enqueueMessages(tx: Db | Tx, accountId: string, messages: OutboxMessage[], now = Date.now()): Promise<string[]> {
  const rows = messages.map((message) => outboxRow(accountId, message, now));
  // Fan out to the subscriptions that exist now, in the same transaction: a delivery job per
  // (message, subscription). Later subscriptions do not receive earlier messages.
  let subscriptions: Array<{ id: string; events: string }>;
  const single = rows.length === 1 ? rows[0]! : null;
  if (single && onPostgres(tx)) {
    subscriptions = await insertMessageListingSubscriptions(tx, single.id, single.accountId, single.eventType, single.payload, single.createdAt);
  } else {
    if (single) await insertMessage(tx, single.id, single.accountId, single.eventType, single.payload, single.createdAt);
    else for (let i = 0; i < rows.length; i += BATCH) await tx.insertInto('webhookMessages').values(rows.slice(i, i + BATCH)).execute();
    subscriptions = await enabledSubscriptions(tx, accountId);
  }
  const jobs = deliveryJobs(subscriptions, messages, rows);
  if (jobs.length > 0) await enqueueJobs(tx, jobs, now);
  return rows.map((r) => r.id);
}

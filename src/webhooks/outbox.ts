import { type QueryCreator, type RawBuilder, sql } from 'kysely';
import type { Database, Db, Tx } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { afterCommit } from '../db/transaction.js';
import { newId } from '../ids.js';
import { enqueueJobs, insertJobsUnnest, JOB_VALUES, type JobValues, jobValues, type NewJob } from '../jobs/queue.js';
import { jobsQueued } from '../jobs/signal.js';
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
  'order.expired',
  'order.cancelled',
  'payment.completed',
  'payment.refunded',
  'payout.processed',
  'rsvp.submitted',
  'order.changed',
  'waitlist.offered',
  'waitlist.offer_expired',
] as const;
export const BLEND_EVENTS = ['blend.started', 'blend.completed', 'blend.failed', 'blend.cancelled'] as const;
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
function enabledSubscriptionsColumn(accountColumn: string): RawBuilder<Subscriptions> {
  return sql<Array<[string, string]>>`(select coalesce(json_agg(json_build_array(s.id, s.events)), '[]') from webhook_subscriptions s where s.account_id = ${sql.ref(accountColumn)} and s.status = 'enabled')`;
}

/** What fanOut.subscriptions reads: opaque to the caller, who hands it to fanOut.values or oneValues. */
export type Subscriptions = Array<[string, string]>;

/** A message's outbox row, written at `now`: its id, and its body exactly as it will be delivered. */
function outboxRow(accountId: string, message: OutboxMessage, now: number) {
  const id = newId('message');
  const body = { id, event: message.event, ...(message.jobId ? { jobId: message.jobId } : {}), timestamp: iso(now), data: message.data };
  return { id, accountId, eventType: message.event, payload: JSON.stringify(body), createdAt: now };
}

type OutboxRow = ReturnType<typeof outboxRow>;

/**
 * The delivery jobs of written messages: one per (message, subscription whose `events` list
 * wants it), and one per message with a job's own webhookUrl.
 */
function deliveryJobs(subscriptions: ReadonlyArray<{ id: string; events: string }>, messages: OutboxMessage[], rows: OutboxRow[]): NewJob[] {
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

/**
 * What a statement's fan-out writes (PostgreSQL): its messages' outbox rows and their delivery
 * jobs, one array per column, each a named argument of the statement (db/prepared.ts, preparedNamed).
 */
export type FanOutValues = { messageIds: string[]; messageEvents: string[]; messagePayloads: string[] } & JobValues;

/** The same for a statement that writes exactly one message (a check-in): the message's row as single values. */
export type OneMessageFanOutValues = { messageId: string; messageEvent: string; messagePayload: string } & JobValues;

/** The messages' outbox rows and their delivery jobs: a job per (message, subscription whose `events` wants it). */
function fanOutRows(accountId: string, messages: OutboxMessage[], subscriptions: Subscriptions | null, now: number) {
  const rows = messages.map((message) => outboxRow(accountId, message, now));
  const jobs = deliveryJobs((subscriptions ?? []).map(([id, events]) => ({ id, events })), messages, rows);
  return { rows, jobs: jobValues(jobs, now) };
}

/**
 * The one way a change writes its webhook messages: inside its own transaction (`inTransaction`,
 * either engine), or inside its own statement on PostgreSQL (`subscriptions` in the read before it,
 * `values` or `oneValues` and `into` for the statement, `written` after it). The outbox and jobs
 * tables stay here.
 */
export const fanOut = {
  /**
   * PostgreSQL: the enabled subscriptions of the account in `accountColumn`, as one column of a
   * read, so that the read before a one-statement change also brings whom its messages go to.
   */
  subscriptions: enabledSubscriptionsColumn,

  /** The names of `FanOutValues`, for the statement's list of its named arguments. */
  names: ['messageIds', 'messageEvents', 'messagePayloads', ...JOB_VALUES] as const satisfies ReadonlyArray<keyof FanOutValues>,

  /** The names of `OneMessageFanOutValues`. */
  oneNames: ['messageId', 'messageEvent', 'messagePayload', ...JOB_VALUES] as const satisfies ReadonlyArray<keyof OneMessageFanOutValues>,

  /**
   * The statement's fan-out values: the messages' outbox rows written at `now`, and a delivery job
   * per (message, subscription that wants it) of `subscriptions` (as read with `subscriptions`).
   */
  values(accountId: string, messages: OutboxMessage[], subscriptions: Subscriptions | null, now: number): FanOutValues {
    const { rows, jobs } = fanOutRows(accountId, messages, subscriptions, now);
    return { messageIds: rows.map((r) => r.id), messageEvents: rows.map((r) => r.eventType), messagePayloads: rows.map((r) => r.payload), ...jobs };
  },

  /** `values` for a statement that writes one message. */
  oneValues(accountId: string, message: OutboxMessage, subscriptions: Subscriptions | null, now: number): OneMessageFanOutValues {
    const { rows, jobs } = fanOutRows(accountId, [message], subscriptions, now);
    const row = rows[0]!;
    return { messageId: row.id, messageEvent: row.eventType, messagePayload: row.payload, ...jobs };
  },

  /**
   * PostgreSQL: adds the messages and their delivery jobs to a statement as two common table
   * expressions, written once for each row of `gate` (one of the statement's expressions that has
   * one row when its change was made and none otherwise). `accountId` and `now` are the
   * statement's arguments of those names.
   */
  into<QC extends QueryCreator<any>>(qc: QC, gate: string, values: (FanOutValues | OneMessageFanOutValues) & { accountId: string; now: number }): QC {
    const { accountId, now } = values;
    return (qc as unknown as QueryCreator<Database>)
      .with('message', (mc) =>
        mc
          .insertInto('webhookMessages')
          .columns(['id', 'accountId', 'eventType', 'payload', 'createdAt'])
          .expression((eb) => {
            // `gate` is a table expression of the statement, which the types of the database do not know.
            const accountAndTime = [eb.cast<string>(eb.val(accountId), 'text').as('accountId'), eb.cast<number>(eb.val(now), 'bigint').as('createdAt')] as const;
            if ('messageId' in values) {
              // One message: its values as they are, no arrays to build and unnest.
              return eb.selectFrom(gate as 'webhookMessages').select([
                eb.cast<string>(eb.val(values.messageId), 'text').as('id'),
                accountAndTime[0],
                eb.cast<string>(eb.val(values.messageEvent), 'text').as('eventType'),
                eb.cast<string>(eb.val(values.messagePayload), 'text').as('payload'),
                accountAndTime[1],
              ]);
            }
            const { messageIds, messageEvents, messagePayloads } = values;
            return eb
              .selectFrom([
                gate as 'webhookMessages',
                sql<{ id: string; eventType: string; payload: string }>`unnest(${messageIds}::text[], ${messageEvents}::text[], ${messagePayloads}::text[])`.as<'m'>(sql`m(id, event_type, payload)`),
              ])
              .select(['m.id', accountAndTime[0], 'm.eventType', 'm.payload', accountAndTime[1]]);
          }),
      )
      .with('queued', (jc) => insertJobsUnnest(jc, gate, values)) as unknown as QC;
  },

  /** After the statement wrote its change: wakes the workers when it queued jobs (at commit). */
  written(db: Db | Tx, values: JobValues): void {
    if (values.jobIds.length > 0) afterCommit(db, jobsQueued);
  },

  /** In a transaction (either engine): writes the messages and their delivery jobs (enqueueMessages). */
  inTransaction: enqueueMessages,
};

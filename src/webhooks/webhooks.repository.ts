import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import { type KeysetPage, keysetPage } from '../db/keyset.js';
import type { TenantScope } from '../db/tenant.js';
import type { WebhookAttemptTable, WebhookMessageTable, WebhookSubscriptionTable } from './webhooks.table.js';

export type SubscriptionRow = Selectable<WebhookSubscriptionTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;

// ---- Subscriptions, as their account manages them.

export async function countSubscriptions(scope: TenantScope): Promise<number> {
  const count = await scope.selectFrom('webhookSubscriptions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(count.n);
}

export async function insertSubscription(scope: TenantScope, row: SubscriptionRow): Promise<void> {
  await scope.db.insertInto('webhookSubscriptions').values(row).execute();
}

export function findSubscription(scope: TenantScope, id: string): Promise<SubscriptionRow | undefined> {
  return scope.selectFrom('webhookSubscriptions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** One keyset page of the account's subscriptions, newest first (one row more, for `hasMore`). */
export function pageSubscriptions(scope: TenantScope, page: KeysetPage): Promise<SubscriptionRow[]> {
  return keysetPage(scope.selectFrom('webhookSubscriptions').selectAll(), page, 'webhookSubscriptions.id', 'webhookSubscriptions.id', 'desc').execute();
}

/**
 * The new secret lands as the old one moves to `previousSecret`, good until `previousUntil`: one
 * statement. Undefined when the account has no such subscription.
 */
export function rotateSecret(scope: TenantScope, id: string, secret: string, previousUntil: number, now: number): Promise<SubscriptionRow | undefined> {
  return scope
    .updateTable('webhookSubscriptions')
    .set((eb) => ({ previousSecret: eb.ref('secret'), previousSecretUntil: previousUntil, secret, updatedAt: now }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** True when the account had the subscription (it is gone now). */
export async function deleteSubscription(scope: TenantScope, id: string): Promise<boolean> {
  const result = await scope.deleteFrom('webhookSubscriptions').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** One keyset page of a subscription's delivery attempts, newest first. */
export function pageAttempts(scope: TenantScope, subscriptionId: string, page: KeysetPage): Promise<AttemptRow[]> {
  const query = scope.selectFrom('webhookAttempts').selectAll().where('subscriptionId', '=', subscriptionId);
  return keysetPage(query, page, 'webhookAttempts.id', 'webhookAttempts.id', 'desc').execute();
}

// ---- Deliveries, as the worker makes them (any account: the job names the rows).

export type DeliveryMessage = Pick<Selectable<WebhookMessageTable>, 'id' | 'accountId' | 'eventType' | 'payload'>;
export type DeliverySubscription = Pick<
  Selectable<WebhookSubscriptionTable>,
  'id' | 'accountId' | 'url' | 'secret' | 'previousSecret' | 'previousSecretUntil' | 'status' | 'failingSince'
>;
export type NewAttempt = Insertable<WebhookAttemptTable>;

export function messagesByIds(db: Db, ids: readonly string[]): Promise<DeliveryMessage[]> {
  return db.selectFrom('webhookMessages').select(['id', 'accountId', 'eventType', 'payload']).where('id', 'in', ids).execute();
}

export function subscriptionsByIds(db: Db, ids: readonly string[]): Promise<DeliverySubscription[]> {
  return db
    .selectFrom('webhookSubscriptions')
    .select(['id', 'accountId', 'url', 'secret', 'previousSecret', 'previousSecretUntil', 'status', 'failingSince'])
    .where('id', 'in', ids)
    .execute();
}

export async function insertAttempts(db: Db, rows: NewAttempt[]): Promise<void> {
  await db.insertInto('webhookAttempts').values(rows).execute();
}

/** The subscription delivers again: it is failing no more. */
export async function clearFailing(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('webhookSubscriptions').set({ failingSince: null, updatedAt: now }).where('id', '=', id).execute();
}

/** Marks the subscription failing since `since`, unless it already is (another delivery's mark stands). */
export async function markFailing(db: Db, id: string, since: number, now: number): Promise<void> {
  await db.updateTable('webhookSubscriptions').set({ failingSince: since, updatedAt: now }).where('id', '=', id).where('failingSince', 'is', null).execute();
}

/** Disables the subscription, if it is still enabled. */
export async function disableSubscription(db: Db, id: string, reason: 'gone' | 'failing', now: number): Promise<void> {
  await db
    .updateTable('webhookSubscriptions')
    .set({ status: 'disabled', disabledAt: now, disabledReason: reason, updatedAt: now })
    .where('id', '=', id)
    .where('status', '=', 'enabled')
    .execute();
}

/** Removes the messages, and their attempts, made before `before`; answers how many messages. */
export async function deleteMessagesBefore(db: Db, before: number): Promise<number> {
  await db.deleteFrom('webhookAttempts').where('createdAt', '<', before).execute();
  const result = await db.deleteFrom('webhookMessages').where('createdAt', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

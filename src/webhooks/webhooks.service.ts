import type { Static } from 'typebox';
import { newWebhookSecret } from '../accounts/secrets.js';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { addressPolicy, checkOutboundUrl, SafeFetchError } from '../net/safe-http.js';
import { iso } from '../time.js';
import { succeeded } from './delivery.js';
import { WEBHOOK_EVENTS } from './outbox.js';
import * as repo from './webhooks.repository.js';
import type { AttemptRow, SubscriptionRow } from './webhooks.repository.js';
import type { CreateSubscriptionBody } from './webhooks.schemas.js';

export function presentSubscription(row: SubscriptionRow) {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    status: row.status as 'enabled' | 'disabled',
    disabledAt: iso(row.disabledAt),
    disabledReason: row.disabledReason as 'gone' | 'failing' | null,
    failingSince: iso(row.failingSince),
    previousSecretExpiresAt: row.previousSecret !== null && row.previousSecretUntil !== null && row.previousSecretUntil > Date.now() ? iso(row.previousSecretUntil) : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

function presentAttempt(row: AttemptRow) {
  return {
    id: row.id,
    messageId: row.messageId,
    event: row.eventType,
    attempt: row.attempt,
    url: row.url,
    succeeded: succeeded(row.statusCode),
    statusCode: row.statusCode,
    durationMs: row.durationMs,
    error: row.error,
    responseSnippet: row.responseSnippet,
    createdAt: iso(row.createdAt),
  };
}

/** Refuses what can never be delivered; addresses behind names are checked at each delivery. */
export function checkEndpoint(url: string, allowPrivateNetwork: boolean): void {
  try {
    checkOutboundUrl(url, addressPolicy(allowPrivateNetwork));
  } catch (err) {
    if (err instanceof SafeFetchError) throw invalid('/url', err.message);
    throw err;
  }
}

/** Each message fans out to every subscription in the change's own transaction: keep that bounded. */
export const MAX_SUBSCRIPTIONS = 20;

export async function createSubscription(scope: TenantScope, input: Static<typeof CreateSubscriptionBody>, allowPrivateNetwork: boolean) {
  checkEndpoint(input.url, allowPrivateNetwork);
  input.events.forEach((name, i) => {
    if (name !== '*' && !(WEBHOOK_EVENTS as readonly string[]).includes(name)) {
      throw invalid(`/events/${i}`, `is not an event name (known: ${WEBHOOK_EVENTS.join(', ')}, or *)`);
    }
  });
  if (input.events.includes('*') && input.events.length > 1) throw invalid('/events', 'holds * (every event) beside other names');
  if ((await repo.countSubscriptions(scope)) >= MAX_SUBSCRIPTIONS) {
    throw new AppError('too_many_subscriptions', `An account may have ${MAX_SUBSCRIPTIONS} webhook subscriptions; delete one first.`);
  }
  const now = Date.now();
  const row: SubscriptionRow = {
    id: newId('webhook'),
    accountId: scope.accountId,
    url: input.url,
    events: JSON.stringify(input.events),
    description: input.description ?? null,
    secret: newWebhookSecret(),
    previousSecret: null,
    previousSecretUntil: null,
    status: 'enabled',
    disabledAt: null,
    disabledReason: null,
    failingSince: null,
    createdAt: now,
    updatedAt: now,
  };
  await repo.insertSubscription(scope, row);
  return { ...presentSubscription(row), secret: row.secret };
}

async function findSubscription(scope: TenantScope, id: string): Promise<SubscriptionRow> {
  const row = await repo.findSubscription(scope, id);
  if (!row) throw notFound('webhook subscription', id);
  return row;
}

export async function getSubscription(scope: TenantScope, id: string) {
  return presentSubscription(await findSubscription(scope, id));
}

export async function listSubscriptions(scope: TenantScope, query: PageParams): Promise<Page<ReturnType<typeof presentSubscription>>> {
  const page = pageRequest(query, listTag('webhooks'));
  const rows = await repo.pageSubscriptions(scope, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentSubscription);
}

/**
 * A new secret signs the subscription's deliveries from now on; the one it replaces signs beside it
 * for `overlapMs`. One statement: the old value moves to `previousSecret` as the new one lands.
 */
export async function rotateSubscriptionSecret(scope: TenantScope, id: string, overlapMs: number) {
  const now = Date.now();
  const row = await repo.rotateSecret(scope, id, newWebhookSecret(), now + overlapMs, now);
  if (!row) throw notFound('webhook subscription', id);
  return { ...presentSubscription(row), secret: row.secret };
}

/** Deletes the subscription; deliveries still queued for it are dropped when their turn comes. */
export async function deleteSubscription(scope: TenantScope, id: string): Promise<void> {
  if (!(await repo.deleteSubscription(scope, id))) throw notFound('webhook subscription', id);
}

export async function listAttempts(scope: TenantScope, subscriptionId: string, query: PageParams): Promise<Page<ReturnType<typeof presentAttempt>>> {
  const page = pageRequest(query, listTag(`webhook-attempts:${subscriptionId}`));
  await findSubscription(scope, subscriptionId);
  const rows = await repo.pageAttempts(scope, subscriptionId, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentAttempt);
}

import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { iso } from '../time.js';
import { newWebhookSecret } from './secrets.js';
import * as repo from './webhook-secret.repository.js';

export interface WebhookSecretView {
  secret: string;
  /** When the secret this one replaced stops signing deliveries; null when none does any more. */
  previousSecretExpiresAt: string | null;
  rotationOverlapSeconds: number;
}

function present(row: repo.WebhookSecretRow | undefined, overlapMs: number, now: number): WebhookSecretView {
  if (!row?.webhookSecret) throw new AppError('not_found', 'No such account.');
  const until = row.previousWebhookSecret !== null ? row.previousWebhookSecretUntil : null;
  return {
    secret: row.webhookSecret,
    previousSecretExpiresAt: until !== null && until > now ? iso(until) : null,
    rotationOverlapSeconds: Math.round(overlapMs / 1000),
  };
}

/**
 * The secret that signs deliveries to a blend job's own `webhookUrl` (which has no subscription
 * of its own). Accounts made before it existed get one on first read.
 */
export async function readWebhookSecret(db: Db, accountId: string, overlapMs: number, now = Date.now()): Promise<WebhookSecretView> {
  await repo.fillMissingWebhookSecret(db, accountId, newWebhookSecret(), now);
  return present(await repo.findWebhookSecret(db, accountId), overlapMs, now);
}

/**
 * A new secret signs every delivery from now on; the one it replaces signs beside it for
 * `overlapMs` (two signatures in `webhook-signature`), so receivers can switch without losing a
 * message. Rotating again within the overlap retires the oldest secret at once.
 */
export async function rotateWebhookSecret(db: Db, accountId: string, overlapMs: number, now = Date.now()): Promise<WebhookSecretView> {
  return present(await repo.replaceWebhookSecret(db, accountId, newWebhookSecret(), now + overlapMs, now), overlapMs, now);
}

import type { Db } from '../db/database.js';

export interface WebhookSecretRow {
  webhookSecret: string | null;
  previousWebhookSecret: string | null;
  previousWebhookSecretUntil: number | null;
}

const COLUMNS = ['webhookSecret', 'previousWebhookSecret', 'previousWebhookSecretUntil'] as const;

export function findWebhookSecret(db: Db, accountId: string): Promise<WebhookSecretRow | undefined> {
  return db.selectFrom('accounts').select(COLUMNS).where('id', '=', accountId).executeTakeFirst();
}

/** Gives an account made before the secret existed its first one; a no-op for every other account. */
export async function fillMissingWebhookSecret(db: Db, accountId: string, secret: string, now: number): Promise<void> {
  await db.updateTable('accounts').set({ webhookSecret: secret, updatedAt: now }).where('id', '=', accountId).where('webhookSecret', 'is', null).execute();
}

/**
 * Replaces the secret in one statement: the old value moves to `previousWebhookSecret` (the right
 * side of SET reads the row as it was), so two rotations at once cannot lose a secret in between.
 */
export function replaceWebhookSecret(db: Db, accountId: string, secret: string, previousUntil: number, now: number): Promise<WebhookSecretRow | undefined> {
  return db
    .updateTable('accounts')
    .set((eb) => ({
      previousWebhookSecret: eb.ref('webhookSecret'),
      previousWebhookSecretUntil: previousUntil,
      webhookSecret: secret,
      updatedAt: now,
    }))
    .where('id', '=', accountId)
    .returning(COLUMNS)
    .executeTakeFirst();
}

/** The secrets that sign at `now`: the current one, and the one it replaced while its overlap lasts. */
export function secretsInUse(current: string, previous: string | null, previousUntil: number | null, now: number): string[] {
  return previous !== null && previousUntil !== null && previousUntil > now ? [current, previous] : [current];
}

/** The secrets that sign a delivery without a subscription at `now`; none when the account has none (or is gone). */
export async function signingSecrets(db: Db, accountId: string, now: number): Promise<string[]> {
  const row = await findWebhookSecret(db, accountId);
  return row?.webhookSecret ? secretsInUse(row.webhookSecret, row.previousWebhookSecret, row.previousWebhookSecretUntil, now) : [];
}

/**
 * Erases the secrets whose overlap has ended, of accounts and of subscriptions: once it stops
 * signing, a secret replaced because it leaked is not kept in the database either. The periodic
 * clean-up of the workers runs it; reads already ignore such a secret before it is erased.
 */
export async function eraseRetiredWebhookSecrets(db: Db, now = Date.now()): Promise<number> {
  const accounts = await db
    .updateTable('accounts')
    .set({ previousWebhookSecret: null, previousWebhookSecretUntil: null })
    .where('previousWebhookSecretUntil', '<=', now)
    .executeTakeFirst();
  const subscriptions = await db
    .updateTable('webhookSubscriptions')
    .set({ previousSecret: null, previousSecretUntil: null })
    .where('previousSecretUntil', '<=', now)
    .executeTakeFirst();
  return Number(accounts.numUpdatedRows) + Number(subscriptions.numUpdatedRows);
}

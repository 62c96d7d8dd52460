import type { Static } from 'typebox';
import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { iso } from '../../time.js';
import type { StripeAccountTable } from './stripe.table.js';
import { deleteStripeAccount, findStripeAccount, saveStripeAccount } from './stripe.repository.js';
import type { StripeSettingsBody, StripeSettingsSchema } from './stripe.schemas.js';

type StripeSettings = Static<typeof StripeSettingsSchema>;

/** Where Stripe posts an account's events: outside the key-guarded API, proven by Stripe's signature. */
export function stripeWebhookUrl(publicUrl: string, accountId: string): string {
  return `${publicUrl}/v1/payments/stripe/webhook/${accountId}`;
}

const noSettings = () => new AppError('not_found', 'This account has no Stripe settings.');

/** The settings as the API shows them: which key, never the key or the webhook secret. */
function present(row: StripeAccountTable, publicUrl: string): StripeSettings {
  const [kind, mode] = row.secretKey.split('_');
  return {
    object: 'stripe_settings',
    mode: mode === 'live' ? 'live' : 'test',
    keyType: kind === 'rk' ? 'restricted' : 'secret',
    secretKeyLast4: row.secretKey.slice(-4),
    webhookUrl: stripeWebhookUrl(publicUrl, row.accountId),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export async function getStripeSettings(db: Db, accountId: string, publicUrl: string): Promise<StripeSettings> {
  const row = await findStripeAccount(db, accountId);
  if (!row) throw noSettings();
  return present(row, publicUrl);
}

/** Saves (or replaces) the account's keys; orders already pending keep paying on the sessions they opened. */
export async function putStripeSettings(db: Db, accountId: string, body: Static<typeof StripeSettingsBody>, publicUrl: string): Promise<StripeSettings> {
  const now = Date.now();
  const row = await saveStripeAccount(db, { accountId, secretKey: body.secretKey, webhookSecret: body.webhookSecret, createdAt: now, updatedAt: now });
  return present(row, publicUrl);
}

export async function deleteStripeSettings(db: Db, accountId: string): Promise<void> {
  if (!(await deleteStripeAccount(db, accountId))) throw noSettings();
}

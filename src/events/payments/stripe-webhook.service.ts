import Stripe from 'stripe';
import type { Db } from '../../db/database.js';
import { TenantScope } from '../../db/tenant.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import { findOrder, insertPayment, paymentsOfOrder, UNHONOURED_REASON } from '../orders.repository.js';
import { completeOrder } from '../orders.service.js';
import { lockOrderRow } from '../refunds.repository.js';
import { stripeProvider } from './stripe.js';
import { deleteStripeEventsBefore, findStripeAccount, findStripeEvent, recordStripeEvent } from './stripe.repository.js';

/** What the endpoint did with an event (StripeWebhookReceipt). */
export type StripeOutcome = 'completed' | 'refunded' | 'ignored' | 'duplicate';

/** Where a failed completion means the money cannot be honoured and goes back to the buyer. */
const UNHONOURED = new Set(['order_expired', 'payment_amount_mismatch', 'not_found']);

export interface WebhookLog {
  warn(details: object, message: string): void;
}

/**
 * One post of Stripe to an account's webhook endpoint (docs/events.md, "Stripe"), in this order:
 * 1. the `Stripe-Signature` header signs these exact bytes with the account's webhook secret, within
 *    Stripe's 5 minutes (the package's own `constructEvent`); else, and for an account without
 *    Stripe settings (or no such account), the same 400 stripe_signature_invalid: the keyless
 *    endpoint does not tell which accounts have Stripe;
 * 2. an event acted on before has no second effect (`duplicate`);
 * 3. a paid Checkout Session that Montage opened for this account completes its order; a payment
 *    that cannot be honoured (hold over and places gone, no such order, or the order paid already
 *    by another payment) is refunded at once;
 * 4. the event is noted as acted on. A failure before that answers 5xx: Stripe delivers it again,
 *    and step 3's completion and refund are idempotent, so the retry does no harm.
 */
export async function receiveStripeEvent(db: Db, accountId: string, payload: Buffer, signature: string | undefined, log: WebhookLog): Promise<StripeOutcome> {
  const settings = await findStripeAccount(db, accountId);
  const invalid = () => new AppError('stripe_signature_invalid', 'The Stripe-Signature header does not sign this body with the account\'s webhook secret (or is older than 5 minutes).');
  if (!settings) throw invalid();
  let event: Stripe.Event;
  try {
    event = Stripe.webhooks.constructEvent(payload, signature ?? '', settings.webhookSecret);
  } catch {
    throw invalid();
  }
  if (await findStripeEvent(db, accountId, event.id)) return 'duplicate';

  const { outcome, orderId } = await actOn(db, accountId, event, log);
  await recordStripeEvent(db, { accountId, eventId: event.id, type: event.type, orderId, outcome, createdAt: Date.now() });
  return outcome;
}

async function actOn(db: Db, accountId: string, event: Stripe.Event, log: WebhookLog): Promise<{ outcome: Exclude<StripeOutcome, 'duplicate'>; orderId: string | null }> {
  const paid =
    (event.type === 'checkout.session.completed' && event.data.object.payment_status === 'paid') ||
    event.type === 'checkout.session.async_payment_succeeded';
  if (!paid) return { outcome: 'ignored', orderId: null };
  const session = event.data.object;
  const orderId = session.metadata?.order_id ?? null;
  // Another integration on the same Stripe account, or another Montage account's session: not ours to act on.
  if (session.mode !== 'payment' || orderId === null || session.metadata?.account_id !== accountId) return { outcome: 'ignored', orderId: null };

  const reference = typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
  const amount = session.amount_total ?? 0;
  let reason: string;
  try {
    const scope = new TenantScope(db, accountId);
    await completeOrder(scope, orderId, { provider: 'stripe', reference, amount });
    // The order's own charge: not the trace of an earlier payment not honoured.
    const charge = (await paymentsOfOrder(scope, orderId)).find((p) => p.kind === 'charge' && !(p.reason ?? '').startsWith(UNHONOURED_REASON));
    if (charge === undefined || charge.reference === reference) return { outcome: 'completed', orderId };
    // Completed already by another payment (a second Checkout Session of the same order): this one is paid twice.
    reason = 'already_paid';
  } catch (err) {
    if (!(err instanceof AppError) || !UNHONOURED.has(err.code)) throw err;
    reason = err.code;
  }
  // The buyer paid for places Montage cannot give (or gave for another payment): the money goes back at once, once.
  const provider = await stripeProvider(db, accountId);
  const refund = await provider.refund({
    accountId,
    orderId,
    paymentReference: reference,
    amount,
    currency: (session.currency ?? '').toUpperCase(),
    idempotencyKey: `montage-unhonoured-${reference ?? session.id}`,
  });
  await recordUnhonoured(new TenantScope(db, accountId), orderId, { amount, currency: (session.currency ?? '').toUpperCase(), charge: reference, refund: refund.reference, reason });
  log.warn({ orderId, stripeEvent: event.id, paymentIntent: reference, refund: refund.reference, reason }, 'Stripe payment not honoured: refunded at once');
  return { outcome: 'refunded', orderId };
}

/**
 * The trace of a payment not honoured, on its order (if there is one): a succeeded `charge` and a
 * succeeded `refund` of the same amount, both with `reason` `unhonoured: <why>` (UNHONOURED_REASON). They cancel out in
 * what the order was paid and what is left to refund; the order's `refundedAmount` and payment
 * status are its own sale's, and no `payment.completed` or `payment.refunded` fires (no sale
 * happened). Written once: a repeated delivery finds the charge of that PaymentIntent already there.
 */
async function recordUnhonoured(scope: TenantScope, orderId: string, money: { amount: number; currency: string; charge: string | null; refund: string | null; reason: string }): Promise<void> {
  const known = await findOrder(scope, orderId);
  if (!known) return;
  await scope.transaction(async (tx) => {
    const order = (await lockOrderRow(tx, orderId))!;
    const reason = `${UNHONOURED_REASON}${money.reason}`;
    const recorded = await paymentsOfOrder(tx, orderId);
    if (recorded.some((p) => p.kind === 'charge' && p.provider === 'stripe' && p.reference === money.charge && p.reason === reason)) return;
    const now = Date.now();
    const row = { accountId: scope.accountId, eventId: order.eventId, orderId, ticketId: null, provider: 'stripe', amount: money.amount, currency: money.currency, status: 'succeeded', reason, createdAt: now, updatedAt: now };
    await insertPayment(tx, { ...row, id: newId('payment'), kind: 'charge', reference: money.charge });
    await insertPayment(tx, { ...row, id: newId('payment'), kind: 'refund', reference: money.refund });
  });
}

/**
 * Forgets the Stripe events acted on more than `keepMs` ago (the workers' clean-up). Stripe retries
 * an event for 3 days and its dashboard resends older ones by hand: 30 days covers both.
 */
export function purgeOldStripeEvents(db: Db, keepMs = 30 * 86_400_000, now = Date.now()): Promise<number> {
  return deleteStripeEventsBefore(db, now - keepMs);
}

import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import { TenantScope } from '../db/tenant.js';
import { AppError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { enqueueJobs } from '../jobs/queue.js';
import { fanOut } from '../webhooks/outbox.js';
import { findOrder, type OrderRow, type PaymentRow, paymentsOfOrder } from './orders.repository.js';
import { presentPayment } from './orders.service.js';
import { type PaymentProvider, type ProviderName, RefundRefused } from './payments/provider.js';
import { providerFor } from './payments/providers.js';
import { refundsOfTickets } from './order-changes.repository.js';
import * as repo from './refunds.repository.js';
import type { TicketRow } from './tickets.repository.js';
import type { RefundOrderBody } from './refunds.schemas.js';

/** Money an order change or a cancel wants back: for a ticket, or (null) for the order as a whole. */
export interface RefundWish {
  ticketId: string | null;
  amount: number;
  reason: string | null;
}

/** Refunds written `pending`, and what each provider's refund call names: its charge of the order. */
export interface ReservedRefunds {
  order: Pick<OrderRow, 'id' | 'provider'>;
  references: Map<string, string | null>;
  rows: PaymentRow[];
}

/** The durable job that settles a pending refund (refunds.job.ts works it), queued with the refund. */
export const SETTLE_REFUND_KIND = 'refund.settle';
export const SETTLE_REFUND_MAX_ATTEMPTS = 25;
/** When the job first looks at a refund the caller settles at once: by then the caller is done, and the job finds it settled. */
export const SETTLE_REFUND_GRACE_MS = 60_000;
export type SettleRefundPayload = { accountId: string; paymentId: string };

/** Why an order gives no money back: it is not completed (pending, expired or cancelled orders took none, or gave it back). */
export function requireCompleted(order: Pick<OrderRow, 'id' | 'status'>): void {
  if (order.status !== 'completed') {
    throw new AppError('order_not_completed', `Order ${order.id} is ${order.status}; only a completed order is refunded or changed.`, { orderStatus: order.status });
  }
}

/**
 * Writes refunds `pending`, in the caller's transaction, which holds the order's lock
 * (repo.lockOrderRow): what is left to refund is what the order was paid less every refund
 * pending or succeeded, counted under that lock, so concurrent refunds never give back more than
 * was paid. Each wish gets at most what is left (a wish of nothing is dropped), taken from the
 * charges of one provider after the other, the order's own provider first: a Stripe order whose
 * balance was paid by hand (`manual`) gives back through Stripe at most what Stripe took, and the
 * rest as a `manual` refund. So a wish may become one refund per provider. Each refund's
 * `refund.settle` job is queued in the same transaction: if the process dies before the provider
 * answered, or the provider could not be reached, a worker asks again with the same idempotency key.
 */
export async function reserveRefunds(tx: TenantScope, order: OrderRow, wishes: RefundWish[], now: number, money?: repo.OrderMoney): Promise<ReservedRefunds> {
  money ??= await repo.moneyOfOrder(tx, order);
  // What is left in all bounds every wish, as before refunds were split: a provider whose refunds
  // passed its own charges (rows of before the split) may not let another give back more than paid.
  let total = money.paid - money.refunding;
  const left = new Map(money.byProvider.map((p) => [p.provider, Math.max(0, p.paid - p.refunding)]));
  const rows: PaymentRow[] = [];
  for (const wish of wishes) {
    let wanted = Math.min(wish.amount, total);
    for (const { provider } of money.byProvider) {
      const amount = Math.min(wanted, left.get(provider)!);
      if (amount <= 0) continue;
      left.set(provider, left.get(provider)! - amount);
      wanted -= amount;
      total -= amount;
      rows.push({
        id: newId('payment'),
        accountId: tx.accountId,
        eventId: order.eventId,
        orderId: order.id,
        ticketId: wish.ticketId,
        provider,
        kind: 'refund',
        amount,
        currency: order.currency,
        status: 'pending',
        reference: null,
        reason: wish.reason,
        createdAt: now,
        updatedAt: now,
      });
    }
  }
  await repo.insertPayments(tx, rows);
  await enqueueJobs(
    tx.db,
    rows.map((row) => ({ kind: SETTLE_REFUND_KIND, payload: { accountId: tx.accountId, paymentId: row.id } satisfies SettleRefundPayload, maxAttempts: SETTLE_REFUND_MAX_ATTEMPTS, runAt: now + SETTLE_REFUND_GRACE_MS })),
    now,
  );
  return { order, references: new Map(money.byProvider.map((p) => [p.provider, p.reference])), rows };
}

/**
 * The refunds of tickets cancelled by their organiser (an event's cancellation), in the caller's
 * transaction: for each completed order among them, its lock taken (orders by id, so two callers
 * never wait on each other), each ticket's worth (its price less what was refunded of it or is
 * being refunded) reserved through reserveRefunds, capped by what is left of the order's money.
 * Pending, expired and cancelled orders took no money; free tickets are worth nothing.
 */
export async function reserveTicketRefunds(tx: TenantScope, tickets: Pick<TicketRow, 'id' | 'orderId' | 'price'>[], reason: string, now: number): Promise<ReservedRefunds[]> {
  const byOrder = new Map<string, Pick<TicketRow, 'id' | 'orderId' | 'price'>[]>();
  for (const ticket of tickets) if (ticket.price > 0) byOrder.set(ticket.orderId, [...(byOrder.get(ticket.orderId) ?? []), ticket]);
  const reserved: ReservedRefunds[] = [];
  for (const orderId of [...byOrder.keys()].sort()) {
    const order = await repo.lockOrderRow(tx, orderId);
    if (!order || order.status !== 'completed') continue;
    const refunded = await refundsOfTickets(tx, orderId);
    const wishes = byOrder.get(orderId)!.map((ticket) => ({ ticketId: ticket.id, amount: ticket.price - (refunded.get(ticket.id) ?? 0), reason }));
    const refunds = await reserveRefunds(tx, order, wishes, now);
    if (refunds.rows.length > 0) reserved.push(refunds);
  }
  return reserved;
}

/** The provider that gives an order's money back; none for money taken outside Montage (`external`: its integrator gives it back). */
async function refunderOf(db: Db, accountId: string, provider: string | null): Promise<PaymentProvider | null> {
  if (provider === null || provider === 'external') return null;
  return providerFor(db, accountId, provider as ProviderName);
}

/** What a provider's refund call came to: money moved, a definite refusal (nothing moved), or no answer to be sure of. */
type Attempt = { status: 'succeeded'; reference: string | null } | { status: 'failed'; reason: string } | { status: 'unknown'; reason: string };

/** Asks the refund's provider to move its money back from that provider's charge (`chargeReference`), with the refund's id as the idempotency key. */
async function attemptRefund(scope: TenantScope, chargeReference: string | null, row: PaymentRow): Promise<Attempt> {
  let provider: PaymentProvider | null;
  try {
    provider = await refunderOf(scope.db as Db, scope.accountId, row.provider);
  } catch (err) {
    // No provider to call (the account's Stripe keys are gone): nothing was sent, so nothing moved.
    return { status: 'failed', reason: err instanceof Error ? err.message : String(err) };
  }
  try {
    const answer = provider
      ? await provider.refund({ accountId: scope.accountId, orderId: row.orderId, paymentReference: chargeReference, amount: row.amount, currency: row.currency, idempotencyKey: row.id })
      : { reference: null };
    return { status: 'succeeded', reference: answer.reference };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    // Only the provider's own "no" frees the amount: after a timeout or a 5xx the money may have moved.
    return err instanceof RefundRefused ? { status: 'failed', reason } : { status: 'unknown', reason };
  }
}

/**
 * Moves the money of reserved refunds through their providers, outside any transaction (the
 * call may wait on the network), one refund after the other, each with its payment id as the
 * idempotency key. A definite outcome is recorded in a transaction of its own: `succeeded` with the
 * money on the order and ticket and `payment.refunded`, or `failed` when the provider refused (its
 * amount is free again). Without an answer to be sure of (a timeout, a connection error, a 5xx)
 * the refund stays `pending`: its `refund.settle` job asks again with the same key. A refund settled
 * meanwhile by another caller is left as it is. If any failed: 502 `payment_provider_error`, once
 * all are recorded.
 */
export async function settleRefunds(scope: TenantScope, reserved: ReservedRefunds): Promise<PaymentRow[]> {
  const settled: PaymentRow[] = [];
  for (const row of reserved.rows) {
    const attempt = await attemptRefund(scope, reserved.references.get(row.provider) ?? null, row);
    settled.push(attempt.status === 'unknown' ? row : await recordOutcome(scope, row, attempt));
  }
  const failed = settled.filter((row) => row.status === 'failed');
  if (failed.length > 0) {
    const amount = failed.reduce((sum, row) => sum + row.amount, 0);
    throw new AppError('payment_provider_error', `The payment provider refused to refund ${amount} ${failed[0]!.currency} of order ${reserved.order.id}. Everything else asked for is done; refund the amount again later with POST /v1/orders/${reserved.order.id}/refunds.`, {
      failedPaymentIds: failed.map((row) => row.id),
    });
  }
  return settled;
}

/**
 * The `refund.settle` job: a refund still pending is asked of the provider again (same idempotency
 * key: a refund that went through is not paid twice) and its outcome recorded. `settled` when it is
 * no longer pending; `unknown` when the provider gave no answer to be sure of (the job retries).
 */
export async function settlePendingRefund(db: Db, payload: SettleRefundPayload): Promise<{ status: 'settled' } | { status: 'unknown'; reason: string }> {
  const scope = new TenantScope(db, payload.accountId);
  const row = await repo.findPayment(scope, payload.paymentId);
  if (!row || row.status !== 'pending') return { status: 'settled' };
  const order = await findOrder(scope, row.orderId);
  if (!order) return { status: 'settled' };
  const { byProvider } = await repo.moneyOfOrder(scope, order);
  const attempt = await attemptRefund(scope, byProvider.find((p) => p.provider === row.provider)?.reference ?? null, row);
  if (attempt.status === 'unknown') return attempt;
  await recordOutcome(scope, row, attempt);
  return { status: 'settled' };
}

async function recordOutcome(scope: TenantScope, row: PaymentRow, outcome: Exclude<Attempt, { status: 'unknown' }>): Promise<PaymentRow> {
  return scope.transaction(async (tx) => {
    const now = Date.now();
    const settled = await repo.settlePayment(tx, row.id, outcome.status, outcome.status === 'succeeded' ? outcome.reference : null, now);
    if (!settled) return (await paymentsOfOrder(tx, row.orderId)).find((p) => p.id === row.id)!;
    if (settled.status === 'succeeded') {
      const { paid } = await repo.moneyOfOrder(tx, { id: settled.orderId, provider: null });
      await repo.recordRefund(tx, settled, paid, now);
      const data = { orderId: settled.orderId, ticketId: settled.ticketId, amount: settled.amount, currency: settled.currency, provider: settled.provider, paymentId: settled.id };
      await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'payment.refunded', data }], now);
    }
    return settled;
  });
}

/**
 * `POST /orders/:id/refunds`: money back, tickets untouched. The amount (default: all that is left)
 * may not pass what was paid less what was refunded or is being refunded: 409
 * `refund_exceeds_paid` with `refundable`.
 */
export async function refundOrder(scope: TenantScope, orderId: string, input: Static<typeof RefundOrderBody>) {
  const reserved = await scope.transaction(async (tx) => {
    const order = await repo.lockOrderRow(tx, orderId);
    if (!order) throw notFound('order', orderId);
    requireCompleted(order);
    const money = await repo.moneyOfOrder(tx, order);
    const refundable = Math.max(0, money.paid - money.refunding);
    const amount = input.amount ?? refundable;
    if (amount > refundable || amount === 0) {
      throw new AppError('refund_exceeds_paid', `Order ${orderId} has ${refundable} ${order.currency} left to refund${amount === 0 ? '' : `; ${amount} was asked`}.`, { refundable });
    }
    return reserveRefunds(tx, order, [{ ticketId: null, amount, reason: input.reason ?? null }], Date.now(), money);
  });
  const [refund] = await settleRefunds(scope, reserved);
  return presentPayment(refund!);
}

import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import type { TenantScope } from '../db/tenant.js';
import { AppError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { fanOut } from '../webhooks/outbox.js';
import { type OrderRow, type PaymentRow, paymentsOfOrder } from './orders.repository.js';
import { presentPayment } from './orders.service.js';
import type { PaymentProvider, ProviderName } from './payments/provider.js';
import { providerFor } from './payments/providers.js';
import * as repo from './refunds.repository.js';
import type { RefundOrderBody } from './refunds.schemas.js';

/** Money an order change or a cancel wants back: for a ticket, or (null) for the order as a whole. */
export interface RefundWish {
  ticketId: string | null;
  amount: number;
  reason: string | null;
}

/** Refunds written `pending`, and what the provider's refund call names: the order's charge. */
export interface ReservedRefunds {
  order: Pick<OrderRow, 'id' | 'provider'>;
  chargeReference: string | null;
  rows: PaymentRow[];
}

/** Why an order gives no money back: it is not completed (pending, expired or cancelled orders took none, or gave it back). */
export function requireCompleted(order: Pick<OrderRow, 'id' | 'status'>): void {
  if (order.status !== 'completed') {
    throw new AppError('order_not_completed', `Order ${order.id} is ${order.status}; only a completed order is refunded or changed.`, { orderStatus: order.status });
  }
}

/**
 * Writes refunds `pending`, in the caller's transaction, which holds the order's lock
 * (repo.lockOrder): what is left to refund is what the order was paid less every refund pending or
 * succeeded, counted under that lock, so concurrent refunds never give back more than was paid.
 * Each wish gets at most what is left (a wish of nothing is dropped).
 */
export async function reserveRefunds(tx: TenantScope, order: OrderRow, wishes: RefundWish[], now: number, money?: repo.OrderMoney): Promise<ReservedRefunds> {
  money ??= await repo.moneyOfOrder(tx, order);
  let left = money.paid - money.refunding;
  const rows: PaymentRow[] = [];
  for (const wish of wishes) {
    const amount = Math.min(wish.amount, left);
    if (amount <= 0) continue;
    left -= amount;
    rows.push({
      id: newId('payment'),
      accountId: tx.accountId,
      eventId: order.eventId,
      orderId: order.id,
      ticketId: wish.ticketId,
      provider: order.provider ?? 'external',
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
  await repo.insertPayments(tx, rows);
  return { order, chargeReference: money.chargeReference, rows };
}

/** The provider that gives an order's money back; none for money taken outside Montage (`external`: its integrator gives it back). */
async function refunderOf(db: Db, accountId: string, provider: string | null): Promise<PaymentProvider | null> {
  if (provider === null || provider === 'external') return null;
  return providerFor(db, accountId, provider as ProviderName);
}

/**
 * Moves the money of reserved refunds through the order's provider, outside any transaction (the
 * call may wait on the network), one refund after the other, each with its payment id as the
 * idempotency key. Each outcome is recorded in a transaction of its own: `succeeded` with the
 * money on the order and ticket and `payment.refunded`, or `failed` (its amount is free again).
 * A refund settled meanwhile by another caller is left as it is. If any failed: 502
 * `payment_provider_error`, once all are recorded.
 */
export async function settleRefunds(scope: TenantScope, reserved: ReservedRefunds): Promise<PaymentRow[]> {
  const settled: PaymentRow[] = [];
  let provider: PaymentProvider | null | undefined;
  for (const row of reserved.rows) {
    let outcome: { status: 'succeeded' | 'failed'; reference: string | null };
    try {
      provider ??= await refunderOf(scope.db as Db, scope.accountId, reserved.order.provider);
      const answer = provider
        ? await provider.refund({ accountId: scope.accountId, orderId: row.orderId, paymentReference: reserved.chargeReference, amount: row.amount, currency: row.currency, idempotencyKey: row.id })
        : { reference: null };
      outcome = { status: 'succeeded', reference: answer.reference };
    } catch {
      outcome = { status: 'failed', reference: null };
    }
    settled.push(await recordOutcome(scope, row, outcome));
  }
  const failed = settled.filter((row) => row.status === 'failed');
  if (failed.length > 0) {
    const amount = failed.reduce((sum, row) => sum + row.amount, 0);
    throw new AppError('payment_provider_error', `The payment provider did not refund ${amount} ${failed[0]!.currency} of order ${reserved.order.id}. Everything else asked for is done; refund the amount again later with POST /v1/orders/${reserved.order.id}/refunds.`, {
      failedPaymentIds: failed.map((row) => row.id),
    });
  }
  return settled;
}

async function recordOutcome(scope: TenantScope, row: PaymentRow, outcome: { status: 'succeeded' | 'failed'; reference: string | null }): Promise<PaymentRow> {
  return scope.transaction(async (tx) => {
    const now = Date.now();
    const settled = await repo.settlePayment(tx, row.id, outcome.status, outcome.reference, now);
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
    const order = await repo.lockOrder(tx, orderId);
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

import { sql } from 'kysely';
import { onPostgres } from '../db/prepared.js';
import type { TenantScope } from '../db/tenant.js';
import { type OrderRow, ownMoney, type PaymentRow } from './orders.repository.js';

const n = (value: unknown) => Number(value ?? 0);

/**
 * The order, locked for the rest of the transaction: every refund of it takes this lock before it
 * counts what is left, so two refunds cannot both take the last of the money. PostgreSQL: a row
 * lock; SQLite: the transaction holds the database's write lock already (BEGIN IMMEDIATE).
 */
export async function lockOrderRow(tx: TenantScope, id: string): Promise<OrderRow | undefined> {
  if (!tx.db.isTransaction) throw new Error('lockOrderRow needs a transaction');
  const query = tx.selectFrom('orders').selectAll().where('id', '=', id);
  return (onPostgres(tx.db) ? query.forUpdate() : query).executeTakeFirst();
}

/** What one provider's charges of an order took, what its refunds took back or are taking, and its charge's id there. */
export type ProviderMoney = { provider: string; paid: number; refunding: number; reference: string | null };

/** An order's money in all, and by provider: the order's own provider first, then the others by name. */
export type OrderMoney = { paid: number; refunding: number; byProvider: ProviderMoney[] };

/**
 * What an order was paid (its charges that succeeded), what its refunds took or are taking (pending
 * and succeeded), in all and by provider (a balance confirmed by hand is a `manual` charge beside
 * the provider's), with each provider's id of its charge: what that provider's refund names.
 */
export async function moneyOfOrder(tx: TenantScope, order: Pick<OrderRow, 'id' | 'provider'>): Promise<OrderMoney> {
  const rows = await tx
    .selectFrom('payments')
    .select([
      'provider',
      sql<number>`coalesce(sum(case when kind = 'charge' and status = 'succeeded' then amount else 0 end), 0)`.as('paid'),
      sql<number>`coalesce(sum(case when kind = 'refund' and status in ('pending', 'succeeded') then amount else 0 end), 0)`.as('refunding'),
      sql<string | null>`min(case when kind = 'charge' and status = 'succeeded' then reference end)`.as('reference'),
    ])
    .where('orderId', '=', order.id)
    .where(ownMoney)
    .groupBy('provider')
    .execute();
  const rank = (provider: string) => (provider === (order.provider ?? 'external') ? '' : provider);
  const byProvider = rows
    .map((row) => ({ provider: row.provider, paid: n(row.paid), refunding: n(row.refunding), reference: row.reference ?? null }))
    .sort((a, b) => (rank(a.provider) < rank(b.provider) ? -1 : 1));
  return { paid: byProvider.reduce((sum, p) => sum + p.paid, 0), refunding: byProvider.reduce((sum, p) => sum + p.refunding, 0), byProvider };
}

export function findPayment(scope: TenantScope, id: string): Promise<PaymentRow | undefined> {
  return scope.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertPayments(tx: TenantScope, rows: PaymentRow[]): Promise<void> {
  if (rows.length > 0) await tx.db.insertInto('payments').values(rows).execute();
}

/** A pending refund → `succeeded` or `failed`; the row as it is now, or undefined if it was not pending (settled before). */
export function settlePayment(tx: TenantScope, id: string, status: 'succeeded' | 'failed', reference: string | null, now: number): Promise<PaymentRow | undefined> {
  return tx.updateTable('payments').set({ status, reference, updatedAt: now }).where('id', '=', id).where('status', '=', 'pending').returningAll().executeTakeFirst();
}

/**
 * Money that went back: on the order (its `refundedAmount`, and its payment status against what it
 * was paid) and, for a ticket's refund, on the ticket.
 */
export async function recordRefund(tx: TenantScope, refund: PaymentRow, paid: number, now: number): Promise<void> {
  await tx
    .updateTable('orders')
    .set((eb) => ({
      refundedAmount: eb('refundedAmount', '+', refund.amount),
      paymentStatus: sql<string>`case when refunded_amount + ${refund.amount} >= ${paid} then 'refunded' else 'partially_refunded' end`,
      updatedAt: now,
    }))
    .where('id', '=', refund.orderId)
    .execute();
  if (refund.ticketId !== null) {
    await tx.updateTable('tickets').set((eb) => ({ refundedAmount: eb('refundedAmount', '+', refund.amount), updatedAt: now })).where('id', '=', refund.ticketId!).execute();
  }
}

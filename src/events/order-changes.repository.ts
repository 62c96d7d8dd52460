import { sql } from 'kysely';
import type { TenantScope } from '../db/tenant.js';
import { reservedOfType, waitingOfType } from './vouchers.repository.js';

/** How many tickets an order change moves out of, or into, one ticket type. */
export type TypeMove = { ticketTypeId: string; quantity: number };

/** Places back into ticket types whose tickets moved away (a type change keeps the event's count). */
export async function releaseTypePlaces(tx: TenantScope, moves: TypeMove[], now: number): Promise<void> {
  for (const move of moves) {
    await tx.updateTable('ticketTypes').set((eb) => ({ sold: eb('sold', '-', move.quantity), updatedAt: now })).where('id', '=', move.ticketTypeId).execute();
  }
}

/**
 * Places taken from a ticket type for tickets that moved into it, with the conditional update a
 * public order uses (`sold + held + n + reserved + waiting <= quantity`: held places, places
 * reserved by vouchers and people waiting count as taken): false, with nothing taken, if the type has fewer left.
 */
export async function takeTypePlaces(tx: TenantScope, move: TypeMove, now: number): Promise<boolean> {
  const taken = await tx
    .updateTable('ticketTypes')
    .set((eb) => ({ sold: eb('sold', '+', move.quantity), updatedAt: now }))
    .where('id', '=', move.ticketTypeId)
    .where((eb) =>
      eb(sql<number>`${eb.ref('sold')} + ${eb.ref('held')} + ${move.quantity} + ${reservedOfType(eb.ref('ticketTypes.id'), now, '')} + ${waitingOfType(eb.ref('ticketTypes.id'), '')}`, '<=', eb.ref('quantity')),
    )
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) === 1;
}

/** What each ticket of an order had refunded, or is having refunded (refunds pending or succeeded), by ticket id. */
export async function refundsOfTickets(tx: TenantScope, orderId: string): Promise<Map<string, number>> {
  const rows = await tx
    .selectFrom('payments')
    .select(['ticketId', sql<number>`sum(amount)`.as('amount')])
    .where('orderId', '=', orderId)
    .where('kind', '=', 'refund')
    .where('status', 'in', ['pending', 'succeeded'])
    .where('ticketId', 'is not', null)
    .groupBy('ticketId')
    .execute();
  return new Map(rows.map((row) => [row.ticketId!, Number(row.amount)]));
}

/** What the order's buyer owes after a change (docs/events.md, "Refunds and order changes"). */
export async function setBalanceDue(tx: TenantScope, orderId: string, balanceDue: number, now: number): Promise<void> {
  await tx.updateTable('orders').set({ balanceDue, updatedAt: now }).where('id', '=', orderId).execute();
}

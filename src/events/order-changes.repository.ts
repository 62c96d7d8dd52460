import type { TenantScope } from '../db/tenant.js';

/** How many tickets an order change moves out of, or into, one ticket type. */
export type TypeMove = { ticketTypeId: string; quantity: number };

/** Places back into ticket types whose tickets moved away (a type change keeps the event's count). */
export async function releaseTypePlaces(tx: TenantScope, moves: TypeMove[], now: number): Promise<void> {
  for (const move of moves) {
    await tx.updateTable('ticketTypes').set((eb) => ({ sold: eb('sold', '-', move.quantity), updatedAt: now })).where('id', '=', move.ticketTypeId).execute();
  }
}

/**
 * Places taken from a ticket type for tickets that moved into it, with the conditional update an
 * order uses: false, with nothing taken, if the type has fewer left.
 */
export async function takeTypePlaces(tx: TenantScope, move: TypeMove, now: number): Promise<boolean> {
  const taken = await tx
    .updateTable('ticketTypes')
    .set((eb) => ({ sold: eb('sold', '+', move.quantity), updatedAt: now }))
    .where('id', '=', move.ticketTypeId)
    .where((eb) => eb(eb('sold', '+', move.quantity), '<=', eb.ref('quantity')))
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) === 1;
}

import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import { eventSigner, issueCode, revokeCodes } from './door.service.js';
import { listTicketTypes, requireLockedEvent } from './events.repository.js';
import * as repo from './order-changes.repository.js';
import type { ChangeOrderBody } from './order-changes.schemas.js';
import { findOrder } from './orders.repository.js';
import { getOrder } from './orders.service.js';
import { cancelOpenTicket, releasePlace, retypeOpenTicket, type TicketRow, ticketsOfOrder } from './tickets.repository.js';
import { changeTicket, presentTicket, refundOf } from './tickets.service.js';

type ChangeInput = Static<typeof ChangeOrderBody>;

/** What one ticket's type change did to it, and what it costs (negative: money back). */
interface TypeChange {
  ticketId: string;
  fromTicketTypeId: string;
  toTicketTypeId: string;
  difference: number;
}

/** The tickets the change names, each once, all of the order: else a 400 naming the field. */
function namedTickets(input: ChangeInput, tickets: Map<string, TicketRow>, orderId: string) {
  const cancel = input.cancelTickets ?? [];
  const retype = input.changeTypes ?? [];
  if (cancel.length + retype.length === 0) throw invalid('/cancelTickets', 'or changeTypes must name at least one ticket');
  const seen = new Set<string>();
  const named = (id: string, path: string) => {
    if (seen.has(id)) throw invalid(path, 'names a ticket a second time; a change names each ticket once');
    seen.add(id);
    const ticket = tickets.get(id);
    if (!ticket) throw invalid(path, `is not a ticket of order ${orderId}`);
    return ticket;
  };
  return {
    cancel: cancel.map((id, i) => named(id, `/cancelTickets/${i}`)),
    retype: retype.map((change, i) => ({ ticket: named(change.ticketId, `/changeTypes/${i}/ticketId`), ticketTypeId: change.ticketTypeId, path: `/changeTypes/${i}/ticketTypeId` })),
  };
}

/** Counts per ticket type, in id order (the order every writer of ticket types takes them in). */
function countByType(ids: string[]): repo.TypeMove[] {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([ticketTypeId, quantity]) => ({ ticketTypeId, quantity }));
}

/**
 * Cancels some tickets of an order and moves others to another ticket type, in one transaction
 * under the event's lock: all of it or nothing. A cancelled ticket's place returns to inventory;
 * a moved ticket leaves its old type's inventory and takes a place of the new one with the
 * conditional update orders use (`sold + n <= quantity`: a sold-out type refuses, and nothing
 * changes), gets the new type's price and a new signed code (the old code is revoked, as on
 * transfer). Each ticket must be valid and not checked in (the codes of ticket changes).
 */
export async function changeOrder(scope: TenantScope, orderId: string, input: ChangeInput) {
  const result = await scope.transaction(async (tx) => {
    const found = await findOrder(tx, orderId);
    if (!found) throw notFound('order', orderId);
    const event = await requireLockedEvent(tx, found.eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${event.id} is cancelled; its orders do not change.`);
    const now = Date.now();

    // Read under the event's lock: the tickets and inventory every change of them also locks first.
    const tickets = new Map((await ticketsOfOrder(tx, orderId)).map((t) => [t.id, t]));
    const named = namedTickets(input, tickets, orderId);
    const types = new Map((await listTicketTypes(tx, event.id)).map((t) => [t.id, t]));
    for (const change of named.retype) {
      if (!types.has(change.ticketTypeId)) throw invalid(change.path, `is not a ticket type of event ${event.id}`);
      if (change.ticketTypeId === change.ticket.ticketTypeId) throw invalid(change.path, `is the type of ticket ${change.ticket.id} already`);
    }

    const cancelled: TicketRow[] = [];
    for (const ticket of named.cancel) {
      const row = await changeTicket(tx, 'cancel', { ticketId: ticket.id }, () => cancelOpenTicket(tx, ticket.id, now));
      await releasePlace(tx, row, now);
      cancelled.push(row);
    }

    const signer = named.retype.length > 0 ? await eventSigner(tx, event.id) : null;
    const changed: TypeChange[] = [];
    const retyped: TicketRow[] = [];
    for (const { ticket, ticketTypeId } of named.retype) {
      const type = types.get(ticketTypeId)!;
      const code = issueCode(signer!, { id: ticket.id, eventId: event.id, ticketTypeId });
      const row = await changeTicket(tx, 'retype', { ticketId: ticket.id }, () => retypeOpenTicket(tx, ticket.id, { ticketTypeId, price: type.price, code }, now));
      retyped.push(row);
      changed.push({ ticketId: ticket.id, fromTicketTypeId: ticket.ticketTypeId, toTicketTypeId: ticketTypeId, difference: type.price - ticket.price });
    }
    // Out of the old types first: a swap between two types in one change needs the freed places.
    await repo.releaseTypePlaces(tx, countByType(changed.map((c) => c.fromTicketTypeId)), now);
    for (const move of countByType(changed.map((c) => c.toTicketTypeId))) {
      if (!(await repo.takeTypePlaces(tx, move, now))) {
        const type = (await listTicketTypes(tx, event.id)).find((t) => t.id === move.ticketTypeId)!;
        const left = Math.max(0, type.quantity - type.sold);
        throw new AppError('sold_out', `Ticket type ${type.id} has ${left} of ${type.quantity} left; the change needs ${move.quantity}.`, { ticketTypeId: type.id, available: left });
      }
    }
    await revokeCodes(tx, named.cancel, 'cancelled', now);
    await revokeCodes(tx, named.retype.map((c) => c.ticket), 'reissued', now);

    const messages: OutboxMessage[] = cancelled.flatMap((row): OutboxMessage[] => [{ event: 'ticket.cancelled', data: presentTicket(row) }, ...refundOf(row)]);
    const difference = changed.reduce((sum, c) => sum + c.difference, 0) - cancelled.reduce((sum, t) => sum + t.price, 0);
    const order = await getOrder(tx, orderId);
    messages.push({ event: 'order.changed', data: order });
    await fanOut.inTransaction(tx.db, scope.accountId, messages, now);
    return { order, cancelled: cancelled.map((t) => t.id), changed, difference };
  });
  return result;
}

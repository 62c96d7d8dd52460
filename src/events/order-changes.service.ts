import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import { eventSigner, issueCode, revokeCodes } from './door.service.js';
import { type EventRow, listTicketTypes, requireLockedEvent, type TicketTypeRow } from './events.repository.js';
import * as repo from './order-changes.repository.js';
import type { ChangeOrderBody } from './order-changes.schemas.js';
import { findOrder, type OrderRow } from './orders.repository.js';
import { getOrder, presentPayment } from './orders.service.js';
import { lockOrderRow } from './refunds.repository.js';
import { type RefundWish, requireCompleted, reserveRefunds, type ReservedRefunds, settleRefunds } from './refunds.service.js';
import { cancelOpenTicket, findTicket, releasePlace, retypeOpenTicket, type TicketRow, ticketsOfOrder } from './tickets.repository.js';
import { changeTicket, presentTicket } from './tickets.service.js';
import { keptOfEvent, voucherById } from './vouchers.repository.js';
import { discountOf, freePlaces } from './vouchers.service.js';
import { queueWaitlistOffers } from './waitlist.service.js';

type ChangeInput = Static<typeof ChangeOrderBody>;

/** What one ticket's type change did to it, and what it costs (negative: money back). */
interface TypeChange {
  ticketId: string;
  fromTicketTypeId: string;
  toTicketTypeId: string;
  difference: number;
}

/** The tickets a change names, each once and all of the order, and their new types. */
interface NamedTickets {
  cancel: TicketRow[];
  retype: Array<{ ticket: TicketRow; type: TicketTypeRow }>;
}

/** The tickets the change names, each once, all of the order: else a 400 naming the field. */
function namedTickets(input: ChangeInput, tickets: Map<string, TicketRow>, types: Map<string, TicketTypeRow>, order: OrderRow): NamedTickets {
  const cancel = input.cancelTickets ?? [];
  const retype = input.changeTypes ?? [];
  if (cancel.length + retype.length === 0) throw invalid('/cancelTickets', 'or changeTypes must name at least one ticket');
  const seen = new Set<string>();
  const named = (id: string, path: string) => {
    if (seen.has(id)) throw invalid(path, 'names a ticket a second time; a change names each ticket once');
    seen.add(id);
    const ticket = tickets.get(id);
    if (!ticket) throw invalid(path, `is not a ticket of order ${order.id}`);
    return ticket;
  };
  return {
    cancel: cancel.map((id, i) => named(id, `/cancelTickets/${i}`)),
    retype: retype.map((change, i) => {
      const ticket = named(change.ticketId, `/changeTypes/${i}/ticketId`);
      const type = types.get(change.ticketTypeId);
      if (!type) throw invalid(`/changeTypes/${i}/ticketTypeId`, `is not a ticket type of event ${order.eventId}`);
      if (type.id === ticket.ticketTypeId) throw invalid(`/changeTypes/${i}/ticketTypeId`, `is the type of ticket ${ticket.id} already`);
      return { ticket, type };
    }),
  };
}

/** Counts per ticket type, in id order (the order every writer of ticket types takes them in). */
function countByType(ids: string[]): repo.TypeMove[] {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([ticketTypeId, quantity]) => ({ ticketTypeId, quantity }));
}

/** What a change did, as its transaction leaves it: the refunds are reserved, not yet made. */
interface Applied {
  cancelled: TicketRow[];
  changed: TypeChange[];
  /** What the change did to the order's value: the moves' differences less the cancelled tickets' worth. */
  difference: number;
  balanceDue: number;
  reserved: ReservedRefunds;
}

/**
 * The money of a change. A ticket is worth its `price` less what was refunded of it (or is being
 * refunded). A move to a dearer type owes the difference: it raises the ticket's price and the
 * order's `balanceDue`. A cancel (the ticket's whole worth) or a move to a cheaper type is a
 * credit: it first pays off the order's balance due (that part of the ticket's price was never
 * paid, so its price drops by it), and the rest is refunded, unless the caller keeps it
 * (`refund: false`). Refunds never pass what is left of the order's money (refunds.service.ts).
 */
async function applyChange(tx: TenantScope, order: OrderRow, event: EventRow, named: NamedTickets, refund: boolean, now: number): Promise<Applied> {
  const refunded = await repo.refundsOfTickets(tx, order.id);
  const worth = (ticket: TicketRow) => ticket.price - (refunded.get(ticket.id) ?? 0);
  let balance = order.balanceDue;
  // A ticket bought with the order's voucher keeps its discount on a type the voucher also
  // applies to (an order-wide voucher); a voucher of one type gives none to another type.
  const voucher = order.voucherId === null ? null : ((await voucherById(tx, order.voucherId)) ?? null);
  const applies = (typeId: string) => voucher !== null && (voucher.ticketTypeId === null || voucher.ticketTypeId === typeId);
  const priceOf = (ticket: TicketRow, type: TicketTypeRow) => type.price - (applies(ticket.ticketTypeId) && applies(type.id) ? discountOf(voucher!, type.price) : 0);
  const changed: TypeChange[] = named.retype.map(({ ticket, type }) => {
    const difference = priceOf(ticket, type) - worth(ticket);
    if (difference > 0) balance += difference;
    return { ticketId: ticket.id, fromTicketTypeId: ticket.ticketTypeId, toTicketTypeId: type.id, difference };
  });
  const wishes: RefundWish[] = [];
  /** The part of a credit the balance takes, the rest wished back. */
  const credit = (ticket: TicketRow, amount: number, reason: string) => {
    const offset = Math.min(amount, balance);
    balance -= offset;
    if (refund && amount > offset) wishes.push({ ticketId: ticket.id, amount: amount - offset, reason });
    return offset;
  };

  const cancelled: TicketRow[] = [];
  let difference = changed.reduce((sum, c) => sum + c.difference, 0);
  for (const ticket of named.cancel) {
    difference -= worth(ticket);
    const offset = credit(ticket, worth(ticket), 'ticket cancelled');
    const row = await changeTicket(tx, 'cancel', { ticketId: ticket.id }, () => cancelOpenTicket(tx, ticket.id, ticket.price - offset, now));
    await releasePlace(tx, row, now);
    cancelled.push(row);
  }

  const signer = named.retype.length > 0 ? await eventSigner(tx, event.id) : null;
  for (const [i, { ticket, type }] of named.retype.entries()) {
    const owed = changed[i]!.difference;
    const price = owed >= 0 ? ticket.price + owed : ticket.price - credit(ticket, -owed, 'ticket type changed');
    const code = issueCode(signer!, { id: ticket.id, eventId: event.id, ticketTypeId: type.id });
    await changeTicket(tx, 'retype', { ticketId: ticket.id }, () => retypeOpenTicket(tx, ticket.id, { ticketTypeId: type.id, price, code }, now));
  }
  // Out of the old types first: a swap between two types in one change needs the freed places.
  await repo.releaseTypePlaces(tx, countByType(changed.map((c) => c.fromTicketTypeId)), now);
  for (const move of countByType(changed.map((c) => c.toTicketTypeId))) {
    if (!(await repo.takeTypePlaces(tx, move, now))) {
      const type = (await listTicketTypes(tx, event.id)).find((t) => t.id === move.ticketTypeId)!;
      // The type's public free places (a change takes no event capacity: it moves places within it).
      const left = Math.max(0, freePlaces(event, [type], await keptOfEvent(tx, event.id, now), null).types.get(type.id)!);
      throw new AppError('sold_out', `Ticket type ${type.id} has ${left} of ${type.quantity} left; the change needs ${move.quantity}.`, { ticketTypeId: type.id, available: left });
    }
  }
  // Cancelled tickets and the old types of moved ones freed places: offered to those waiting.
  await queueWaitlistOffers(tx, event.id, now);
  await revokeCodes(tx, named.cancel, 'cancelled', now);
  await revokeCodes(tx, named.retype.map((c) => c.ticket), 'reissued', now);
  if (balance !== order.balanceDue) await repo.setBalanceDue(tx, order.id, balance, now);
  const reserved = await reserveRefunds(tx, order, wishes, now);
  return { cancelled, changed, difference, balanceDue: balance, reserved };
}

/** The order and its event, locked in the order every writer of both takes them: the event, then the order. */
async function lockOrderOfEvent(tx: TenantScope, orderId: string): Promise<{ order: OrderRow; event: EventRow }> {
  const found = await findOrder(tx, orderId);
  if (!found) throw notFound('order', orderId);
  const event = await requireLockedEvent(tx, found.eventId);
  const order = (await lockOrderRow(tx, orderId))!;
  requireCompleted(order);
  return { order, event };
}

/**
 * `POST /orders/:id/changes`: cancels some tickets of a completed order and moves others to another
 * ticket type, in one transaction under the event's lock: all of it or nothing. A cancelled
 * ticket's place returns to inventory; a moved ticket leaves its old type's inventory and takes a
 * place of the new one with the conditional update orders use (`sold + held + n <= quantity`: a
 * sold-out type refuses, and nothing changes), and gets a new signed code (the old one revoked, as
 * on transfer). Each ticket must be valid and not checked in (the codes of ticket changes). The
 * money (applyChange) is refunded after the commit, through the order's provider.
 */
export async function changeOrder(scope: TenantScope, orderId: string, input: ChangeInput) {
  const applied = await scope.transaction(async (tx) => {
    const { order, event } = await lockOrderOfEvent(tx, orderId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${event.id} is cancelled; its orders do not change.`);
    const now = Date.now();
    // Read under the event's lock, which every change of tickets and inventory takes first.
    const tickets = new Map((await ticketsOfOrder(tx, orderId)).map((t) => [t.id, t]));
    const types = new Map((await listTicketTypes(tx, event.id)).map((t) => [t.id, t]));
    const applied = await applyChange(tx, order, event, namedTickets(input, tickets, types, order), input.refund ?? true, now);
    const changedOrder = await getOrder(tx, orderId);
    const messages: OutboxMessage[] = [
      ...applied.cancelled.map((row): OutboxMessage => ({ event: 'ticket.cancelled', data: presentTicket(row) })),
      { event: 'order.changed', data: changedOrder },
    ];
    await fanOut.inTransaction(tx.db, scope.accountId, messages, now);
    return applied;
  });
  const refunds = await settleRefunds(scope, applied.reserved);
  return {
    order: await getOrder(scope, orderId),
    cancelled: applied.cancelled.map((t) => t.id),
    changed: applied.changed,
    difference: applied.difference,
    balanceDue: applied.balanceDue,
    refunds: refunds.map(presentPayment),
  };
}

/**
 * `POST /tickets/:id/cancel`: a valid ticket not checked in → cancelled, its place back in
 * inventory, its worth refunded through its order's provider (after what the order owes, as in an
 * order change). The ticket as it is after the refund.
 */
export async function cancelTicket(scope: TenantScope, id: string) {
  const found = await findTicket(scope, id);
  if (!found) throw notFound('ticket', id);
  const applied = await scope.transaction(async (tx) => {
    const { order, event } = await lockOrderOfEvent(tx, found.orderId);
    const ticket = (await findTicket(tx, id))!;
    const now = Date.now();
    const applied = await applyChange(tx, order, event, { cancel: [ticket], retype: [] }, true, now);
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'ticket.cancelled', data: presentTicket(applied.cancelled[0]!) }], now);
    return applied;
  });
  await settleRefunds(scope, applied.reserved);
  return presentTicket((await findTicket(scope, id))!);
}

/**
 * `POST /orders/:id/confirm` of a completed order that owes a balance (a move to a dearer type):
 * the organiser took the money (any provider's order: the difference is settled by hand). A
 * charge of the balance is recorded, the balance is cleared, `order.changed` fires.
 */
export async function confirmBalance(tx: TenantScope, order: OrderRow, input: { reference?: string | null }) {
  const now = Date.now();
  await tx.db
    .insertInto('payments')
    .values({
      id: newId('payment'),
      accountId: tx.accountId,
      eventId: order.eventId,
      orderId: order.id,
      ticketId: null,
      provider: 'manual',
      kind: 'charge',
      amount: order.balanceDue,
      currency: order.currency,
      status: 'succeeded',
      reference: input.reference ?? null,
      reason: 'balance due',
      createdAt: now,
      updatedAt: now,
    })
    .execute();
  await repo.setBalanceDue(tx, order.id, 0, now);
  const changed = await getOrder(tx, order.id);
  await fanOut.inTransaction(tx.db, tx.accountId, [{ event: 'order.changed', data: changed }], now);
  return changed;
}

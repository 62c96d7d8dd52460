import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { newId, randomBase62 } from '../ids.js';
import { iso } from '../time.js';
import { enqueueMessages, type OutboxMessage } from '../webhooks/outbox.js';
import * as repo from './events.repository.js';
import type { CreateOrderBody, TransferBody } from './events.schemas.js';
import { presentEvent } from './events.service.js';

type TicketRow = repo.TicketRow;

const MAX_TICKETS_PER_ORDER = 100;

/** The secret in a ticket's QR code: 22 base62 characters (~131 bits). */
const newTicketCode = () => randomBase62(22);

export function presentTicket(row: TicketRow) {
  return {
    id: row.id,
    eventId: row.eventId,
    ticketTypeId: row.ticketTypeId,
    orderId: row.orderId,
    status: row.status as 'valid' | 'cancelled',
    attendee: { name: row.attendeeName, email: row.attendeeEmail },
    code: row.code,
    price: row.price,
    currency: row.currency,
    refundedAmount: row.refundedAmount,
    checkedIn: row.checkedInAt !== null,
    checkedInAt: iso(row.checkedInAt),
    createdAt: iso(row.createdAt),
    cancelledAt: iso(row.cancelledAt),
  };
}

export type PresentedTicket = ReturnType<typeof presentTicket>;

function refundOf(ticket: TicketRow): OutboxMessage[] {
  return ticket.price > 0
    ? [{ event: 'payment.refunded', data: { orderId: ticket.orderId, ticketId: ticket.id, amount: ticket.price, currency: ticket.currency } }]
    : [];
}

/**
 * Issues the tickets of an order, all or nothing. Inventory is taken with conditional
 * updates inside the transaction (`sold + n <= quantity`, `sold + n <= capacity`), in a fixed
 * order (event, then ticket types by id) so concurrent orders neither oversell nor deadlock.
 */
export async function createOrder(scope: TenantScope, eventId: string, input: Static<typeof CreateOrderBody>) {
  const seen = new Set<string>();
  let count = 0;
  input.items.forEach((item, i) => {
    if (seen.has(item.ticketTypeId)) throw invalid(`/items/${i}/ticketTypeId`, 'appears twice; put the quantity in one item');
    seen.add(item.ticketTypeId);
    if (item.attendees && item.attendees.length > item.quantity) throw invalid(`/items/${i}/attendees`, 'has more attendees than the quantity');
    count += item.quantity;
  });
  if (count > MAX_TICKETS_PER_ORDER) throw invalid('/items', `may hold at most ${MAX_TICKETS_PER_ORDER} tickets in all`);

  return scope.transaction(async (tx) => {
    const now = Date.now();
    // Locked first, so a concurrent cancel or publish is seen before anything is sold.
    const event = await repo.requireLockedEvent(tx, eventId);
    if (event.status === 'draft') throw new AppError('event_not_published', `Event ${eventId} is not published yet.`);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled.`);
    if (now >= event.endsAt) throw new AppError('sales_closed', `Event ${eventId} has ended.`);

    const types = new Map((await repo.listTicketTypes(tx, eventId)).map((t) => [t.id, t]));
    const items = input.items.map((item, i) => {
      const type = types.get(item.ticketTypeId);
      if (!type) throw invalid(`/items/${i}/ticketTypeId`, `is not a ticket type of event ${eventId}`);
      if (type.maxPerOrder !== null && item.quantity > type.maxPerOrder) {
        throw invalid(`/items/${i}/quantity`, `must be at most ${type.maxPerOrder} for ${type.name}`);
      }
      if ((type.salesStartAt !== null && now < type.salesStartAt) || (type.salesEndAt !== null && now >= type.salesEndAt)) {
        throw new AppError('sales_closed', `Sales of ticket type ${type.id} are closed now.`, {
          ticketTypeId: type.id,
          salesStartAt: iso(type.salesStartAt),
          salesEndAt: iso(type.salesEndAt),
        });
      }
      return { ...item, type };
    });

    const takenFromEvent = await tx
      .updateTable('events')
      .set((eb) => ({ sold: eb('sold', '+', count), ticketsIssued: eb('ticketsIssued', '+', count), updatedAt: now }))
      .where('id', '=', eventId)
      .where((eb) => eb.or([eb('capacity', 'is', null), eb(eb('sold', '+', count), '<=', eb.ref('capacity'))]))
      .executeTakeFirst();
    if (Number(takenFromEvent.numUpdatedRows) !== 1) {
      throw new AppError('sold_out', `Event ${eventId} has ${Math.max(0, (event.capacity ?? 0) - event.sold)} of ${event.capacity} places left.`, {
        available: Math.max(0, (event.capacity ?? 0) - event.sold),
      });
    }
    for (const item of [...items].sort((a, b) => (a.type.id < b.type.id ? -1 : 1))) {
      const taken = await tx
        .updateTable('ticketTypes')
        .set((eb) => ({ sold: eb('sold', '+', item.quantity), updatedAt: now }))
        .where('id', '=', item.type.id)
        .where((eb) => eb(eb('sold', '+', item.quantity), '<=', eb.ref('quantity')))
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) !== 1) {
        const current = await repo.findTicketType(tx, eventId, item.type.id);
        const left = current ? current.quantity - current.sold : 0;
        throw new AppError('sold_out', `Ticket type ${item.type.id} has ${left} of ${item.type.quantity} left.`, {
          ticketTypeId: item.type.id,
          available: left,
        });
      }
    }

    const orderId = newId('order');
    const tickets: TicketRow[] = items.flatMap((item) =>
      Array.from({ length: item.quantity }, (_, n) => {
        const holder = item.attendees?.[n] ?? input.buyer;
        return {
          id: newId('ticket'),
          accountId: scope.accountId,
          eventId,
          ticketTypeId: item.type.id,
          orderId,
          status: 'valid',
          attendeeName: holder.name,
          attendeeEmail: holder.email.toLowerCase(),
          code: newTicketCode(),
          price: item.type.price,
          currency: event.currency,
          refundedAmount: 0,
          checkedInAt: null,
          checkinId: null,
          createdAt: now,
          updatedAt: now,
          cancelledAt: null,
        };
      }),
    );
    const orderItems = items.map((item) => ({
      ticketTypeId: item.type.id,
      quantity: item.quantity,
      unitPrice: item.type.price,
      amount: item.type.price * item.quantity,
    }));
    const total = orderItems.reduce((sum, item) => sum + item.amount, 0);
    const buyer = { name: input.buyer.name, email: input.buyer.email.toLowerCase() };
    await tx.db
      .insertInto('orders')
      .values({
        id: orderId,
        accountId: scope.accountId,
        eventId,
        buyerName: buyer.name,
        buyerEmail: buyer.email,
        items: JSON.stringify(orderItems),
        total,
        currency: event.currency,
        status: 'completed',
        createdAt: now,
      })
      .execute();
    for (let i = 0; i < tickets.length; i += 100) await tx.db.insertInto('tickets').values(tickets.slice(i, i + 100)).execute();

    const presentedTickets = tickets.map(presentTicket);
    const order = { id: orderId, eventId, status: 'completed' as const, buyer, items: orderItems, total, currency: event.currency, tickets: presentedTickets, createdAt: iso(now) };
    await enqueueMessages(
      tx.db,
      scope.accountId,
      [
        ...presentedTickets.map((ticket): OutboxMessage => ({ event: 'ticket.purchased', data: ticket })),
        { event: total > 0 ? 'payment.completed' : 'rsvp.submitted', data: { ...order, amount: total } },
      ],
      now,
    );
    return order;
  });
}

export async function getOrder(scope: TenantScope, id: string) {
  const order = await scope.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
  if (!order) throw notFound('order', id);
  const tickets = await scope.selectFrom('tickets').selectAll().where('orderId', '=', id).orderBy('id').execute();
  return {
    id: order.id,
    eventId: order.eventId,
    status: 'completed' as const,
    buyer: { name: order.buyerName, email: order.buyerEmail },
    items: JSON.parse(order.items) as Array<{ ticketTypeId: string; quantity: number; unitPrice: number; amount: number }>,
    total: order.total,
    currency: order.currency,
    tickets: tickets.map(presentTicket),
    createdAt: iso(order.createdAt),
  };
}

export async function getTicket(scope: TenantScope, id: string): Promise<PresentedTicket> {
  const ticket = await repo.findTicket(scope, id);
  if (!ticket) throw notFound('ticket', id);
  return presentTicket(ticket);
}

/** Why a valid-and-not-checked-in condition failed, as the API's code. */
function refusal(ticket: TicketRow, action: string): AppError {
  if (ticket.status === 'cancelled') return new AppError('ticket_cancelled', `Ticket ${ticket.id} is cancelled; it cannot be ${action}.`);
  return new AppError('ticket_checked_in', `Ticket ${ticket.id} is checked in; it cannot be ${action}.`, { checkedInAt: iso(ticket.checkedInAt) });
}

/** Valid and not checked in → cancelled; its place returns to inventory; a paid ticket is refunded. */
export async function cancelTicket(scope: TenantScope, id: string): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const ticket = await repo.findTicket(tx, id);
    if (!ticket) throw notFound('ticket', id);
    await repo.lockEvent(tx, ticket.eventId);
    const now = Date.now();
    const cancelled = await tx
      .updateTable('tickets')
      .set((eb) => ({ status: 'cancelled', cancelledAt: now, updatedAt: now, refundedAmount: eb.ref('price') }))
      .where('id', '=', id)
      .where('status', '=', 'valid')
      .where('checkedInAt', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!cancelled) throw refusal((await repo.findTicket(tx, id))!, 'cancelled');
    await tx.updateTable('ticketTypes').set((eb) => ({ sold: eb('sold', '-', 1), updatedAt: now })).where('id', '=', ticket.ticketTypeId).execute();
    await tx.updateTable('events').set((eb) => ({ sold: eb('sold', '-', 1), updatedAt: now })).where('id', '=', ticket.eventId).execute();
    const presented = presentTicket(cancelled);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'ticket.cancelled', data: presented }, ...refundOf(cancelled)], now);
    return presented;
  });
}

/** New holder and a new code (the old one stops working); same ticket id. */
export async function transferTicket(scope: TenantScope, id: string, input: Static<typeof TransferBody>): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const now = Date.now();
    const transferred = await tx
      .updateTable('tickets')
      .set({ attendeeName: input.attendee.name, attendeeEmail: input.attendee.email.toLowerCase(), code: newTicketCode(), updatedAt: now })
      .where('id', '=', id)
      .where('status', '=', 'valid')
      .where('checkedInAt', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!transferred) {
      const ticket = await repo.findTicket(tx, id);
      if (!ticket) throw notFound('ticket', id);
      throw refusal(ticket, 'transferred');
    }
    const presented = presentTicket(transferred);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'ticket.transferred', data: presented }], now);
    return presented;
  });
}

const CANCEL_BATCH = 500;

/** Cancels the event and every valid ticket of it; paid tickets are refunded. */
export async function cancelEvent(scope: TenantScope, id: string) {
  return scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, id);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${id} is already cancelled.`);
    const now = Date.now();
    const updated = await tx
      .updateTable('events')
      .set({ status: 'cancelled', cancelledAt: now, updatedAt: now, sold: 0 })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const presentedEvent = presentEvent(updated);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'event.cancelled', data: presentedEvent }], now);
    await tx.updateTable('ticketTypes').set({ sold: 0, updatedAt: now }).where('eventId', '=', id).execute();
    for (;;) {
      const batch = await tx
        .selectFrom('tickets')
        .selectAll()
        .where('eventId', '=', id)
        .where('status', '=', 'valid')
        .orderBy('id')
        .limit(CANCEL_BATCH)
        .execute();
      if (batch.length === 0) break;
      await tx
        .updateTable('tickets')
        .set((eb) => ({ status: 'cancelled', cancelledAt: now, updatedAt: now, refundedAmount: eb.ref('price') }))
        .where('id', 'in', batch.map((t) => t.id))
        .execute();
      const messages = batch.flatMap((row): OutboxMessage[] => {
        const cancelled = { ...row, status: 'cancelled', cancelledAt: now, updatedAt: now, refundedAmount: row.price };
        return [{ event: 'ticket.cancelled', data: presentTicket(cancelled) }, ...refundOf(cancelled)];
      });
      await enqueueMessages(tx.db, scope.accountId, messages, now);
    }
    return presentedEvent;
  });
}

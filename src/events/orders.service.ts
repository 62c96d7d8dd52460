import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import type { OutboxMessage } from '../webhooks/outbox.js';
import { eventSigner, issueCode } from './door.service.js';
import { type EventRow, requireLockedEvent, type TicketTypeRow } from './events.repository.js';
import type { CreateOrderBody } from './events.schemas.js';
import * as repo from './orders.repository.js';
import { ticketsOfOrder, type TicketRow } from './tickets.repository.js';
import { presentTicket } from './tickets.service.js';
import { prepareAnswers, ticketPlaces, writeAnswers } from './questions.answers.js';

const MAX_TICKETS_PER_ORDER = 100;

type SoldItem = { quantity: number; type: TicketTypeRow };

/**
 * Why an order's inventory was refused: the first of the event's capacity, then its ticket types
 * by id, that cannot hold it. From the rows as read under the event's lock, which every change of
 * `sold` takes first (so they are current); the database's conditional updates did the refusing.
 */
function soldOut(event: EventRow, sorted: SoldItem[], count: number): AppError {
  const available = Math.max(0, (event.capacity ?? 0) - event.sold);
  if (event.capacity !== null && event.sold + count > event.capacity) {
    return new AppError('sold_out', `Event ${event.id} has ${available} of ${event.capacity} places left.`, { available });
  }
  for (const item of sorted) {
    const left = Math.max(0, item.type.quantity - item.type.sold);
    if (item.quantity > left) {
      return new AppError('sold_out', `Ticket type ${item.type.id} has ${left} of ${item.type.quantity} left.`, { ticketTypeId: item.type.id, available: left });
    }
  }
  return new AppError('sold_out', `Event ${event.id} has no places left for this order.`, { available });
}

/**
 * Issues the tickets of an order, all or nothing. Inventory is taken with conditional
 * updates inside the transaction (`sold + n <= capacity`, `sold + n <= quantity`), after the
 * event's lock, which every writer of the event's inventory takes first: concurrent orders
 * neither oversell nor deadlock.
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
    const event = await requireLockedEvent(tx, eventId);
    if (event.status === 'draft') throw new AppError('event_not_published', `Event ${eventId} is not published yet.`);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled.`);
    if (now >= event.endsAt) throw new AppError('sales_closed', `Event ${eventId} has ended.`);

    // Read after the lock (a statement's snapshot is taken when it starts): current inventory, and
    // on PostgreSQL the subscriptions the order's one statement fans out to.
    const { types: typeRows, subscriptions } = await repo.ticketTypesForOrder(tx, eventId);
    const types = new Map(typeRows.map((t) => [t.id, t]));
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
    const answers = await prepareAnswers(tx, eventId, input, event.questions);

    // Inventory with conditional updates (the event's capacity, then the ticket types): the
    // database refuses to sell what is not there. `sorted`: the order of soldOut's answer.
    const sorted = [...items].sort((a, b) => (a.type.id < b.type.id ? -1 : 1));
    const orderId = newId('order');
    // Each ticket's code is signed by the event's active key (docs/events.md, "Signed ticket codes").
    const signer = await eventSigner(tx, eventId);
    const tickets: TicketRow[] = items.flatMap((item) =>
      Array.from({ length: item.quantity }, (_, n) => {
        const holder = item.attendees?.[n] ?? input.buyer;
        const id = newId('ticket');
        return {
          id,
          accountId: scope.accountId,
          eventId,
          ticketTypeId: item.type.id,
          orderId,
          status: 'valid',
          attendeeName: holder.name,
          attendeeEmail: holder.email.toLowerCase(),
          code: issueCode(signer, { id, eventId, ticketTypeId: item.type.id }),
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
    const orderRow = {
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
    };
    const presentedTickets = tickets.map(presentTicket);
    const order = { id: orderId, eventId, status: 'completed' as const, buyer, items: orderItems, total, currency: event.currency, tickets: presentedTickets, createdAt: iso(now) };
    const messages: OutboxMessage[] = [
      ...presentedTickets.map((ticket): OutboxMessage => ({ event: 'ticket.purchased', data: ticket })),
      { event: total > 0 ? 'payment.completed' : 'rsvp.submitted', data: { ...order, amount: total } },
    ];

    const taken = sorted.map((item) => ({ ticketTypeId: item.type.id, quantity: item.quantity }));
    const written = await repo.writeOrder(tx, { order: orderRow, tickets, count, taken, messages, subscriptions, now });
    if (!written) throw soldOut(event, sorted, count);
    await writeAnswers(tx, { accountId: scope.accountId, orderId, tickets: ticketPlaces(items, tickets.map((t) => t.id)), prepared: answers });
    return order;
  });
}

export async function getOrder(scope: TenantScope, id: string) {
  const order = await repo.findOrder(scope, id);
  if (!order) throw notFound('order', id);
  const tickets = await ticketsOfOrder(scope, id);
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

import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import { firstSigningKey, revokeCodes } from './door.service.js';
import * as repo from './events.repository.js';
import type { CreateEventBody, CreateTicketTypeBody, EventListQuery, UpdateEventBody, UpdateTicketTypeBody } from './events.schemas.js';
import { cancelPendingOrdersOfEvent, endCheckouts } from './orders.service.js';
import { cancelTickets, ticketTypeIssued, validTicketsOfEvent } from './tickets.repository.js';
import { type ReservedRefunds, reserveTicketRefunds, settleRefunds } from './refunds.service.js';
import { presentTicket } from './tickets.service.js';
import { queueWaitlistOffers } from './waitlist.service.js';
import { keptOfEvent, type Kept } from './vouchers.repository.js';
import { publicFreeOfType } from './vouchers.service.js';

type EventRow = repo.EventRow;
type TicketTypeRow = repo.TicketTypeRow;

/** How long a pending order holds its places unless the event says otherwise (docs/events.md, "Orders and payments"). */
export const DEFAULT_HOLD_MINUTES = 15;
/** How long a waiting-list offer stands unless the event says otherwise (migration 0018's default). */
export const DEFAULT_WAITLIST_OFFER_MINUTES = 1440;

const parseOptionalTime = (text: string | null | undefined, path: string) => (text === undefined ? undefined : text === null ? null : parseTime(text, path));

export function presentEvent(row: EventRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    startsAt: iso(row.startsAt),
    endsAt: iso(row.endsAt),
    timezone: row.timezone,
    venue: row.venue === null ? null : JSON.parse(row.venue),
    onlineUrl: row.onlineUrl,
    capacity: row.capacity,
    currency: row.currency,
    status: row.status as 'draft' | 'published' | 'cancelled',
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    ticketsSold: row.sold,
    ticketsHeld: row.held,
    holdMinutes: row.holdMinutes,
    waitlistOfferMinutes: row.waitlistOfferMinutes,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
    publishedAt: iso(row.publishedAt),
    cancelledAt: iso(row.cancelledAt),
  };
}

/**
 * `available` is what an order without a reserving voucher could still get: the type's own stock,
 * within the event's capacity left; places held by pending orders, reserved by vouchers and
 * wanted by the waiting list (`kept`, docs/events.md "Vouchers") count as taken.
 */
export function presentTicketType(row: TicketTypeRow, event: Pick<EventRow, 'capacity' | 'sold' | 'held'>, kept: Kept) {
  return {
    id: row.id,
    eventId: row.eventId,
    name: row.name,
    description: row.description,
    price: row.price,
    currency: row.currency,
    quantity: row.quantity,
    sold: row.sold,
    held: row.held,
    available: Math.max(0, publicFreeOfType(event, row, kept)),
    salesStartAt: iso(row.salesStartAt),
    salesEndAt: iso(row.salesEndAt),
    maxPerOrder: row.maxPerOrder,
    hidden: row.hidden === 1,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/**
 * The IANA time zone as given, spelled as the server's time-zone database spells it where it
 * differs in case alone (`utc` → `UTC`, `europe/berlin` → `Europe/Berlin`). A name the database
 * maps to another (a link such as `US/Pacific`, or a current name its CLDR data still files under
 * an old one: `Europe/Kyiv` under `Europe/Kiev`, `Asia/Kolkata` under `Asia/Calcutta`) is kept as
 * the client wrote it: the old names are what IANA itself replaced. An unknown zone is a 400.
 */
export function canonicalTimezone(timezone: string): string {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en', { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    throw invalid('/timezone', 'must be an IANA time zone such as Europe/Berlin');
  }
  return resolved.toLowerCase() === timezone.toLowerCase() ? resolved : timezone;
}

function checkWindow(startsAt: number, endsAt: number): void {
  if (!(endsAt > startsAt)) throw invalid('/endsAt', 'must be after startsAt');
}

export const getEvent = repo.requireEvent;

export async function createEvent(scope: TenantScope, input: Static<typeof CreateEventBody>) {
  const startsAt = parseTime(input.startsAt, '/startsAt');
  const endsAt = parseTime(input.endsAt, '/endsAt');
  checkWindow(startsAt, endsAt);
  const timezone = canonicalTimezone(input.timezone);
  const now = Date.now();
  const row: EventRow = {
    id: newId('event'),
    accountId: scope.accountId,
    name: input.name,
    description: input.description ?? null,
    startsAt,
    endsAt,
    timezone,
    venue: input.venue ? JSON.stringify(input.venue) : null,
    onlineUrl: input.onlineUrl ?? null,
    capacity: input.capacity ?? null,
    currency: input.currency,
    status: 'draft',
    metadata: JSON.stringify(input.metadata ?? {}),
    sold: 0,
    held: 0,
    holdMinutes: input.holdMinutes ?? DEFAULT_HOLD_MINUTES,
    waitlistOfferMinutes: input.waitlistOfferMinutes ?? DEFAULT_WAITLIST_OFFER_MINUTES,
    ticketsIssued: 0,
    questions: 0,
    createdAt: now,
    updatedAt: now,
    publishedAt: null,
    cancelledAt: null,
  };
  const event = presentEvent(row);
  await scope.transaction(async (tx) => {
    await repo.insertEvent(tx, row);
    await firstSigningKey(tx, row.id, now);
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'event.created', data: event }], now);
  });
  return event;
}

export async function listEvents(scope: TenantScope, query: Static<typeof EventListQuery> & PageParams): Promise<Page<ReturnType<typeof presentEvent>>> {
  const request = pageRequest(query, eventsListTag(query));
  const filters = {
    status: query.status,
    startsAfter: parseOptionalTime(query.startsAfter, '/query/startsAfter') ?? undefined,
    startsBefore: parseOptionalTime(query.startsBefore, '/query/startsBefore') ?? undefined,
    q: query.q,
  };
  const rows = await repo.listEvents(scope, filters, request);
  return toPage(rows, request, (r) => ({ key: r.id, id: r.id }), presentEvent);
}

const eventsListTag = (query: Static<typeof EventListQuery>) =>
  listTag('events', { status: query.status, startsAfter: query.startsAfter, startsBefore: query.startsBefore, q: query.q });

/**
 * Partial update. Once tickets exist the currency is fixed and capacity may not drop below
 * the tickets sold; a cancelled event does not change any more.
 */
export async function updateEvent(scope: TenantScope, id: string, input: Static<typeof UpdateEventBody>) {
  return scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, id);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${id} is cancelled and cannot change.`);
    const startsAt = input.startsAt === undefined ? event.startsAt : parseTime(input.startsAt, '/startsAt');
    const endsAt = input.endsAt === undefined ? event.endsAt : parseTime(input.endsAt, '/endsAt');
    checkWindow(startsAt, endsAt);
    const timezone = input.timezone === undefined ? undefined : canonicalTimezone(input.timezone);
    if (input.currency !== undefined && input.currency !== event.currency) {
      const types = await repo.listTicketTypes(tx, id);
      if (types.length > 0) throw new AppError('event_has_tickets', 'The currency cannot change once ticket types exist.');
    }
    if (input.capacity !== undefined && input.capacity !== null && input.capacity < event.sold + event.held) {
      throw new AppError('capacity_below_sold', `Capacity cannot drop below the ${event.sold} tickets sold and ${event.held} places held.`, { ticketsSold: event.sold, ticketsHeld: event.held });
    }
    if (input.capacity !== undefined && input.capacity !== null && (event.capacity === null || input.capacity < event.capacity)) {
      // The places vouchers keep (a waiting-list offer is one) were promised to someone: they stay too.
      const kept = [...(await keptOfEvent(tx, id, Date.now())).values()].reduce((sum, k) => sum + k.reserved, 0);
      if (input.capacity < event.sold + event.held + kept) {
        throw new AppError('capacity_below_sold', `Capacity cannot drop below the ${event.sold} tickets sold, ${event.held} places held and ${kept} places vouchers keep.`, { ticketsSold: event.sold, ticketsHeld: event.held, reserved: kept });
      }
    }
    const changes: Partial<EventRow> = { startsAt, endsAt, updatedAt: Date.now() };
    if (input.name !== undefined) changes.name = input.name;
    if (input.description !== undefined) changes.description = input.description;
    if (timezone !== undefined) changes.timezone = timezone;
    if (input.venue !== undefined) changes.venue = input.venue === null ? null : JSON.stringify(input.venue);
    if (input.onlineUrl !== undefined) changes.onlineUrl = input.onlineUrl;
    if (input.capacity !== undefined) changes.capacity = input.capacity;
    if (input.currency !== undefined) changes.currency = input.currency;
    if (input.metadata !== undefined) changes.metadata = JSON.stringify(input.metadata);
    if (input.holdMinutes !== undefined) changes.holdMinutes = input.holdMinutes;
    if (input.waitlistOfferMinutes !== undefined) changes.waitlistOfferMinutes = input.waitlistOfferMinutes;
    // More capacity (or none) may free places for those waiting.
    if (event.capacity !== null && (changes.capacity === null || (changes.capacity ?? 0) > event.capacity)) await queueWaitlistOffers(tx, id, changes.updatedAt!);
    return presentEvent(await repo.updateEvent(tx, id, changes));
  });
}

/**
 * Deletes an event that never issued a ticket and has no order a payment could still complete
 * (docs/events.md, "Deleting an event"). Both checks are read under the event's lock, which every
 * order of the event takes before it is placed, completed or ended: an order placed meanwhile is
 * either seen here (409) or waits for the lock and then finds no event (404), on both engines.
 */
export async function deleteEvent(scope: TenantScope, id: string): Promise<void> {
  await scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, id);
    if (event.ticketsIssued > 0) {
      throw new AppError('event_has_tickets', `Event ${id} has issued ${event.ticketsIssued} tickets; cancel it instead.`);
    }
    // A cancelled event completes no order (completeOrder refuses it), so its expired orders are over.
    const open = await repo.openOrdersOfEvent(tx, id, event.status !== 'cancelled');
    if (open.pending + open.expired > 0) {
      // Pending orders can be cancelled one by one; an expired one only ends with its event.
      const next =
        open.expired === 0
          ? `cancel them (POST /v1/orders/:id/cancel) or the event (POST /v1/events/${id}/cancel) first, then delete it`
          : `cancel the event first (POST /v1/events/${id}/cancel), then delete it`;
      throw new AppError(
        'event_has_orders',
        `Event ${id} has ${open.pending} pending and ${open.expired} expired orders that a payment could still complete; ${next}.`,
        { pendingOrders: open.pending, expiredOrders: open.expired },
      );
    }
    await repo.deleteEvent(tx, id);
  });
}

/**
 * Needs a ticket type and an end still ahead (an ended event would refuse every order as
 * `sales_closed`); publishing a published event changes nothing and sends nothing.
 */
export async function publishEvent(scope: TenantScope, id: string) {
  return scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, id);
    if (event.status === 'published') return presentEvent(event);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${id} is cancelled.`);
    const types = await repo.listTicketTypes(tx, id);
    if (types.length === 0) throw new AppError('event_has_no_ticket_types', `Event ${id} needs a ticket type before it can be published.`);
    const now = Date.now();
    if (now >= event.endsAt) {
      throw new AppError('event_ended', `Event ${id} ended at ${iso(event.endsAt)}; an ended event sells nothing, so it is not published. Move endsAt later to publish it.`, { endsAt: iso(event.endsAt) });
    }
    const presented = presentEvent(await repo.updateEvent(tx, id, { status: 'published', publishedAt: now, updatedAt: now }));
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'event.published', data: presented }], now);
    return presented;
  });
}

const CANCEL_BATCH = 500;

/**
 * Cancels the event, its pending orders (their places no longer held) and every valid ticket of it.
 * Paid tickets are refunded as an organiser's refund is (refunds.service.ts): in the cancelling
 * transaction each completed order's refunds are reserved `pending` (each ticket's worth, never
 * more than the order has left) with their `refund.settle` jobs; after the commit they are settled
 * through the order's provider, and `payment.refunded` fires for each that succeeded. A refund the
 * provider refused is `failed` (the organiser refunds it again); one without an answer stays
 * `pending` and its job settles it.
 */
export async function cancelEvent(scope: TenantScope, id: string) {
  const { presentedEvent, reserved, pending } = await scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, id);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${id} is already cancelled.`);
    const now = Date.now();
    const presentedEvent = presentEvent(await repo.cancelEvent(tx, id, now));
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'event.cancelled', data: presentedEvent }], now);
    const pending = await cancelPendingOrdersOfEvent(tx, id, now);
    const reserved: ReservedRefunds[] = [];
    for (;;) {
      const batch = await validTicketsOfEvent(tx, id, CANCEL_BATCH);
      if (batch.length === 0) break;
      await cancelTickets(tx, batch.map((t) => t.id), now);
      await revokeCodes(tx, batch, 'cancelled', now);
      const messages = batch.map((row): OutboxMessage => ({ event: 'ticket.cancelled', data: presentTicket({ ...row, status: 'cancelled', cancelledAt: now, updatedAt: now }) }));
      await fanOut.inTransaction(tx.db, scope.accountId, messages, now);
      reserved.push(...(await reserveTicketRefunds(tx, batch, 'event cancelled', now)));
    }
    return { presentedEvent, reserved, pending };
  });
  await endCheckouts(scope, pending);
  for (const refunds of reserved) {
    try {
      await settleRefunds(scope, refunds);
    } catch (err) {
      // Refused refunds are recorded `failed` on their order (the organiser refunds them again); the event is cancelled all the same.
      if (!(err instanceof AppError) || err.code !== 'payment_provider_error') throw err;
    }
  }
  return presentedEvent;
}

export async function listTicketTypes(scope: TenantScope, eventId: string, query: PageParams): Promise<Page<ReturnType<typeof presentTicketType>>> {
  const page = pageRequest(query, listTag('ticketTypes', { eventId }));
  const event = await getEvent(scope, eventId);
  const rows = await repo.pageTicketTypes(scope, eventId, page);
  const kept = await keptOfEvent(scope, eventId, Date.now());
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), (t) => presentTicketType(t, event, kept));
}

export async function getTicketType(scope: TenantScope, eventId: string, id: string) {
  const event = await getEvent(scope, eventId);
  const type = await repo.findTicketType(scope, eventId, id);
  if (!type) throw notFound('ticket type', id);
  return presentTicketType(type, event, await keptOfEvent(scope, eventId, Date.now()));
}

function checkSalesWindow(start: number | null, end: number | null): void {
  if (start !== null && end !== null && !(end > start)) throw invalid('/salesEndAt', 'must be after salesStartAt');
}

export async function createTicketType(scope: TenantScope, eventId: string, input: Static<typeof CreateTicketTypeBody>) {
  return scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled.`);
    if (input.currency !== undefined && input.currency !== event.currency) {
      throw invalid('/currency', `must be the event's currency, ${event.currency}`);
    }
    const salesStartAt = parseOptionalTime(input.salesStartAt, '/salesStartAt') ?? null;
    const salesEndAt = parseOptionalTime(input.salesEndAt, '/salesEndAt') ?? null;
    checkSalesWindow(salesStartAt, salesEndAt);
    const now = Date.now();
    const row: TicketTypeRow = {
      id: newId('ticketType'),
      accountId: scope.accountId,
      eventId,
      name: input.name,
      description: input.description ?? null,
      price: input.price,
      currency: event.currency,
      quantity: input.quantity,
      sold: 0,
      held: 0,
      salesStartAt,
      salesEndAt,
      maxPerOrder: input.maxPerOrder ?? null,
      hidden: input.hidden ? 1 : 0,
      createdAt: now,
      updatedAt: now,
    };
    await repo.insertTicketType(tx, row);
    return presentTicketType(row, event, await keptOfEvent(tx, eventId, now));
  });
}

/** Name, description, sales window and per-order limit change freely; quantity not below sold; price only before any sale. */
export async function updateTicketType(scope: TenantScope, eventId: string, id: string, input: Static<typeof UpdateTicketTypeBody>) {
  return scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled.`);
    const type = await repo.findTicketType(tx, eventId, id);
    if (!type) throw notFound('ticket type', id);
    if (input.quantity !== undefined && input.quantity < type.sold + type.held) {
      throw new AppError('quantity_below_sold', `Quantity cannot drop below the ${type.sold} tickets sold and ${type.held} places held.`, { sold: type.sold, held: type.held });
    }
    if (input.quantity !== undefined && input.quantity < type.quantity) {
      // The places vouchers keep (a waiting-list offer is one) were promised to someone: they stay too.
      const kept = (await keptOfEvent(tx, eventId, Date.now())).get(id)?.reserved ?? 0;
      if (input.quantity < type.sold + type.held + kept) {
        throw new AppError('quantity_below_sold', `Quantity cannot drop below the ${type.sold} tickets sold, ${type.held} places held and ${kept} places vouchers keep.`, { sold: type.sold, held: type.held, reserved: kept });
      }
    }
    if (input.price !== undefined && input.price !== type.price) {
      if (await ticketTypeIssued(tx, id)) throw new AppError('price_locked', 'The price cannot change once tickets of this type were sold.', { sold: type.sold });
    }
    const salesStartAt = input.salesStartAt === undefined ? type.salesStartAt : parseOptionalTime(input.salesStartAt, '/salesStartAt')!;
    const salesEndAt = input.salesEndAt === undefined ? type.salesEndAt : parseOptionalTime(input.salesEndAt, '/salesEndAt')!;
    checkSalesWindow(salesStartAt, salesEndAt);
    const changes: Partial<TicketTypeRow> = { salesStartAt, salesEndAt, updatedAt: Date.now() };
    if (input.name !== undefined) changes.name = input.name;
    if (input.description !== undefined) changes.description = input.description;
    if (input.price !== undefined) changes.price = input.price;
    if (input.quantity !== undefined) changes.quantity = input.quantity;
    if (input.maxPerOrder !== undefined) changes.maxPerOrder = input.maxPerOrder;
    if (input.hidden !== undefined) changes.hidden = input.hidden ? 1 : 0;
    if (input.quantity !== undefined && input.quantity > type.quantity) await queueWaitlistOffers(tx, eventId, changes.updatedAt!);
    return presentTicketType(await repo.updateTicketType(tx, id, changes), event, await keptOfEvent(tx, eventId, changes.updatedAt!));
  });
}

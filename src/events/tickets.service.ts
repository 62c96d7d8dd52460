import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, notFound } from '../errors.js';
import { iso } from '../time.js';
import { fanOut } from '../webhooks/outbox.js';
import { eventSigner, issueCode, revokeCodes } from './door.service.js';
import { lockEvent, requireEvent } from './events.repository.js';
import type { TransferBody } from './events.schemas.js';
import * as repo from './tickets.repository.js';

type TicketRow = repo.TicketRow;

export function presentTicket(row: TicketRow) {
  return {
    id: row.id,
    eventId: row.eventId,
    ticketTypeId: row.ticketTypeId,
    orderId: row.orderId,
    status: row.status as 'valid' | 'cancelled',
    attendee: { name: row.attendeeName, email: row.attendeeEmail },
    code: row.code,
    links: ticketLinks(row.id),
    price: row.price,
    currency: row.currency,
    refundedAmount: row.refundedAmount,
    checkedIn: row.checkedInAt !== null,
    checkedInAt: iso(row.checkedInAt),
    createdAt: iso(row.createdAt),
    cancelledAt: iso(row.cancelledAt),
  };
}

/** Where a ticket's QR code and printable PDF are (docs/events.md, "Tickets as QR and PDF"). */
export const ticketLinks = (id: string) => ({ qrSvg: `/v1/tickets/${id}/qr.svg`, qrPng: `/v1/tickets/${id}/qr.png`, pdf: `/v1/tickets/${id}/pdf` });

export type PresentedTicket = ReturnType<typeof presentTicket>;

/**
 * The changes of a ticket that only a ticket in one state may take: cancel, transfer and a change
 * of its ticket type (valid, not checked in), check-in (a valid ticket of the event, not checked in), undo of a check-in
 * (a valid ticket of the event, checked in).
 */
export type TicketChange = 'cancel' | 'transfer' | 'retype' | 'checkIn' | 'undoCheckIn';

/** What a ticket change names the ticket by: its id (or, for a check-in, its code), and its event for the door's changes. */
export type TicketTarget = repo.TicketKey & { eventId?: string };

/**
 * Why `change` was refused to `ticket` (a ticket it was asked of, so one that exists): the first
 * rule it breaks, as the API's code. The ticket's state decides, in this order: cancelled, then
 * checked in (or, for an undo, not checked in).
 */
export function refusal(change: TicketChange, ticket: TicketRow): AppError {
  if (ticket.status === 'cancelled') {
    const cannot = change === 'checkIn' || change === 'undoCheckIn' ? '' : `; it cannot ${DOING[change]}`;
    return new AppError('ticket_cancelled', `Ticket ${ticket.id} is cancelled${cannot}.`);
  }
  switch (change) {
    case 'checkIn':
      return new AppError('already_checked_in', `Ticket ${ticket.id} was checked in at ${iso(ticket.checkedInAt)}.`, {
        ticketId: ticket.id,
        checkedInAt: iso(ticket.checkedInAt),
        checkinId: ticket.checkinId,
      });
    case 'undoCheckIn':
      return new AppError('not_checked_in', `Ticket ${ticket.id} is not checked in.`);
    default:
      // Not checked in event-wide: it entered through a check-in list (repo.cancelOpenTicket).
      return new AppError('ticket_checked_in', `Ticket ${ticket.id} ${ticket.checkedInAt === null ? 'was admitted through a check-in list' : 'is checked in'}; it cannot ${DOING[change]}.`, {
        checkedInAt: iso(ticket.checkedInAt),
      });
  }
}

const DOING = { cancel: 'be cancelled', transfer: 'be transferred', retype: 'change its ticket type' } as const;

/** The ticket a refused change named, or the 404 that explains the refusal when there is none. */
async function refusedTicket(tx: TenantScope, change: TicketChange, target: TicketTarget): Promise<TicketRow> {
  const eventId = target.eventId!;
  if (change === 'checkIn') {
    // A ticket of another event, a transferred ticket's old code and an unknown code look alike.
    await requireEvent(tx, eventId);
    const ticket = await repo.findEventTicket(tx, eventId, target);
    if (!ticket) throw new AppError('not_found', `No ticket ${target.ticketId ?? 'with that code'} for event ${eventId}.`);
    return ticket;
  }
  const ticket = await repo.findTicket(tx, target.ticketId!);
  if (change === 'undoCheckIn') {
    if (!ticket || ticket.eventId !== eventId) throw new AppError('not_found', `No ticket ${target.ticketId} for event ${eventId}.`);
  } else if (!ticket) {
    throw notFound('ticket', target.ticketId!);
  }
  return ticket;
}

/**
 * A ticket change: `write`, its one conditional update, returns the ticket as changed, or
 * undefined when no ticket was in the state the change needs. Then, and only then, the ticket is
 * read to explain the refusal (`refusal`): an admitted change costs no lookup, and of concurrent
 * changes of one ticket exactly one succeeds.
 */
export async function changeTicket<T>(tx: TenantScope, change: TicketChange, target: TicketTarget, write: () => Promise<T | undefined>): Promise<T> {
  const changed = await write();
  if (changed !== undefined) return changed;
  throw refusal(change, await refusedTicket(tx, change, target));
}

export async function getTicket(scope: TenantScope, id: string): Promise<PresentedTicket> {
  const ticket = await repo.findTicket(scope, id);
  if (!ticket) throw notFound('ticket', id);
  return presentTicket(ticket);
}

/**
 * New holder and a new signed code (the old one stops working, its serial on the revocation list);
 * same ticket id. Under the event's lock, so the code read here is the one replaced.
 */
export async function transferTicket(scope: TenantScope, id: string, input: Static<typeof TransferBody>): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const found = await repo.findTicket(tx, id);
    if (!found) throw notFound('ticket', id);
    await lockEvent(tx, found.eventId);
    const ticket = (await repo.findTicket(tx, id))!;
    const now = Date.now();
    const holder = { name: input.attendee.name, email: input.attendee.email.toLowerCase() };
    const code = issueCode(await eventSigner(tx, ticket.eventId), ticket);
    const transferred = await changeTicket(tx, 'transfer', { ticketId: id }, () => repo.transferOpenTicket(tx, id, holder, code, now));
    await revokeCodes(tx, [ticket], 'transferred', now);
    const presented = presentTicket(transferred);
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'ticket.transferred', data: presented }], now);
    return presented;
  });
}

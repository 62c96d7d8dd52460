import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { enqueueJobs, type NewJob } from '../jobs/queue.js';
import { iso } from '../time.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import { type EventRow, findTicketType, listTicketTypes, lockEvent, requireEvent, requireLockedEvent, type TicketTypeRow } from './events.repository.js';
import * as repo from './waitlist.repository.js';
import { type Kept, keptOfEvent } from './vouchers.repository.js';
import { freshCodes, offerablePlaces, publicFreeOfType } from './vouchers.service.js';
import type { JoinWaitlistBody, WaitlistListQuery } from './waitlist.schemas.js';

/** The job that offers freed places to those waiting (waitlist.job.ts works it); queued by whatever frees places. */
export const OFFER_KIND = 'waitlist.offer';
/** The job that ends an offer nobody took, at its `offerExpiresAt`, and passes its place on. */
export const EXPIRE_OFFER_KIND = 'waitlist.expire_offer';
export const WAITLIST_JOB_MAX_ATTEMPTS = 10;
export type OfferPayload = { accountId: string; eventId: string };
export type ExpireOfferPayload = { accountId: string; eventId: string; entryId: string };

/** The most people who may wait for one ticket type at once (a bound on what a client can add). */
export const MAX_WAITING_PER_TYPE = 10_000;
/** The most offers (and expiries) one transaction makes; past it, another offer job continues. */
const OFFER_BATCH = 500;

type EntryWithCode = repo.EntryWithCode;

export function presentEntry(row: EntryWithCode, position: number | null) {
  return {
    id: row.id,
    eventId: row.eventId,
    ticketTypeId: row.ticketTypeId,
    name: row.name,
    email: row.email,
    status: row.status as 'waiting' | 'offered' | 'redeemed' | 'expired' | 'removed',
    position: row.status === 'waiting' ? position : null,
    voucher: row.voucherId !== null && row.voucherCode !== null ? { id: row.voucherId, code: row.voucherCode } : null,
    offeredAt: iso(row.offeredAt),
    offerExpiresAt: iso(row.offerExpiresAt),
    createdAt: iso(row.createdAt),
  };
}

export type PresentedEntry = ReturnType<typeof presentEntry>;

/** What the event's reading under its lock says about one ticket type's places (docs/events.md, "Waiting list"). */
interface Places {
  /** Places an offer can be made for: not sold, held or kept by a reserving voucher. */
  offerable: number;
  /** What a buyer without a reserving voucher may take: the offerable places less those waiting for them. */
  publicFree: number;
}

/** The event's own counts beside what its vouchers and waiting list keep, read under its lock at `now`. */
interface Ledger {
  event: EventRow;
  kept: Kept;
  /** The people waiting, per ticket type. */
  waiting: Map<string, number>;
}

async function readLedger(tx: TenantScope, event: EventRow, now: number): Promise<Ledger> {
  const kept = await keptOfEvent(tx, event.id, now);
  return { event, kept, waiting: new Map([...kept].filter(([, k]) => k.waiting > 0).map(([typeId, k]) => [typeId, k.waiting])) };
}

/** The places of type `type` and, if the event has a capacity, of the event, the smaller of each: the vouchers' availability rule (freePlaces) with and without its waiting term. */
function placesOf(ledger: Ledger, type: TicketTypeRow): Places {
  const offerable = offerablePlaces(ledger.event, [type], ledger.kept);
  return { offerable: Math.min(offerable.types.get(type.id)!, offerable.event ?? Number.POSITIVE_INFINITY), publicFree: publicFreeOfType(ledger.event, type, ledger.kept) };
}

/** The reasons an order of the event would be refused before its inventory is looked at: the waiting list says the same. */
function checkOnSale(event: EventRow, type: TicketTypeRow | undefined, now: number): TicketTypeRow {
  if (event.status === 'draft') throw new AppError('event_not_published', `Event ${event.id} is not published yet.`);
  if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${event.id} is cancelled.`);
  if (now >= event.endsAt) throw new AppError('sales_closed', `Event ${event.id} has ended.`);
  // A hidden type is not revealed: it answers as an unknown one.
  if (!type || type.hidden) throw invalid('/ticketTypeId', `is not a ticket type of event ${event.id}`);
  if ((type.salesStartAt !== null && now < type.salesStartAt) || (type.salesEndAt !== null && now >= type.salesEndAt)) {
    throw new AppError('sales_closed', `Sales of ticket type ${type.id} are closed now.`, { ticketTypeId: type.id, salesStartAt: iso(type.salesStartAt), salesEndAt: iso(type.salesEndAt) });
  }
  return type;
}

/**
 * `POST /events/:id/waitlist`: the person joins the end of the ticket type's queue, under the
 * event's lock (which every writer of its inventory, vouchers and waiting list takes first, so the
 * counts read are current). Only a sold-out type has a waiting list: a public free place is 409
 * `tickets_available`. One waiting or offered entry per address and type (409 `waitlist_duplicate`).
 */
export async function joinWaitlist(scope: TenantScope, eventId: string, input: Static<typeof JoinWaitlistBody>): Promise<PresentedEntry> {
  return scope.transaction(async (tx) => {
    const event = await requireLockedEvent(tx, eventId);
    const now = Date.now();
    const type = checkOnSale(event, await findTicketType(tx, eventId, input.ticketTypeId), now);
    const ledger = await readLedger(tx, event, now);
    const { publicFree } = placesOf(ledger, type);
    if (publicFree > 0) {
      throw new AppError('tickets_available', `Ticket type ${type.id} has ${publicFree} places on sale; order them instead of waiting.`, { ticketTypeId: type.id, available: publicFree });
    }
    const email = input.email.toLowerCase();
    const existing = await repo.activeEntryOf(tx, type.id, email);
    if (existing) throw new AppError('waitlist_duplicate', `${email} is ${existing.status} on the waiting list of ticket type ${type.id} already (entry ${existing.id}).`, { entryId: existing.id });
    if ((ledger.waiting.get(type.id) ?? 0) >= MAX_WAITING_PER_TYPE) {
      throw new AppError('waitlist_full', `Ticket type ${type.id} has ${MAX_WAITING_PER_TYPE} people waiting, the most it may have.`, { limit: MAX_WAITING_PER_TYPE });
    }
    const row: repo.WaitlistEntryRow = {
      id: newId('waitlistEntry'),
      accountId: tx.accountId,
      eventId,
      ticketTypeId: type.id,
      name: input.name,
      email,
      status: 'waiting',
      voucherId: null,
      offeredAt: null,
      offerExpiresAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await repo.insertEntry(tx, row);
    return presentEntry({ ...row, voucherCode: null }, (await repo.waitingAhead(tx, row)) + 1);
  });
}

/** `GET /events/:id/waitlist`: the entries in queue order (`createdAt`, then `id`), each waiting one with its position in its type's queue. */
export async function listWaitlist(scope: TenantScope, eventId: string, query: Static<typeof WaitlistListQuery> & PageParams): Promise<Page<PresentedEntry>> {
  const request = pageRequest(query, listTag('waitlist', { eventId, ticketTypeId: query.ticketTypeId, status: query.status }));
  await requireEvent(scope, eventId);
  const rows = await repo.pageEntries(scope, eventId, { ticketTypeId: query.ticketTypeId, status: query.status }, request);
  // A type's waiting entries on one page are consecutive in its queue: one count per type, then one more each.
  const positions = new Map<string, number>();
  const next = new Map<string, number>();
  for (const row of rows.slice(0, request.limit)) {
    if (row.status !== 'waiting') continue;
    const position = next.get(row.ticketTypeId) ?? (await repo.waitingAhead(scope, row)) + 1;
    positions.set(row.id, position);
    next.set(row.ticketTypeId, position + 1);
  }
  return toPage(rows, request, (r) => ({ key: r.createdAt, id: r.id }), (r) => presentEntry(r, positions.get(r.id) ?? null));
}

/**
 * `DELETE /events/:id/waitlist/:entryId`: a waiting entry leaves the queue; an offered one's offer
 * ends (its voucher's `validUntil` becomes now, so its place is no longer kept) and the place is
 * offered to the next. Removing a removed entry answers it as it is; a redeemed or expired one is
 * 409 `waitlist_entry_ended`.
 */
export async function removeEntry(scope: TenantScope, eventId: string, entryId: string): Promise<PresentedEntry> {
  return scope.transaction(async (tx) => {
    await requireLockedEvent(tx, eventId);
    const entry = await repo.findEntry(tx, eventId, entryId);
    if (!entry) throw notFound('waiting-list entry', entryId);
    const now = Date.now();
    if (entry.status === 'removed') return presentEntry(entry, null);
    if (entry.status === 'waiting') {
      const removed = (await repo.removeWaiting(tx, entry.id, now))!;
      return presentEntry({ ...removed, voucherCode: null }, null);
    }
    if (entry.status !== 'offered') {
      throw new AppError('waitlist_entry_ended', `Waiting-list entry ${entry.id} is ${entry.status}; there is nothing to remove.`, { entryStatus: entry.status });
    }
    const [removed] = await repo.closeOffers(tx, [entry.id], 'removed', now);
    await repo.endVouchers(tx, [entry.voucherId!], now);
    await queueWaitlistOffers(tx, eventId, now);
    return presentEntry({ ...removed!, voucherCode: entry.voucherCode }, null);
  });
}

/**
 * An offer's voucher ended early by its PATCH (`until`, not after its current end), under the
 * event's lock: the entry keeps step with it. Ended now or before, the offer expires as one that
 * ran out (entry `expired`, `waitlist.offer_expired`; the caller, whose voucher keeps its place no
 * more, queues the offers); else its `offerExpiresAt` moves to `until` and an expiry job is queued
 * for then (the one queued for the old end finds nothing to do).
 */
export async function endOfferBy(tx: TenantScope, voucher: Pick<repo.VoucherRow, 'id' | 'eventId' | 'code' | 'waitlistEntryId'>, until: number, now: number): Promise<void> {
  const entryId = voucher.waitlistEntryId!;
  await repo.moveOfferEnd(tx, entryId, until, now);
  if (until > now) {
    const payload: ExpireOfferPayload = { accountId: tx.accountId, eventId: voucher.eventId, entryId };
    await enqueueJobs(tx.db, [{ kind: EXPIRE_OFFER_KIND, payload, maxAttempts: WAITLIST_JOB_MAX_ATTEMPTS, runAt: until }], now);
    return;
  }
  const closed = await repo.closeOffers(tx, [entryId], 'expired', now);
  const messages = closed.map((e): OutboxMessage => ({ event: 'waitlist.offer_expired', data: presentEntry({ ...e, voucherCode: voucher.code }, null) }));
  await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
}

/**
 * Queues the offer job of the event, in the transaction of a change that frees places (an order's
 * expiry or cancel, a ticket cancel, an order change, more quantity or capacity, an offer ended):
 * once it commits, a worker offers the places to those waiting. Nothing when nobody waits.
 */
export async function queueWaitlistOffers(tx: TenantScope, eventId: string, now: number): Promise<void> {
  if (!(await repo.anyoneWaiting(tx, eventId))) return;
  await enqueueJobs(tx.db, [{ kind: OFFER_KIND, payload: { accountId: tx.accountId, eventId } satisfies OfferPayload, maxAttempts: WAITLIST_JOB_MAX_ATTEMPTS, runAt: now }], now);
}

/** An offer's voucher (contract of vouchers: single use, reserving one place of the type, no discount) for `entry`, valid until `until`. */
function offerVoucher(entry: repo.WaitlistEntryRow, code: string, until: number, now: number): repo.VoucherRow {
  return {
    id: newId('voucher'),
    accountId: entry.accountId,
    eventId: entry.eventId,
    code,
    ticketTypeId: entry.ticketTypeId,
    discountType: 'none',
    discountValue: 0,
    maxUses: 1,
    redeemed: 0,
    reserve: 1,
    validFrom: null,
    validUntil: until,
    comment: null,
    waitlistEntryId: entry.id,
    createdAt: now,
    updatedAt: now,
  };
}

/** What one serving of an event's waiting list did, and whether more is left for another transaction. */
interface Served {
  expired: number;
  offered: number;
  more: boolean;
}

/**
 * Offers that ran out by `asOf` → `expired`: their vouchers end now (their places stop being kept)
 * and `waitlist.offer_expired` is sent for each. Under the event's lock.
 */
async function expireLapsed(tx: TenantScope, eventId: string, asOf: number, now: number): Promise<{ count: number; more: boolean }> {
  const lapsed = await repo.lapsedOffers(tx, eventId, asOf, OFFER_BATCH);
  const closed = await repo.closeOffers(tx, lapsed.map((e) => e.id), 'expired', now);
  await repo.endVouchers(tx, closed.map((e) => e.voucherId!), now);
  const codes = new Map(lapsed.map((e) => [e.id, e.voucherCode]));
  const messages = closed.map((e): OutboxMessage => ({ event: 'waitlist.offer_expired', data: presentEntry({ ...e, voucherCode: codes.get(e.id) ?? null }, null) }));
  await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
  return { count: closed.length, more: lapsed.length === OFFER_BATCH };
}

/**
 * Offers the places an offer can be made for to those waiting, under the event's lock: for each
 * type, min(offerable places, waiting) entries from the head of its queue; with a capacity, the
 * event's offerable places go to the earliest of those across types. Each gets a single-use
 * reserving voucher valid for the event's `waitlistOfferMinutes`, `waitlist.offered` is sent, and
 * its expiry job is queued. The voucher keeps its place, so a second run offers nothing more: an
 * entry is offered once, and never more offers than places.
 */
async function makeOffers(tx: TenantScope, ledger: Ledger, now: number): Promise<{ count: number; more: boolean }> {
  const { event } = ledger;
  if (event.status !== 'published' || now >= event.endsAt || ledger.waiting.size === 0) return { count: 0, more: false };
  const eventLeft = offerablePlaces(event, [], ledger.kept).event ?? Number.POSITIVE_INFINITY;
  const heads: repo.WaitlistEntryRow[] = [];
  for (const type of await listTicketTypes(tx, event.id)) {
    const waiting = ledger.waiting.get(type.id) ?? 0;
    // A type whose sales ended takes no orders: an offer could not be used.
    if (waiting === 0 || (type.salesEndAt !== null && now >= type.salesEndAt)) continue;
    const n = Math.min(placesOf(ledger, type).offerable, waiting, OFFER_BATCH);
    if (n > 0) heads.push(...(await repo.headOfQueue(tx, type.id, n)));
  }
  heads.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const chosen = heads.slice(0, Math.max(0, Math.min(eventLeft, OFFER_BATCH)));
  if (chosen.length === 0) return { count: 0, more: false };

  const until = now + event.waitlistOfferMinutes * 60_000;
  // Generated as every voucher's code is, none the event already has.
  const codes = await freshCodes(tx, event.id, chosen.length, '');
  const offers = chosen.map((entry, i) => ({ entry, voucher: offerVoucher(entry, codes[i]!, until, now) }));
  await repo.writeOffers(tx, offers, now);
  const messages = offers.map(({ entry, voucher }): OutboxMessage => ({
    event: 'waitlist.offered',
    data: presentEntry({ ...entry, status: 'offered', voucherId: voucher.id, voucherCode: voucher.code, offeredAt: now, offerExpiresAt: until, updatedAt: now }, null),
  }));
  await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
  const jobs = offers.map(({ entry }): NewJob => ({
    kind: EXPIRE_OFFER_KIND,
    payload: { accountId: tx.accountId, eventId: event.id, entryId: entry.id } satisfies ExpireOfferPayload,
    maxAttempts: WAITLIST_JOB_MAX_ATTEMPTS,
    runAt: until,
  }));
  await enqueueJobs(tx.db, jobs, now);
  return { count: offers.length, more: offers.length === OFFER_BATCH };
}

/**
 * Serves the event's waiting list in one transaction under its lock: offers that ran out by
 * `asOf` expire, and so do the waiting entries of types whose sales ended by then (no webhook:
 * they were never offered anything), then the places free for offers are offered in queue
 * order. If a batch limit cut it short, another offer job continues. Gone with its account or
 * event: nothing.
 */
async function serveWaitlist(db: Db, accountId: string, eventId: string, asOf: number): Promise<Served> {
  return new TenantScope(db, accountId).transaction(async (tx) => {
    const event = await lockEvent(tx, eventId);
    if (!event) return { expired: 0, offered: 0, more: false };
    const now = Date.now();
    const expired = await expireLapsed(tx, eventId, asOf, now);
    // Those waiting for a type whose sales ended could never be offered a place; they stop keeping the capacity's.
    const endedSales = await repo.expireWaitingOfEndedSales(tx, eventId, asOf);
    const offered = await makeOffers(tx, await readLedger(tx, event, now), now);
    const more = expired.more || offered.more;
    if (more) await enqueueJobs(tx.db, [{ kind: OFFER_KIND, payload: { accountId, eventId } satisfies OfferPayload, maxAttempts: WAITLIST_JOB_MAX_ATTEMPTS, runAt: now }], now);
    return { expired: expired.count + endedSales, offered: offered.count, more };
  });
}

/** The offer job's work: offers the event's free places to those waiting. How many entries changed. */
export async function offerPlaces(db: Db, payload: OfferPayload, asOf = Date.now()): Promise<number> {
  const served = await serveWaitlist(db, payload.accountId, payload.eventId, asOf);
  return served.expired + served.offered;
}

/**
 * The offer-expiry job's work: if the entry still holds its offer and it ran out by `asOf` (the
 * clock; tests pass a later one), it expires and its place passes on, in one transaction. The time
 * until it runs out if it is not yet due (a worker's clock ahead of another's), else 0.
 */
export async function expireOffer(db: Db, payload: ExpireOfferPayload, asOf = Date.now()): Promise<number> {
  const entry = await repo.findEntry(new TenantScope(db, payload.accountId), payload.eventId, payload.entryId);
  // Gone with its account, redeemed or removed: nothing to do.
  if (entry?.status !== 'offered' || entry.offerExpiresAt === null) return 0;
  if (entry.offerExpiresAt > asOf) return entry.offerExpiresAt - asOf;
  await serveWaitlist(db, payload.accountId, payload.eventId, asOf);
  return 0;
}

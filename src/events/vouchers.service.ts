import { randomInt } from 'node:crypto';
import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { type EventRow, listTicketTypes, requireEvent, requireLockedEvent, type TicketTypeRow } from './events.repository.js';
import type { OrderRow, OrderVoucher } from './orders.repository.js';
import * as repo from './vouchers.repository.js';
import { fanOut } from '../webhooks/outbox.js';
import { activeEntryOf, endVouchers, findEntry } from './waitlist.repository.js';
import { endOfferBy, presentEntry, queueWaitlistOffers } from './waitlist.service.js';
import type { BulkVouchersBody, CreateVoucherBody, UpdateVoucherBody, VoucherListQuery, VoucherSettings } from './vouchers.schemas.js';

type VoucherRow = repo.VoucherRow;

/** Generated codes: no 0/O or 1/I, which people misread when they type a code from paper. */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
/** 12 characters alone (60 bits); 10 after a prefix (50 bits: a batch of 1,000 meets a collision about once in 10^9). */
const CODE_LENGTH = 12;
const SUFFIX_LENGTH = 10;
/** Tries at drawing codes no voucher of the event has, before giving up (a collision is already rare). */
const CODE_DRAWS = 5;

export function presentVoucher(row: VoucherRow) {
  return {
    id: row.id,
    eventId: row.eventId,
    code: row.code,
    ticketTypeId: row.ticketTypeId,
    discountType: row.discountType as 'none' | 'percent' | 'fixed',
    discountValue: Number(row.discountValue),
    maxUses: row.maxUses,
    redeemed: row.redeemed,
    remaining: row.maxUses - row.redeemed,
    reserve: row.reserve === 1,
    validFrom: iso(row.validFrom),
    validUntil: iso(row.validUntil),
    comment: row.comment,
    waitlistEntryId: row.waitlistEntryId,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export type Voucher = ReturnType<typeof presentVoucher>;

/** Whether the voucher has not ended at `now` (`validFrom` does not matter to what a reserving voucher keeps). */
const notEnded = (v: Pick<VoucherRow, 'validUntil'>, now: number) => v.validUntil === null || v.validUntil > now;

/** The places a voucher keeps from everyone else at `now`: its remaining uses while it reserves and has not ended. */
const keeps = (v: Pick<VoucherRow, 'reserve' | 'validUntil' | 'maxUses' | 'redeemed'>, now: number) => (v.reserve === 1 && notEnded(v, now) ? v.maxUses - v.redeemed : 0);

/** A voucher's discount on one ticket of `price`: percent rounded to the minor unit, fixed never below a price of 0. */
export function discountOf(voucher: Pick<VoucherRow, 'discountType' | 'discountValue'>, price: number): number {
  const value = Number(voucher.discountValue);
  if (voucher.discountType === 'percent') return Math.round((price * value) / 100);
  if (voucher.discountType === 'fixed') return Math.min(price, value);
  return 0;
}

/**
 * Free places of each ticket type and of the event's capacity (null: no capacity) under the
 * availability rule (docs/events.md, "Vouchers"): less sold, held, reserved and waiting. With
 * `voucher` (a reserving voucher an order uses), its own places are not reserved from it and the
 * people waiting for its type are not counted; for the capacity, those waiting for any type are
 * not counted only when `placesOutside` (the order's places of other types) is 0, as the order's
 * conditional updates do.
 */
export function freePlaces(event: Pick<EventRow, 'capacity' | 'sold' | 'held'>, types: Pick<TicketTypeRow, 'id' | 'quantity' | 'sold' | 'held'>[], kept: repo.Kept, voucher: VoucherRow | null, placesOutside = 0): { event: number | null; types: Map<string, number> } {
  const ownRemaining = voucher === null ? 0 : voucher.maxUses - voucher.redeemed;
  const free = new Map<string, number>();
  for (const type of types) {
    const k = kept.get(type.id) ?? { reserved: 0, waiting: 0 };
    const own = voucher?.ticketTypeId === type.id;
    free.set(type.id, type.quantity - type.sold - type.held - k.reserved + (own ? ownRemaining : 0) - (own ? 0 : k.waiting));
  }
  // The capacity counts what every type of the event keeps (`kept` has them all), whichever types are asked about.
  const waitingCounted = voucher === null || placesOutside > 0;
  let keptInAll = -ownRemaining;
  for (const k of kept.values()) keptInAll += k.reserved + (waitingCounted ? k.waiting : 0);
  return { event: event.capacity === null ? null : event.capacity - event.sold - event.held - keptInAll, types: free };
}

/**
 * The places an offer can be made for (docs/events.md, "Waiting list"): freePlaces before its
 * waiting term, for the waiting list, whose offers go to those waiting.
 */
export function offerablePlaces(event: Pick<EventRow, 'capacity' | 'sold' | 'held'>, types: Pick<TicketTypeRow, 'id' | 'quantity' | 'sold' | 'held'>[], kept: repo.Kept): { event: number | null; types: Map<string, number> } {
  return freePlaces(event, types, new Map([...kept].map(([typeId, k]) => [typeId, { reserved: k.reserved, waiting: 0 }])), null);
}

/** What one type's order without a reserving voucher may take now: the smaller of its free places and the event's. */
export function publicFreeOfType(event: Pick<EventRow, 'capacity' | 'sold' | 'held'>, type: Pick<TicketTypeRow, 'id' | 'quantity' | 'sold' | 'held'>, kept: repo.Kept): number {
  const free = freePlaces(event, [type], kept, null);
  return Math.min(free.types.get(type.id)!, free.event ?? Number.POSITIVE_INFINITY);
}

/** Public free places of one type, within the event's: what a new or larger reservation may take. */
async function publicFree(tx: TenantScope, event: EventRow, ticketTypeId: string, now: number): Promise<number> {
  const free = freePlaces(event, await listTicketTypes(tx, event.id), await repo.keptOfEvent(tx, event.id, now), null);
  return Math.max(0, Math.min(free.types.get(ticketTypeId) ?? 0, free.event ?? Infinity));
}

/** 409 sold_out unless `more` reserved places of the type are public free places now. */
async function checkReservable(tx: TenantScope, event: EventRow, ticketTypeId: string, more: number, now: number): Promise<void> {
  if (more <= 0) return;
  const available = await publicFree(tx, event, ticketTypeId, now);
  if (more > available) {
    throw new AppError('sold_out', `Ticket type ${ticketTypeId} has ${available} places free to reserve; the vouchers would reserve ${more}.`, { ticketTypeId, available });
  }
}

/**
 * The voucher an order names by `code` (any case), read under the event's lock (current): 404
 * voucher_not_found if the event has none of that code, 409 voucher_not_valid outside its window.
 */
export async function voucherForOrder(tx: TenantScope, eventId: string, code: string, now: number): Promise<VoucherRow> {
  const voucher = await repo.findVoucherByCode(tx, eventId, code.toUpperCase());
  if (!voucher) throw new AppError('voucher_not_found', `Event ${eventId} has no voucher ${code.toUpperCase()}.`);
  if ((voucher.validFrom !== null && now < voucher.validFrom) || (voucher.validUntil !== null && now >= voucher.validUntil)) {
    throw new AppError('voucher_not_valid', `Voucher ${voucher.code} is not valid now.`, { validFrom: iso(voucher.validFrom), validUntil: iso(voucher.validUntil) });
  }
  return voucher;
}

/** What an order redeems of `voucher`: reserving when its reserved places are the ones taken (it reserves and has not ended). */
export function orderVoucherOf(voucher: VoucherRow, places: number, now: number): OrderVoucher {
  return { id: voucher.id, ticketTypeId: voucher.ticketTypeId, places, reserving: voucher.reserve === 1 && notEnded(voucher, now), waitlistEntryId: voucher.waitlistEntryId };
}

/**
 * The uses a voucher gave an order must fit in what it has left (all of them: a voucher never
 * applies to part of an order's tickets of its type), and it must apply to something.
 */
export function checkVoucherFits(voucher: VoucherRow, places: number): void {
  if (places === 0) {
    throw new AppError('voucher_not_applicable', `Voucher ${voucher.code} applies to none of the order's ticket types.`, { ticketTypeId: voucher.ticketTypeId });
  }
  const remaining = voucher.maxUses - voucher.redeemed;
  if (places > remaining) {
    throw new AppError('voucher_used_up', `Voucher ${voucher.code} has ${remaining} of ${voucher.maxUses} uses left; the order needs ${places}.`, { remaining });
  }
}

/** The voucher an ended order used, to take its uses again at a late completion (null: it used none, or it is gone). */
export async function voucherOfEndedOrder(tx: TenantScope, order: Pick<OrderRow, 'voucherId' | 'voucherPlaces'>, now: number): Promise<OrderVoucher | null> {
  if (order.voucherId === null || order.voucherPlaces === 0) return null;
  const voucher = await repo.voucherById(tx, order.voucherId);
  return voucher ? orderVoucherOf(voucher, order.voucherPlaces, now) : null;
}

/**
 * Pending orders that ended unpaid (expired, cancelled) give their vouchers' uses back, and a
 * waiting-list offer they redeemed stands again while its voucher is valid (else it expired).
 * Under the event's lock. Cancelling tickets of a completed order gives nothing back.
 */
export async function giveBackUses(tx: TenantScope, orders: Pick<OrderRow, 'voucherId' | 'voucherPlaces'>[], now: number): Promise<void> {
  for (const order of orders) {
    if (order.voucherId === null || order.voucherPlaces === 0) continue;
    const voucher = await repo.giveBackVoucher(tx, order.voucherId, order.voucherPlaces, now);
    if (voucher?.waitlistEntryId) await reopenOffer(tx, voucher, now);
  }
}

/**
 * The offer a pending order redeemed, once that order ended unpaid: it stands again while its
 * voucher is valid and the person holds no other place in the queue; else it expires (its voucher
 * ends, `waitlist.offer_expired` is sent). A person who joined again meanwhile keeps the new entry:
 * the address may wait or hold an offer once per type (a unique index), and reopening the old
 * entry beside it would fail the whole transaction that ends the order.
 */
async function reopenOffer(tx: TenantScope, voucher: VoucherRow, now: number): Promise<void> {
  const entry = await findEntry(tx, voucher.eventId, voucher.waitlistEntryId!);
  if (entry?.status !== 'redeemed') return;
  if (notEnded(voucher, now) && !(await activeEntryOf(tx, entry.ticketTypeId, entry.email))) {
    await repo.reopenOffer(tx, entry.id, 'offered', now);
    return;
  }
  const expired = await repo.reopenOffer(tx, entry.id, 'expired', now);
  if (!expired) return;
  await endVouchers(tx, [voucher.id], now);
  await fanOut.inTransaction(tx.db, tx.accountId, [{ event: 'waitlist.offer_expired', data: presentEntry({ ...expired, voucherCode: entry.voucherCode }, null) }], now);
}

/** A generated code: `prefix` then random characters, or random characters alone. */
function drawCode(prefix: string): string {
  const length = prefix === '' ? CODE_LENGTH : SUFFIX_LENGTH;
  return prefix + Array.from({ length }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
}

/** `count` generated codes that no voucher of the event has, nor each other (the codes of vouchers and of waiting-list offers). */
export async function freshCodes(tx: TenantScope, eventId: string, count: number, prefix: string): Promise<string[]> {
  const codes = new Set<string>();
  for (let draw = 0; draw < CODE_DRAWS && codes.size < count; draw++) {
    const drawn: string[] = [];
    while (codes.size + drawn.length < count) {
      const code = drawCode(prefix);
      if (!codes.has(code) && !drawn.includes(code)) drawn.push(code);
    }
    const taken = new Set(await repo.takenCodes(tx, eventId, drawn));
    for (const code of drawn) if (!taken.has(code)) codes.add(code);
  }
  if (codes.size < count) throw new AppError('voucher_code_taken', `Event ${eventId} has too many codes beginning with ${prefix}; use another prefix.`, { codePrefix: prefix });
  return [...codes];
}

/** The settings common to every voucher of a request, checked: the first wrong one is a 400 at its pointer. */
function checkSettings(s: Static<typeof VoucherSettings>, types: TicketTypeRow[]): { validFrom: number | null; validUntil: number | null } {
  if (s.ticketTypeId != null && !types.some((t) => t.id === s.ticketTypeId)) throw invalid('/ticketTypeId', 'is not a ticket type of this event');
  checkDiscount(s.discountType ?? 'none', s.discountValue);
  if (s.reserve && s.ticketTypeId == null) throw invalid('/reserve', 'needs ticketTypeId: a voucher reserves places of one ticket type');
  const validFrom = s.validFrom == null ? null : parseTime(s.validFrom, '/validFrom');
  const validUntil = s.validUntil == null ? null : parseTime(s.validUntil, '/validUntil');
  checkWindow(validFrom, validUntil);
  return { validFrom, validUntil };
}

function checkDiscount(type: string, value: number | undefined): void {
  if (type === 'none' && value !== undefined && value !== 0) throw invalid('/discountValue', 'must be 0 or absent when discountType is none');
  if (type !== 'none' && (value === undefined || value < 1)) throw invalid('/discountValue', `is required (at least 1) when discountType is ${type}`);
  if (type === 'percent' && value! > 100) throw invalid('/discountValue', 'must be at most 100 for a percent discount');
}

function checkWindow(validFrom: number | null, validUntil: number | null): void {
  if (validFrom !== null && validUntil !== null && !(validUntil > validFrom)) throw invalid('/validUntil', 'must be after validFrom');
}

/**
 * New vouchers of one event with the same settings, one per code, in one transaction under the
 * event's lock: codes taken (409 voucher_code_taken), reserving vouchers whose places are not
 * public free places (409 sold_out) and a cancelled event (409 event_cancelled) create none.
 */
async function createVouchers(scope: TenantScope, eventId: string, settings: Static<typeof VoucherSettings>, codesOf: (tx: TenantScope) => Promise<string[]>): Promise<Voucher[]> {
  return scope.transaction(async (tx) => {
    const event = await requireLockedEvent(tx, eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled; its vouchers cannot change.`);
    const { validFrom, validUntil } = checkSettings(settings, await listTicketTypes(tx, eventId));
    const codes = await codesOf(tx);
    const now = Date.now();
    const rows: VoucherRow[] = codes.map((code) => ({
      id: newId('voucher'),
      accountId: tx.accountId,
      eventId,
      code,
      ticketTypeId: settings.ticketTypeId ?? null,
      discountType: settings.discountType ?? 'none',
      discountValue: settings.discountValue ?? 0,
      maxUses: settings.maxUses ?? 1,
      redeemed: 0,
      reserve: settings.reserve ? 1 : 0,
      validFrom,
      validUntil,
      comment: settings.comment ?? null,
      waitlistEntryId: null,
      createdAt: now,
      updatedAt: now,
    }));
    await checkReservable(tx, event, settings.ticketTypeId ?? '', rows.reduce((sum, row) => sum + keeps(row, now), 0), now);
    await repo.insertVouchers(tx, rows);
    return rows.map(presentVoucher);
  });
}

/** Given codes, upper-cased: 409 voucher_code_taken (naming them) if the event has any of them already. */
async function givenCodes(tx: TenantScope, eventId: string, codes: string[]): Promise<string[]> {
  const upper = codes.map((c) => c.toUpperCase());
  const repeated = upper.findIndex((code, i) => upper.indexOf(code) !== i);
  if (repeated >= 0) throw invalid(`/codes/${repeated}`, 'appears twice (codes are compared ignoring case)');
  const taken = await repo.takenCodes(tx, eventId, upper);
  if (taken.length > 0) throw new AppError('voucher_code_taken', `Event ${eventId} already has ${taken.length === 1 ? 'voucher' : 'vouchers'} ${taken.slice(0, 10).join(', ')}.`, { codes: taken.slice(0, 100) });
  return upper;
}

/** `POST /v1/events/:id/vouchers`: one voucher, of the given `code` or a generated one. */
export async function createVoucher(scope: TenantScope, eventId: string, input: Static<typeof CreateVoucherBody>): Promise<Voucher> {
  const { code, ...settings } = input;
  const [created] = await createVouchers(scope, eventId, settings, (tx) => (code === undefined ? freshCodes(tx, eventId, 1, '') : givenCodes(tx, eventId, [code])));
  return created!;
}

/** `POST /v1/events/:id/vouchers/bulk`: `count` generated codes (after `codePrefix`), or the given `codes`, all alike. */
export async function createVoucherBatch(scope: TenantScope, eventId: string, input: Static<typeof BulkVouchersBody>): Promise<{ data: Voucher[] }> {
  const { count, codePrefix, codes, ...settings } = input;
  if ((count === undefined) === (codes === undefined)) throw invalid('/count', 'give either count (generated codes) or codes, not both and not neither');
  if (codePrefix !== undefined && codes !== undefined) throw invalid('/codePrefix', 'is only for generated codes (count)');
  const data = await createVouchers(scope, eventId, settings, (tx) => (codes !== undefined ? givenCodes(tx, eventId, codes) : freshCodes(tx, eventId, count!, (codePrefix ?? '').toUpperCase())));
  return { data };
}

async function requireVoucher(scope: TenantScope, eventId: string, voucherId: string): Promise<VoucherRow> {
  const voucher = await repo.findVoucher(scope, eventId, voucherId);
  if (!voucher) throw notFound('voucher', voucherId);
  return voucher;
}

export async function getVoucher(scope: TenantScope, eventId: string, voucherId: string): Promise<Voucher> {
  await requireEvent(scope, eventId);
  return presentVoucher(await requireVoucher(scope, eventId, voucherId));
}

/** The event's vouchers, newest first, optionally of one code (any case) or ticket type. */
export async function listVouchers(scope: TenantScope, eventId: string, query: Static<typeof VoucherListQuery> & PageParams): Promise<Page<Voucher>> {
  const filters = { code: query.code?.toUpperCase(), ticketTypeId: query.ticketTypeId };
  const page = pageRequest(query, listTag('vouchers', { eventId, ...filters }));
  await requireEvent(scope, eventId);
  const rows = await repo.pageVouchers(scope, eventId, filters, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentVoucher);
}

/**
 * Changes a voucher under the event's lock. `maxUses` not below `redeemed`; the discount only while
 * unused; a waiting-list offer only in its comment and an earlier `validUntil`, which ends its
 * entry's offer with it (409 voucher_in_use otherwise);
 * reserving (on, more uses, a later end of an ended one) only with public free places (409 sold_out).
 */
export async function updateVoucher(scope: TenantScope, eventId: string, voucherId: string, input: Static<typeof UpdateVoucherBody>): Promise<Voucher> {
  return scope.transaction(async (tx) => {
    const event = await requireLockedEvent(tx, eventId);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled; its vouchers cannot change.`);
    const voucher = await requireVoucher(tx, eventId, voucherId);
    const offerFields = ['maxUses', 'discountType', 'discountValue', 'reserve', 'validFrom'] as const;
    if (voucher.waitlistEntryId !== null && offerFields.some((field) => input[field] !== undefined)) {
      throw new AppError('voucher_in_use', `Voucher ${voucher.code} is a waiting-list offer: only its comment changes, and its validUntil moves earlier to end it.`, { redeemed: voucher.redeemed });
    }
    const changes: Partial<VoucherRow> = { updatedAt: Date.now() };
    if (input.maxUses !== undefined) {
      if (input.maxUses < voucher.redeemed) throw invalid('/maxUses', `must be at least the ${voucher.redeemed} uses redeemed`);
      changes.maxUses = input.maxUses;
    }
    if (input.discountType !== undefined || input.discountValue !== undefined) {
      const discountType = input.discountType ?? voucher.discountType;
      const discountValue = input.discountValue ?? (input.discountType === 'none' ? 0 : Number(voucher.discountValue));
      checkDiscount(discountType, discountValue);
      if (voucher.redeemed > 0 && (discountType !== voucher.discountType || discountValue !== Number(voucher.discountValue))) {
        throw new AppError('voucher_in_use', `Voucher ${voucher.code} was redeemed ${voucher.redeemed} times; its discount is fixed.`, { redeemed: voucher.redeemed });
      }
      Object.assign(changes, { discountType, discountValue });
    }
    if (input.reserve !== undefined) {
      if (input.reserve && voucher.ticketTypeId === null) throw invalid('/reserve', 'needs the voucher to have a ticketTypeId');
      changes.reserve = input.reserve ? 1 : 0;
    }
    const validFrom = input.validFrom === undefined ? voucher.validFrom : input.validFrom === null ? null : parseTime(input.validFrom, '/validFrom');
    const validUntil = input.validUntil === undefined ? voucher.validUntil : input.validUntil === null ? null : parseTime(input.validUntil, '/validUntil');
    checkWindow(validFrom, validUntil);
    if (voucher.waitlistEntryId !== null) checkOfferEnd(voucher, validUntil);
    Object.assign(changes, { validFrom, validUntil });
    if (input.comment !== undefined) changes.comment = input.comment;
    const now = changes.updatedAt!;
    if (voucher.waitlistEntryId !== null && validUntil !== voucher.validUntil) await endOfferBy(tx, voucher, validUntil!, now);
    const more = keeps({ ...voucher, ...changes }, now) - keeps(voucher, now);
    if (voucher.ticketTypeId !== null) await checkReservable(tx, event, voucher.ticketTypeId, more, now);
    // Places the voucher no longer keeps go to those waiting first (docs/events.md, "Waiting list").
    if (more < 0) await queueWaitlistOffers(tx, eventId, now);
    return presentVoucher(await repo.updateVoucher(tx, voucherId, changes));
  });
}

/**
 * A waiting-list offer's voucher may only end earlier: its entry's `offerExpiresAt`, the expiry
 * job and the place it keeps follow its end, and a later (or no) end would keep a place for an
 * entry that expired or outlast what the person was told (409 voucher_in_use).
 */
function checkOfferEnd(voucher: VoucherRow, validUntil: number | null): void {
  if (validUntil !== null && voucher.validUntil !== null && validUntil <= voucher.validUntil) return;
  throw new AppError('voucher_in_use', `Voucher ${voucher.code} is a waiting-list offer: its validUntil can only move earlier (to end it), not later nor away.`, { redeemed: voucher.redeemed });
}

/** Deletes a voucher nothing used: 409 voucher_in_use once redeemed or when it is a waiting-list offer (end it with `validUntil`). */
export async function deleteVoucher(scope: TenantScope, eventId: string, voucherId: string): Promise<void> {
  await scope.transaction(async (tx) => {
    await requireLockedEvent(tx, eventId);
    const voucher = await requireVoucher(tx, eventId, voucherId);
    if (!(await repo.deleteUnusedVoucher(tx, voucherId))) {
      const why = voucher.waitlistEntryId !== null ? 'is a waiting-list offer' : `was redeemed ${voucher.redeemed} times`;
      throw new AppError('voucher_in_use', `Voucher ${voucher.code} ${why}; end it instead (PATCH validUntil).`, { redeemed: voucher.redeemed });
    }
    // The places a reserving voucher kept go to those waiting first.
    if (voucher.reserve === 1) await queueWaitlistOffers(tx, eventId, Date.now());
  });
}

import { type Selectable, sql } from 'kysely';
import type { Db } from '../db/database.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import type { TenantScope } from '../db/tenant.js';
import type { VoucherTable } from './vouchers.table.js';
import type { WaitlistEntryTable } from './waitlist.table.js';

export type WaitlistEntryRow = Selectable<WaitlistEntryTable>;
export type VoucherRow = Selectable<VoucherTable>;
/** An entry with the code of its offer's voucher (null before an offer). */
export type EntryWithCode = WaitlistEntryRow & { voucherCode: string | null };

/** Entries and the codes of their offers, of one account. */
function entriesWithCodes(scope: TenantScope) {
  return scope
    .selectFrom('waitlistEntries')
    .leftJoin('vouchers', 'vouchers.id', 'waitlistEntries.voucherId')
    .selectAll('waitlistEntries')
    .select('vouchers.code as voucherCode');
}

export function findEntry(scope: TenantScope, eventId: string, id: string): Promise<EntryWithCode | undefined> {
  return entriesWithCodes(scope).where('waitlistEntries.eventId', '=', eventId).where('waitlistEntries.id', '=', id).executeTakeFirst();
}

/** The waiting or offered entry of `email` for the type, if any (one at most: a unique index). */
export function activeEntryOf(scope: TenantScope, ticketTypeId: string, email: string): Promise<Pick<WaitlistEntryRow, 'id' | 'status'> | undefined> {
  return scope.selectFrom('waitlistEntries').select(['id', 'status']).where('ticketTypeId', '=', ticketTypeId).where('email', '=', email).where('status', 'in', ['waiting', 'offered']).executeTakeFirst();
}

export async function insertEntry(scope: TenantScope, row: WaitlistEntryRow): Promise<void> {
  await scope.db.insertInto('waitlistEntries').values(row).execute();
}

/** The first `limit` waiting entries of the type, in queue order (`created_at`, then `id`). */
export function headOfQueue(scope: TenantScope, ticketTypeId: string, limit: number): Promise<WaitlistEntryRow[]> {
  return scope.selectFrom('waitlistEntries').selectAll().where('ticketTypeId', '=', ticketTypeId).where('status', '=', 'waiting').orderBy('createdAt').orderBy('id').limit(limit).execute();
}

const BATCH = 100;

/** The offers' vouchers, and their entries → `offered` (under the event's lock: they were read waiting under it). */
export async function writeOffers(scope: TenantScope, offers: Array<{ entry: WaitlistEntryRow; voucher: VoucherRow }>, now: number): Promise<void> {
  for (let i = 0; i < offers.length; i += BATCH) await scope.db.insertInto('vouchers').values(offers.slice(i, i + BATCH).map((o) => o.voucher)).execute();
  for (const { entry, voucher } of offers) {
    await scope
      .updateTable('waitlistEntries')
      .set({ status: 'offered', voucherId: voucher.id, offeredAt: now, offerExpiresAt: voucher.validUntil, updatedAt: now })
      .where('id', '=', entry.id)
      .where('status', '=', 'waiting')
      .execute();
  }
}

/** The event's offers still open whose time ran out by `asOf`, in queue order. */
export function lapsedOffers(scope: TenantScope, eventId: string, asOf: number, limit: number): Promise<EntryWithCode[]> {
  return entriesWithCodes(scope)
    .where('waitlistEntries.eventId', '=', eventId)
    .where('waitlistEntries.status', '=', 'offered')
    .where('waitlistEntries.offerExpiresAt', '<=', asOf)
    .orderBy('waitlistEntries.createdAt')
    .orderBy('waitlistEntries.id')
    .limit(limit)
    .execute();
}

/** Offered entries → `status` (`expired`, `removed`): the ones that were still offered, as they are now. */
export function closeOffers(scope: TenantScope, ids: string[], status: 'expired' | 'removed', now: number): Promise<WaitlistEntryRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return scope.updateTable('waitlistEntries').set({ status, updatedAt: now }).where('id', 'in', ids).where('status', '=', 'offered').returningAll().execute();
}

/** Ends offers' vouchers at `now` (their places stop being kept), unless they ended before. */
export async function endVouchers(scope: TenantScope, voucherIds: string[], now: number): Promise<void> {
  if (voucherIds.length === 0) return;
  await scope
    .updateTable('vouchers')
    .set({ validUntil: now, updatedAt: now })
    .where('id', 'in', voucherIds)
    .where((eb) => eb.or([eb('validUntil', 'is', null), eb('validUntil', '>', now)]))
    .execute();
}

/** An offer whose voucher ends earlier: the entry's `offerExpiresAt` follows it (offered, or redeemed by a pending order that may end). */
export async function moveOfferEnd(scope: TenantScope, entryId: string, until: number, now: number): Promise<void> {
  await scope.updateTable('waitlistEntries').set({ offerExpiresAt: until, updatedAt: now }).where('id', '=', entryId).where('status', 'in', ['offered', 'redeemed']).execute();
}

/**
 * The event's waiting entries of ticket types whose sales ended by `now` → `expired`: nobody can
 * be offered a place of such a type, and while they wait they keep places of the event's capacity.
 * How many.
 */
export async function expireWaitingOfEndedSales(scope: TenantScope, eventId: string, now: number): Promise<number> {
  const result = await scope
    .updateTable('waitlistEntries')
    .set({ status: 'expired', updatedAt: now })
    .where('eventId', '=', eventId)
    .where('status', '=', 'waiting')
    .where('ticketTypeId', 'in', (eb) => eb.selectFrom('ticketTypes').select('ticketTypes.id').where('ticketTypes.eventId', '=', eventId).where('ticketTypes.salesEndAt', '<=', now))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A waiting entry → `removed`: the entry as it is now, or undefined if it was not waiting. */
export function removeWaiting(scope: TenantScope, id: string, now: number): Promise<WaitlistEntryRow | undefined> {
  return scope.updateTable('waitlistEntries').set({ status: 'removed', updatedAt: now }).where('id', '=', id).where('status', '=', 'waiting').returningAll().executeTakeFirst();
}

/** Whether anyone waits for a ticket type of the event (a freed place may then be offered). */
export async function anyoneWaiting(scope: TenantScope, eventId: string): Promise<boolean> {
  const row = await scope.selectFrom('waitlistEntries').select('id').where('eventId', '=', eventId).where('status', '=', 'waiting').limit(1).executeTakeFirst();
  return row !== undefined;
}

export interface EntryFilters {
  ticketTypeId?: string;
  status?: string;
}

/** One page of an event's entries in queue order. */
export function pageEntries(scope: TenantScope, eventId: string, filters: EntryFilters, page: KeysetPage): Promise<EntryWithCode[]> {
  let query = entriesWithCodes(scope).where('waitlistEntries.eventId', '=', eventId);
  if (filters.ticketTypeId !== undefined) query = query.where('waitlistEntries.ticketTypeId', '=', filters.ticketTypeId);
  if (filters.status !== undefined) query = query.where('waitlistEntries.status', '=', filters.status);
  return keysetPage(query, page, 'waitlistEntries.createdAt', 'waitlistEntries.id', 'asc').execute();
}

/** How many wait ahead of the entry in its type's queue. */
export async function waitingAhead(scope: TenantScope, entry: Pick<WaitlistEntryRow, 'ticketTypeId' | 'createdAt' | 'id'>): Promise<number> {
  const row = await scope
    .selectFrom('waitlistEntries')
    .select(sql<number | string>`count(*)`.as('ahead'))
    .where('ticketTypeId', '=', entry.ticketTypeId)
    .where('status', '=', 'waiting')
    .where((eb) => eb.or([eb('createdAt', '<', entry.createdAt), eb.and([eb('createdAt', '=', entry.createdAt), eb('id', '<', entry.id)])]))
    .executeTakeFirstOrThrow();
  return Number(row.ahead);
}

/**
 * Events of every account whose waiting list may need serving (someone waits, or an offer's time
 * ran out by `asOf`), published and not ended, after `afterEventId` in id order: the sweep's work.
 * Reads through the partial index of active entries.
 */
export function eventsToServe(db: Db, asOf: number, afterEventId: string, limit: number): Promise<Array<{ accountId: string; eventId: string }>> {
  return db
    .selectFrom('waitlistEntries')
    .innerJoin('events', 'events.id', 'waitlistEntries.eventId')
    .select(['waitlistEntries.accountId', 'waitlistEntries.eventId'])
    .distinct()
    .where('waitlistEntries.status', 'in', ['waiting', 'offered'])
    .where((eb) => eb.or([eb('waitlistEntries.status', '=', 'waiting'), eb('waitlistEntries.offerExpiresAt', '<=', asOf)]))
    .where('events.status', '=', 'published')
    .where('events.endsAt', '>', asOf)
    .where('waitlistEntries.eventId', '>', afterEventId)
    .orderBy('waitlistEntries.eventId')
    .limit(limit)
    .execute();
}

import { type Expression, type Insertable, type RawBuilder, type Selectable, sql } from 'kysely';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import type { TenantScope } from '../db/tenant.js';
import type { VoucherTable } from './vouchers.table.js';
import type { WaitlistEntryTable } from './waitlist.table.js';
import './vouchers.table.js';
import './waitlist.table.js';

export type VoucherRow = Selectable<VoucherTable>;

/** Rows per insert: well under both engines' limits on bound values. */
const CHUNK = 100;

/**
 * The places the active reserving vouchers of a ticket type keep (`reservedActive(T)` of
 * docs/events.md, "Vouchers"), leaving out `exceptVoucher` (the reserving voucher an order uses:
 * its own places are the ones it takes; '' leaves out none). `reserve = 1` is written literally so
 * that both engines read the partial index `vouchers_reserving`, and an event without reserving
 * vouchers pays one empty index probe.
 */
export function reservedOfType(typeId: Expression<string>, now: number | Expression<number>, exceptVoucher: string | Expression<string>): RawBuilder<number> {
  return sql<number>`(select coalesce(sum(v.max_uses - v.redeemed), 0) from vouchers v where v.ticket_type_id = ${typeId} and v.reserve = 1 and (v.valid_until is null or v.valid_until > ${now}) and v.id <> ${exceptVoucher})`;
}

/**
 * The people waiting for a ticket type (`waiting(T)`), counted unless `reservingType` is this type
 * (an order with a reserving voucher takes that type's reserved places, not a waiting person's;
 * '' for a public order). One range of a waiting-list index.
 */
export function waitingOfType(typeId: Expression<string>, reservingType: string | Expression<string>): RawBuilder<number> {
  return sql<number>`(select count(*) from waitlist_entries w where w.ticket_type_id = ${typeId} and w.status = 'waiting' and w.ticket_type_id <> ${reservingType})`;
}

/**
 * reservedOfType summed over the ticket types of the event (`reservedActive(E)`): one probe of the
 * partial index per type, whatever other events hold (a join from all reserving vouchers, or all
 * waiting entries, of the database is what a planner could otherwise choose).
 */
export function reservedOfEvent(eventId: Expression<string>, now: number | Expression<number>, exceptVoucher: string | Expression<string>): RawBuilder<number> {
  return sql<number>`(select coalesce(sum(${reservedOfType(sql.ref('tt.id'), now, exceptVoucher)}), 0) from ticket_types tt where tt.event_id = ${eventId})`;
}

/**
 * The people waiting for any ticket type of the event (`waiting(E)`), per type as reservedOfEvent;
 * not counted when `allReservedBy` names a reserving voucher (not '') whose places are all the
 * order takes: an order with places outside its voucher's type must leave those waiting theirs.
 */
export function waitingOfEvent(eventId: Expression<string>, allReservedBy: string | Expression<string>): RawBuilder<number> {
  return sql<number>`(select coalesce(sum(${waitingOfType(sql.ref('tt.id'), '')}), 0) from ticket_types tt where tt.event_id = ${eventId} and ${allReservedBy} = '')`;
}

/** What the reserving vouchers and the waiting list keep from the public, per ticket type of the event. */
export type Kept = Map<string, { reserved: number; waiting: number }>;

/**
 * reservedActive and waiting of each ticket type of the event at `now` (types with neither are
 * absent). Read under the event's lock, it is current; outside it, a moment's picture.
 */
export async function keptOfEvent(scope: TenantScope, eventId: string, now: number): Promise<Kept> {
  const kept: Kept = new Map();
  const reserved = await scope
    .selectFrom('vouchers')
    .select(['ticketTypeId', sql<number>`sum(max_uses - redeemed)`.as('places')])
    .where('eventId', '=', eventId)
    .where(sql<boolean>`reserve = 1`)
    .where((eb) => eb.or([eb('validUntil', 'is', null), eb('validUntil', '>', now)]))
    .groupBy('ticketTypeId')
    .execute();
  for (const row of reserved) if (row.ticketTypeId !== null) kept.set(row.ticketTypeId, { reserved: Number(row.places), waiting: 0 });
  const waiting = await scope
    .selectFrom('waitlistEntries')
    .select(['ticketTypeId', sql<number>`count(*)`.as('people')])
    .where('eventId', '=', eventId)
    .where('status', '=', 'waiting')
    .groupBy('ticketTypeId')
    .execute();
  for (const row of waiting) kept.set(row.ticketTypeId, { reserved: kept.get(row.ticketTypeId)?.reserved ?? 0, waiting: Number(row.people) });
  return kept;
}

export function findVoucher(scope: TenantScope, eventId: string, id: string): Promise<VoucherRow | undefined> {
  return scope.selectFrom('vouchers').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
}

/** The voucher of the event with this code (upper case, as stored). */
export function findVoucherByCode(scope: TenantScope, eventId: string, code: string): Promise<VoucherRow | undefined> {
  return scope.selectFrom('vouchers').selectAll().where('eventId', '=', eventId).where('code', '=', code).executeTakeFirst();
}

/** A voucher by id alone (an order's, whose event the caller has locked). */
export function voucherById(scope: TenantScope, id: string): Promise<VoucherRow | undefined> {
  return scope.selectFrom('vouchers').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Of these codes, those the event already has. */
export async function takenCodes(scope: TenantScope, eventId: string, codes: string[]): Promise<string[]> {
  const taken: string[] = [];
  for (let i = 0; i < codes.length; i += CHUNK) {
    const rows = await scope.selectFrom('vouchers').select('code').where('eventId', '=', eventId).where('code', 'in', codes.slice(i, i + CHUNK)).execute();
    taken.push(...rows.map((r) => r.code));
  }
  return taken;
}

export async function insertVouchers(scope: TenantScope, rows: Array<Insertable<VoucherTable>>): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) await scope.db.insertInto('vouchers').values(rows.slice(i, i + CHUNK)).execute();
}

/** One page of the event's vouchers, newest first, optionally of one code or ticket type. */
export function pageVouchers(scope: TenantScope, eventId: string, filters: { code?: string; ticketTypeId?: string }, page: KeysetPage): Promise<VoucherRow[]> {
  let query = scope.selectFrom('vouchers').selectAll().where('eventId', '=', eventId);
  if (filters.code !== undefined) query = query.where('code', '=', filters.code);
  if (filters.ticketTypeId !== undefined) query = query.where('ticketTypeId', '=', filters.ticketTypeId);
  return keysetPage(query, page, 'vouchers.id', 'vouchers.id', 'desc').execute();
}

/** The voucher with `changes` made, as it is now. */
export function updateVoucher(scope: TenantScope, id: string, changes: Partial<VoucherRow>): Promise<VoucherRow> {
  return scope.updateTable('vouchers').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** Deletes the voucher if nothing used it (the caller checked, under the event's lock); whether it did. */
export async function deleteUnusedVoucher(scope: TenantScope, id: string): Promise<boolean> {
  const result = await scope.deleteFrom('vouchers').where('id', '=', id).where('redeemed', '=', 0).where('waitlistEntryId', 'is', null).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** `n` uses of the voucher taken, if it has them: `redeemed + n <= max_uses` (one conditional update). Whether it had. */
export async function redeemVoucher(tx: TenantScope, id: string, n: number, now: number): Promise<boolean> {
  const result = await tx
    .updateTable('vouchers')
    .set((eb) => ({ redeemed: eb('redeemed', '+', n), updatedAt: now }))
    .where('id', '=', id)
    .where((eb) => eb(eb('redeemed', '+', n), '<=', eb.ref('maxUses')))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** `n` uses given back (a pending order that used them expired or was cancelled). The voucher as it is now, if it still exists. */
export function giveBackVoucher(tx: TenantScope, id: string, n: number, now: number): Promise<VoucherRow | undefined> {
  return tx
    .updateTable('vouchers')
    .set((eb) => ({ redeemed: eb('redeemed', '-', n), updatedAt: now }))
    .where('id', '=', id)
    .where('redeemed', '>=', n)
    .returningAll()
    .executeTakeFirst();
}

/** The waiting-list entry whose offer an order took: `offered` → `redeemed`. */
export async function markOfferRedeemed(tx: TenantScope, entryId: string, now: number): Promise<void> {
  await tx.updateTable('waitlistEntries').set({ status: 'redeemed', updatedAt: now }).where('id', '=', entryId).where('status', '=', 'offered').execute();
}

/** The entry whose offer's order ended unpaid: `redeemed` → `offered` again or `expired`. The entry as it is now, if it was redeemed. */
export function reopenOffer(tx: TenantScope, entryId: string, status: 'offered' | 'expired', now: number): Promise<Selectable<WaitlistEntryTable> | undefined> {
  return tx.updateTable('waitlistEntries').set({ status, updatedAt: now }).where('id', '=', entryId).where('status', '=', 'redeemed').returningAll().executeTakeFirst();
}

import { type Selectable, sql } from 'kysely';
import type { TenantScope } from '../db/tenant.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import type { PayoutTable } from './events.table.js';

export type PayoutRow = Selectable<PayoutTable>;

const n = (value: unknown) => Number(value ?? 0);

/** What the event's payouts paid in all. */
export async function paidOut(scope: TenantScope, eventId: string): Promise<number> {
  const row = await scope
    .selectFrom('payouts')
    .select(sql<number>`coalesce(sum(amount), 0)`.as('paid'))
    .where('eventId', '=', eventId)
    .executeTakeFirst();
  return n(row?.paid);
}

/** The event's ticket money: what its tickets were sold for, and what was refunded of it. */
export async function ticketMoney(scope: TenantScope, eventId: string): Promise<{ gross: number; refunded: number }> {
  const money = await scope
    .selectFrom('tickets')
    .select([sql<number>`coalesce(sum(price), 0)`.as('gross'), sql<number>`coalesce(sum(refunded_amount), 0)`.as('refunded')])
    .where('eventId', '=', eventId)
    .executeTakeFirst();
  return { gross: n(money?.gross), refunded: n(money?.refunded) };
}

export async function insertPayout(scope: TenantScope, row: PayoutRow): Promise<void> {
  await scope.db.insertInto('payouts').values(row).execute();
}

/** One page of the event's payouts, newest first. */
export function pagePayouts(scope: TenantScope, eventId: string, page: KeysetPage): Promise<PayoutRow[]> {
  return keysetPage(scope.selectFrom('payouts').selectAll().where('eventId', '=', eventId), page, 'payouts.id', 'payouts.id', 'desc').execute();
}

export function findPayout(scope: TenantScope, eventId: string, id: string): Promise<PayoutRow | undefined> {
  return scope.selectFrom('payouts').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
}

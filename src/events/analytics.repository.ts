import { sql } from 'kysely';
import type { TenantScope } from '../db/tenant.js';

/** Money and ticket totals of an event, per ticket type, computed by the database. */
export function ticketTotals(scope: TenantScope, eventId: string) {
  return scope
    .selectFrom('tickets')
    .select([
      'tickets.ticketTypeId',
      sql<number>`sum(case when status = 'valid' then 1 else 0 end)`.as('ticketsSold'),
      sql<number>`sum(case when status = 'cancelled' then 1 else 0 end)`.as('ticketsCancelled'),
      sql<number>`coalesce(sum(price), 0)`.as('grossRevenue'),
      sql<number>`coalesce(sum(refunded_amount), 0)`.as('refunded'),
      sql<number>`sum(case when status = 'valid' and checked_in_at is not null then 1 else 0 end)`.as('checkedIn'),
    ])
    .where('eventId', '=', eventId)
    .groupBy('tickets.ticketTypeId')
    .execute();
}

/** How many orders of the event wait for their payment (pending). */
export async function pendingOrders(scope: TenantScope, eventId: string): Promise<number> {
  const row = await scope.selectFrom('orders').select(sql<number>`count(*)`.as('count')).where('eventId', '=', eventId).where('status', '=', 'pending').executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Buckets of `size` ms from `from` (inclusive) to `to` (exclusive); `bucket` in a row is its index. */
export interface Buckets {
  from: number;
  to: number;
  size: number;
}

/** Counts per bucket of `column`, computed by the database; the bucket index is integer arithmetic on both engines. */
function bucketIndex(column: string, from: number, size: number) {
  return sql<number>`cast((${sql.ref(column)} - ${from}) / ${size} as integer)`;
}

/** Tickets sold (and their price) per bucket of their creation, and cancelled (and refunded) per bucket of their cancellation. */
export function salesBuckets(scope: TenantScope, eventId: string, range: Buckets) {
  return Promise.all([
    scope
      .selectFrom('tickets')
      .select([bucketIndex('created_at', range.from, range.size).as('bucket'), sql<number>`count(*)`.as('ticketsSold'), sql<number>`sum(price)`.as('grossRevenue')])
      .where('eventId', '=', eventId)
      .where('createdAt', '>=', range.from)
      .where('createdAt', '<', range.to)
      .groupBy('bucket')
      .execute(),
    scope
      .selectFrom('tickets')
      .select([bucketIndex('cancelled_at', range.from, range.size).as('bucket'), sql<number>`count(*)`.as('ticketsCancelled'), sql<number>`sum(refunded_amount)`.as('refunded')])
      .where('eventId', '=', eventId)
      .where('cancelledAt', '>=', range.from)
      .where('cancelledAt', '<', range.to)
      .groupBy('bucket')
      .execute(),
  ]);
}

/** Check-ins and undos per bucket of their scan time. */
export function checkinBuckets(scope: TenantScope, eventId: string, range: Buckets) {
  return scope
    .selectFrom('checkins')
    .select([
      bucketIndex('scanned_at', range.from, range.size).as('bucket'),
      sql<number>`sum(case when action = 'checkin' then 1 else 0 end)`.as('checkIns'),
      sql<number>`sum(case when action = 'undo' then 1 else 0 end)`.as('undos'),
    ])
    .where('eventId', '=', eventId)
    .where('scannedAt', '>=', range.from)
    .where('scannedAt', '<', range.to)
    .groupBy('bucket')
    .execute();
}

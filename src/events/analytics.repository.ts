import { sql } from 'kysely';
import type { TenantScope } from '../db/tenant.js';
import { ownMoney, UNHONOURED_REASON } from './orders.repository.js';

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

/**
 * Refunds that the tickets' `refundedAmount` does not show yet: those of an order's money not tied
 * to a ticket (succeeded), and, with `pending`, every refund still on its way (money promised back).
 */
export async function refundsBesideTickets(scope: TenantScope, eventId: string, options: { pending: boolean }): Promise<number> {
  const row = await scope
    .selectFrom('payments')
    .select(
      (options.pending
        ? sql<number>`coalesce(sum(case when status = 'succeeded' and ticket_id is null then amount when status = 'pending' then amount else 0 end), 0)`
        : sql<number>`coalesce(sum(case when status = 'succeeded' and ticket_id is null then amount else 0 end), 0)`
      ).as('amount'),
    )
    .where('eventId', '=', eventId)
    .where('kind', '=', 'refund')
    .where(ownMoney)
    .executeTakeFirst();
  return Number(row?.amount ?? 0);
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

/**
 * Tickets sold (and their price) per bucket of their creation, cancelled (and refunded) per bucket
 * of their cancellation, and the refunds the cancelled tickets do not show (of an order's money,
 * or of a valid ticket moved to a cheaper type) per bucket of when the money went back.
 */
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
    scope
      .selectFrom('payments')
      .leftJoin('tickets', 'tickets.id', 'payments.ticketId')
      .select([bucketIndex('payments.updated_at', range.from, range.size).as('bucket'), sql<number>`sum(payments.amount)`.as('refunded')])
      .where('payments.eventId', '=', eventId)
      .where('payments.kind', '=', 'refund')
      .where('payments.status', '=', 'succeeded')
      .where(sql<boolean>`coalesce(payments.reason, '') not like ${`${UNHONOURED_REASON}%`}`)
      .where((eb) => eb.or([eb('payments.ticketId', 'is', null), eb('tickets.status', '=', 'valid')]))
      .where('payments.updatedAt', '>=', range.from)
      .where('payments.updatedAt', '<', range.to)
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

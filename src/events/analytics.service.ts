import { sql } from 'kysely';
import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { keysetPage } from '../db/keyset.js';
import { listTag, type Page, type PageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso, parseTime } from '../time.js';
import { enqueueMessages } from '../webhooks/outbox.js';
import { listTicketTypes, requireEvent, requireLockedEvent } from './events.repository.js';
import type { SeriesQuery } from './events.schemas.js';

const n = (value: unknown) => Number(value ?? 0);

/** Money and ticket totals of an event (or of one ticket type), computed by the database. */
function ticketTotals(scope: TenantScope, eventId: string) {
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

async function paidOut(scope: TenantScope, eventId: string): Promise<number> {
  const row = await scope
    .selectFrom('payouts')
    .select(sql<number>`coalesce(sum(amount), 0)`.as('paid'))
    .where('eventId', '=', eventId)
    .executeTakeFirst();
  return n(row?.paid);
}

export async function eventAnalytics(scope: TenantScope, eventId: string) {
  const event = await requireEvent(scope, eventId);
  const [types, totals, paid] = await Promise.all([listTicketTypes(scope, eventId), ticketTotals(scope, eventId), paidOut(scope, eventId)]);
  const byType = new Map(totals.map((t) => [t.ticketTypeId, t]));
  const byTicketType = types.map((type) => {
    const t = byType.get(type.id);
    return {
      ticketTypeId: type.id,
      name: type.name,
      quantity: type.quantity,
      ticketsSold: n(t?.ticketsSold),
      ticketsCancelled: n(t?.ticketsCancelled),
      grossRevenue: n(t?.grossRevenue),
      refunded: n(t?.refunded),
      checkedIn: n(t?.checkedIn),
    };
  });
  const sum = (key: 'ticketsSold' | 'ticketsCancelled' | 'grossRevenue' | 'refunded' | 'checkedIn') =>
    byTicketType.reduce((total, t) => total + t[key], 0);
  const ticketsSold = sum('ticketsSold');
  const checkedIn = sum('checkedIn');
  return {
    eventId,
    currency: event.currency,
    ticketsSold,
    ticketsCancelled: sum('ticketsCancelled'),
    grossRevenue: sum('grossRevenue'),
    refunded: sum('refunded'),
    netRevenue: sum('grossRevenue') - sum('refunded'),
    paidOut: paid,
    checkedIn,
    checkInRate: ticketsSold === 0 ? 0 : checkedIn / ticketsSold,
    byTicketType,
  };
}

const INTERVAL_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
const MAX_BUCKETS = 1000;

/** Buckets aligned to UTC minute, hour or day boundaries; `to` is exclusive. */
async function seriesRange(scope: TenantScope, eventId: string, query: Static<typeof SeriesQuery>) {
  const event = await requireEvent(scope, eventId);
  const interval = query.interval ?? 'day';
  const size = INTERVAL_MS[interval];
  const rawFrom = query.from ? parseTime(query.from, '/query/from') : event.createdAt;
  const rawTo = query.to ? parseTime(query.to, '/query/to') : Math.min(Date.now(), event.endsAt);
  if (query.from && query.to && !(rawTo > rawFrom)) throw invalid('/query/to', 'must be after from');
  const from = Math.floor(rawFrom / size) * size;
  const to = Math.max(Math.ceil(rawTo / size) * size, from + size);
  const count = (to - from) / size;
  if (count > MAX_BUCKETS) {
    throw invalid('/query/interval', `gives ${count} buckets; at most ${MAX_BUCKETS}: choose a longer interval or a shorter range`);
  }
  return { interval, size, from, to, count };
}

/** Counts per bucket of `column`, computed by the database; the bucket index is integer arithmetic on both engines. */
function bucketIndex(column: string, from: number, size: number) {
  return sql<number>`cast((${sql.ref(column)} - ${from}) / ${size} as integer)`;
}

function fill<K extends string>(range: { from: number; size: number; count: number }, keys: readonly K[], rows: Array<{ bucket: unknown } & Record<K, unknown>>[]) {
  const counts = Array.from({ length: range.count }, () => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>);
  for (const group of rows) {
    for (const row of group) {
      const bucket = counts[n(row.bucket)];
      if (!bucket) continue;
      for (const key of keys) if (row[key] !== undefined) bucket[key] += n(row[key]);
    }
  }
  return counts.map((c, i) => ({ start: iso(range.from + i * range.size), ...c }));
}

export async function salesSeries(scope: TenantScope, eventId: string, query: Static<typeof SeriesQuery>) {
  const range = await seriesRange(scope, eventId, query);
  const [sold, cancelled] = await Promise.all([
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
  const keys = ['ticketsSold', 'ticketsCancelled', 'grossRevenue', 'refunded'] as const;
  return { interval: range.interval, from: iso(range.from), to: iso(range.to), buckets: fill(range, keys, [sold as never, cancelled as never]) };
}

export async function checkinSeries(scope: TenantScope, eventId: string, query: Static<typeof SeriesQuery>) {
  const range = await seriesRange(scope, eventId, query);
  const rows = await scope
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
  return { interval: range.interval, from: iso(range.from), to: iso(range.to), buckets: fill(range, ['checkIns', 'undos'] as const, [rows as never]) };
}

type PayoutRow = { id: string; eventId: string; amount: number; currency: string; createdAt: number };
const presentPayout = (row: PayoutRow) => ({ id: row.id, eventId: row.eventId, amount: row.amount, currency: row.currency, createdAt: iso(row.createdAt) });

/** Pays out the event's net revenue not paid out yet; the event row lock keeps two payouts from paying the same money. */
export async function createPayout(scope: TenantScope, eventId: string) {
  return scope.transaction(async (tx) => {
    const event = await requireLockedEvent(tx, eventId);
    const money = await tx
      .selectFrom('tickets')
      .select([sql<number>`coalesce(sum(price), 0)`.as('gross'), sql<number>`coalesce(sum(refunded_amount), 0)`.as('refunded')])
      .where('eventId', '=', eventId)
      .executeTakeFirst();
    const amount = n(money?.gross) - n(money?.refunded) - (await paidOut(tx, eventId));
    if (amount <= 0) throw new AppError('nothing_to_pay_out', `Event ${eventId} has no revenue left to pay out.`);
    const now = Date.now();
    const row = { id: newId('payout'), accountId: scope.accountId, eventId, amount, currency: event.currency, createdAt: now };
    await tx.db.insertInto('payouts').values(row).execute();
    const payout = presentPayout(row);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'payout.processed', data: payout }], now);
    return payout;
  });
}

export async function listPayouts(scope: TenantScope, eventId: string, page: PageRequest): Promise<Page<ReturnType<typeof presentPayout>>> {
  await requireEvent(scope, eventId);
  const rows = await keysetPage(scope.selectFrom('payouts').selectAll().where('eventId', '=', eventId), page, 'payouts.id', 'payouts.id', 'desc').execute();
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentPayout);
}

export async function getPayout(scope: TenantScope, eventId: string, id: string) {
  const row = await scope.selectFrom('payouts').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('payout', id);
  return presentPayout(row);
}

export const payoutsListTag = (eventId: string) => listTag(`payouts:${eventId}`);

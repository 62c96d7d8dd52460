import type { Static } from 'typebox';
import type { TenantScope } from '../db/tenant.js';
import { invalid } from '../errors.js';
import { iso, parseTime } from '../time.js';
import * as repo from './analytics.repository.js';
import { listsOfEvent } from './checkin-lists.repository.js';
import { countsOf } from './checkin-lists.service.js';
import { listTicketTypes, requireEvent } from './events.repository.js';
import type { SeriesQuery } from './events.schemas.js';
import { paidOut } from './payouts.repository.js';

const n = (value: unknown) => Number(value ?? 0);

export async function eventAnalytics(scope: TenantScope, eventId: string) {
  const event = await requireEvent(scope, eventId);
  const [types, totals, paid, lists, orderRefunds, ordersPending] = await Promise.all([
    listTicketTypes(scope, eventId),
    repo.ticketTotals(scope, eventId),
    paidOut(scope, eventId),
    listsOfEvent(scope, eventId),
    repo.refundsBesideTickets(scope, eventId, { pending: false }),
    repo.pendingOrders(scope, eventId),
  ]);
  const byType = new Map(totals.map((t) => [t.ticketTypeId, t]));
  const byTicketType = types.map((type) => {
    const t = byType.get(type.id);
    return {
      ticketTypeId: type.id,
      name: type.name,
      quantity: type.quantity,
      ticketsSold: n(t?.ticketsSold),
      ticketsHeld: type.held,
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
  // Refunds of an order's money that no ticket carries count for the event, not for a ticket type.
  const refunded = sum('refunded') + orderRefunds;
  return {
    eventId,
    currency: event.currency,
    ticketsSold,
    ticketsHeld: event.held,
    ordersPending,
    ticketsCancelled: sum('ticketsCancelled'),
    grossRevenue: sum('grossRevenue'),
    refunded,
    netRevenue: sum('grossRevenue') - refunded,
    paidOut: paid,
    checkedIn,
    checkInRate: ticketsSold === 0 ? 0 : checkedIn / ticketsSold,
    byTicketType,
    checkinLists: lists.map((list) => ({ id: list.id, name: list.name, counts: countsOf(list) })),
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
  const [sold, cancelled, refunds] = await repo.salesBuckets(scope, eventId, range);
  const keys = ['ticketsSold', 'ticketsCancelled', 'grossRevenue', 'refunded'] as const;
  return { interval: range.interval, from: iso(range.from), to: iso(range.to), buckets: fill(range, keys, [sold as never, cancelled as never, refunds as never]) };
}

export async function checkinSeries(scope: TenantScope, eventId: string, query: Static<typeof SeriesQuery>) {
  const range = await seriesRange(scope, eventId, query);
  const rows = await repo.checkinBuckets(scope, eventId, range);
  return { interval: range.interval, from: iso(range.from), to: iso(range.to), buckets: fill(range, ['checkIns', 'undos'] as const, [rows as never]) };
}

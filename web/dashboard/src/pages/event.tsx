import { useEffect, useMemo } from 'preact/hooks';
import { money, when } from '../api.js';
import { Chart } from '../chart.js';
import { link } from '../router.js';
import { ErrorNote, useAllPages, useApi } from '../use-api.js';
import type { EventItem } from './events.js';
import { OrdersSection } from './orders.js';
import { ScannerPairing } from './scanner-pairing.js';
import { VouchersSection } from './vouchers.js';
import { WaitlistSection } from './waitlist.js';

interface TicketType {
  id: string;
  name: string;
  price: number;
  currency: string;
  quantity: number;
  sold: number;
  /** Places held by pending orders. */
  held: number;
  available: number;
  /** Sold only with a voucher that names it. */
  hidden?: boolean;
}

interface ListCounts {
  inside: number;
  entries: number;
  exits: number;
  admittedTickets: number;
  conflicts: number;
}

interface Analytics {
  checkinLists: Array<{ id: string; name: string; counts: ListCounts }>;
  ticketsSold: number;
  checkedIn: number;
  checkInRate: number;
  grossRevenue: number;
  netRevenue: number;
  currency: string;
}

interface SeriesAnswer<B> {
  interval: string;
  from: string;
  to: string;
  buckets: Array<{ start: string } & B>;
}

const LIVE_EVERY_MS = 5000;

/** An analytics series as the chart draws it: one line per bucket field. */
function chartOf<B>(answer: SeriesAnswer<B> | null, lines: Array<{ label: string; color: string; value: (bucket: B) => number }>) {
  return (
    answer && {
      range: [Date.parse(answer.from), Date.parse(answer.to)] as [number, number],
      times: answer.buckets.map((b) => Date.parse(b.start)),
      series: lines.map(({ label, color, value }) => ({ label, color, values: answer.buckets.map(value) })),
    }
  );
}

/** Minutes for a young or short event, hours up to a month, days beyond: the API caps the bucket count. */
function interval(event: EventItem): 'minute' | 'hour' | 'day' {
  const span = Math.min(Date.now(), Date.parse(event.endsAt)) - Date.parse(event.createdAt);
  return span < 6 * 3_600_000 ? 'minute' : span < 30 * 86_400_000 ? 'hour' : 'day';
}

/** The pages of an event, each at its own address under /dashboard/events/:id/. */
const EVENT_PAGES = [
  ['', 'Overview'],
  ['orders', 'Orders'],
  ['vouchers', 'Vouchers'],
  ['waitlist', 'Waiting list'],
] as const;

/** An event: its overview (door counter, revenue, inventory, charts) or one of its box-office pages. */
export function EventPage({ eventId, page }: { eventId: string; page: string | undefined }) {
  const id = encodeURIComponent(eventId);
  const event = useApi<EventItem>(`/events/${id}`);
  const types = useAllPages<TicketType>(`/events/${id}/tickets`);
  const current = EVENT_PAGES.find(([name]) => name === (page ?? ''))?.[0] ?? '';
  const typeList = types.data?.data ?? [];
  const typeName = (typeId: string) => typeList.find((type) => type.id === typeId)?.name ?? typeId;
  const error = event.error ?? types.error;
  return (
    <section aria-labelledby="event-title">
      <p>
        <a {...link('/events')}>← All events</a>
      </p>
      <h1 id="event-title">{event.data?.name ?? 'Event'}</h1>
      {error && <ErrorNote error={error} />}
      {event.data && (
        <p>
          {when(event.data.startsAt)} – {when(event.data.endsAt)} · {event.data.status}
        </p>
      )}
      <nav class="tabs" aria-label="Event pages">
        {EVENT_PAGES.map(([name, label]) => (
          <a key={name} {...link(`/events/${eventId}${name ? `/${name}` : ''}`)} aria-current={name === current ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {event.data && current === '' && <EventOverview event={event.data} types={typeList} />}
      {event.data && current === 'orders' && (
        <>
          <Inventory types={typeList} />
          {/* A confirmation, cancellation or refund moves the inventory above: it is read again. */}
          <OrdersSection eventId={eventId} typeName={typeName} onChanged={types.reload} />
        </>
      )}
      {event.data && current === 'vouchers' && <VouchersSection eventId={eventId} currency={event.data.currency} types={typeList} typeName={typeName} />}
      {event.data && current === 'waitlist' && <WaitlistSection eventId={eventId} offerMinutes={event.data.waitlistOfferMinutes} types={typeList} typeName={typeName} />}
    </section>
  );
}

/** Each ticket type: sold, held by pending orders, and still available. */
function Inventory({ types }: { types: TicketType[] }) {
  return (
    <>
      <h2>Ticket types</h2>
      {types.length === 0 && <p>No ticket types.</p>}
      <ul class="inventory">
        {types.map((type) => (
          <li key={type.id}>
            <span>
              {type.name} · {money(type.price, type.currency)}
            </span>
            <meter min={0} max={type.quantity} value={type.sold} aria-label={`${type.name}: ${type.sold} of ${type.quantity} sold`} />
            <span>
              {type.sold} of {type.quantity} sold{type.held > 0 && `, ${type.held} held`}, {type.available} available
              {type.hidden && ' · hidden (voucher only)'}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}

/** The event at a glance: the live door counter, revenue, inventory, check-in lists and the sales and check-in charts. */
function EventOverview({ event, types }: { event: EventItem; types: TicketType[] }) {
  const id = encodeURIComponent(event.id);
  const totals = useApi<Analytics>(`/events/${id}/analytics`);
  const every = interval(event);
  const sales = useApi<SeriesAnswer<{ ticketsSold: number; ticketsCancelled: number }>>(`/events/${id}/analytics/sales?interval=${every}`);
  const checkins = useApi<SeriesAnswer<{ checkIns: number; undos: number }>>(`/events/${id}/analytics/checkins?interval=${every}`);

  // The door counter follows check-ins as they happen.
  const reloadTotals = totals.reload;
  useEffect(() => {
    const timer = setInterval(reloadTotals, LIVE_EVERY_MS);
    return () => clearInterval(timer);
  }, [reloadTotals]);

  const salesChart = useMemo(
    () =>
      chartOf(sales.data, [
        { label: 'Sold', color: '#1d5fbf', value: (b) => b.ticketsSold },
        { label: 'Cancelled', color: '#b3261e', value: (b) => b.ticketsCancelled },
      ]),
    [sales.data],
  );
  const checkinChart = useMemo(
    () =>
      chartOf(checkins.data, [
        { label: 'Check-ins', color: '#1b7f3b', value: (b) => b.checkIns },
        { label: 'Undos', color: '#8a5a00', value: (b) => b.undos },
      ]),
    [checkins.data],
  );

  const error = totals.error ?? sales.error ?? checkins.error;
  return (
    <>
      {error && <ErrorNote error={error} />}
      {totals.data && (
        <div class="counter" aria-live="polite" aria-atomic="true">
          <span class="counter-label">Checked in</span>
          <span class="counter-value" data-testid="checked-in">
            {totals.data.checkedIn}
          </span>
          <span class="counter-of">
            of {totals.data.ticketsSold} tickets ({Math.round(totals.data.checkInRate * 100)} %)
          </span>
        </div>
      )}
      <p>
        <a class="button" href={`/v1/events/${id}/attendees/export`} download>
          Export attendees (CSV)
        </a>
      </p>
      <ScannerPairing eventId={event.id} eventName={event.name} />
      {totals.data && (
        <p>
          Gross {money(totals.data.grossRevenue, totals.data.currency)} · net {money(totals.data.netRevenue, totals.data.currency)}
        </p>
      )}
      <Inventory types={types} />
      {totals.data && totals.data.checkinLists.length > 0 && (
        <>
          <h2>Check-in lists</h2>
          <ul class="checkin-lists">
            {totals.data.checkinLists.map(({ id: listId, name, counts }) => (
              <li key={listId} data-testid="checkin-list">
                <strong>{name}</strong>
                <span>
                  {counts.inside} inside · {counts.entries} entries · {counts.exits} exits · {counts.admittedTickets} tickets admitted · {counts.conflicts} conflicts
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
      <h2>Sales and check-ins (per {every})</h2>
      <div class="charts">
        {salesChart && <Chart title="Tickets sold" {...salesChart} />}
        {checkinChart && <Chart title="Check-ins" {...checkinChart} />}
      </div>
    </>
  );
}

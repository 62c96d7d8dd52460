import { useEffect, useMemo } from 'preact/hooks';
import { when } from '../api.js';
import { Chart } from '../chart.js';
import { link } from '../router.js';
import { ErrorNote, useAllPages, useApi } from '../use-api.js';
import type { EventItem } from './events.js';
import { ScannerPairing } from './scanner-pairing.js';

interface TicketType {
  id: string;
  name: string;
  price: number;
  currency: string;
  quantity: number;
  sold: number;
  available: number;
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

const money = (minor: number, currency: string) => new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(minor / 100);

export function EventPage({ eventId }: { eventId: string }) {
  const id = encodeURIComponent(eventId);
  const event = useApi<EventItem>(`/events/${id}`);
  const types = useAllPages<TicketType>(`/events/${id}/tickets`);
  const totals = useApi<Analytics>(`/events/${id}/analytics`);
  const every = event.data ? interval(event.data) : null;
  const sales = useApi<SeriesAnswer<{ ticketsSold: number; ticketsCancelled: number }>>(every && `/events/${id}/analytics/sales?interval=${every}`);
  const checkins = useApi<SeriesAnswer<{ checkIns: number; undos: number }>>(every && `/events/${id}/analytics/checkins?interval=${every}`);

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

  const error = event.error ?? types.error ?? totals.error ?? sales.error ?? checkins.error;
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
      {event.data && <ScannerPairing eventId={eventId} eventName={event.data.name} />}
      {totals.data && (
        <p>
          Gross {money(totals.data.grossRevenue, totals.data.currency)} · net {money(totals.data.netRevenue, totals.data.currency)}
        </p>
      )}
      <h2>Ticket types</h2>
      {types.data?.data.length === 0 && <p>No ticket types.</p>}
      <ul class="inventory">
        {types.data?.data.map((type) => (
          <li key={type.id}>
            <span>
              {type.name} · {money(type.price, type.currency)}
            </span>
            <meter min={0} max={type.quantity} value={type.sold} aria-label={`${type.name}: ${type.sold} of ${type.quantity} sold`} />
            <span>
              {type.sold} of {type.quantity} sold, {type.available} available
            </span>
          </li>
        ))}
      </ul>
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
      <h2>Sales and check-ins (per {every ?? '…'})</h2>
      <div class="charts">
        {salesChart && <Chart title="Tickets sold" {...salesChart} />}
        {checkinChart && <Chart title="Check-ins" {...checkinChart} />}
      </div>
    </section>
  );
}

import { type Page, when } from '../api.js';
import { link } from '../router.js';
import { ErrorNote, useApi } from '../use-api.js';

export interface EventItem {
  id: string;
  name: string;
  startsAt: string;
  endsAt: string;
  status: string;
  capacity: number | null;
  currency: string;
  ticketsSold: number;
  /** How long a waiting-list offer stands. */
  waitlistOfferMinutes?: number;
  createdAt: string;
}

export function EventsPage() {
  const events = useApi<Page<EventItem>>('/events?limit=100');
  return (
    <section aria-labelledby="events-title">
      <h1 id="events-title">Events</h1>
      {events.error && <ErrorNote error={events.error} />}
      {events.data?.data.length === 0 && <p>No events yet: create one with POST /v1/events.</p>}
      {events.data && events.data.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption>Your events, soonest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Starts</th>
                <th scope="col">Status</th>
                <th scope="col">Tickets sold</th>
              </tr>
            </thead>
            <tbody>
              {events.data.data.map((event) => (
                <tr key={event.id}>
                  <td>
                    <a {...link(`/events/${event.id}`)}>{event.name}</a>
                  </td>
                  <td>{when(event.startsAt)}</td>
                  <td>{event.status}</td>
                  <td>
                    {event.ticketsSold}
                    {event.capacity !== null && ` of ${event.capacity}`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

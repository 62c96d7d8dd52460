import { useState } from 'preact/hooks';
import { api, when } from '../api.js';
import { ErrorNote, Pager, timeLeft, useNow, usePaged } from '../use-api.js';
import { TwoStep } from '../two-step.js';
import type { TypeNames } from './orders.js';

/** An entry of GET /v1/events/:id/waitlist (docs/events.md, "Waiting list"). */
interface Entry {
  id: string;
  ticketTypeId: string;
  name: string;
  email: string;
  status: 'waiting' | 'offered' | 'redeemed' | 'expired' | 'removed';
  position: number | null;
  voucher: { id: string; code: string } | null;
  offeredAt: string | null;
  offerExpiresAt: string | null;
  createdAt: string;
}

const PAGE_SIZE = 20;
const STATUSES = ['waiting', 'offered', 'redeemed', 'expired', 'removed'] as const;

/** An event's waiting list in queue order: who waits for what, their offers and how long those stand; remove an entry. */
export function WaitlistSection(props: { eventId: string; offerMinutes: number | undefined; types: Array<{ id: string; name: string }>; typeName: TypeNames }) {
  const { eventId, offerMinutes, types, typeName } = props;
  const [status, setStatus] = useState('');
  const [ticketTypeId, setTicketTypeId] = useState('');
  const query = new URLSearchParams({ ...(status ? { status } : {}), ...(ticketTypeId ? { ticketTypeId } : {}) }).toString();
  const path = `/events/${encodeURIComponent(eventId)}/waitlist`;
  const entries = usePaged<Entry>(`${path}${query ? `?${query}` : ''}`, PAGE_SIZE);
  const now = useNow();
  return (
    <section aria-labelledby="waitlist-title">
      <h2 id="waitlist-title">Waiting list</h2>
      <p class="hint">
        People join when a ticket type is sold out. A freed place is offered to the first in line as a single-use voucher
        {offerMinutes ? `, which stands for ${offerMinutes} minutes` : ''}; an offer not taken passes to the next.
      </p>
      <div class="filters">
        <div>
          <label for="waitlist-status">Status</label>
          <select id="waitlist-status" value={status} onChange={(e) => setStatus((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Every status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="waitlist-type">Ticket type</label>
          <select id="waitlist-type" value={ticketTypeId} onChange={(e) => setTicketTypeId((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Every ticket type</option>
            {types.map((type) => (
              <option key={type.id} value={type.id}>
                {type.name}
              </option>
            ))}
          </select>
        </div>
      </div>
      {entries.error && <ErrorNote error={entries.error} />}
      {entries.data?.data.length === 0 && <p>Nobody on the waiting list{status ? ` with status ${status}` : ''}.</p>}
      {entries.data && entries.data.data.length > 0 && (
        <div class="table-wrap">
          <table class="waitlist">
            <caption>The waiting list, in queue order</caption>
            <thead>
              <tr>
                <th scope="col">Place in line</th>
                <th scope="col">Person</th>
                <th scope="col">Ticket type</th>
                <th scope="col">Status</th>
                <th scope="col">Offer</th>
                <th scope="col">Joined</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {entries.data.data.map((entry) => (
                <tr key={entry.id} data-entry-id={entry.id}>
                  <td>{entry.position ?? '—'}</td>
                  <td>
                    {entry.name}
                    <br />
                    <span class="hint">{entry.email}</span>
                  </td>
                  <td>{typeName(entry.ticketTypeId)}</td>
                  <td>{entry.status}</td>
                  <td>
                    <Offer entry={entry} now={now} />
                  </td>
                  <td>{when(entry.createdAt)}</td>
                  <td>{(entry.status === 'waiting' || entry.status === 'offered') && <RemoveEntry path={`${path}/${encodeURIComponent(entry.id)}`} entry={entry} onDone={entries.reload} />}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Waiting list" paged={entries} />
    </section>
  );
}

function Offer({ entry, now }: { entry: Entry; now: number }) {
  if (!entry.voucher) return <>—</>;
  const left = entry.status === 'offered' && entry.offerExpiresAt ? timeLeft(entry.offerExpiresAt, now) : null;
  return (
    <>
      <code>{entry.voucher.code}</code>
      {entry.offerExpiresAt && (
        <>
          <br />
          <span class="hint">
            until <time dateTime={entry.offerExpiresAt}>{when(entry.offerExpiresAt)}</time>
            {left && ` (${left} left)`}
          </span>
        </>
      )}
    </>
  );
}

/** Two steps: removing an entry ends its open offer, and its place goes to the next in line. */
function RemoveEntry({ path, entry, onDone }: { path: string; entry: Entry; onDone: () => void }) {
  return (
    <TwoStep
      start="Remove…"
      startLabel={`Remove ${entry.name} from the waiting list`}
      question={`Remove ${entry.name}?${entry.status === 'offered' ? ' Their offer ends.' : ''}`}
      questionLabel={`Confirm removing ${entry.name}`}
      yes="Yes, remove"
      back="Keep"
      run={() => api(path, { method: 'DELETE' }).then(onDone)}
    />
  );
}

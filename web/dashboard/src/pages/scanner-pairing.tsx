import QRCode from 'qrcode';
import { useEffect, useState } from 'preact/hooks';
import { api, failure, when } from '../api.js';
import { allPages } from '../use-api.js';

interface CheckinListItem {
  id: string;
  name: string;
}

const LASTS = [
  ['12', '12 hours'],
  ['72', '3 days'],
  ['168', '7 days'],
] as const;

/** The list made for an event that has none: it admits every ticket type, once. */
const FIRST_LIST = 'Main entrance';

/**
 * The event page's "Scanner" action: a key that may only check tickets in, expiring, and the link
 * (with its QR code) that pairs a phone's scanner page with this event and one of its check-in
 * lists (the scanner checks tickets through a list; an event without one is offered one that
 * admits every ticket type). The key travels in the link's fragment, which browsers never send to
 * a server.
 */
export function ScannerPairing({ eventId, eventName }: { eventId: string; eventName: string }) {
  const [open, setOpen] = useState(false);
  const [lists, setLists] = useState<CheckinListItem[] | null>(null);
  const [error, setError] = useState('');
  const [paired, setPaired] = useState<{ link: string; qr: string; expiresAt: string } | null>(null);

  useEffect(() => {
    if (!open || lists) return;
    allPages<CheckinListItem>(`/events/${encodeURIComponent(eventId)}/checkin-lists`).then(
      (page) => setLists(page.data),
      (err: unknown) => setError(failure(err)),
    );
  }, [open, lists, eventId]);

  if (!open) {
    return (
      <p>
        <button type="button" class="secondary" onClick={() => setOpen(true)}>
          Scanner…
        </button>
      </p>
    );
  }

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    if (!lists) return;
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const hours = Number(form.get('lasts') ?? 12);
    setError('');
    try {
      // No list yet: one that admits every ticket type, made now, and the scanner pairs with it.
      let list = lists.find((l) => l.id === String(form.get('list') ?? ''));
      if (!list) {
        list = await api<CheckinListItem>(`/events/${encodeURIComponent(eventId)}/checkin-lists`, { method: 'POST', json: { name: FIRST_LIST } });
        setLists([list]);
      }
      const { id: listId, name: listName } = list;
      const created = await api<{ key: string; expiresAt: string }>('/keys', {
        method: 'POST',
        json: { name: `Scanner: ${eventName} (${listName})`.slice(0, 100), scopes: ['checkin'], expiresAt: new Date(Date.now() + hours * 3_600_000).toISOString() },
      });
      const fragment = new URLSearchParams({ event: eventId, list: listId, key: created.key });
      const link = `${location.origin}/scanner#${fragment.toString()}`;
      setPaired({ link, qr: await QRCode.toDataURL(link, { width: 280, margin: 2, errorCorrectionLevel: 'M' }), expiresAt: created.expiresAt });
    } catch (err) {
      setError(failure(err));
    }
  };

  return (
    <section class="card scanner-pairing" aria-labelledby="scanner-title">
      <h2 id="scanner-title">Pair a scanner</h2>
      {!paired && (
        <form onSubmit={submit}>
          {lists && lists.length === 0 ? (
            <p>
              This event has no check-in list yet; a scanner checks tickets through one. The link comes with a list named “{FIRST_LIST}” that admits every ticket
              type once.
            </p>
          ) : (
            <>
              <label for="scanner-list">Check-in list</label>
              <select id="scanner-list" name="list" disabled={!lists} required>
                {lists?.map((list) => (
                  <option key={list.id} value={list.id}>
                    {list.name}
                  </option>
                ))}
              </select>
            </>
          )}
          <label for="scanner-lasts">The link works for</label>
          <select id="scanner-lasts" name="lasts">
            {LASTS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
          {error && <p class="error" role="alert">{error}</p>}
          <button type="submit" disabled={!lists}>
            {lists && lists.length === 0 ? `Create list “${FIRST_LIST}” and pairing link` : 'Create pairing link'}
          </button>{' '}
          <button type="button" class="secondary" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </form>
      )}
      {paired && (
        <div role="status">
          <p>
            Open this link on the door's phone, or scan the code with its camera. Anyone with the link can check tickets in until{' '}
            {when(paired.expiresAt)}; revoke its key under Settings, API keys.
          </p>
          <img src={paired.qr} width={280} height={280} alt="QR code of the scanner's pairing link" />
          <label for="scanner-link">Pairing link</label>
          <input id="scanner-link" readOnly value={paired.link} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
          <button type="button" onClick={() => navigator.clipboard.writeText(paired.link)}>
            Copy link
          </button>{' '}
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setPaired(null);
              setOpen(false);
            }}
          >
            Done
          </button>
        </div>
      )}
    </section>
  );
}

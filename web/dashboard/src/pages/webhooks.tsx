import { useState } from 'preact/hooks';
import { type Page, when } from '../api.js';
import { ErrorNote, useApi } from '../use-api.js';

interface Subscription {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  disabledReason: string | null;
  createdAt: string;
}

interface Attempt {
  id: string;
  event: string;
  attempt: number;
  succeeded: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  createdAt: string;
}

export function WebhooksPage() {
  const subscriptions = useApi<Page<Subscription>>('/webhooks?limit=100');
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {subscriptions.error && <ErrorNote error={subscriptions.error} />}
      {subscriptions.data?.data.length === 0 && <p>No subscriptions: create one with POST /v1/webhooks.</p>}
      <ul class="subscriptions">
        {subscriptions.data?.data.map((s) => (
          <li key={s.id} class="card">
            <h2>{s.description ?? s.url}</h2>
            <p>
              <code>{s.url}</code> · {s.status}
              {s.disabledReason && ` (${s.disabledReason})`} · {s.events.join(', ')}
            </p>
            <button type="button" aria-expanded={open === s.id} onClick={() => setOpen(open === s.id ? null : s.id)}>
              {open === s.id ? 'Hide deliveries' : 'Recent deliveries'}
            </button>
            {open === s.id && <Deliveries subscriptionId={s.id} />}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Deliveries({ subscriptionId }: { subscriptionId: string }) {
  const attempts = useApi<Page<Attempt>>(`/webhooks/${encodeURIComponent(subscriptionId)}/deliveries?limit=50`);
  if (attempts.error) return <ErrorNote error={attempts.error} />;
  if (!attempts.data) return <p>Loading…</p>;
  if (attempts.data.data.length === 0) return <p>No deliveries yet.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption>Recent deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Result</th>
            <th scope="col">Time</th>
          </tr>
        </thead>
        <tbody>
          {attempts.data.data.map((a) => (
            <tr key={a.id}>
              <td>{when(a.createdAt)}</td>
              <td>{a.event}</td>
              <td>{a.attempt}</td>
              <td class={a.succeeded ? 'ok' : 'error'}>{a.succeeded ? `delivered (${a.statusCode})` : `failed: ${a.statusCode ?? a.error ?? 'no answer'}`}</td>
              <td>{a.durationMs} ms</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

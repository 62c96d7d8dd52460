import { useState } from 'preact/hooks';
import { api, failure, type Page, type Session, when } from '../api.js';
import { ErrorNote, useApi } from '../use-api.js';
import { TwoStep } from '../two-step.js';

interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

const SCOPES = ['blend', 'events:read', 'events:write', 'checkin', 'webhooks'];
const EXPIRIES = [
  ['', 'Never'],
  ['30', 'In 30 days'],
  ['90', 'In 90 days'],
  ['365', 'In a year'],
] as const;

export function KeysPage({ session }: { session: Session }) {
  const keys = useApi<Page<ApiKey>>('/keys?limit=100');
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);

  if (keys.error?.code === 'plan_required' || session.plan === 'free') return <PlanRequired plan={session.plan} />;

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p>
        You are on the <strong>{session.plan}</strong> plan. A key is shown once, when it is created; Montage keeps only its hash.
      </p>
      <CreateKey
        onCreated={(key) => {
          setCreated(key);
          keys.reload();
        }}
      />
      {created && <NewKey created={created} onDone={() => setCreated(null)} />}
      {keys.error && <ErrorNote error={keys.error} />}
      {keys.data && <KeyTable keys={keys.data.data} onRevoked={keys.reload} />}
    </section>
  );
}

export function PlanRequired({ plan, title = 'API keys need the Business plan' }: { plan: string; title?: string }) {
  return (
    <section aria-labelledby="plan-required-title" class="notice">
      <h2 id="plan-required-title">{title}</h2>
      <p>
        This account is on the <strong>{plan}</strong> plan. Creating API keys and using the API (blend jobs, events, webhooks) requires the
        Business plan or above. Ask the operator of this server to move the account to the Business plan; your sign-in keeps working meanwhile.
      </p>
    </section>
  );
}

function CreateKey({ onCreated }: { onCreated: (key: ApiKey & { key: string }) => void }) {
  const [error, setError] = useState('');
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    const scopes = form.getAll('scopes').map(String);
    const days = String(form.get('expires') ?? '');
    setError('');
    try {
      onCreated(
        await api('/keys', {
          method: 'POST',
          json: {
            name: String(form.get('name') || 'API key'),
            ...(scopes.length > 0 && scopes.length < SCOPES.length ? { scopes } : {}),
            ...(days ? { expiresAt: new Date(Date.now() + Number(days) * 86_400_000).toISOString() } : {}),
          },
        }),
      );
      formElement.reset();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="create-key-title">
      <h3 id="create-key-title">Create a key</h3>
      <label for="key-name">Name</label>
      <input id="key-name" name="name" maxLength={100} placeholder="Door scanner, CI, …" />
      <fieldset>
        <legend>Scopes (none ticked: every scope)</legend>
        {SCOPES.map((scope) => (
          <label key={scope} class="check">
            <input type="checkbox" name="scopes" value={scope} /> {scope}
          </label>
        ))}
      </fieldset>
      <label for="key-expires">Expires</label>
      <select id="key-expires" name="expires">
        {EXPIRIES.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      {error && <p class="error" role="alert">{error}</p>}
      <button type="submit">Create key</button>
    </form>
  );
}

function NewKey({ created, onDone }: { created: ApiKey & { key: string }; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(created.key);
    setCopied(true);
  };
  return (
    <div class="card new-key" role="status">
      <h3>Key “{created.name}” created</h3>
      <p>Copy it now: it is not shown again.</p>
      <label for="new-key-value">Your new key</label>
      <input id="new-key-value" readOnly value={created.key} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
      <button type="button" onClick={copy}>{copied ? 'Copied' : 'Copy'}</button>
      <button type="button" class="secondary" onClick={onDone}>Done</button>
    </div>
  );
}

function KeyTable({ keys, onRevoked }: { keys: ApiKey[]; onRevoked: () => void }) {
  if (keys.length === 0) return <p>No keys yet.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption>Your keys, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <tr key={key.id} data-key-id={key.id}>
              <td>{key.name}</td>
              <td>
                <code>{key.prefix}…</code>
              </td>
              <td>{key.scopes.join(', ')}</td>
              <td>{when(key.createdAt)}</td>
              <td>{when(key.lastUsedAt)}</td>
              <td>{key.expiresAt ? when(key.expiresAt) : 'never'}</td>
              <td>{key.revokedAt ? `revoked ${when(key.revokedAt)}` : <Revoke apiKey={key} onRevoked={onRevoked} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Two steps, so a stray click cannot cut off a working integration. */
function Revoke({ apiKey, onRevoked }: { apiKey: ApiKey; onRevoked: () => void }) {
  return (
    <TwoStep
      start="Revoke"
      startLabel={`Revoke ${apiKey.name} (${apiKey.prefix})`}
      question={`Revoke ${apiKey.prefix}…? Clients using it stop working.`}
      questionLabel={`Confirm revoking ${apiKey.name}`}
      yes="Yes, revoke"
      back="Cancel"
      run={() => api(`/keys/${apiKey.id}/revoke`, { method: 'POST' }).then(onRevoked)}
    />
  );
}

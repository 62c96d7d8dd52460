import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, failure, Problem, request, type Session, when } from '../api.js';
import { link } from '../router.js';
import { ErrorNote, useApi } from '../use-api.js';
import { KeysPage, PlanRequired } from './keys.js';

/** The pages of Settings, in the order the navigation lists them. */
export const SETTINGS = [
  ['account', 'Account'],
  ['plan', 'Plan and usage'],
  ['password', 'Password'],
  ['webhook-secret', 'Webhook signing secret'],
  ['api-keys', 'API keys'],
] as const;

type SettingsPageName = (typeof SETTINGS)[number][0];

export function SettingsPage({ page, session }: { page: string | undefined; session: Session }) {
  const current = (SETTINGS.find(([name]) => name === page) ?? SETTINGS[0])[0];
  const label = SETTINGS.find(([name]) => name === current)![1];
  useEffect(() => {
    document.title = `${label} · Settings · Montage`;
    return () => {
      document.title = 'Montage dashboard';
    };
  }, [label]);
  return (
    <div class="settings">
      <nav class="settings-nav" aria-labelledby="settings-title">
        <h1 id="settings-title">Settings</h1>
        <ul>
          {SETTINGS.map(([name, text]) => (
            <li key={name}>
              <a {...link(`/settings/${name}`)} aria-current={name === current ? 'page' : undefined}>
                {text}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="settings-page">{settingsPage(current, session)}</div>
    </div>
  );
}

function settingsPage(name: SettingsPageName, session: Session) {
  switch (name) {
    case 'plan':
      return <PlanSettings session={session} />;
    case 'password':
      return <PasswordSettings session={session} />;
    case 'webhook-secret':
      return <WebhookSecretSettings session={session} />;
    case 'api-keys':
      return <KeysPage session={session} />;
    default:
      return <AccountSettings session={session} />;
  }
}

function Section({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

function AccountSettings({ session }: { session: Session }) {
  return (
    <Section id="account-title" title="Account">
      <dl class="facts settings-facts">
        <dt>Email</dt>
        <dd>{session.email}</dd>
        <dt>Account id</dt>
        <dd>
          <code>{session.accountId}</code>
        </dd>
        <dt>Created</dt>
        <dd>{when(session.accountCreatedAt)}</dd>
        <dt>Plan</dt>
        <dd>
          {session.plan} (<a {...link('/settings/plan')}>limits and usage</a>)
        </dd>
        <dt>Signed in until</dt>
        <dd>{when(session.expiresAt)}</dd>
      </dl>
    </Section>
  );
}

interface Account {
  plan: string;
  limits: { blendPerHour: number; eventsPerMinute: number; eventsPerDay: number };
  usage: { name: string; limit: number; remaining: number; reset: number; windowSeconds: number }[];
}

const WINDOWS: Record<string, string> = {
  'blend-hour': 'Blend API requests per hour',
  'events-minute': 'Event API requests per minute',
  'events-day': 'Event API requests per day',
};

function PlanSettings({ session }: { session: Session }) {
  const account = useApi<Account>(session.plan === 'free' ? null : '/account');
  if (session.plan === 'free' || account.error?.code === 'plan_required') {
    return <PlanRequired plan={session.plan} title="Plan: free" />;
  }
  const number = (n: number) => n.toLocaleString('en');
  return (
    <Section id="plan-title" title="Plan and usage">
      {account.error && <ErrorNote error={account.error} />}
      {!account.data && !account.error && <p>Loading…</p>}
      {account.data && (
        <>
          <p>
            This account is on the <strong>{account.data.plan}</strong> plan. Each API key and the dashboard count against the same limits;
            an answer past a limit is <code>429 rate_limited</code> with <code>Retry-After</code>.
          </p>
          <dl class="facts settings-facts" aria-label="Limits">
            <dt>{WINDOWS['blend-hour']}</dt>
            <dd>{number(account.data.limits.blendPerHour)}</dd>
            <dt>{WINDOWS['events-minute']}</dt>
            <dd>{number(account.data.limits.eventsPerMinute)}</dd>
            <dt>{WINDOWS['events-day']}</dt>
            <dd>{number(account.data.limits.eventsPerDay)}</dd>
          </dl>
          <div class="table-wrap">
            <table>
              <caption>Usage of each limit now (this page's own request included)</caption>
              <thead>
                <tr>
                  <th scope="col">Limit</th>
                  <th scope="col">Used</th>
                  <th scope="col">Remaining</th>
                  <th scope="col">Resets</th>
                </tr>
              </thead>
              <tbody>
                {account.data.usage.map((w) => (
                  <tr key={w.name}>
                    <th scope="row">{WINDOWS[w.name] ?? w.name}</th>
                    <td>
                      <meter min={0} max={w.limit} value={w.limit - w.remaining} aria-label={`${WINDOWS[w.name] ?? w.name}: ${w.limit - w.remaining} of ${w.limit} used`} />{' '}
                      {number(w.limit - w.remaining)} of {number(w.limit)}
                    </td>
                    <td>{number(w.remaining)}</td>
                    <td>{new Date(w.reset * 1000).toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p>To change plan, ask the operator of this server.</p>
        </>
      )}
    </Section>
  );
}

/** The form's own errors, each beside its field: the API names the field in `errors[].path`. */
type FieldErrors = Partial<Record<'currentPassword' | 'newPassword' | 'confirm' | 'form', string>>;

function PasswordSettings({ session }: { session: Session }) {
  const [errors, setErrors] = useState<FieldErrors>({});
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    const currentPassword = String(form.get('currentPassword') ?? '');
    const newPassword = String(form.get('newPassword') ?? '');
    setDone(false);
    if (newPassword !== String(form.get('confirm') ?? '')) return setErrors({ confirm: 'The two new passwords differ.' });
    setErrors({});
    setBusy(true);
    try {
      await request('/dashboard/api/password', { method: 'POST', json: { currentPassword, newPassword } });
      formElement.reset();
      setDone(true);
    } catch (err) {
      if (!(err instanceof Problem)) return setErrors({ form: 'The server could not be reached.' });
      const fields: FieldErrors = {};
      for (const e of (err.body.errors ?? []) as { path: string; message: string }[]) {
        if (e.path === '/currentPassword') fields.currentPassword = `The current password ${e.message}.`;
        else if (e.path === '/newPassword') fields.newPassword = `The new password ${e.message}.`;
      }
      setErrors(Object.keys(fields).length > 0 ? fields : { form: err.detail });
    } finally {
      setBusy(false);
    }
  };

  const field = (name: 'currentPassword' | 'newPassword' | 'confirm', label: string, autocomplete: string, hint?: string) => (
    <>
      <label for={`password-${name}`}>{label}</label>
      {hint && (
        <p id={`password-${name}-hint`} class="hint">
          {hint}
        </p>
      )}
      <input
        id={`password-${name}`}
        name={name}
        type="password"
        autocomplete={autocomplete}
        required
        minLength={name === 'currentPassword' ? 1 : 10}
        maxLength={1024}
        aria-invalid={errors[name] ? 'true' : undefined}
        aria-describedby={[hint && `password-${name}-hint`, errors[name] && `password-${name}-error`].filter(Boolean).join(' ') || undefined}
      />
      {errors[name] && (
        <p id={`password-${name}-error`} class="error">
          {errors[name]}
        </p>
      )}
    </>
  );

  return (
    <Section id="password-title" title="Password">
      <p>
        The password signs in to this dashboard; API keys do not use it. Changing it signs out every other session of the account. An
        account made on the command line without <code>--password</code> has no password and cannot sign in here; the operator of this
        server gives it one (or a new one, when it is forgotten) with{' '}
        <code>npx --no -- montage accounts set-password --email EMAIL --password PASSWORD</code>.
      </p>
      <form class="card" onSubmit={submit} aria-labelledby="change-password-title">
        <h3 id="change-password-title">Change the password</h3>
        {/* For password managers: which account this password belongs to. */}
        <input type="email" name="username" autocomplete="username" value={session.email} readOnly hidden />
        {field('currentPassword', 'Current password', 'current-password')}
        {field('newPassword', 'New password', 'new-password', '10 to 1,024 characters; not the current password nor the email. A long passphrase is best.')}
        {field('confirm', 'New password again', 'new-password')}
        {errors.form && (
          <p class="error" role="alert">
            {errors.form}
          </p>
        )}
        {Object.keys(errors).length > 0 && !errors.form && (
          <p class="error" role="alert">
            The password was not changed: see the fields above.
          </p>
        )}
        <button type="submit" disabled={busy}>
          Change password
        </button>
        <p role="status" class="ok">
          {done ? 'Password changed. Other sessions of this account were signed out.' : ''}
        </p>
      </form>
    </Section>
  );
}

interface WebhookSecret {
  secret: string;
  previousSecretExpiresAt: string | null;
  rotationOverlapSeconds: number;
}

const span = (seconds: number) =>
  seconds % 86_400 === 0 && seconds > 0
    ? `${seconds / 86_400 === 1 ? '24 hours' : `${seconds / 86_400} days`}`
    : seconds % 3600 === 0 && seconds > 0
      ? `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
      : seconds % 60 === 0 && seconds > 0
        ? `${seconds / 60} minute${seconds === 60 ? '' : 's'}`
        : `${seconds} second${seconds === 1 ? '' : 's'}`;

function WebhookSecretSettings({ session }: { session: Session }) {
  const loaded = useApi<WebhookSecret>(session.plan === 'free' ? null : '/account/webhook-secret');
  const [rotated, setRotated] = useState<WebhookSecret | null>(null);
  const [revealed, setRevealed] = useState(false);
  const [copied, setCopied] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  if (session.plan === 'free' || loaded.error?.code === 'plan_required') return <PlanRequired plan={session.plan} title="Webhooks need the Business plan" />;
  const current = rotated ?? loaded.data;

  const copy = async () => {
    await navigator.clipboard.writeText(current!.secret);
    setCopied(true);
  };
  const rotate = async () => {
    setError('');
    try {
      setRotated(await api<WebhookSecret>('/account/webhook-secret/rotate', { method: 'POST' }));
      setConfirming(false);
      setCopied(false);
      setRevealed(true);
    } catch (err) {
      setError(failure(err));
    }
  };

  return (
    <Section id="webhook-secret-title" title="Webhook signing secret">
      <p>
        This secret signs the webhooks Montage sends to a blend job's own <code>webhookUrl</code> (Standard Webhooks,{' '}
        <code>webhook-signature</code>). Subscriptions have secrets of their own, shown once when they are created.
      </p>
      {loaded.error && <ErrorNote error={loaded.error} />}
      {!current && !loaded.error && <p>Loading…</p>}
      {current && (
        <div class="card">
          <label for="webhook-secret-value">Signing secret</label>
          {revealed ? (
            <input id="webhook-secret-value" class="secret" readOnly value={current.secret} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
          ) : (
            <input id="webhook-secret-value" class="secret" readOnly value="whsec_••••••••••••••••••••••••" aria-describedby="webhook-secret-hidden" />
          )}
          {!revealed && (
            <p id="webhook-secret-hidden" class="hint">
              Hidden. Reveal it to read or copy it.
            </p>
          )}
          <div class="actions">
            <button type="button" class="secondary" aria-pressed={revealed} onClick={() => setRevealed(!revealed)}>
              {revealed ? 'Hide' : 'Reveal'}
            </button>
            <button type="button" class="secondary" onClick={copy}>
              Copy
            </button>
            <span role="status">{copied ? 'Copied to the clipboard.' : ''}</span>
          </div>
          {current.previousSecretExpiresAt && (
            <p class="notice-inline">
              The previous secret also signs every delivery until <strong>{when(current.previousSecretExpiresAt)}</strong>: give your
              receivers the new one before then.
            </p>
          )}
          <h3 id="rotate-title">Rotate</h3>
          {!confirming ? (
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Rotate secret…
            </button>
          ) : (
            <div class="confirm-box" role="group" aria-labelledby="rotate-title" aria-describedby="rotate-what">
              <p id="rotate-what">
                A new secret will sign every delivery from now on. For {span(current.rotationOverlapSeconds)} deliveries also carry a signature
                made with the current secret, so receivers that still have it keep accepting them; after that, a receiver with the current
                secret rejects every delivery until it has the new one.
                {current.previousSecretExpiresAt && ' The previous secret, still in its overlap, stops signing at once.'}
              </p>
              <button type="button" class="danger" onClick={rotate}>
                Yes, rotate
              </button>{' '}
              <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </div>
          )}
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          {rotated && !confirming && (
            <p role="status" class="ok">
              Rotated. The new secret is shown above.
            </p>
          )}
        </div>
      )}
    </Section>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { Problem, request, type Session, setCsrfToken } from './api.js';
import { BlendJobPage, BlendPage } from './pages/blend.js';
import { EventPage } from './pages/event.js';
import { EventsPage } from './pages/events.js';
import { LoginPage } from './pages/login.js';
import { SettingsPage } from './pages/settings.js';
import { WebhooksPage } from './pages/webhooks.js';
import { link, navigate, redirect, useRoute } from './router.js';

type State = { kind: 'loading' } | { kind: 'signed-out'; signupAllowed: boolean } | { kind: 'signed-in'; session: Session };

const SECTIONS = [
  ['/blend', 'Blend jobs'],
  ['/events', 'Events'],
  ['/webhooks', 'Webhooks'],
  ['/settings', 'Settings'],
] as const;

/** Addresses that moved: the API keys page now lives in Settings, which is also the first page. */
const MOVED: Record<string, string> = { '/': '/settings', '/keys': '/settings/api-keys' };

export function App() {
  const [state, setState] = useState<State>({ kind: 'loading' });
  const route = useRoute();

  const signedIn = (session: Session) => {
    setCsrfToken(session.csrfToken);
    setState({ kind: 'signed-in', session });
  };

  const moved = MOVED[route];
  useEffect(() => {
    if (moved) redirect(moved);
  }, [moved]);

  useEffect(() => {
    request<Session>('/dashboard/api/session').then(signedIn, (err: unknown) =>
      setState({ kind: 'signed-out', signupAllowed: err instanceof Problem && err.body.signupAllowed === true }),
    );
  }, []);

  if (state.kind === 'loading') return <p class="loading">Loading…</p>;
  if (state.kind === 'signed-out') return <LoginPage signupAllowed={state.signupAllowed} onSignedIn={signedIn} />;

  const { session } = state;
  const signOut = async () => {
    await request('/dashboard/api/logout', { method: 'POST' });
    setCsrfToken('');
    setState({ kind: 'signed-out', signupAllowed: false });
    navigate('/');
  };

  return (
    <>
      <header class="top">
        <a class="brand" {...link('/')}>Montage</a>
        <nav aria-label="Sections">
          {SECTIONS.map(([to, label]) => (
            <a key={to} {...link(to)} aria-current={route === to || route.startsWith(`${to}/`) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div class="who">
          <span>{session.email}</span> <span class={`plan plan-${session.plan}`}>{session.plan} plan</span>
          <button type="button" onClick={signOut}>Sign out</button>
        </div>
      </header>
      <main>{moved ? null : page(route, session)}</main>
    </>
  );
}

function page(route: string, session: Session) {
  const [, section, id, subpage] = route.split('/');
  switch (section) {
    case 'blend':
      return id ? <BlendJobPage jobId={id} /> : <BlendPage />;
    case 'events':
      return id ? <EventPage eventId={id} page={subpage} /> : <EventsPage />;
    case 'webhooks':
      return <WebhooksPage />;
    case 'settings':
      return <SettingsPage page={id} session={session} />;
    default:
      return (
        <section class="notice" aria-labelledby="missing-title">
          <h1 id="missing-title">No such page</h1>
          <p>
            This address is not a page of the dashboard. <a {...link('/settings')}>Go to Settings</a>.
          </p>
        </section>
      );
  }
}

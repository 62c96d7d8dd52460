import { useState } from 'preact/hooks';
import { failure, request, type Session } from '../api.js';

export function LoginPage({ signupAllowed, onSignedIn }: { signupAllowed: boolean; onSignedIn: (s: Session) => void }) {
  const [mode, setMode] = useState<'login' | 'signup'>('login');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    setError('');
    try {
      onSignedIn(await request<Session>(`/dashboard/api/${mode}`, { method: 'POST', json: { email: form.get('email'), password: form.get('password') } }));
    } catch (err) {
      setError(failure(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="login">
      <h1>Montage</h1>
      <form onSubmit={submit} aria-describedby={error ? 'login-error' : undefined}>
        <h2>{mode === 'login' ? 'Sign in' : 'Create an account'}</h2>
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete={mode === 'login' ? 'current-password' : 'new-password'} minLength={mode === 'signup' ? 10 : 1} required />
        {error && (
          <p id="login-error" class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {mode === 'login' ? 'Sign in' : 'Create account'}
        </button>
        {signupAllowed && (
          <button type="button" class="link" onClick={() => setMode(mode === 'login' ? 'signup' : 'login')}>
            {mode === 'login' ? 'No account yet? Sign up' : 'Have an account? Sign in'}
          </button>
        )}
      </form>
    </main>
  );
}

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { createAccount } from '../src/accounts/accounts.service.js';
import { ENGINES, freshStorage, problem, startApp, type TestApp } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');

/** The real command line, in a process of its own. */
function montage(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}
const NEW_PASSWORD = 'a new and longer passphrase';

async function login(api: TestApp, email: string, password: string) {
  const res = await api.fetch('/dashboard/api/login', { method: 'POST', json: { email, password } });
  const body = (res.ok ? await res.clone().json() : {}) as Record<string, any>;
  return { res, cookie: (res.headers.getSetCookie()[0] ?? '').split(';')[0]!, csrf: body.csrfToken as string };
}

for (const engine of ENGINES) {
  describe(`dashboard password change (${engine})`, () => {
    test('POST /dashboard/api/password: session and CSRF only, the current password checked, the rules of sign-up, other sessions ended', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const email = `owner${Date.now()}@example.com`;
      await createAccount(api.database.db, { email, plan: 'business', password: PASSWORD });
      const here = await login(api, email, PASSWORD);
      const elsewhere = await login(api, email, PASSWORD);
      const change = (json: unknown, headers: Record<string, string> = { cookie: here.cookie, 'x-csrf-token': here.csrf }) =>
        api.fetch('/dashboard/api/password', { method: 'POST', json, headers });
      const body = { currentPassword: PASSWORD, newPassword: NEW_PASSWORD };

      await problem(await change(body, {}), 401, 'unauthorized');
      await problem(await change(body, { cookie: here.cookie }), 403, 'csrf_failed');
      const wrong = await problem(await change({ ...body, currentPassword: 'not the password' }), 400, 'invalid_request');
      assert.deepEqual(wrong.errors.map((e: { path: string }) => e.path), ['/currentPassword']);
      const refusals: Array<[unknown, string]> = [
        [{ currentPassword: PASSWORD, newPassword: 'short' }, '/newPassword'],
        [{ currentPassword: PASSWORD, newPassword: 'x'.repeat(1025) }, '/newPassword'],
        [{ currentPassword: PASSWORD, newPassword: PASSWORD }, '/newPassword'],
        [{ currentPassword: PASSWORD, newPassword: email.toUpperCase() }, '/newPassword'],
        [{ currentPassword: PASSWORD }, '/newPassword'],
        [{ ...body, extra: 1 }, '/extra'],
      ];
      for (const [json, path] of refusals) {
        const refused = await problem(await change(json), 400, 'invalid_request');
        assert.ok(refused.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(json).slice(0, 60)}: ${JSON.stringify(refused.errors)}`);
      }
      assert.equal((await login(api, email, PASSWORD)).res.status, 200, 'nothing refused changed the password');

      const done = await change(body);
      assert.equal(done.status, 204, await done.clone().text());
      await problem((await login(api, email, PASSWORD)).res as never, 401, 'unauthorized');
      assert.equal((await login(api, email, NEW_PASSWORD)).res.status, 200, 'the new password signs in');
      assert.equal((await api.fetch('/dashboard/api/session', { headers: { cookie: here.cookie } })).status, 200, 'this session goes on');
      await problem(await api.fetch('/dashboard/api/session', { headers: { cookie: elsewhere.cookie } }), 401, 'unauthorized');
      const stored = await api.database.db.selectFrom('accounts').select('passwordHash').where('email', '=', email).executeTakeFirstOrThrow();
      assert.match(stored.passwordHash!, /^scrypt\$/);
    });

    test('two changes at once: one wins, the other is refused, and the winner signs in', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const email = `racer${Date.now()}@example.com`;
      await createAccount(api.database.db, { email, plan: 'free', password: PASSWORD });
      const { cookie, csrf } = await login(api, email, PASSWORD);
      const tries = ['first new passphrase', 'second new passphrase'];
      const answers = await Promise.all(
        tries.map((newPassword) => api.fetch('/dashboard/api/password', { method: 'POST', json: { currentPassword: PASSWORD, newPassword }, headers: { cookie, 'x-csrf-token': csrf } })),
      );
      const statuses = answers.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 204).length, 1, JSON.stringify(statuses));
      const loser = answers.find((r) => r.status !== 204)!;
      await problem(loser, loser.status, loser.status === 409 ? 'conflict' : 'invalid_request');
      const winner = tries[statuses.indexOf(204)]!;
      assert.equal((await login(api, email, winner)).res.status, 200);
    });
    test('an account without a password gets one from the command line (accounts set-password), and then signs in', async (t) => {
      const storage = await freshStorage(t, engine);
      const api = await startApp(t, storage);
      const email = `keysonly${Date.now()}@example.com`;
      await createAccount(api.database.db, { email, plan: 'business' });
      await problem((await login(api, email, PASSWORD)).res as never, 401, 'unauthorized');
      const short = await montage(['accounts', 'set-password', '--email', email, '--password', 'short'], storage.env);
      assert.notEqual(short.code, 0);
      assert.match(short.stderr, /invalid_request: --password must be 10 to 1024 characters/);
      const missing = await montage(['accounts', 'set-password', '--email', email], storage.env);
      assert.equal(missing.code, 2, 'a missing option is a usage error');
      assert.match(missing.stderr, /Required option '--password <password>' not specified/);
      const set = await montage(['accounts', 'set-password', '--email', email, '--password', PASSWORD], storage.env);
      assert.equal(set.code, 0, set.stderr);
      assert.match(set.stdout, new RegExp(`Set the password of ${email.replace(/[.]/g, '\\.')}`));
      const { cookie } = await login(api, email, PASSWORD);
      assert.ok(cookie.startsWith('montage_session='), 'signs in with it');

      // Set again (the owner forgot it): the sessions of the account end.
      const reset = await montage(['accounts', 'set-password', '--email', email, '--password', NEW_PASSWORD], storage.env);
      assert.equal(reset.code, 0, reset.stderr);
      await problem(await api.fetch('/dashboard/api/session', { headers: { cookie } }), 401, 'unauthorized');
      assert.equal((await login(api, email, NEW_PASSWORD)).res.status, 200);
    });
  });
}

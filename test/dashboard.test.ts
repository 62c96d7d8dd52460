import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { accessible, chromiumPages, member, PASSWORD, SCREENSHOTS, shot, signIn } from './dashboard-browser.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until } from './helpers.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend');

async function login(api: TestApp, email: string, password = PASSWORD) {
  const res = await api.fetch('/dashboard/api/login', { method: 'POST', json: { email, password } });
  const body = (res.ok ? await res.clone().json() : {}) as Record<string, any>;
  return { res, cookie: (res.headers.getSetCookie()[0] ?? '').split(';')[0]!, body };
}

for (const engine of ENGINES) {
  describe(`dashboard sessions (${engine})`, () => {
    test('sign-in sets a strict, HTTP-only cookie; a wrong password and an unknown email get the same 401', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { email, accountId } = await member(api);
      const ok = await login(api, ` ${email.toUpperCase()} `);
      assert.equal(ok.res.status, 200);
      assert.equal(ok.body.accountId, accountId);
      assert.equal(ok.body.plan, 'business');
      assert.match(ok.body.csrfToken, /^[\w-]{43}$/);
      const cookie = ok.res.headers.getSetCookie()[0]!;
      assert.match(cookie, /^montage_session=\w{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
      assert.equal(ok.res.headers.get('cache-control'), 'no-store');
      const stored = await api.database.db.selectFrom('dashboardSessions').selectAll().execute();
      assert.equal(stored.length, 1);
      assert.notEqual(stored[0]!.tokenHash, ok.cookie.split('=')[1], 'only the hash is stored');

      const wrong = await problem((await login(api, email, 'not the password')).res as never, 401, 'unauthorized');
      const unknown = await problem((await login(api, 'nobody@example.com')).res as never, 401, 'unauthorized');
      assert.equal(wrong.detail, unknown.detail);

      const session = await api.fetch('/dashboard/api/session', { headers: { cookie: ok.cookie } });
      assert.equal((await session.json()).email, email);
      const none = await problem(await api.fetch('/dashboard/api/session'), 401, 'unauthorized');
      assert.equal(none.signupAllowed, false);
    });

    test('the cookie is Secure behind https, and lives MONTAGE_SESSION_TTL', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { PUBLIC_URL: 'https://montage.example.com', MONTAGE_SESSION_TTL: '30m' });
      const { email } = await member(api);
      const cookie = (await login(api, email)).res.headers.getSetCookie()[0]!;
      assert.match(cookie, /; Max-Age=1800; Secure$/);
    });

    test('sign-in attempts are rate-limited per email (429 with Retry-After)', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { email } = await member(api);
      for (let i = 0; i < 10; i++) assert.equal((await login(api, email, `wrong password ${i}`)).res.status, 401);
      const refused = (await login(api, email)).res;
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      await problem(refused as never, 429, 'rate_limited');
    });

    test('the session works on /v1 with every scope; writes need X-CSRF-Token; tenants stay apart', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const alice = await member(api);
      const bob = await member(api);
      const { cookie, body } = await login(api, alice.email);
      const account = await api.fetch('/v1/account', { headers: { cookie } });
      assert.equal(account.status, 200);
      assert.equal((await account.json()).id, alice.accountId);
      assert.ok(account.headers.get('x-ratelimit-limit'), 'rate limits apply as for keys');

      const event = { name: 'Launch', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' };
      await problem(await api.fetch('/v1/events', { method: 'POST', json: event, headers: { cookie } }), 403, 'csrf_failed');
      await problem(await api.fetch('/v1/events', { method: 'POST', json: event, headers: { cookie, 'x-csrf-token': 'x'.repeat(43) } }), 403, 'csrf_failed');
      const created = await api.fetch('/v1/events', { method: 'POST', json: event, headers: { cookie, 'x-csrf-token': body.csrfToken } });
      assert.equal(created.status, 201);
      const mine = (await created.json()).id as string;

      const theirs = await (await api.fetch('/v1/events', { method: 'POST', key: bob.key, json: event })).json();
      await problem(await api.fetch(`/v1/events/${theirs.id}`, { headers: { cookie } }), 404, 'not_found');
      assert.equal((await api.fetch(`/v1/events/${mine}`, { headers: { cookie } })).status, 200);
      // An Authorization header always wins: a bad key is not rescued by the cookie.
      await problem(await api.fetch('/v1/account', { headers: { cookie, authorization: 'Bearer nope' } }), 401, 'unauthorized');
    });

    test('a free account signs in but the API refuses it with plan_required', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { email } = await member(api, 'free');
      const { cookie, body } = await login(api, email);
      assert.equal(body.plan, 'free');
      await problem(await api.fetch('/v1/keys', { headers: { cookie } }), 403, 'plan_required');
    });

    test('sign-out ends the session for good; sign-up only when switched on', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { email } = await member(api);
      const { cookie, body } = await login(api, email);
      await problem(await api.fetch('/dashboard/api/logout', { method: 'POST', headers: { cookie } }), 403, 'csrf_failed');
      const out = await api.fetch('/dashboard/api/logout', { method: 'POST', headers: { cookie, 'x-csrf-token': body.csrfToken } });
      assert.equal(out.status, 204);
      assert.match(out.headers.getSetCookie()[0]!, /^montage_session=; .*Max-Age=0/);
      await problem(await api.fetch('/v1/account', { headers: { cookie } }), 401, 'unauthorized');
      await problem(await api.fetch('/dashboard/api/signup', { method: 'POST', json: { email: 'new@example.com', password: PASSWORD } }), 403, 'signup_disabled');

      const open = await startApp(t, await freshStorage(t, engine), { MONTAGE_DASHBOARD_SIGNUP: '1' });
      const signup = await open.fetch('/dashboard/api/signup', { method: 'POST', json: { email: 'new@example.com', password: PASSWORD } });
      assert.equal(signup.status, 200);
      assert.equal((await signup.json()).plan, 'free');
      assert.equal((await problem(await open.fetch('/dashboard/api/session'), 401, 'unauthorized')).signupAllowed, true);
      await problem(await open.fetch('/dashboard/api/nothing'), 404, 'not_found');

      // Two sign-ups with one email at once (found by the fuzzer): one account, the other a 409, never a 500.
      const twins = await Promise.all([1, 2].map(() => open.fetch('/dashboard/api/signup', { method: 'POST', json: { email: 'twin@example.com', password: PASSWORD } })));
      assert.deepEqual(twins.map((r) => r.status).sort(), [200, 409]);
      await problem(twins.find((r) => r.status === 409)!, 409, 'conflict');
    });
  });
}

/** Serves the median-crowd fixture set over loopback, for a real blend job; records each request's Referer. */
async function imageServer(t: TestContext) {
  const dir = path.join(FIXTURES, 'median-crowd');
  const referers: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    referers.push(req.headers.referer);
    const file = path.join(dir, path.basename(req.url ?? ''));
    if (!file.endsWith('.png') || !fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/png' }).end(fs.readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { images: string[] };
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { images: manifest.images.map((f) => `${base}/${f}`), base, referers };
}

/** A webhook receiver on loopback that answers 200 and counts what it got. */
async function webhookReceiver(t: TestContext) {
  const got: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push(body);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

/** Whether an <img> has loaded (a CSP refusal or a 404 leaves naturalWidth at 0). */
const loaded = (img: unknown) => (img as { complete: boolean; naturalWidth: number }).complete && (img as { naturalWidth: number }).naturalWidth > 0;

/** Settings, then one of its pages, as a user gets there: the top navigation, then Settings' own. */
async function openSettings(page: Page, name: string) {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name }).click();
  await page.getByRole('heading', { level: 2, name: new RegExp(name === 'Account' ? '^Account$' : name, 'i') }).first().waitFor();
}

describe('dashboard in Chromium', () => {
  const newPage = chromiumPages();

  test('Settings, then API keys: create a key, copy it once, use it, revoke it; the old address leads there', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { email } = await member(api);
    const page = await newPage(t);
    await signIn(page, api, email);
    assert.match(page.url(), /\/dashboard\/settings$/, 'Settings is the first page');
    const order = await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allInnerTexts();
    assert.deepEqual(order, ['Blend jobs', 'Events', 'Webhooks', 'Settings']);
    await openSettings(page, 'API keys');
    assert.match(page.url(), /\/dashboard\/settings\/api-keys$/);
    assert.deepEqual(await page.getByRole('navigation', { name: 'Settings' }).getByRole('link').allInnerTexts(), ['Account', 'Plan and usage', 'Password', 'Webhook signing secret', 'API keys']);
    assert.equal(await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'API keys' }).getAttribute('aria-current'), 'page');
    assert.equal(await page.title(), 'API keys · Settings · Montage');
    await accessible(page, 'Settings → API keys');

    await page.getByLabel('Name').fill('Browser test');
    await page.getByRole('checkbox', { name: 'events:read' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('Your new key').inputValue();
    assert.match(key, /^mtg_\w{40}$/);
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText()), key);
    await page.getByRole('row', { name: /Browser test/ }).waitFor();
    await accessible(page, 'a new key shown once');
    await shot(page, 'api-keys');
    assert.equal((await api.fetch('/v1/events', { key })).status, 200);
    await page.getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.getByLabel('Your new key').count(), 0, 'the key is shown once');
    await page.reload();
    await page.getByRole('row', { name: /Browser test/ }).waitFor();
    assert.ok(!(await page.locator('main').innerText()).includes(key), 'and never again');

    await page.getByRole('button', { name: /^Revoke Browser test/ }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();
    await page.getByRole('row', { name: /Browser test.*revoked/ }).waitFor();
    await problem(await api.fetch('/v1/events', { key }), 401, 'api_key_revoked');

    // The keys page's old address, typed or bookmarked, lands on Settings → API keys.
    const old = await fetch(`${api.url}/dashboard/keys`, { redirect: 'manual' });
    assert.equal(old.status, 301);
    assert.equal(old.headers.get('location'), '/dashboard/settings/api-keys');
    await page.goto(`${api.url}/dashboard/keys`);
    await page.getByRole('heading', { name: 'API keys', level: 2 }).waitFor();
    assert.match(page.url(), /\/dashboard\/settings\/api-keys$/);
  });

  test('Settings shows the account, and the plan with its limits and current usage', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'), { MONTAGE_LIMITS_BUSINESS: 'blendPerHour=40,eventsPerMinute=120,eventsPerDay=5000' });
    const { email, accountId, key } = await member(api);
    for (let i = 0; i < 3; i++) assert.equal((await api.fetch('/v1/events', { key })).status, 200);
    const page = await newPage(t);
    await signIn(page, api, email);
    await openSettings(page, 'Account');
    const facts = await page.locator('.settings-facts').innerText();
    assert.match(facts, new RegExp(`Email\\s+${email.replace(/[.]/g, '\\.')}`));
    assert.match(facts, new RegExp(`Account id\\s+${accountId}`));
    assert.match(facts, /Created\s+\S+/);
    assert.match(facts, /Plan\s+business/);
    await accessible(page, 'Settings → Account');
    await shot(page, 'settings-account');
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, 'settings-account-phone');
    const scrollWidth = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    assert.ok(scrollWidth <= 390, `no sideways scrolling on a phone (${scrollWidth} px)`);
    await accessible(page, 'Settings → Account on a phone');
    await page.setViewportSize({ width: 1280, height: 900 });

    await openSettings(page, 'Plan and usage');
    const limits = page.getByRole('definition');
    await limits.first().waitFor();
    assert.match(await page.locator('main').innerText(), /business plan/);
    assert.deepEqual(await page.getByLabel('Limits').getByRole('definition').allInnerTexts(), ['40', '120', '5,000']);
    const perMinute = page.getByRole('row', { name: /Event API requests per minute/ });
    // The three requests above, and this page's own.
    assert.match(await perMinute.innerText(), /4 of 120\s+116/);
    assert.equal(await page.getByRole('meter', { name: 'Event API requests per day: 4 of 5000 used' }).count(), 1);
    assert.equal(await page.getByRole('row', { name: /Blend API requests per hour/ }).count(), 1);
    await accessible(page, 'Settings → Plan and usage');
    await shot(page, 'settings-plan');
  });

  test('Settings → Password: a wrong current password is refused at its field; the new password signs in, the old one not', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { email } = await member(api);
    const page = await newPage(t);
    await signIn(page, api, email);
    await openSettings(page, 'Password');
    await accessible(page, 'Settings → Password');
    const NEW = 'a different long passphrase';
    await page.getByLabel('Current password').fill('not my password');
    await page.getByLabel('New password', { exact: true }).fill(NEW);
    await page.getByLabel('New password again').fill(NEW);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('The current password is not the password of this account.').waitFor();
    assert.equal(await page.getByLabel('Current password').getAttribute('aria-invalid'), 'true');
    await accessible(page, 'the password form with an error');
    await shot(page, 'settings-password-error');

    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password again').fill(`${NEW}!`);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('The two new passwords differ.').waitFor();
    await page.getByLabel('New password again').fill(NEW);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'Password changed.' }).waitFor();
    await shot(page, 'settings-password');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The email or the password is wrong.' }).waitFor();
    await page.getByLabel('Password').fill(NEW);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  });

  test('Settings → Webhook signing secret: hidden until revealed, copied, rotated after a confirmation', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { email, key } = await member(api);
    const before = (await (await api.fetch('/v1/account/webhook-secret', { key })).json()).secret as string;
    const page = await newPage(t);
    await signIn(page, api, email);
    await openSettings(page, 'Webhook signing secret');
    const field = page.getByRole('textbox', { name: 'Signing secret' });
    await field.waitFor();
    assert.ok(!(await page.content()).includes(before), 'not in the page until revealed');
    await accessible(page, 'Settings → Webhook signing secret');
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText()), before);
    await page.getByRole('button', { name: 'Reveal' }).click();
    assert.equal(await field.inputValue(), before);
    assert.equal(await page.getByRole('button', { name: 'Hide' }).getAttribute('aria-pressed'), 'true');

    await page.getByRole('button', { name: 'Rotate secret…' }).click();
    const confirmation = page.getByRole('group', { name: 'Rotate' });
    assert.match(await confirmation.innerText(), /For 24 hours deliveries also carry a signature made with the current secret, so receivers that still have it keep accepting them/);
    await accessible(page, 'the rotation confirmation');
    await shot(page, 'settings-webhook-secret-confirm');
    await confirmation.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await (await api.fetch('/v1/account/webhook-secret', { key })).json()).secret, before, 'cancel changes nothing');

    await page.getByRole('button', { name: 'Rotate secret…' }).click();
    await page.getByRole('button', { name: 'Yes, rotate' }).click();
    await page.getByRole('status').filter({ hasText: 'Rotated.' }).waitFor();
    const after = await (await api.fetch('/v1/account/webhook-secret', { key })).json();
    assert.notEqual(after.secret, before);
    assert.equal(await field.inputValue(), after.secret, 'the new secret is shown');
    assert.match(await page.locator('.notice-inline').innerText(), /previous secret also signs every delivery until/);
    await accessible(page, 'a rotated secret');
    await shot(page, 'settings-webhook-secret');
  });

  test('a free account sees why keys need the Business plan, and what its plan allows', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { email } = await member(api, 'free');
    const page = await newPage(t);
    await signIn(page, api, email);
    await openSettings(page, 'API keys');
    await page.getByRole('heading', { name: 'API keys need the Business plan' }).waitFor();
    assert.match(await page.locator('main').innerText(), /free plan/);
    await accessible(page, 'the free plan notice');
    await shot(page, 'free-plan');
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Plan and usage' }).click();
    await page.getByRole('heading', { name: 'Plan: free' }).waitFor();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Password' }).click();
    await page.getByRole('button', { name: 'Change password' }).waitFor();
  });

  test('a completed blend job shows its inputs beside the result and a before/after slider; a failed one its culprit', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }, { workers: true });
    const { email, key } = await member(api);
    const { images, base, referers } = await imageServer(t);
    const started = await (await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'plaza', images, options: { blendType: 'median' } } })).json();
    // The second input is missing: the job fails on it (image_fetch_failed, imageIndex 1).
    const broken = [images[0]!, `${base}/missing.png`, images[2]!];
    const failing = await (await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'broken', images: broken } })).json();
    const status = async (jobId: string) => (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
    await until(async () => (await status(started.jobId)).status === 'completed', 60_000, 'blend job');
    await until(async () => (await status(failing.jobId)).status === 'failed', 60_000, 'failing blend job');
    const failed = await status(failing.jobId);
    assert.equal(failed.error.imageIndex, 1, JSON.stringify(failed.error));
    referers.length = 0;

    const page = await newPage(t);
    await signIn(page, api, email);
    await page.getByRole('link', { name: 'Blend jobs' }).click();
    await page.getByRole('link', { name: new RegExp(`plaza · median · ${images.length} images`) }).waitFor();
    await accessible(page, 'the blend gallery');
    await shot(page, 'blend-gallery');
    await page.getByRole('link', { name: /plaza/ }).click();
    const result = page.getByRole('img', { name: /Blended result/ });
    await result.waitFor();
    await until(() => result.evaluate(loaded), 10_000, 'result image');
    assert.match(await page.locator('.facts').innerText(), /completed/);
    assert.match(await page.getByLabel('Quality measures').innerText(), /Alignment\s+\d\.\d\d[\s\S]*Sharpness[\s\S]*Exposure[\s\S]*Ghosting/);

    // The inputs, in order, the first marked as the reference, each loaded from its own origin.
    const inputs = page.locator('.input-list img');
    assert.equal(await inputs.count(), images.length);
    assert.deepEqual(await inputs.evaluateAll((els) => els.map((e) => e.getAttribute('src'))), images);
    assert.equal(await page.getByRole('img', { name: 'Input 1 (reference frame)' }).count(), 1);
    assert.equal(await page.locator('.input.reference').count(), 1);
    assert.equal(await page.locator('.input.at-fault').count(), 0);
    for (let i = 0; i < images.length; i++) {
      const img = inputs.nth(i);
      assert.equal(await img.getAttribute('referrerpolicy'), 'no-referrer');
      await img.scrollIntoViewIfNeeded();
      await until(() => img.evaluate(loaded), 10_000, `input ${i + 1}`);
    }

    // Before/after: the reference over the result, clipped by a labelled slider that the keyboard moves.
    const slider = page.getByRole('slider', { name: /Before\/after split/ });
    const before = page.getByTestId('compare-before');
    await until(() => before.evaluate(loaded), 10_000, 'before image');
    const clip = () => before.evaluate((img) => (globalThis as unknown as { getComputedStyle(e: unknown): { clipPath: string } }).getComputedStyle(img).clipPath);
    assert.equal(await slider.inputValue(), '50');
    const half = await clip();
    assert.match(half, /inset\(0px 50% 0px 0px\)/);
    await slider.focus();
    for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowRight');
    assert.equal(await slider.inputValue(), '60');
    assert.match(await clip(), /inset\(0px 40% 0px 0px\)/);
    await page.keyboard.press('Home');
    assert.equal(await slider.inputValue(), '0');
    assert.match(await clip(), /inset\(0px 100% 0px 0px\)/, 'all result');
    await page.keyboard.press('End');
    assert.match(await clip(), /inset\(0px 0% 0px 0px\)|inset\(0px\)/, 'all first input');
    assert.equal(await slider.getAttribute('aria-valuetext'), '100% input 1, 0% result');
    for (let i = 0; i < 30; i++) await page.keyboard.press('ArrowLeft');
    assert.match(await clip(), /inset\(0px 30% 0px 0px\)/);
    await accessible(page, 'a blend job');
    await shot(page, 'blend-job');
    fs.mkdirSync(path.resolve(import.meta.dirname, '../docs/images'), { recursive: true });
    fs.copyFileSync(path.join(SCREENSHOTS, 'blend-job.png'), path.resolve(import.meta.dirname, '../docs/images/dashboard-blend.png'));
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, 'blend-job-phone');
    const scrollWidth = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    assert.ok(scrollWidth <= 390, `no sideways scrolling on a phone (${scrollWidth} px)`);
    await page.setViewportSize({ width: 1280, height: 900 });
    assert.ok(referers.length > 0 && referers.every((r) => r === undefined), `inputs are fetched without a Referer: ${JSON.stringify(referers)}`);

    // The failed job: its second input is highlighted, and there is no before/after.
    await page.getByRole('link', { name: 'All blend jobs' }).click();
    await page.getByRole('link', { name: /broken/ }).click();
    await page.getByRole('heading', { name: 'Inputs (3)' }).waitFor();
    assert.match(await page.locator('.facts').innerText(), /image_fetch_failed[\s\S]*\(input 2, imageIndex 1\)/);
    const culprit = page.locator('.input.at-fault');
    assert.equal(await culprit.count(), 1);
    assert.equal(await culprit.locator('img').getAttribute('alt'), 'Input 2 (the failure is here)');
    assert.equal(await page.locator('.input-list li').nth(1).evaluate((li) => li.classList.contains('at-fault')), true);
    await until(async () => (await culprit.innerText()).includes('could not be loaded'), 10_000, 'the missing input noted');
    assert.equal(await page.getByRole('slider').count(), 0);
    await accessible(page, 'a failed blend job');
    await shot(page, 'blend-job-failed');
  });

  test('the webhooks page shows a subscription and its delivery with the status', async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms' }, { workers: true });
    const { email, key } = await member(api);
    const receiver = await webhookReceiver(t);
    const created = await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: receiver.url, events: ['event.created'], description: 'CRM sync' } });
    assert.equal(created.status, 201, await created.clone().text());
    const sub = await created.json();
    const event = { name: 'Launch', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' };
    assert.equal((await api.fetch('/v1/events', { method: 'POST', key, json: event })).status, 201);
    await until(() => receiver.got.length === 1, 10_000, 'the delivery');
    await until(async () => (await (await api.fetch(`/v1/webhooks/${sub.id}/deliveries`, { key })).json()).data.length === 1, 5000, 'the attempt recorded');

    const page = await newPage(t);
    await signIn(page, api, email);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'CRM sync' }) });
    await card.waitFor();
    assert.match(await card.innerText(), new RegExp(`${receiver.url.replace(/[.]/g, '\\.')} · enabled · event\\.created`));
    await card.getByRole('button', { name: 'Recent deliveries' }).click();
    const row = page.getByRole('row', { name: /event\.created/ });
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    assert.deepEqual(cells.slice(1, 4), ['event.created', '1', 'delivered (200)']);
    assert.match(cells[4]!, /^\d+ ms$/);
    await accessible(page, 'the webhooks page');
    await shot(page, 'webhooks');
  });

  test("an event's analytics: charts from real data, inventory, the live check-in counter", async (t) => {
    const api = await startApp(t, await freshStorage(t, 'sqlite'));
    const { email, key } = await member(api);
    const event = await (
      await api.fetch('/v1/events', { method: 'POST', key, json: { name: 'Launch night', startsAt: '2030-05-01T18:00:00Z', endsAt: '2030-05-01T23:00:00Z', timezone: 'UTC', currency: 'EUR' } })
    ).json();
    const type = await (await api.fetch(`/v1/events/${event.id}/tickets`, { method: 'POST', key, json: { name: 'General', price: 2500, quantity: 10 } })).json();
    assert.equal((await api.fetch(`/v1/events/${event.id}/publish`, { method: 'POST', key })).status, 200);
    const order = await (await api.fetch(`/v1/events/${event.id}/orders`, { method: 'POST', key, json: { buyer: { name: 'Ada', email: 'ada@example.com' }, items: [{ ticketTypeId: type.id, quantity: 3 }] } })).json();
    assert.equal((await api.fetch(`/v1/events/${event.id}/checkin`, { method: 'POST', key, json: { ticketId: order.tickets[0].id } })).status, 201);
    const list = await (await api.fetch(`/v1/events/${event.id}/checkin-lists`, { method: 'POST', key, json: { name: 'North door', scanExits: true } })).json();
    assert.equal((await api.fetch(`/v1/events/${event.id}/checkin`, { method: 'POST', key, json: { ticketId: order.tickets[0].id, listId: list.id } })).status, 201);

    const page = await newPage(t);
    await signIn(page, api, email);
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByRole('link', { name: 'Launch night' }).click();
    await page.getByRole('img', { name: /Tickets sold: Sold total 3, Cancelled total 0/ }).waitFor();
    await page.getByRole('img', { name: /Check-ins: Check-ins total 1, Undos total 0/ }).waitFor();
    assert.equal(await page.locator('.chart canvas').count(), 2);
    assert.equal(await page.getByTestId('checked-in').innerText(), '1');
    assert.equal(await page.getByRole('meter', { name: 'General: 3 of 10 sold' }).count(), 1);
    const listText = async () => (await page.getByTestId('checkin-list').innerText()).replace(/\s+/g, ' ');
    assert.equal(await listText(), 'North door 1 inside · 1 entries · 0 exits · 1 tickets admitted · 0 conflicts');
    await accessible(page, "an event's analytics");
    await shot(page, 'event-analytics');
    fs.mkdirSync(path.resolve(import.meta.dirname, '../docs/images'), { recursive: true });
    fs.copyFileSync(path.join(SCREENSHOTS, 'event-analytics.png'), path.resolve(import.meta.dirname, '../docs/images/dashboard.png'));

    // The door's phone: a second check-in shows up on the counter without reloading.
    await page.setViewportSize({ width: 390, height: 844 });
    assert.equal((await api.fetch(`/v1/events/${event.id}/checkin`, { method: 'POST', key, json: { ticketId: order.tickets[1].id } })).status, 201);
    await until(async () => (await page.getByTestId('checked-in').innerText()) === '2', 10_000, 'live counter');
    assert.equal((await api.fetch(`/v1/events/${event.id}/checkin`, { method: 'POST', key, json: { ticketId: order.tickets[0].id, listId: list.id, direction: 'exit' } })).status, 201);
    await until(async () => (await listText()).startsWith('North door 0 inside · 1 entries · 1 exits'), 10_000, 'live list counts');
    await accessible(page, 'the check-in counter on a phone');
    await shot(page, 'checkin-counter-phone');

    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export attendees (CSV)' }).click();
    assert.match((await download).suggestedFilename(), /\.csv$/);

  });
});

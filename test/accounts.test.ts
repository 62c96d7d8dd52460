/**
 * Accounts and keys: a key made by a key cannot outlive or out-scope its maker; emails are compared
 * after NFKC normalisation everywhere they come in, and migration 0008 brings stored ones to that form.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { accountByEmail, createAccount, createApiKey } from '../src/accounts/accounts.service.js';
import * as emailMigration from '../src/db/migrations/2026_11_26_0008_email_nfkc.js';
import { AppError } from '../src/errors.js';
import { ENGINES, freshStorage, problem, startApp, type TestApp } from './helpers.js';

const PASSWORD = 'correct horse battery staple';
const DAY = 86_400_000;

/** The fullwidth form of an ASCII string (`a@x.test` as `ａ＠ｘ．ｔｅｓｔ`): NFKC maps it back. */
const fullwidth = (text: string) => text.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));

const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

async function login(api: TestApp, email: string, password = PASSWORD) {
  const res = await api.fetch('/dashboard/api/login', { method: 'POST', json: { email, password } });
  return { res, cookie: (res.headers.getSetCookie()[0] ?? '').split(';')[0]!, body: (res.ok ? await res.clone().json() : null) as Record<string, any> };
}

/** POST /v1/keys with a key, and the parsed answer. */
async function makeKey(api: TestApp, key: string, body: Record<string, unknown>) {
  return api.fetch('/v1/keys', { method: 'POST', key, json: body });
}

for (const engine of ENGINES) {
  describe(`accounts and keys (${engine})`, () => {
    test('a key made by a key expires no later than its maker; without expiresAt it gets the maker’s', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId } = await api.account();
      const makerExpiry = Date.now() + DAY;
      const maker = await createApiKey(api.database.db, { id: accountId, plan: 'business' }, { expiresInMs: DAY });
      assert.ok(Math.abs(Date.parse(maker.expiresAt!) - makerExpiry) < 5000);

      for (const later of [makerExpiry + 60_000, Date.now() + 4 * 365 * DAY]) {
        const refused = await problem(await makeKey(api, maker.key, { expiresAt: new Date(later).toISOString() }), 403, 'key_exceeds_maker');
        assert.equal(refused.errors[0].path, '/expiresAt');
        assert.match(refused.detail, new RegExp(maker.expiresAt!.replace(/\./g, '\\.')), 'the detail names the maker’s expiry');
      }
      const inherited = await makeKey(api, maker.key, { name: 'child' });
      assert.equal(inherited.status, 201);
      assert.equal((await inherited.json()).expiresAt, maker.expiresAt, 'no expiry asked: the maker’s');

      const sooner = new Date(Date.now() + 3_600_000).toISOString();
      const shorter = await makeKey(api, maker.key, { expiresAt: sooner });
      assert.equal(shorter.status, 201);
      assert.equal((await shorter.json()).expiresAt, sooner);
      assert.equal((await makeKey(api, maker.key, { expiresAt: maker.expiresAt })).status, 201, 'the maker’s own expiry is allowed');

      // A child cannot launder the bound: its own children are bounded by it, hence by the maker.
      const child = (await (await makeKey(api, maker.key, {})).json()).key as string;
      await problem(await makeKey(api, child, { expiresAt: new Date(makerExpiry + 60_000).toISOString() }), 403, 'key_exceeds_maker');

      // A maker that never expires makes keys that never expire, or that expire when asked.
      const forever = await api.key(accountId, 'business');
      assert.equal((await (await makeKey(api, forever, {})).json()).expiresAt, null);
      assert.equal((await makeKey(api, forever, { expiresAt: new Date(Date.now() + 4 * 365 * DAY).toISOString() })).status, 201);
    });

    test('a key expiring in under a minute still makes a key, which expires with it', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId } = await api.account();
      const maker = await createApiKey(api.database.db, { id: accountId, plan: 'business' }, {});
      // Brought to 30 s from now behind the API's back (the API refuses lifetimes under a minute).
      const soon = Date.now() + 30_000;
      await api.database.db.updateTable('apiKeys').set({ expiresAt: soon }).where('id', '=', maker.id).execute();
      const res = await makeKey(api, maker.key, {});
      assert.equal(res.status, 201);
      assert.equal((await res.json()).expiresAt, new Date(soon).toISOString());
    });

    test('a key made by a key has no scope its maker lacks; without scopes it gets the maker’s', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId } = await api.account();
      const account = { id: accountId, plan: 'business' };
      const door = { scopes: ['checkin'] as const, expiresAt: null };
      await assert.rejects(
        createApiKey(api.database.db, account, { scopes: ['checkin', 'events:write'] }, door),
        (err: unknown) => err instanceof AppError && err.code === 'key_exceeds_maker' && err.status === 403 && err.errors?.[0]?.path === '/scopes' && /events:write/.test(err.detail),
      );
      assert.deepEqual((await createApiKey(api.database.db, account, {}, door)).scopes, ['checkin'], 'no scopes asked: the maker’s');
      assert.deepEqual((await createApiKey(api.database.db, account, { scopes: ['checkin'] }, door)).scopes, ['checkin']);

      // Over HTTP a restricted key cannot even reach key creation (it needs every scope).
      const restricted = await api.key(accountId, 'business', { scopes: ['checkin'] });
      await problem(await makeKey(api, restricted, { scopes: ['checkin'] }), 403, 'insufficient_scope');
    });

    test('the owner is not bounded: the dashboard session and the command line make keys of any lifetime', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const email = `owner-${unique()}@example.com`;
      const account = await createAccount(api.database.db, { email, password: PASSWORD });
      const { cookie, body } = await login(api, email);
      const far = new Date(Date.now() + 4 * 365 * DAY).toISOString();
      const res = await api.fetch('/v1/keys', { method: 'POST', json: { expiresAt: far }, headers: { cookie, 'x-csrf-token': body.csrfToken } });
      assert.equal(res.status, 201);
      assert.equal((await res.json()).expiresAt, far);
      const cli = await createApiKey(api.database.db, account, { expiresInMs: 4 * 365 * DAY });
      assert.ok(cli.expiresAt);
    });

    test('emails are compared after NFKC: a fullwidth email signs in to, and conflicts with, the plain one', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_DASHBOARD_SIGNUP: '1' });
      const email = `a${unique()}@x.test`;
      const account = await createAccount(api.database.db, { email, password: PASSWORD });
      const wide = fullwidth(email);
      assert.notEqual(wide, email);

      const signedIn = await login(api, wide);
      assert.equal(signedIn.res.status, 200);
      assert.equal(signedIn.body.accountId, account.id);
      assert.equal(signedIn.body.email, email);
      assert.equal((await login(api, fullwidth(email.toUpperCase()))).res.status, 200, 'fullwidth capitals too');

      await assert.rejects(createAccount(api.database.db, { email: wide }), (err: unknown) => err instanceof AppError && err.code === 'conflict');
      await problem(await api.fetch('/dashboard/api/signup', { method: 'POST', json: { email: wide, password: PASSWORD } }), 409, 'conflict');
      assert.equal((await accountByEmail(api.database.db, ` ${wide} `)).id, account.id, 'the command line finds it by either form');

      // Created in the fullwidth form, it is stored, shown and found in the plain one.
      const other = `b${unique()}@x.test`;
      const created = await createAccount(api.database.db, { email: fullwidth(other) });
      assert.equal(created.email, other);
      assert.equal((await accountByEmail(api.database.db, other)).id, created.id);
    });

    test('migration 0008 normalises stored emails, and refuses, changing nothing, when two would become one', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { db } = api.database;
      const row = (id: string, email: string) => ({ id, email, plan: 'business', passwordHash: null, webhookSecret: null, createdAt: 0, updatedAt: 0 });
      const tag = unique();
      // Rows as the code before NFKC stored them: lower-cased only.
      await db.insertInto('accounts').values([row(`acct_m1${tag}`, fullwidth(`m1${tag}@x.test`)), row(`acct_m2${tag}`, `ｍ２${tag}@ｘ.test`)]).execute();
      await emailMigration.up(db);
      const emails = async (ids: string[]) =>
        (await db.selectFrom('accounts').select(['id', 'email']).where('id', 'in', ids).orderBy('id').execute()).map((r) => r.email);
      assert.deepEqual(await emails([`acct_m1${tag}`, `acct_m2${tag}`]), [`m1${tag}@x.test`, `m2${tag}@x.test`]);

      await db.insertInto('accounts').values([row(`acct_d1${tag}`, `d${tag}@x.test`), row(`acct_d2${tag}`, fullwidth(`d${tag}@x.test`)), row(`acct_d3${tag}`, fullwidth(`e${tag}@x.test`))]).execute();
      await assert.rejects(emailMigration.up(db), (err: Error) => err.message.includes(`acct_d2${tag}`) && err.message.includes(`acct_d1${tag}`) && /update accounts set email/.test(err.message));
      assert.deepEqual(await emails([`acct_d1${tag}`, `acct_d2${tag}`, `acct_d3${tag}`]), [`d${tag}@x.test`, fullwidth(`d${tag}@x.test`), fullwidth(`e${tag}@x.test`)], 'nothing changed');
    });
  });
}

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ENGINES, freshStorage, problem, startApp } from './helpers.js';

for (const engine of ENGINES) {
  describe(`authentication and API keys (${engine})`, () => {
    test('every authentication failure is its own 401 with WWW-Authenticate', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId, key } = await api.account('business');

      const cases: Array<[string, Record<string, string>, string]> = [
        ['no header', {}, 'unauthorized'],
        ['not Bearer', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, 'unauthorized'],
        ['malformed key', { authorization: 'Bearer mtg_short' }, 'unauthorized'],
        ['unknown key', { authorization: `Bearer mtg_${'A'.repeat(40)}` }, 'unauthorized'],
      ];
      for (const [name, headers, code] of cases) {
        const res = await api.fetch('/v1/account', { headers });
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="montage"', name);
        assert.equal(res.headers.get('x-ratelimit-limit'), null, `${name}: no rate-limit headers without an account`);
        await problem(res, 401, code);
      }

      const revoked = await api.key(accountId, 'business');
      const keyId = (await (await api.fetch('/v1/account', { key: revoked })).json()).key.id;
      assert.equal((await api.fetch(`/v1/keys/${keyId}/revoke`, { method: 'POST', key })).status, 200);
      const revokedRes = await api.fetch('/v1/account', { key: revoked });
      assert.equal(revokedRes.headers.get('www-authenticate'), 'Bearer realm="montage"');
      await problem(revokedRes, 401, 'api_key_revoked');

      const expiring = await api.key(accountId, 'business', { expiresInMs: 120_000 });
      assert.equal((await api.fetch('/v1/account', { key: expiring })).status, 200);
      // Two minutes later (moved in the database; the cached key's expiry is checked on every request).
      const expiringId = (await (await api.fetch('/v1/account', { key: expiring })).json()).key.id;
      await api.database.db.updateTable('apiKeys').set({ expiresAt: Date.now() - 1 }).where('id', '=', expiringId).execute();
      api.app.keyCache.clear();
      await problem(await api.fetch('/v1/account', { key: expiring }), 401, 'api_key_expired');
      await assert.rejects(api.key(accountId, 'business', { expiresInMs: 1000 }), { code: 'invalid_request' }, 'at least a minute');
    });

    test('an account on the free plan gets 403 plan_required, and cannot create keys', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId, key } = await api.account('business');
      // Downgraded after the key was made: every call is refused.
      await api.database.db.updateTable('accounts').set({ plan: 'free' }).where('id', '=', accountId).execute();
      await problem(await api.fetch('/v1/account', { key }), 403, 'plan_required');
      await problem(await api.fetch('/api/v1/keys', { key }), 403, 'plan_required');
      await assert.rejects(api.key(accountId, 'free'), { code: 'plan_required' });
    });

    test('a key without the scope a route needs gets 403 insufficient_scope', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId } = await api.account('business');
      const scanner = await api.key(accountId, 'business', { scopes: ['checkin'] });
      const account = await api.fetch('/v1/account', { key: scanner });
      assert.equal(account.status, 200);
      assert.deepEqual((await account.json()).key.scopes, ['checkin']);
      const body = await problem(await api.fetch('/v1/keys', { key: scanner }), 403, 'insufficient_scope');
      assert.ok(Array.isArray(body.requiredScopes));
      await problem(
        await api.fetch('/v1/keys', { method: 'POST', key: scanner, json: { name: 'escalate' } }),
        403,
        'insufficient_scope',
      );
    });

    test('GET /account reports account, plan, limits, usage and the key; lastUsedAt is recorded', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { accountId, email, key } = await api.account('enterprise');
      const res = await api.fetch('/api/v1/account', { key });
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.id, accountId);
      assert.equal(body.email, email);
      assert.equal(body.plan, 'enterprise');
      assert.deepEqual(body.limits, api.config.limits.enterprise);
      const minute = body.usage.find((w: { name: string }) => w.name === 'events-minute');
      assert.equal(minute.remaining, api.config.limits.enterprise.eventsPerMinute - 1);
      assert.equal(body.key.prefix, key.slice(0, 8));
      assert.equal(body.key.scopes.length, 5);

      const stored = await api.database.db.selectFrom('apiKeys').selectAll().where('id', '=', body.key.id).executeTakeFirstOrThrow();
      assert.equal(stored.keyHash.length, 64, 'only a SHA-256 hash is stored');
      assert.ok(!JSON.stringify(stored).includes(key), 'the key itself is never stored');
      for (let i = 0; i < 50 && stored.lastUsedAt === null; i++) {
        await new Promise((r) => setTimeout(r, 10));
        stored.lastUsedAt = (await api.database.db.selectFrom('apiKeys').select('lastUsedAt').where('id', '=', body.key.id).executeTakeFirstOrThrow()).lastUsedAt;
      }
      assert.ok(stored.lastUsedAt !== null && Math.abs(stored.lastUsedAt - Date.now()) < 60_000);
    });

    test('keys: create shows the key once, list and read never do, revoke stops it at once', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account('business');
      const created = await api.fetch('/v1/keys', {
        method: 'POST',
        key,
        json: { name: 'door 1', scopes: ['checkin', 'events:read'], expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
      });
      assert.equal(created.status, 201);
      const body = await created.json();
      assert.match(body.key, /^mtg_[0-9A-Za-z]{40}$/);
      assert.match(body.id, /^key_[0-9a-z]{26}$/);
      assert.equal(created.headers.get('location'), `/v1/keys/${body.id}`);
      assert.equal(body.prefix, body.key.slice(0, 8));
      assert.deepEqual(body.scopes, ['checkin', 'events:read']);

      const read = await (await api.fetch(`/v1/keys/${body.id}`, { key })).json();
      assert.equal(read.key, undefined);
      assert.equal(read.name, 'door 1');
      const list = await (await api.fetch('/v1/keys', { key })).json();
      assert.equal(list.data.length, 2);
      assert.ok(list.data.every((k: { key?: string }) => k.key === undefined));

      assert.equal((await api.fetch('/v1/account', { key: body.key })).status, 200);
      const revoked = await api.fetch(`/v1/keys/${body.id}/revoke`, { method: 'POST', key });
      assert.equal(revoked.status, 200);
      assert.ok((await revoked.json()).revokedAt);
      await problem(await api.fetch('/v1/account', { key: body.key }), 401, 'api_key_revoked');
      assert.equal((await api.fetch(`/v1/keys/${body.id}/revoke`, { method: 'POST', key })).status, 200, 'revoking twice is a no-op');

      await problem(await api.fetch('/v1/keys', { method: 'POST', key, json: { expiresAt: '2001-01-01T00:00:00Z' } }), 400, 'invalid_request');
    });

    test('tenant isolation: another account sees 404, never the resource', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const a = await api.account('business');
      const b = await api.account('business');
      const aKeyId = (await (await api.fetch('/v1/account', { key: a.key })).json()).key.id;

      await problem(await api.fetch(`/v1/keys/${aKeyId}`, { key: b.key }), 404, 'not_found');
      await problem(await api.fetch(`/v1/keys/${aKeyId}/revoke`, { method: 'POST', key: b.key }), 404, 'not_found');
      assert.equal((await api.fetch('/v1/account', { key: a.key })).status, 200, "a's key still works");
      const bList = await (await api.fetch('/v1/keys', { key: b.key })).json();
      assert.ok(bList.data.every((k: { id: string }) => k.id !== aKeyId));

      // IDs of the wrong shape are a 404 too, never a 500.
      for (const id of ['nope', 'key_', `evt_${'0'.repeat(26)}`, "key_' or 1=1 --", 'x'.repeat(150)]) {
        await problem(await api.fetch(`/v1/keys/${encodeURIComponent(id)}`, { key: b.key }), 404, 'not_found');
      }
    });
  });
}

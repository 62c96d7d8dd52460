import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { eraseRetiredWebhookSecrets } from '../src/accounts/webhook-secret.repository.js';
import { enqueueMessages } from '../src/webhooks/outbox.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, until } from './helpers.js';

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** A webhook receiver on loopback that answers 204 and keeps what it got. */
async function receiver(t: TestContext) {
  const got: Delivery[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers as Record<string, string>, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

const OVERLAP_MS = 2000;
const ENV = { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_WEBHOOK_RETRY_SCHEDULE: '50ms', MONTAGE_WEBHOOK_SECRET_OVERLAP: `${OVERLAP_MS}ms` };

/** Whether a Standard Webhooks receiver holding `secret` accepts the delivery. */
const verifies = (secret: string, d: Delivery) => {
  try {
    new Webhook(secret).verify(d.body, d.headers);
    return true;
  } catch {
    return false;
  }
};

for (const engine of ENGINES) {
  describe(`webhook secret rotation (${engine})`, () => {
    test('after a rotation, deliveries verify with the old and the new secret for the overlap, then with the new one only', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key, accountId } = await api.account();
      const other = await api.account();
      const target = await receiver(t);
      const jobId = 'job_01m80eg3tperaacsapew6ns732';
      const deliver = async (n: number) => {
        await enqueueMessages(api.database.db, accountId, [{ event: 'blend.started', jobId, webhookUrl: target.url, data: { jobId, status: 'processing' } }]);
        await until(() => target.got.length === n, 5000, `delivery ${n}`);
        return target.got[n - 1]!;
      };

      const first = await (await api.fetch('/v1/account/webhook-secret', { key })).json();
      assert.deepEqual(Object.keys(first).sort(), ['previousSecretExpiresAt', 'rotationOverlapSeconds', 'secret']);
      assert.equal(first.rotationOverlapSeconds, OVERLAP_MS / 1000);
      assert.equal(first.previousSecretExpiresAt, null);
      const theirs = (await (await api.fetch('/v1/account/webhook-secret', { key: other.key })).json()).secret;
      const before = await deliver(1);
      assert.equal(before.headers['webhook-signature']!.split(' ').length, 1);
      assert.ok(verifies(first.secret, before));

      const rotatedAt = Date.now();
      const res = await api.fetch('/v1/account/webhook-secret/rotate', { method: 'POST', key });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const rotated = await res.json();
      assert.match(rotated.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.notEqual(rotated.secret, first.secret);
      const expires = Date.parse(rotated.previousSecretExpiresAt);
      assert.ok(expires >= rotatedAt + OVERLAP_MS && expires <= Date.now() + OVERLAP_MS, rotated.previousSecretExpiresAt);
      assert.deepEqual(await (await api.fetch('/v1/account/webhook-secret', { key })).json(), rotated, 'GET shows the new secret and the end of the overlap');

      // During the overlap: two signatures, so a receiver with either secret accepts the delivery.
      const during = await deliver(2);
      assert.ok(Date.now() < expires, 'delivered within the overlap');
      assert.equal(during.headers['webhook-signature']!.split(' ').length, 2, during.headers['webhook-signature']);
      assert.ok(verifies(rotated.secret, during), 'the new secret verifies');
      assert.ok(verifies(first.secret, during), 'the old secret still verifies');
      assert.ok(!verifies(theirs, during), "another account's secret does not");

      // After it: only the new secret.
      await until(() => Date.now() > expires + 50, OVERLAP_MS + 1000, 'the end of the overlap');
      assert.equal((await (await api.fetch('/v1/account/webhook-secret', { key })).json()).previousSecretExpiresAt, null);
      const after = await deliver(3);
      assert.equal(after.headers['webhook-signature']!.split(' ').length, 1);
      assert.ok(verifies(rotated.secret, after), 'the new secret verifies');
      assert.ok(!verifies(first.secret, after), 'the old secret no longer does');
      assert.equal((await (await api.fetch('/v1/account/webhook-secret', { key: other.key })).json()).secret, theirs, "another account's secret is untouched");
    });

    test('once its overlap has ended, a replaced secret is erased from the database, not only ignored', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), ENV);
      const { key, accountId } = await api.account();
      const target = await receiver(t);
      const created = await (await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: target.url, events: ['event.created'] } })).json();
      await api.fetch('/v1/account/webhook-secret/rotate', { method: 'POST', key });
      await api.fetch(`/v1/webhooks/${created.id}/rotate-secret`, { method: 'POST', key });
      const db = api.database.db;
      const stored = async () => [
        (await db.selectFrom('accounts').select('previousWebhookSecret').where('id', '=', accountId).executeTakeFirstOrThrow()).previousWebhookSecret,
        (await db.selectFrom('webhookSubscriptions').select('previousSecret').where('id', '=', created.id).executeTakeFirstOrThrow()).previousSecret,
      ];
      assert.equal((await eraseRetiredWebhookSecrets(db)), 0, 'nothing is erased while the overlap lasts');
      assert.ok((await stored()).every((secret) => typeof secret === 'string' && secret.startsWith('whsec_')));
      assert.equal(await eraseRetiredWebhookSecrets(db, Date.now() + OVERLAP_MS + 1), 2);
      assert.deepEqual(await stored(), [null, null]);
    });

    test('rotating twice retires the oldest secret at once; the route needs the webhooks scope and takes no body', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key, accountId } = await api.account();
      const target = await receiver(t);
      const original = (await (await api.fetch('/v1/account/webhook-secret', { key })).json()).secret;
      const second = await (await api.fetch('/v1/account/webhook-secret/rotate', { method: 'POST', key })).json();
      const third = await (await api.fetch('/v1/account/webhook-secret/rotate', { method: 'POST', key })).json();
      assert.equal(new Set([original, second.secret, third.secret]).size, 3);
      await enqueueMessages(api.database.db, accountId, [{ event: 'blend.started', jobId: 'job_x', webhookUrl: target.url, data: {} }]);
      await until(() => target.got.length === 1, 5000, 'the delivery');
      const d = target.got[0]!;
      assert.ok(verifies(third.secret, d) && verifies(second.secret, d), 'the newest and the one it replaced');
      assert.ok(!verifies(original, d), 'the oldest no longer');

      const blendOnly = await api.key(accountId, 'business', { scopes: ['blend'] });
      await problem(await api.fetch('/v1/account/webhook-secret/rotate', { method: 'POST', key: blendOnly }), 403, 'insufficient_scope');
      await problem(await api.fetch('/v1/account/webhook-secret/rotate', { method: 'POST', key, json: { overlap: '1h' } }), 400, 'invalid_request');
      assert.equal((await (await api.fetch('/v1/account/webhook-secret', { key })).json()).secret, third.secret, 'refused rotations change nothing');
    });
    test("a subscription's secret rotates the same way: both secrets verify during the overlap, the new one only after", async (t) => {
      const api = await startApp(t, await freshStorage(t, engine), ENV, { workers: true });
      const { key, accountId } = await api.account();
      const other = await api.account();
      const target = await receiver(t);
      const created = await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: target.url, events: ['event.created'] } });
      assert.equal(created.status, 201, await created.clone().text());
      const sub = await created.json();
      assert.equal(sub.previousSecretExpiresAt, null);
      const deliver = async (n: number) => {
        await enqueueMessages(api.database.db, accountId, [{ event: 'event.created', data: { id: `evt_${n}` } }]);
        await until(() => target.got.length === n, 5000, `delivery ${n}`);
        return target.got[n - 1]!;
      };

      await problem(await api.fetch(`/v1/webhooks/${sub.id}/rotate-secret`, { method: 'POST', key: other.key }), 404, 'not_found');
      const rotatedAt = Date.now();
      const res = await api.fetch(`/v1/webhooks/${sub.id}/rotate-secret`, { method: 'POST', key });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const rotated = await res.json();
      assert.equal(rotated.id, sub.id);
      assert.match(rotated.secret, /^whsec_/);
      assert.notEqual(rotated.secret, sub.secret);
      const expires = Date.parse(rotated.previousSecretExpiresAt);
      assert.ok(expires >= rotatedAt + OVERLAP_MS && expires <= Date.now() + OVERLAP_MS, rotated.previousSecretExpiresAt);
      const read = await (await api.fetch(`/v1/webhooks/${sub.id}`, { key })).json();
      assert.equal(read.secret, undefined, 'reading never shows the secret');
      assert.equal(read.previousSecretExpiresAt, rotated.previousSecretExpiresAt);

      const during = await deliver(1);
      assert.ok(Date.now() < expires, 'delivered within the overlap');
      assert.ok(verifies(rotated.secret, during), 'the new secret verifies');
      assert.ok(verifies(sub.secret, during), 'the old secret still verifies');

      await until(() => Date.now() > expires + 50, OVERLAP_MS + 1000, 'the end of the overlap');
      const after = await deliver(2);
      assert.ok(verifies(rotated.secret, after), 'the new secret verifies');
      assert.ok(!verifies(sub.secret, after), 'the old secret no longer does');
      assert.equal((await (await api.fetch(`/v1/webhooks/${sub.id}`, { key })).json()).previousSecretExpiresAt, null);
    });
  });
}

/**
 * Stripe as a payment provider (docs/events.md, "Stripe"), on every engine of the run, against a
 * local stand-in of Stripe's API (test/stripe-standin.ts): Stripe itself cannot be reached from the
 * test machines. The account's keys over the API (never shown back), the provider's Checkout
 * Session and Refund calls through the official `stripe` package, the webhook endpoint's signature
 * check and its exactly-once effect, and an order paid end to end with a real webhook receiver.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import Stripe from 'stripe';
import { loadConfig } from '../src/config.js';
import { providerFor } from '../src/events/payments/providers.js';
import { sessionExpiry, stripeClient, stripeProvider } from '../src/events/payments/stripe.js';
import { RefundRefused } from '../src/events/payments/provider.js';
import { purgeOldStripeEvents } from '../src/events/payments/stripe-webhook.service.js';
import { expireOrder } from '../src/events/orders.service.js';
import { settlePendingRefund } from '../src/events/refunds.service.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, type TestApp, until, FAST_WEBHOOKS as FAST, jsonClient as client, type JsonClient as Client, hookReceiver as receiver } from './helpers.js';
import { startStripeStandin, type StripeStandin } from './stripe-standin.js';

type Json = any;

const HOUR = 3_600_000;
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();


async function standin(t: TestContext): Promise<StripeStandin> {
  const s = await startStripeStandin();
  onCleanup(t, () => s.close());
  return s;
}

/** An app whose Stripe calls go to the stand-in, and an account with the stand-in's keys saved. */
async function stripeApp(t: TestContext, engine: (typeof ENGINES)[number], s: StripeStandin, options: { workers?: boolean } = {}) {
  const api = await startApp(t, await freshStorage(t, engine), { ...FAST, MONTAGE_STRIPE_API_BASE: s.apiBase }, options);
  const account = await api.account();
  const c = client(api, account.key);
  await c.expect(200, 'PUT', '/payment-providers/stripe', { secretKey: s.secretKey, webhookSecret: s.webhookSecret });
  // The settings name the URL under PUBLIC_URL; the test server listens on a port of its own.
  s.webhookUrl = `${api.url}/v1/payments/stripe/webhook/${account.accountId}`;
  return { api, account, c };
}

/** A published paid event (EUR) with one ticket type of `quantity` places at `price`. */
async function paidEvent(c: Client, { price = 2500, quantity = 10, holdMinutes }: { price?: number; quantity?: number; holdMinutes?: number } = {}) {
  const startsAt = Date.now() + 24 * HOUR;
  const event = await c.expect(201, 'POST', '/events', {
    name: 'Night Market',
    startsAt: iso(startsAt),
    endsAt: iso(startsAt + 3 * HOUR),
    timezone: 'UTC',
    currency: 'EUR',
    ...(holdMinutes === undefined ? {} : { holdMinutes }),
  });
  const type = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'Standing', price, quantity });
  await c.expect(200, 'POST', `/events/${event.id}/publish`);
  return { event, type };
}

const checkoutRequest = (accountId: string, overrides: Record<string, unknown> = {}) => ({
  accountId,
  orderId: 'ord_01m80eg3tperaacsapew6ns732',
  eventId: 'evt_01m80eg3tperaacsapew6ns732',
  eventName: 'Night Market',
  total: 7500,
  currency: 'EUR',
  buyer: { name: 'Ada Lovelace', email: 'ada@example.com' },
  items: [
    { name: 'Standing', quantity: 2, unitPrice: 2500 },
    { name: 'Seated', quantity: 1, unitPrice: 2500 },
  ],
  expiresAt: Date.now() + 15 * MINUTE,
  successUrl: 'https://shop.example.com/thanks',
  cancelUrl: 'https://shop.example.com/basket',
  ...overrides,
});


describe('Stripe settings (configuration)', () => {
  test('MONTAGE_STRIPE_API_BASE: scheme, host and port for the package; anything more is refused', () => {
    assert.equal(loadConfig({}).stripeApiBase, null);
    assert.deepEqual(loadConfig({ MONTAGE_STRIPE_API_BASE: 'http://127.0.0.1:12111' }).stripeApiBase, { host: '127.0.0.1', port: 12111, protocol: 'http' });
    assert.deepEqual(loadConfig({ MONTAGE_STRIPE_API_BASE: 'https://stripe-proxy.internal' }).stripeApiBase, { host: 'stripe-proxy.internal', port: 443, protocol: 'https' });
    assert.deepEqual(loadConfig({ MONTAGE_STRIPE_API_BASE: 'http://[::1]:9000/' }).stripeApiBase, { host: '::1', port: 9000, protocol: 'http' });
    assert.throws(() => loadConfig({ MONTAGE_STRIPE_API_BASE: 'http://127.0.0.1:12111/v1' }), /MONTAGE_STRIPE_API_BASE: must be a scheme, a host/);
    assert.throws(() => loadConfig({ MONTAGE_STRIPE_API_BASE: 'ftp://example.com' }), /MONTAGE_STRIPE_API_BASE: must start with http:\/\/ or https:\/\//);
  });

  test("a Checkout Session ends with the hold, but never before Stripe's 30 minutes nor after its 24 hours", () => {
    const now = Date.UTC(2026, 10, 27, 12, 0, 0);
    assert.equal(sessionExpiry(now + 2 * HOUR, now), (now + 2 * HOUR) / 1000, 'a 2-hour hold: the session ends with it');
    assert.equal(sessionExpiry(now + 15 * MINUTE, now), (now + 32 * MINUTE) / 1000, 'a 15-minute hold: 30 minutes and a 2-minute margin');
    assert.equal(sessionExpiry(now + 48 * HOUR, now), (now + 24 * HOUR - 2 * MINUTE) / 1000, 'never past 24 hours');
  });
});

for (const engine of ENGINES) {
  describe(`Stripe (${engine})`, () => {
    test('keys over the API: saved, shown by their last 4 characters only, replaced, deleted; validated; needs a key with every scope; per account', async (t) => {
      const s = await standin(t);
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_STRIPE_API_BASE: s.apiBase, PUBLIC_URL: 'https://tickets.example.com' });
      const { key, accountId } = await api.account();
      const c = client(api, key);

      await problem(await c.send('GET', '/payment-providers/stripe'), 404, 'not_found');
      const saved = await c.expect(200, 'PUT', '/payment-providers/stripe', { secretKey: s.secretKey, webhookSecret: s.webhookSecret });
      assert.deepEqual(
        { ...saved, createdAt: undefined, updatedAt: undefined },
        {
          object: 'stripe_settings',
          mode: 'test',
          keyType: 'secret',
          secretKeyLast4: s.secretKey.slice(-4),
          webhookUrl: `https://tickets.example.com/v1/payments/stripe/webhook/${accountId}`,
          createdAt: undefined,
          updatedAt: undefined,
        },
      );
      const shown = await c.expect(200, 'GET', '/payment-providers/stripe');
      assert.deepEqual(shown, saved);
      assert.ok(!JSON.stringify(shown).includes(s.secretKey.slice(8, -4)) && !JSON.stringify(shown).includes(s.webhookSecret), 'no secret in the answer');

      const restricted = 'rk_live_' + 'R'.repeat(20) + 'Zq9x';
      const replaced = await c.expect(200, 'PUT', '/payment-providers/stripe', { secretKey: restricted, webhookSecret: s.webhookSecret });
      assert.deepEqual([replaced.mode, replaced.keyType, replaced.secretKeyLast4, replaced.createdAt], ['live', 'restricted', 'Zq9x', saved.createdAt]);

      for (const [body, path] of [
        [{ secretKey: 'pk_test_' + 'x'.repeat(24), webhookSecret: s.webhookSecret }, '/secretKey'],
        [{ secretKey: s.secretKey, webhookSecret: 'secret' }, '/webhookSecret'],
        [{ secretKey: s.secretKey }, '/webhookSecret'],
        [{ secretKey: s.secretKey, webhookSecret: s.webhookSecret, apiBase: 'http://evil.example' }, '/apiBase'],
      ] as const) {
        const err = await problem(await c.send('PUT', '/payment-providers/stripe', body), 400, 'invalid_request');
        assert.ok(err.errors.some((e: Json) => e.path === path), JSON.stringify(err.errors));
        assert.ok(!JSON.stringify(err).includes(s.secretKey), 'the key is not echoed');
      }

      const other = client(api, (await api.account()).key);
      await problem(await other.send('GET', '/payment-providers/stripe'), 404, 'not_found');
      await problem(await other.send('DELETE', '/payment-providers/stripe'), 404, 'not_found');
      const readOnly = client(api, await api.key(accountId, 'business', { scopes: ['events:read', 'events:write'] }));
      await problem(await readOnly.send('GET', '/payment-providers/stripe'), 403, 'insufficient_scope');
      await problem(await readOnly.send('PUT', '/payment-providers/stripe', { secretKey: s.secretKey, webhookSecret: s.webhookSecret }), 403, 'insufficient_scope');

      await c.expect(204, 'DELETE', '/payment-providers/stripe');
      await problem(await c.send('GET', '/payment-providers/stripe'), 404, 'not_found');
      const row = await api.database.db.selectFrom('stripeAccounts').selectAll().where('accountId', '=', accountId).executeTakeFirst();
      assert.equal(row, undefined, 'the keys are gone from the database');
    });

    test('the provider opens a Checkout Session through the package: line items, metadata, expiry within Stripe\'s bounds, one session per order', async (t) => {
      const s = await standin(t);
      const { api, account } = await stripeApp(t, engine, s);
      const provider = await stripeProvider(api.database.db, account.accountId);
      assert.equal(provider.name, 'stripe');

      const before = Math.floor(Date.now() / 1000);
      const checkout = await provider.begin(checkoutRequest(account.accountId));
      assert.match(checkout.reference!, /^cs_test_/);
      assert.equal(checkout.checkoutUrl, `https://checkout.stripe.com/c/pay/${checkout.reference}`);
      const session = s.sessions.get(checkout.reference!)!;
      assert.deepEqual(
        { ...session, id: undefined, created: undefined, expires_at: undefined, url: undefined },
        {
          id: undefined,
          object: 'checkout.session',
          amount_subtotal: 7500,
          amount_total: 7500,
          cancel_url: 'https://shop.example.com/basket',
          client_reference_id: 'ord_01m80eg3tperaacsapew6ns732',
          created: undefined,
          currency: 'eur',
          customer_email: 'ada@example.com',
          expires_at: undefined,
          line_items: [
            { quantity: 2, price_data: { currency: 'eur', unit_amount: 2500, product_data: { name: 'Night Market: Standing' } } },
            { quantity: 1, price_data: { currency: 'eur', unit_amount: 2500, product_data: { name: 'Night Market: Seated' } } },
          ],
          livemode: false,
          metadata: { order_id: 'ord_01m80eg3tperaacsapew6ns732', account_id: account.accountId, event_id: 'evt_01m80eg3tperaacsapew6ns732' },
          mode: 'payment',
          payment_intent: null,
          payment_status: 'unpaid',
          status: 'open',
          success_url: 'https://shop.example.com/thanks',
          url: undefined,
        },
      );
      // The 15-minute hold is shorter than Stripe allows: the session lives 32 minutes.
      assert.ok(session.expires_at >= before + 32 * 60 && session.expires_at <= before + 33 * 60, String(session.expires_at - before));
      const call = s.requests.at(-1)!;
      assert.equal(call.idempotencyKey, 'montage-checkout-ord_01m80eg3tperaacsapew6ns732');
      assert.deepEqual((call.body.payment_intent_data as Json).metadata, session.metadata, 'the PaymentIntent carries the order too');

      // A retried begin of the same order gets the same session back (Stripe's idempotency), not a second one.
      // (A 45-minute hold: the session ends with it, so both calls send the same parameters to the second.)
      const longer = checkoutRequest(account.accountId, { orderId: 'ord_01m80eg3tperaacsapew6ns738', expiresAt: Date.now() + 45 * MINUTE });
      const once = await provider.begin(longer);
      assert.equal((await provider.begin(longer)).reference, once.reference);
      assert.equal(s.sessions.size, 2);

      // Items that do not add up to the total (a discount): one line with the total.
      const discounted = await provider.begin(checkoutRequest(account.accountId, { orderId: 'ord_01m80eg3tperaacsapew6ns733', total: 6000, expiresAt: Date.now() + 3 * HOUR }));
      const single = s.sessions.get(discounted.reference!)!;
      assert.deepEqual(single.line_items, [{ quantity: 1, price_data: { currency: 'eur', unit_amount: 6000, product_data: { name: 'Night Market: order ord_01m80eg3tperaacsapew6ns733' } } }]);
      assert.ok(Math.abs(single.expires_at - Math.floor((Date.now() + 3 * HOUR) / 1000)) <= 5, 'a 3-hour hold: the session ends with it');

      // The package retries Stripe's 500s with the same idempotency key; past its retries: 502.
      s.failNext(1);
      const retried = await provider.begin(checkoutRequest(account.accountId, { orderId: 'ord_01m80eg3tperaacsapew6ns734' }));
      assert.match(retried.reference!, /^cs_test_/);
      s.failNext(10);
      await assert.rejects(provider.begin(checkoutRequest(account.accountId, { orderId: 'ord_01m80eg3tperaacsapew6ns735' })), (err: Json) => err.code === 'payment_provider_error' && /api_error \(HTTP 500\)/.test(err.detail));
      s.failNext(0);
      await assert.rejects(provider.begin(checkoutRequest(account.accountId, { orderId: 'ord_01m80eg3tperaacsapew6ns736', successUrl: null })), (err: Json) => err.code === 'invalid_request');

      // A wrong key: Stripe's 401 becomes 502 payment_provider_error, and the key does not show in it.
      const wrongKey = 'sk_test_' + 'W'.repeat(24) + 'abcd';
      await client(api, account.key).expect(200, 'PUT', '/payment-providers/stripe', { secretKey: wrongKey, webhookSecret: s.webhookSecret });
      const wrong = await stripeProvider(api.database.db, account.accountId);
      await assert.rejects(wrong.begin(checkoutRequest(account.accountId, { orderId: 'ord_01m80eg3tperaacsapew6ns737' })), (err: Json) => err.code === 'payment_provider_error' && !err.detail.includes('WWWW'));

      // No keys: the provider cannot be had.
      const bare = await api.account();
      await assert.rejects(stripeProvider(api.database.db, bare.accountId), (err: Json) => err.code === 'payment_provider_not_configured');
    });

    test('the provider refunds the PaymentIntent with the idempotency key: a retry refunds once; more than was paid is refused', async (t) => {
      const s = await standin(t);
      const { api, account } = await stripeApp(t, engine, s);
      const provider = await stripeProvider(api.database.db, account.accountId);
      const { reference } = await provider.begin(checkoutRequest(account.accountId));
      s.webhookUrl = 'http://127.0.0.1:1/nowhere';
      await s.pay(reference!).catch(() => undefined);
      const paymentIntent = s.sessions.get(reference!)!.payment_intent!;

      const refund = { accountId: account.accountId, orderId: 'ord_01m80eg3tperaacsapew6ns732', paymentReference: paymentIntent, amount: 2500, currency: 'EUR', idempotencyKey: 'pay_01m80eg3tperaacsapew6ns7aa' };
      const first = await provider.refund(refund);
      assert.match(first.reference!, /^re_/);
      assert.deepEqual(await provider.refund(refund), first, 'the same idempotency key: the same refund');
      assert.equal(s.refunds.length, 1);
      assert.deepEqual(
        { ...s.refunds[0]!, id: undefined, charge: undefined, created: undefined },
        { id: undefined, object: 'refund', amount: 2500, charge: undefined, created: undefined, currency: 'eur', metadata: { order_id: refund.orderId, account_id: account.accountId }, payment_intent: paymentIntent, reason: null, status: 'succeeded' },
      );
      assert.equal(s.requests.at(-1)!.idempotencyKey, refund.idempotencyKey);

      // Stripe's 4xx is a definite refusal (the refund fails); a 5xx after the package's retries says nothing of the money (the refund stays pending).
      await assert.rejects(provider.refund({ ...refund, amount: 6000, idempotencyKey: 'pay_01m80eg3tperaacsapew6ns7ab' }), (err: Json) => err instanceof RefundRefused && /amount_too_large/.test(err.message));
      await assert.rejects(provider.refund({ ...refund, paymentReference: null, idempotencyKey: 'pay_01m80eg3tperaacsapew6ns7ac' }), (err: Json) => err instanceof RefundRefused);
      s.failNext(3);
      await assert.rejects(provider.refund({ ...refund, amount: 1000, idempotencyKey: 'pay_01m80eg3tperaacsapew6ns7ae' }), (err: Json) => !(err instanceof RefundRefused) && err.code === 'payment_provider_error');
      assert.equal(s.refunds.length, 1, 'nothing refunded by the failed calls');
      const rest = await provider.refund({ ...refund, amount: 5000, idempotencyKey: 'pay_01m80eg3tperaacsapew6ns7ad' });
      assert.match(rest.reference!, /^re_/);
      assert.equal(s.refunds.reduce((sum, r) => sum + r.amount, 0), 7500);
    });

    test("the webhook endpoint: no API key, Stripe's signature over the raw bytes or 400; an account without Stripe answers as a bad signature; other events ignored; a repeated event acted on once", async (t) => {
      const s = await standin(t);
      const { api, account } = await stripeApp(t, engine, s);
      const event = (type: string, object: Record<string, unknown> = {}) => ({
        id: `evt_test_${Math.random().toString(36).slice(2)}`,
        object: 'event',
        api_version: Stripe.API_VERSION,
        created: Math.floor(Date.now() / 1000),
        data: { object: { id: 'cs_test_x', object: 'checkout.session', mode: 'payment', metadata: {}, ...object } },
        livemode: false,
        type,
      });

      const expired = event('checkout.session.expired');
      assert.deepEqual(await s.deliver(expired), { status: 200, body: { received: true, outcome: 'ignored' } });
      assert.deepEqual(await s.deliver(expired), { status: 200, body: { received: true, outcome: 'duplicate' } });
      const unpaid = event('checkout.session.completed', { payment_status: 'unpaid', metadata: { order_id: 'ord_01m80eg3tperaacsapew6ns732', account_id: account.accountId } });
      assert.deepEqual((await s.deliver(unpaid)).body.outcome, 'ignored', 'a delayed payment method: wait for async_payment_succeeded');
      const foreign = event('checkout.session.completed', { payment_status: 'paid', metadata: { order_id: 'ord_01m80eg3tperaacsapew6ns732', account_id: 'acct_01m80eg3tperaacsapew6ns732' } });
      assert.deepEqual((await s.deliver(foreign)).body.outcome, 'ignored', "a session of another account's orders is not acted on");

      const forged = await s.deliver(event('checkout.session.expired'), 'whsec_' + 'f'.repeat(32));
      assert.equal(forged.status, 400);
      assert.equal(forged.body.code, 'stripe_signature_invalid');
      const payload = JSON.stringify(event('checkout.session.expired'));
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: s.webhookSecret });
      const post = (body: string, headers: Record<string, string>) => fetch(s.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      await problem(await post(payload.replace('"livemode":false', '"livemode": false'), { 'stripe-signature': header }), 400, 'stripe_signature_invalid');
      await problem(await post(payload, {}), 400, 'stripe_signature_invalid');
      const stale = Stripe.webhooks.generateTestHeaderString({ payload, secret: s.webhookSecret, timestamp: Math.floor(Date.now() / 1000) - 600 });
      await problem(await post(payload, { 'stripe-signature': stale }), 400, 'stripe_signature_invalid');
      assert.equal((await post(payload, { 'stripe-signature': header })).status, 200, 'the exact bytes Stripe signed pass');
      assert.equal((await post(payload, { 'stripe-signature': header, authorization: 'Bearer nonsense' })).status, 200, 'an Authorization header is not looked at');
      await problem(await fetch(s.webhookUrl, { method: 'POST', headers: { 'content-type': 'text/plain', 'stripe-signature': header }, body: payload }), 415, 'unsupported_media_type');

      const elsewhere = await api.account();
      await problem(await fetch(s.webhookUrl.replace(account.accountId, elsewhere.accountId), { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload }), 400, 'stripe_signature_invalid');
      await problem(await fetch(s.webhookUrl.replace(account.accountId, 'nonsense'), { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload }), 400, 'stripe_signature_invalid');
      const api1 = await fetch(s.webhookUrl.replace('/v1/', '/api/v1/'), { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: JSON.stringify(expired), secret: s.webhookSecret }) }, body: JSON.stringify(expired) });
      assert.deepEqual(await api1.json(), { received: true, outcome: 'duplicate' }, 'the /api/v1 copy is the same endpoint');

      // Stripe's retries are long over after 30 days: the clean-up forgets older events, and only those.
      const db = api.database.db;
      await db.insertInto('stripeEvents').values({ accountId: account.accountId, eventId: 'evt_test_old', type: 'checkout.session.completed', orderId: null, outcome: 'ignored', createdAt: Date.now() - 31 * 24 * HOUR }).execute();
      const kept = (await db.selectFrom('stripeEvents').select('eventId').execute()).length;
      assert.equal(await purgeOldStripeEvents(db), 1);
      assert.equal((await db.selectFrom('stripeEvents').select('eventId').execute()).length, kept - 1);
      assert.equal((await s.deliver(expired)).body.outcome, 'duplicate', 'a recent event is still remembered');
    });

    test('end to end: a pending order paid on Stripe Checkout completes by the signed webhook, once; payment.completed says stripe; the refund reaches Stripe with its idempotency key', async (t) => {
      const s = await standin(t);
      const { api, account, c } = await stripeApp(t, engine, s, { workers: true });
      const hook = await receiver(t);
      await c.expect(201, 'POST', '/webhooks', { url: hook.url, events: ['payment.completed', 'ticket.purchased'] });
      const { event, type } = await paidEvent(c, { price: 2500, quantity: 3, holdMinutes: 45 });

      // Stripe's hosted page needs somewhere to send the buyer back: without successUrl, 400 and nothing held.
      const noReturn = await problem(
        await c.send('POST', `/events/${event.id}/orders`, { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId: type.id, quantity: 1 }], payment: { provider: 'stripe' } }),
        400,
        'invalid_request',
      );
      assert.deepEqual(noReturn.errors.map((e: Json) => e.path), ['/payment/successUrl']);
      assert.equal(s.sessions.size, 0);
      // Refused before the order was placed: no order was created and cancelled, so no order.cancelled either.
      assert.deepEqual((await c.expect(200, 'GET', `/events/${event.id}/orders`)).data, []);
      assert.equal(await api.database.db.selectFrom('webhookMessages').select('id').where('eventType', '=', 'order.cancelled').executeTakeFirst(), undefined);
      assert.deepEqual((({ held, sold }) => ({ held, sold }))((await c.expect(200, 'GET', `/events/${event.id}/tickets`)).data[0]), { held: 0, sold: 0 });

      const placedAt = Date.now();
      const pending = await c.expect(201, 'POST', `/events/${event.id}/orders`, {
        buyer: { name: 'Ada Lovelace', email: 'ada@example.com' },
        items: [{ ticketTypeId: type.id, quantity: 2 }],
        payment: { provider: 'stripe', successUrl: 'https://shop.example.com/thanks', cancelUrl: 'https://shop.example.com/basket' },
      });
      assert.equal(pending.status, 'pending');
      assert.deepEqual(pending.tickets, [], 'no ticket before the money arrives');
      assert.equal(pending.payment.provider, 'stripe');
      const sessionId = /\/c\/pay\/(cs_test_\w+)$/.exec(pending.payment.checkoutUrl)?.[1];
      assert.ok(sessionId && s.sessions.has(sessionId), pending.payment.checkoutUrl);
      const session = s.sessions.get(sessionId)!;
      assert.deepEqual([session.amount_total, session.currency, session.client_reference_id, session.metadata.order_id, session.metadata.account_id], [5000, 'eur', pending.id, pending.id, account.accountId]);
      // A 45-minute hold: the Checkout Session ends with it.
      assert.ok(Math.abs(session.expires_at - Math.floor(Date.parse(pending.expiresAt) / 1000)) <= 1, `${session.expires_at} vs ${pending.expiresAt}`);
      assert.ok(Date.parse(pending.expiresAt) >= placedAt + 45 * MINUTE - 1000);
      assert.equal((await c.expect(200, 'GET', `/events/${event.id}/tickets`)).data[0].held, 2);

      // The buyer pays; Stripe sends the signed event four times at once, then again five times (at least once).
      const paid = await s.pay(sessionId, 4);
      assert.deepEqual(paid.all.map((r) => r.status), [200, 200, 200, 200]);
      assert.ok(paid.all.some((r) => r.body.outcome === 'completed'), JSON.stringify(paid.all));
      assert.ok(paid.all.every((r) => ['completed', 'duplicate'].includes(r.body.outcome)), JSON.stringify(paid.all));
      const again = await Promise.all(Array.from({ length: 5 }, () => s.deliver(paid.event)));
      assert.deepEqual(again.map((r) => r.body.outcome), Array(5).fill('duplicate'));
      // A second event about the same payment (a new Stripe event id) finds the order completed: no second effect either.
      const late = { ...paid.event, id: `${paid.event.id}_late`, type: 'checkout.session.async_payment_succeeded' };
      assert.equal((await s.deliver(late)).body.outcome, 'completed');

      const order = await c.expect(200, 'GET', `/orders/${pending.id}`);
      const retrieved = await stripeClient(s.secretKey).checkout.sessions.retrieve(sessionId);
      assert.deepEqual([retrieved.status, retrieved.payment_status, retrieved.client_reference_id], ['complete', 'paid', pending.id]);
      const paymentIntent = retrieved.payment_intent as string;
      assert.equal(order.status, 'completed');
      assert.equal(order.tickets.length, 2);
      assert.deepEqual(order.payment, { provider: 'stripe', status: 'paid', checkoutUrl: null });
      assert.deepEqual(order.payments.map((p: Json) => [p.kind, p.provider, p.amount, p.currency, p.status, p.reference]), [['charge', 'stripe', 5000, 'EUR', 'succeeded', paymentIntent]]);
      const inventory = (await c.expect(200, 'GET', `/events/${event.id}/tickets`)).data[0];
      assert.deepEqual([inventory.sold, inventory.held, inventory.available], [2, 0, 1]);

      await until(() => hook.got.filter((m) => m.event === 'payment.completed').length === 1 && hook.got.filter((m) => m.event === 'ticket.purchased').length === 2, 10_000, 'the webhooks');
      await new Promise((r) => setTimeout(r, 300));
      const completions = hook.got.filter((m) => m.event === 'payment.completed');
      assert.equal(completions.length, 1, 'one payment.completed for all the deliveries');
      assert.deepEqual([completions[0].data.id, completions[0].data.provider, completions[0].data.amount], [pending.id, 'stripe', 5000]);

      // A refund through the provider (Montage's refund route is another part of the box office): Stripe gets the PaymentIntent and the key.
      const provider = await providerFor(api.database.db, account.accountId, 'stripe');
      const charge = order.payments[0];
      const refund = await provider.refund({ accountId: account.accountId, orderId: order.id, paymentReference: charge.reference, amount: 2500, currency: 'EUR', idempotencyKey: 'pmt_01m80eg3tperaacsapew6ns7zz' });
      assert.match(refund.reference!, /^re_/);
      const call = s.requests.at(-1)!;
      assert.deepEqual([call.method, call.path, call.idempotencyKey, call.body.payment_intent, call.body.amount], ['POST', '/v1/refunds', 'pmt_01m80eg3tperaacsapew6ns7zz', paymentIntent, '2500']);
    });

    test('a Stripe order whose balance was paid by hand gives back through Stripe at most what Stripe took, and the rest as a manual refund', async (t) => {
      const s = await standin(t);
      const { c } = await stripeApp(t, engine, s);
      const { event, type } = await paidEvent(c, { price: 2500, quantity: 5, holdMinutes: 45 });
      const vip = await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'VIP', price: 4000, quantity: 5 });
      const pending = await c.expect(201, 'POST', `/events/${event.id}/orders`, {
        buyer: { name: 'Ada Lovelace', email: 'ada@example.com' },
        items: [{ ticketTypeId: type.id, quantity: 1 }],
        payment: { provider: 'stripe', successUrl: 'https://shop.example.com/thanks' },
      });
      const sessionId = /\/c\/pay\/(cs_test_\w+)$/.exec(pending.payment.checkoutUrl)![1]!;
      await s.pay(sessionId, 1);
      const paid = await c.expect(200, 'GET', `/orders/${pending.id}`);
      assert.equal(paid.status, 'completed');
      // Moved to VIP: 1500 owed, paid at the desk.
      const moved = await c.expect(200, 'POST', `/orders/${pending.id}/changes`, { changeTypes: [{ ticketId: paid.tickets[0].id, ticketTypeId: vip.id }] });
      assert.equal(moved.balanceDue, 1500);
      await c.expect(200, 'POST', `/orders/${pending.id}/confirm`, {});
      const before = s.requests.filter((r) => r.path === '/v1/refunds').length;
      // All of it back: 2500 through Stripe (what it took), 1500 by hand.
      const refund = await c.expect(201, 'POST', `/orders/${pending.id}/refunds`, {});
      assert.deepEqual([refund.provider, refund.amount, refund.status], ['stripe', 2500, 'succeeded']);
      const calls = s.requests.filter((r) => r.path === '/v1/refunds').slice(before);
      assert.deepEqual(calls.map((r) => r.body.amount), ['2500']);
      const order = await c.expect(200, 'GET', `/orders/${pending.id}`);
      assert.deepEqual(
        order.payments.map((p: Json) => [p.kind, p.provider, p.amount, p.status]),
        [['charge', 'stripe', 2500, 'succeeded'], ['charge', 'manual', 1500, 'succeeded'], ['refund', 'stripe', 2500, 'succeeded'], ['refund', 'manual', 1500, 'succeeded']],
      );
      assert.equal(order.refundedAmount, 4000);
      await problem(await c.send('POST', `/orders/${pending.id}/refunds`, { amount: 1 }), 409, 'refund_exceeds_paid');
    });

    test("an event's cancellation refunds its Stripe and manual orders through their providers, once; a refund without an answer stays pending and its job settles it with the same key", async (t) => {
      const s = await standin(t);
      const { api, account, c } = await stripeApp(t, engine, s);
      const { event, type } = await paidEvent(c, { price: 2500, quantity: 10 });
      const buyer = { name: 'Ada Lovelace', email: 'ada@example.com' };
      const stripe = { provider: 'stripe', successUrl: 'https://shop.example.com/thanks' };
      const sessionOf = (o: Json) => /(cs_test_\w+)$/.exec(o.payment.checkoutUrl)![1]!;
      const first = await c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer, items: [{ ticketTypeId: type.id, quantity: 2 }], payment: stripe });
      const second = await c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer, items: [{ ticketTypeId: type.id, quantity: 1 }], payment: stripe });
      const manual = await c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer, items: [{ ticketTypeId: type.id, quantity: 1 }], payment: { provider: 'manual' } });
      for (const o of [first, second]) assert.equal((await s.pay(sessionOf(o))).body.outcome, 'completed');
      await c.expect(200, 'POST', `/orders/${manual.id}/confirm`);
      // The first order's refund: 2500 already went back by hand through the API; what is left is refunded, not the ticket prices.
      await c.expect(201, 'POST', `/orders/${first.id}/refunds`, { amount: 1000 });
      const refundsBefore = s.refunds.length;

      // Stripe answers 500 to the first refund call of the cancellation, and to the package's two retries.
      s.failNext(3);
      await c.expect(200, 'POST', `/events/${event.id}/cancel`);
      const refundsOf = async (o: Json) => (await c.expect(200, 'GET', `/orders/${o.id}`)).payments.filter((p: Json) => p.kind === 'refund' && p.amount !== 1000);
      const [a, b, m] = [await refundsOf(first), await refundsOf(second), await refundsOf(manual)];
      const pendingOne = [...a, ...b].filter((p: Json) => p.status === 'pending');
      assert.equal(pendingOne.length, 1, JSON.stringify([a, b]));
      assert.deepEqual(a.map((p: Json) => p.amount).sort(), [1500, 2500].sort((x, y) => x - y), 'each ticket its worth, capped by what the order has left');
      assert.deepEqual(b.map((p: Json) => [p.amount, p.provider]), [[2500, 'stripe']]);
      assert.deepEqual(m.map((p: Json) => [p.amount, p.provider, p.status, p.reference]), [[2500, 'manual', 'succeeded', null]]);
      for (const p of [...a, ...b].filter((p: Json) => p.status === 'succeeded')) assert.match(p.reference, /^re_/);
      assert.equal(s.refunds.length - refundsBefore, 2, 'two Stripe refunds went through; the third had no answer');
      // The amount stays reserved: nothing more to refund, so no second refund of the same money.
      for (const o of [first, second, manual]) await problem(await c.send('POST', `/orders/${o.id}/refunds`, {}), 409, 'refund_exceeds_paid');

      // The refund's job asks Stripe again with the refund's id as the key, and records the outcome.
      assert.deepEqual(await settlePendingRefund(api.database.db, { accountId: account.accountId, paymentId: pendingOne[0].id }), { status: 'settled' });
      assert.deepEqual(await settlePendingRefund(api.database.db, { accountId: account.accountId, paymentId: pendingOne[0].id }), { status: 'settled' }, 'settled already: nothing to do');
      assert.equal(s.refunds.length - refundsBefore, 3);
      const keys = s.requests.filter((r) => r.path === '/v1/refunds' && r.idempotencyKey === pendingOne[0].id);
      assert.equal(keys.length, 4, 'three calls without an answer and the job\'s, all with the same key');
      for (const o of [first, second, manual]) {
        const read = await c.expect(200, 'GET', `/orders/${o.id}`);
        assert.deepEqual([read.refundedAmount, read.payment.status], [o.total, 'refunded'], o.id);
        assert.ok(read.payments.every((p: Json) => p.status === 'succeeded'));
      }
    });

    test("an order's hold that runs out expires its Checkout Session; best effort: Stripe away, the order expires all the same", async (t) => {
      const s = await standin(t);
      const { api, account, c } = await stripeApp(t, engine, s);
      const { event, type } = await paidEvent(c, { price: 1500, quantity: 5 });
      const place = () => c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId: type.id, quantity: 1 }], payment: { provider: 'stripe', successUrl: 'https://shop.example.com/thanks' } });
      const [away, reached] = [await place(), await place()];
      const sessionOf = (o: Json) => /(cs_test_\w+)$/.exec(o.payment.checkoutUrl)![1]!;
      const later = Date.now() + 24 * HOUR;
      const expire = (o: Json) => expireOrder(api.database.db, { accountId: account.accountId, eventId: event.id, orderId: o.id }, later);

      s.failNext(3);
      assert.equal(await expire(away), 0);
      assert.equal((await c.expect(200, 'GET', `/orders/${away.id}`)).status, 'expired');
      assert.equal(s.sessions.get(sessionOf(away))!.status, 'open', 'Stripe did not answer: the session is left to its own expiry');

      assert.equal(await expire(reached), 0);
      assert.equal((await c.expect(200, 'GET', `/orders/${reached.id}`)).status, 'expired');
      assert.equal(s.sessions.get(sessionOf(reached))!.status, 'expired');
      const call = s.requests.at(-1)!;
      assert.deepEqual([call.method, call.path, call.idempotencyKey], ['POST', `/v1/checkout/sessions/${sessionOf(reached)}/expire`, `montage-expire-${sessionOf(reached)}`]);
    });

    test('a payment that arrives after its order ended: honoured while the places are free, refunded at once when they are gone', async (t) => {
      const s = await standin(t);
      const { api, c, account } = await stripeApp(t, engine, s);
      const { event, type } = await paidEvent(c, { price: 1500, quantity: 2 });
      const order = (quantity: number, payment?: object) =>
        c.expect(201, 'POST', `/events/${event.id}/orders`, { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId: type.id, quantity }], ...(payment ? { payment } : {}) });
      const stripe = { provider: 'stripe', successUrl: 'https://shop.example.com/thanks' };
      const sessionOf = (o: Json) => /(cs_test_\w+)$/.exec(o.payment.checkoutUrl)![1]!;

      // Cancelled, but nobody took its place: the money is honoured.
      const first = await order(2, stripe);
      await c.expect(200, 'POST', `/orders/${first.id}/cancel`);
      // Its Checkout Session was expired (best effort, after the cancel committed): the buyer cannot start paying it any more.
      assert.equal(s.sessions.get(sessionOf(first))!.status, 'expired');
      assert.ok(s.requests.some((r) => r.method === 'POST' && r.path === `/v1/checkout/sessions/${sessionOf(first)}/expire`));
      assert.equal((await s.pay(sessionOf(first))).body.outcome, 'completed');
      assert.equal((await c.expect(200, 'GET', `/orders/${first.id}`)).status, 'completed');

      // Cancelled, and its places sold meanwhile: refunded in full, at once, once.
      const event2 = await paidEvent(c, { price: 1500, quantity: 2 });
      const second = await c.expect(201, 'POST', `/events/${event2.event.id}/orders`, { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId: event2.type.id, quantity: 2 }], payment: stripe });
      await c.expect(200, 'POST', `/orders/${second.id}/cancel`);
      await c.expect(201, 'POST', `/events/${event2.event.id}/orders`, { buyer: { name: 'Grace Hopper', email: 'grace@example.com' }, items: [{ ticketTypeId: event2.type.id, quantity: 2 }] });
      const paid = await s.pay(sessionOf(second));
      assert.deepEqual(paid.body, { received: true, outcome: 'refunded' });
      const paymentIntent = s.sessions.get(sessionOf(second))!.payment_intent!;
      assert.deepEqual(s.refunds.map((r) => [r.payment_intent, r.amount]), [[paymentIntent, 3000]]);
      assert.equal(s.requests.at(-1)!.idempotencyKey, `montage-unhonoured-${paymentIntent}`);
      assert.equal((await s.deliver(paid.event)).body.outcome, 'duplicate');
      assert.equal(s.refunds.length, 1, 'a repeated delivery refunds nothing more');
      const after = await c.expect(200, 'GET', `/orders/${second.id}`);
      assert.deepEqual([after.status, after.tickets.length], ['cancelled', 0]);
      // The money's trace on the order: the charge and its refund, both succeeded, written once; not the order's own money.
      assert.deepEqual(
        after.payments.map((p: Json) => [p.kind, p.provider, p.amount, p.currency, p.status, p.reference]),
        [
          ['charge', 'stripe', 3000, 'EUR', 'succeeded', paymentIntent],
          ['refund', 'stripe', 3000, 'EUR', 'succeeded', s.refunds[0]!.id],
        ],
      );
      const reasons = await api.database.db.selectFrom('payments').select('reason').where('orderId', '=', second.id).execute();
      assert.deepEqual(reasons.map((r) => r.reason), ['unhonoured: order_expired', 'unhonoured: order_expired']);
      assert.deepEqual([after.refundedAmount, after.payment.status], [0, 'none']);
      // No sale happened: neither payment.completed nor payment.refunded for it.
      const messages = async (event: string) =>
        (await api.database.db.selectFrom('webhookMessages').select('payload').where('accountId', '=', account.accountId).where('eventType', '=', event).execute()).map((m) => JSON.parse(m.payload).data);
      assert.deepEqual(await messages('payment.refunded'), []);
      assert.ok((await messages('payment.completed')).every((m: Json) => m.id !== second.id));

      // A second Checkout Session of an order paid already (made outside Montage, or an old one): paid twice, so refunded.
      const other = await stripeClient(s.secretKey).checkout.sessions.create({
        mode: 'payment',
        success_url: 'https://shop.example.com/thanks',
        line_items: [{ quantity: 2, price_data: { currency: 'eur', unit_amount: 1500, product_data: { name: 'Standing' } } }],
        metadata: { order_id: first.id, account_id: account.accountId },
      });
      assert.deepEqual((await s.pay(other.id)).body, { received: true, outcome: 'refunded' });
      const twice = s.sessions.get(other.id)!.payment_intent!;
      assert.deepEqual(s.refunds.at(-1)!.payment_intent, twice);
      const firstAfter = await c.expect(200, 'GET', `/orders/${first.id}`);
      assert.deepEqual(
        firstAfter.payments.map((p: Json) => [p.kind, p.reference]),
        [
          ['charge', s.sessions.get(sessionOf(first))!.payment_intent],
          ['charge', twice],
          ['refund', s.refunds.at(-1)!.id],
        ],
        'the order keeps its first payment; the second is recorded with its refund',
      );
      assert.deepEqual([firstAfter.refundedAmount, firstAfter.payment.status], [0, 'paid']);
      // Only the order's own money can be refunded: 3000, against its first payment.
      await problem(await c.send('POST', `/orders/${first.id}/refunds`, { amount: 3001 }), 409, 'refund_exceeds_paid');
      await c.expect(201, 'POST', `/orders/${first.id}/refunds`, { amount: 3000 });
      assert.equal(s.refunds.at(-1)!.payment_intent, s.sessions.get(sessionOf(first))!.payment_intent);
      assert.deepEqual(await messages('payment.refunded').then((m) => m.map((x: Json) => x.amount)), [3000]);
    });
  });
}


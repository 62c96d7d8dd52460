import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/**
 * A local stand-in for the few calls of Stripe's API that Montage's Stripe provider makes, answering
 * with the shapes of Stripe's API reference (https://docs.stripe.com/api): create a Checkout Session
 * and a Refund, expire an open Checkout Session (and read a session, for the tests to look through the package). Form-encoded bodies as the `stripe` package sends them; secret key
 * checked; `Idempotency-Key` honoured (the same key and body replay the first answer, another body
 * is an `idempotency_error`). It "pays" a session the way a buyer would and sends the signed event
 * (`Stripe-Signature`, made with the package's own `generateTestHeaderString`) to a webhook URL.
 * It is not Stripe: it knows nothing of cards, taxes, currencies' decimals or API versions.
 */
export interface StandinSession {
  id: string;
  object: 'checkout.session';
  amount_subtotal: number;
  amount_total: number;
  cancel_url: string | null;
  client_reference_id: string | null;
  created: number;
  currency: string;
  customer_email: string | null;
  expires_at: number;
  line_items: Array<{ quantity: number; price_data: { currency: string; unit_amount: number; product_data: { name: string } } }>;
  livemode: false;
  metadata: Record<string, string>;
  mode: string;
  payment_intent: string | null;
  payment_status: 'unpaid' | 'paid';
  status: 'open' | 'complete' | 'expired';
  success_url: string | null;
  url: string | null;
}

export interface StandinRefund {
  id: string;
  object: 'refund';
  amount: number;
  charge: string;
  created: number;
  currency: string;
  metadata: Record<string, string>;
  payment_intent: string;
  reason: null;
  status: 'succeeded';
}

export interface StandinRequest {
  method: string;
  path: string;
  idempotencyKey: string | null;
  body: Record<string, unknown>;
}

export interface StripeStandin {
  /** For MONTAGE_STRIPE_API_BASE. */
  apiBase: string;
  secretKey: string;
  webhookSecret: string;
  /** Where `pay` and `deliver` post events (Montage's endpoint of the account). */
  webhookUrl: string;
  sessions: Map<string, StandinSession>;
  refunds: StandinRefund[];
  /** Every API call, in order (replays included). */
  requests: StandinRequest[];
  /** Makes the call after the next `n` fail with Stripe's `api_error` (500). */
  failNext(n: number): void;
  /** The buyer pays the session: it completes, and `checkout.session.completed` is sent (`copies` times at once: Stripe may race itself). */
  pay(sessionId: string, copies?: number): Promise<{ event: Stripe.Event; status: number; body: any; all: Array<{ status: number; body: any }> }>;
  /** Sends an event (again): Stripe delivers each event at least once. `secret` signs it instead of the webhook secret. */
  deliver(event: object, secret?: string): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

type Form = Record<string, unknown>;

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** `a[b][0][c]=x&...` (the package's encoding, qs style) to nested objects and arrays. */
function parseForm(text: string): Form {
  const root: Form = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const parts = key.replace(/\]/g, '').split('[');
    let node: any = root;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else node = node[part] ??= {};
    });
  }
  const arrays = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value as Form).map(([k, v]) => [k, arrays(v)] as const);
    return entries.length > 0 && entries.every(([k]) => /^\d+$/.test(k)) ? entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, v]) => v) : Object.fromEntries(entries);
  };
  return arrays(root) as Form;
}

class StripeFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: { type: string; code?: string; message: string; param?: string },
  ) {
    super(error.message);
  }
}

const missing = (param: string) => new StripeFailure(400, { type: 'invalid_request_error', code: 'parameter_missing', param, message: `Missing required param: ${param}.` });

function integer(value: unknown, param: string): number {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new StripeFailure(400, { type: 'invalid_request_error', code: 'parameter_invalid_integer', param, message: `Invalid integer: ${String(value)}` });
  return Number(value);
}

export async function startStripeStandin(): Promise<StripeStandin> {
  const secretKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const webhookSecret = `whsec_${randomBytes(24).toString('base64').replace(/[+/=]/g, 'x')}`;
  const sessions = new Map<string, StandinSession>();
  const payments = new Map<string, { amount: number; currency: string; refunded: number; charge: string }>();
  const refunds: StandinRefund[] = [];
  const requests: StandinRequest[] = [];
  const replays = new Map<string, { bodyText: string; status: number; response: string }>();
  let failures = 0;

  function createSession(body: Form): StandinSession {
    if (body.mode !== 'payment') throw missing('mode');
    if (!Array.isArray(body.line_items) || body.line_items.length === 0) throw missing('line_items');
    if (typeof body.success_url !== 'string') throw missing('success_url');
    const now = Math.floor(Date.now() / 1000);
    const expiresAt = body.expires_at === undefined ? now + 24 * 3600 : integer(body.expires_at, 'expires_at');
    if (expiresAt < now + 30 * 60 || expiresAt > now + 24 * 3600) {
      throw new StripeFailure(400, { type: 'invalid_request_error', param: 'expires_at', message: 'The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout Session creation.' });
    }
    const lines = (body.line_items as Form[]).map((line, i) => {
      const price = line.price_data as Form | undefined;
      if (!price) throw missing(`line_items[${i}][price_data]`);
      return {
        quantity: integer(line.quantity, `line_items[${i}][quantity]`),
        price_data: { currency: String(price.currency), unit_amount: integer(price.unit_amount, `line_items[${i}][price_data][unit_amount]`), product_data: { name: String((price.product_data as Form | undefined)?.name ?? '') } },
      };
    });
    const currencies = new Set(lines.map((l) => l.price_data.currency));
    if (currencies.size !== 1) throw new StripeFailure(400, { type: 'invalid_request_error', param: 'line_items', message: 'All line items must use the same currency.' });
    const total = lines.reduce((sum, l) => sum + l.quantity * l.price_data.unit_amount, 0);
    const sessionId = id('cs_test');
    const session: StandinSession = {
      id: sessionId,
      object: 'checkout.session',
      amount_subtotal: total,
      amount_total: total,
      cancel_url: typeof body.cancel_url === 'string' ? body.cancel_url : null,
      client_reference_id: typeof body.client_reference_id === 'string' ? body.client_reference_id : null,
      created: now,
      currency: [...currencies][0]!,
      customer_email: typeof body.customer_email === 'string' ? body.customer_email : null,
      expires_at: expiresAt,
      line_items: lines,
      livemode: false,
      metadata: (body.metadata as Record<string, string> | undefined) ?? {},
      mode: 'payment',
      payment_intent: null,
      payment_status: 'unpaid',
      status: 'open',
      success_url: body.success_url,
      url: `https://checkout.stripe.com/c/pay/${sessionId}`,
    };
    sessions.set(sessionId, session);
    return session;
  }

  function createRefund(body: Form): StandinRefund {
    if (typeof body.payment_intent !== 'string') throw missing('payment_intent');
    const payment = payments.get(body.payment_intent);
    if (!payment) throw new StripeFailure(400, { type: 'invalid_request_error', code: 'resource_missing', param: 'payment_intent', message: `No such payment_intent: '${body.payment_intent}'` });
    const left = payment.amount - payment.refunded;
    if (left === 0) throw new StripeFailure(400, { type: 'invalid_request_error', code: 'charge_already_refunded', message: `Charge ${payment.charge} has already been refunded.` });
    const amount = body.amount === undefined ? left : integer(body.amount, 'amount');
    if (amount < 1 || amount > left) throw new StripeFailure(400, { type: 'invalid_request_error', code: 'amount_too_large', param: 'amount', message: `Refund amount (${amount}) is greater than unrefunded amount on charge (${left})` });
    payment.refunded += amount;
    const refund: StandinRefund = {
      id: id('re'),
      object: 'refund',
      amount,
      charge: payment.charge,
      created: Math.floor(Date.now() / 1000),
      currency: payment.currency,
      metadata: (body.metadata as Record<string, string> | undefined) ?? {},
      payment_intent: body.payment_intent,
      reason: null,
      status: 'succeeded',
    };
    refunds.push(refund);
    return refund;
  }

  function route(method: string, path: string, body: Form): object {
    if (method === 'POST' && path === '/v1/checkout/sessions') return createSession(body);
    const read = /^\/v1\/checkout\/sessions\/([\w]+)$/.exec(path);
    if (method === 'GET' && read) {
      const session = sessions.get(read[1]!);
      if (!session) throw new StripeFailure(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'session', message: `No such checkout.session: '${read[1]}'` });
      return session;
    }
    const expire = /^\/v1\/checkout\/sessions\/([\w]+)\/expire$/.exec(path);
    if (method === 'POST' && expire) {
      const session = sessions.get(expire[1]!);
      if (!session) throw new StripeFailure(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'session', message: `No such checkout.session: '${expire[1]}'` });
      if (session.status !== 'open') throw new StripeFailure(400, { type: 'invalid_request_error', message: `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${session.status}".` });
      session.status = 'expired';
      return session;
    }
    if (method === 'POST' && path === '/v1/refunds') return createRefund(body);
    throw new StripeFailure(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` });
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bodyText = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://standin');
      const body = parseForm(req.method === 'GET' ? url.search.slice(1) : bodyText);
      const idempotencyKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
      requests.push({ method: req.method ?? '', path: url.pathname, idempotencyKey, body });
      const send = (status: number, payload: string, replayed = false) =>
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req'), ...(replayed ? { 'idempotent-replayed': 'true' } : {}) }).end(payload);

      if (req.headers.authorization !== `Bearer ${secretKey}`) {
        return send(401, JSON.stringify({ error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${String(req.headers.authorization ?? '').slice(7, 15)}****` } }));
      }
      if (failures > 0) {
        failures--;
        return send(500, JSON.stringify({ error: { type: 'api_error', message: 'Something went wrong on our end (stand-in failure).' } }));
      }
      const replayKey = idempotencyKey && req.method === 'POST' ? `${url.pathname} ${idempotencyKey}` : null;
      const earlier = replayKey ? replays.get(replayKey) : undefined;
      if (earlier) {
        if (earlier.bodyText !== bodyText) {
          return send(400, JSON.stringify({ error: { type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.` } }));
        }
        return send(earlier.status, earlier.response, true);
      }
      let status = 200;
      let response: string;
      try {
        response = JSON.stringify(route(req.method ?? '', url.pathname, body));
      } catch (err) {
        const failure = err instanceof StripeFailure ? err : new StripeFailure(500, { type: 'api_error', message: `stand-in: ${String(err)}` });
        status = failure.status;
        response = JSON.stringify({ error: failure.error });
      }
      if (replayKey) replays.set(replayKey, { bodyText, status, response });
      send(status, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const standin: StripeStandin = {
    apiBase: `http://127.0.0.1:${port}`,
    secretKey,
    webhookSecret,
    webhookUrl: '',
    sessions,
    refunds,
    requests,
    failNext(n) {
      failures = n;
    },
    async deliver(event, secret = webhookSecret) {
      const payload = JSON.stringify(event);
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret });
      const response = await fetch(standin.webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
        body: payload,
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    async pay(sessionId, copies = 1) {
      const session = sessions.get(sessionId);
      if (!session) throw new Error(`no session ${sessionId}`);
      // An expired session is paid too: a payment the buyer had under way when Montage expired the
      // session, which Stripe may still complete (what Montage does with a late payment is tested).
      if (session.status !== 'complete') {
        session.status = 'complete';
        session.payment_status = 'paid';
        session.payment_intent = id('pi');
        payments.set(session.payment_intent, { amount: session.amount_total, currency: session.currency, refunded: 0, charge: id('ch') });
      }
      const { line_items: _lines, ...object } = session;
      const event = {
        id: id('evt'),
        object: 'event',
        api_version: Stripe.API_VERSION,
        created: Math.floor(Date.now() / 1000),
        data: { object },
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type: 'checkout.session.completed',
      } as unknown as Stripe.Event;
      const all = await Promise.all(Array.from({ length: copies }, () => standin.deliver(event)));
      return { event, ...all[0]!, all };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return standin;
}

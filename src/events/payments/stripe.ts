import Stripe from 'stripe';
import type { StripeApiBase } from '../../config.js';
import type { Db } from '../../db/database.js';
import { AppError, invalid } from '../../errors.js';
import { type Checkout, type CheckoutRequest, type PaymentProvider, RefundRefused, type RefundRequest } from './provider.js';
import { findStripeAccount } from './stripe.repository.js';

/** Stripe lets a Checkout Session live 30 minutes at least and 24 hours at most (`expires_at`). */
const MIN_SESSION_MS = 30 * 60_000;
const MAX_SESSION_MS = 24 * 3_600_000;
/** Room for the clocks of Montage and Stripe to differ: Stripe refuses a session a second short of 30 minutes. */
const CLOCK_MARGIN_MS = 2 * 60_000;
/** Each call to Stripe: how long it may take, and how often the package retries it (with the same idempotency key). */
const TIMEOUT_MS = 20_000;
const NETWORK_RETRIES = 2;

let apiBase: StripeApiBase | null = null;

/**
 * Where this process sends its Stripe calls: a server setting (MONTAGE_STRIPE_API_BASE), one per
 * process, set by buildApp; null is Stripe's own api.stripe.com.
 */
export function useStripeApi(base: StripeApiBase | null): void {
  apiBase = base;
}

/** A client of Stripe's API with one account's secret key. */
export function stripeClient(secretKey: string): Stripe {
  return new Stripe(secretKey, {
    ...(apiBase ?? {}),
    timeout: TIMEOUT_MS,
    maxNetworkRetries: NETWORK_RETRIES,
    telemetry: false,
    appInfo: { name: 'Montage' },
  });
}

/** When the Checkout Session ends (Unix seconds): with the hold, unless the hold is shorter than Stripe allows. */
export function sessionExpiry(holdEndsAt: number, now: number): number {
  const earliest = now + MIN_SESSION_MS + CLOCK_MARGIN_MS;
  const latest = now + MAX_SESSION_MS - CLOCK_MARGIN_MS;
  return Math.floor(Math.min(Math.max(holdEndsAt, earliest), latest) / 1000);
}

/** What Stripe answered, for a client to read: never a key (Stripe's messages show a key masked; it is cut out all the same). */
function providerError(action: string, err: unknown): AppError {
  if (err instanceof Stripe.errors.StripeError) {
    const said = err.message.replace(/\b(sk|rk|pk|whsec)_[A-Za-z0-9_*]+/g, '[key]');
    return new AppError('payment_provider_error', `Stripe ${action}: ${err.code ?? err.rawType ?? err.type}${err.statusCode ? ` (HTTP ${err.statusCode})` : ''}: ${said}`);
  }
  return new AppError('payment_provider_error', `Stripe ${action}: no answer (${err instanceof Error ? err.message : String(err)}).`);
}

/**
 * Whether Stripe said no for good: an error answer of 4xx, but not a conflict of idempotent
 * requests in flight (409) nor a rate limit (429), which a later try with the same key resolves.
 * A connection error, a timeout or a 5xx says nothing of whether the money moved.
 */
export function isDefiniteRefusal(err: unknown): boolean {
  if (!(err instanceof Stripe.errors.StripeError)) return false;
  if (err instanceof Stripe.errors.StripeConnectionError) return false;
  const status = err.statusCode;
  return status !== undefined && status >= 400 && status < 500 && status !== 409 && status !== 429;
}

/** The order's lines as Stripe shows them to the buyer; one line with the total if the items do not add up to it (a discount). */
function lineItems(request: CheckoutRequest): Stripe.Checkout.SessionCreateParams.LineItem[] {
  const currency = request.currency.toLowerCase();
  const sum = request.items.reduce((total, item) => total + item.unitPrice * item.quantity, 0);
  if (sum !== request.total) {
    return [{ quantity: 1, price_data: { currency, unit_amount: request.total, product_data: { name: `${request.eventName}: order ${request.orderId}` } } }];
  }
  return request.items
    .filter((item) => item.quantity > 0)
    .map((item) => ({ quantity: item.quantity, price_data: { currency, unit_amount: item.unitPrice, product_data: { name: `${request.eventName}: ${item.name}` } } }));
}

/**
 * The Stripe provider of one account (docs/events.md, "Stripe"): a pending order is paid on a
 * Checkout Session (Stripe's hosted page); the webhook endpoint (stripe-webhook.service.ts) completes
 * it; a refund is a Refund of the session's PaymentIntent. Without saved keys: 422.
 */
export async function stripeProvider(db: Db, accountId: string): Promise<PaymentProvider> {
  const settings = await findStripeAccount(db, accountId);
  if (!settings) throw new AppError('payment_provider_not_configured', 'This account has no Stripe keys: save them with PUT /v1/payment-providers/stripe first.', { provider: 'stripe' });
  const stripe = stripeClient(settings.secretKey);
  /** Stripe's hosted page has to send the buyer somewhere when they have paid. */
  const returnUrl = (payment: Pick<CheckoutRequest, 'successUrl'>): string => {
    if (payment.successUrl === null) throw invalid('/payment/successUrl', 'is required when paying with Stripe (the page the buyer returns to)');
    return payment.successUrl;
  };
  return {
    name: 'stripe',

    validate(payment) {
      returnUrl(payment);
    },

    async begin(request: CheckoutRequest): Promise<Checkout> {
      const successUrl = returnUrl(request);
      const metadata = { order_id: request.orderId, account_id: request.accountId, event_id: request.eventId };
      let session: Stripe.Checkout.Session;
      try {
        session = await stripe.checkout.sessions.create(
          {
            mode: 'payment',
            line_items: lineItems(request),
            client_reference_id: request.orderId,
            customer_email: request.buyer.email,
            metadata,
            payment_intent_data: { metadata },
            expires_at: sessionExpiry(request.expiresAt, Date.now()),
            success_url: successUrl,
            ...(request.cancelUrl ? { cancel_url: request.cancelUrl } : {}),
          },
          // One order, one session: a retried call gets the session of the first.
          { idempotencyKey: `montage-checkout-${request.orderId}` },
        );
      } catch (err) {
        throw providerError('did not open a checkout', err);
      }
      if (session.amount_total !== null && session.amount_total !== request.total) {
        throw new AppError('payment_provider_error', `Stripe priced the checkout at ${session.amount_total}, not the order's ${request.total}.`);
      }
      return { reference: session.id, checkoutUrl: session.url };
    },

    async endCheckout(reference: string): Promise<void> {
      try {
        await stripe.checkout.sessions.expire(reference, {}, { idempotencyKey: `montage-expire-${reference}` });
      } catch (err) {
        throw providerError('did not expire the checkout', err);
      }
    },

    async refund(request: RefundRequest): Promise<{ reference: string | null }> {
      if (request.paymentReference === null) throw new RefundRefused(`Order ${request.orderId} has no Stripe payment to refund.`);
      let refund: Stripe.Refund;
      try {
        refund = await stripe.refunds.create(
          { payment_intent: request.paymentReference, amount: request.amount, metadata: { order_id: request.orderId, account_id: request.accountId } },
          { idempotencyKey: request.idempotencyKey },
        );
      } catch (err) {
        const error = providerError('did not refund', err);
        throw isDefiniteRefusal(err) ? new RefundRefused(error.message) : error;
      }
      // `pending`: Stripe took the refund and the bank has yet to settle it (no card refund fails after that but rarely).
      if (refund.status === 'failed' || refund.status === 'canceled' || refund.status === 'requires_action') {
        throw new RefundRefused(`Stripe's refund ${refund.id} is ${refund.status}${refund.failure_reason ? ` (${refund.failure_reason})` : ''}.`);
      }
      return { reference: refund.id };
    },
  };
}

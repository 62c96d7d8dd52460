/**
 * What a payment provider does for the box office (docs/events.md, "Payments"): start the payment of
 * a pending order, and move money back. The order's state lives in Montage's database; a provider
 * only talks to the outside (for `manual`, nobody: the organiser takes the money at the desk or by
 * bank transfer and confirms the order through the API or the dashboard).
 *
 * Calls to a provider happen outside any database transaction (they may wait on the network): the
 * caller records what it intends first (a pending order, a pending refund row) and what happened
 * after, so a failure between the two leaves a state the caller can retry or report.
 */

export type ProviderName = 'manual' | 'stripe';

export const PROVIDER_NAMES = ['manual', 'stripe'] as const satisfies readonly ProviderName[];

/** A pending order, as a provider needs it to ask for its money. Amounts in minor units. */
export interface CheckoutRequest {
  accountId: string;
  orderId: string;
  eventId: string;
  eventName: string;
  total: number;
  currency: string;
  buyer: { name: string; email: string };
  items: Array<{ name: string; quantity: number; unitPrice: number }>;
  /** When the order's hold ends (ms since the epoch): the checkout should not outlive it. */
  expiresAt: number;
  /** Where the provider sends the buyer after paying / giving up, if the client named them. */
  successUrl: string | null;
  cancelUrl: string | null;
}

/** Where the buyer pays: the provider's reference of the attempt and, if it has one, its page. */
export interface Checkout {
  reference: string | null;
  checkoutUrl: string | null;
}

/** Money back on a paid order. `idempotencyKey` is Montage's refund id: a retried call must not pay twice. */
export interface RefundRequest {
  accountId: string;
  orderId: string;
  /** The provider's reference of the payment being refunded (null for `manual`). */
  paymentReference: string | null;
  amount: number;
  currency: string;
  idempotencyKey: string;
}

/**
 * A provider's definite "no" to a refund (a card network's or the provider's refusal, a request it
 * will never accept): nothing moved, and the refund is `failed`. Any other error of `refund` (a
 * timeout, a connection error, a 5xx) leaves the outcome unknown: the caller keeps the refund
 * `pending` and asks again later with the same idempotency key.
 */
export class RefundRefused extends Error {
  override readonly name = 'RefundRefused';
}

export interface PaymentProvider {
  readonly name: ProviderName;
  /**
   * Refuses (400, with the field's path under `/payment`) what `begin` could not start with, before
   * the pending order is placed: a refusal then holds nothing and sends nothing. Optional.
   */
  validate?(payment: Pick<CheckoutRequest, 'successUrl' | 'cancelUrl'>): void;
  begin(request: CheckoutRequest): Promise<Checkout>;
  /**
   * Closes the checkout of an order that ended unpaid (expired or cancelled), so the buyer cannot
   * pay it any more. Best effort, after the order's end committed: a payment that still arrives is
   * handled as a late one. Optional (`manual` has nothing to close).
   */
  endCheckout?(reference: string): Promise<void>;
  refund(request: RefundRequest): Promise<{ reference: string | null }>;
}

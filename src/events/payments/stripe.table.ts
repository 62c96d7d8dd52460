/** An account's Stripe keys (docs/events.md, "Stripe"). Neither secret ever leaves the server. */
export interface StripeAccountTable {
  accountId: string;
  /** `sk_...` or a restricted `rk_...` key: Montage's calls to Stripe on the account's behalf. */
  secretKey: string;
  /** `whsec_...`: checks the signature of what Stripe posts to the account's webhook endpoint. */
  webhookSecret: string;
  createdAt: number;
  updatedAt: number;
}

/** A Stripe event the account's webhook endpoint has acted on; a repeated delivery finds it here. */
export interface StripeEventTable {
  accountId: string;
  /** Stripe's `evt_...` id (Stripe's, not Montage's). */
  eventId: string;
  type: string;
  orderId: string | null;
  /** What Montage did: `completed` | `refunded` | `ignored` */
  outcome: string;
  createdAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../../db/database.js' {
  interface Database {
    stripeAccounts: StripeAccountTable;
    stripeEvents: StripeEventTable;
  }
}

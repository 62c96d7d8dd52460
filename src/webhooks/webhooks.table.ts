export interface WebhookMessageTable {
  id: string;
  accountId: string;
  /** The webhook event name, e.g. `ticket.purchased`. */
  eventType: string;
  /** The body delivered: `{id, event, timestamp, data}` as JSON. */
  payload: string;
  createdAt: number;
}

export interface WebhookSubscriptionTable {
  id: string;
  accountId: string;
  url: string;
  /** JSON array of event names, or `["*"]`. */
  events: string;
  description: string | null;
  /** `whsec_` + base64; needed in clear to sign, shown to the client only at creation and rotation. */
  secret: string;
  /** The secret `secret` replaced at its last rotation; signs beside it until `previousSecretUntil`. */
  previousSecret: string | null;
  previousSecretUntil: number | null;
  /** `enabled` | `disabled` */
  status: string;
  disabledAt: number | null;
  /** `gone` (the endpoint answered 410) or `failing` (failed for the configured span). */
  disabledReason: string | null;
  /** Since when every delivery failed; null while deliveries succeed. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface WebhookAttemptTable {
  id: string;
  accountId: string;
  /** Null for a blend job's own `webhookUrl`. */
  subscriptionId: string | null;
  messageId: string;
  eventType: string;
  attempt: number;
  url: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The first 1 KiB of the response body. */
  responseSnippet: string | null;
  createdAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    webhookMessages: WebhookMessageTable;
    webhookSubscriptions: WebhookSubscriptionTable;
    webhookAttempts: WebhookAttemptTable;
  }
}

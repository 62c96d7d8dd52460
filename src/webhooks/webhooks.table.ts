export interface WebhookMessageTable {
  id: string;
  accountId: string;
  /** The webhook event name, e.g. `ticket.purchased`. */
  eventType: string;
  /** The body delivered: `{id, event, timestamp, data}` as JSON. */
  payload: string;
  createdAt: number;
}

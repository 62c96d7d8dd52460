/**
 * Every failure a client can act on has a stable `code`; this table is the one
 * place that maps codes to HTTP statuses and titles (API.md section 3).
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, title: 'Invalid request' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  api_key_revoked: { status: 401, title: 'API key revoked' },
  api_key_expired: { status: 401, title: 'API key expired' },
  plan_required: { status: 403, title: 'Plan required' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  key_exceeds_maker: { status: 403, title: 'Key exceeds its maker' },
  invalid_signature: { status: 403, title: 'Invalid signature' },
  csrf_failed: { status: 403, title: 'CSRF check failed' },
  signup_disabled: { status: 403, title: 'Sign-up disabled' },
  not_found: { status: 404, title: 'Not found' },
  result_url_expired: { status: 410, title: 'Result URL expired' },
  already_checked_in: { status: 409, title: 'Already checked in' },
  not_checked_in: { status: 409, title: 'Not checked in' },
  ticket_cancelled: { status: 409, title: 'Ticket cancelled' },
  ticket_checked_in: { status: 409, title: 'Ticket checked in' },
  sold_out: { status: 409, title: 'Sold out' },
  sales_closed: { status: 409, title: 'Sales closed' },
  event_not_published: { status: 409, title: 'Event not published' },
  event_cancelled: { status: 409, title: 'Event cancelled' },
  event_has_tickets: { status: 409, title: 'Event has tickets' },
  event_has_no_ticket_types: { status: 409, title: 'Event has no ticket types' },
  idempotency_key_reused: { status: 409, title: 'Idempotency key reused' },
  idempotency_request_in_progress: { status: 409, title: 'Idempotent request in progress' },
  nothing_to_pay_out: { status: 409, title: 'Nothing to pay out' },
  too_many_subscriptions: { status: 409, title: 'Too many webhook subscriptions' },
  capacity_below_sold: { status: 409, title: 'Capacity below tickets sold' },
  quantity_below_sold: { status: 409, title: 'Quantity below tickets sold' },
  price_locked: { status: 409, title: 'Price locked after sales' },
  conflict: { status: 409, title: 'Conflict' },
  request_timeout: { status: 408, title: 'Request timeout' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  expectation_failed: { status: 417, title: 'Expectation failed' },
  headers_too_large: { status: 431, title: 'Request headers too large' },
  rate_limited: { status: 429, title: 'Rate limited' },
  internal_error: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    /** Extension members added to the problem body (e.g. `checkedInAt`). */
    readonly extensions: Record<string, unknown> = {},
    readonly errors?: FieldError[],
  ) {
    super(detail);
    this.status = ERROR_CODES[code].status;
  }
}

export const notFound = (what: string, id: string) => new AppError('not_found', `No ${what} with id ${id}.`);

export const invalid = (path: string, message: string) =>
  new AppError('invalid_request', `${path} ${message}`, {}, [{ path, message }]);

/** One error code as clients see it: its status and title, and its section of `/docs/errors`. */
export interface ErrorCodeDefinition {
  status: number;
  title: string;
  /** What happened, in words for an API user (a sentence or two). */
  happened: string;
  /** What the client does about it: its next step. */
  next: string;
}

/**
 * Every failure a client can act on has a stable `code`; this table is the one place that maps
 * codes to HTTP statuses and titles (docs/api.md, Errors), and holds what `/docs/errors` says about
 * each: a code cannot be added without `happened` and `next` (the type below demands them, and
 * test/error-docs.test.ts checks that they say something).
 */
export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    title: 'Invalid request',
    happened: 'The body, query string or path did not pass validation: a missing or unknown field, a value of the wrong type or out of range, or malformed JSON.',
    next: 'Read `errors`: each entry names the failing field as a JSON pointer (`path`) and what is wrong with it. Fix the request and send it again; sending it unchanged fails the same way.',
  },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    happened: 'The request carried no API key, a malformed Authorization header, or a key this server does not know (or, in the dashboard, no valid session).',
    next: 'Send `Authorization: Bearer <API_KEY>` with a key of the form `mtg_` and 40 characters, exactly as it was shown when it was created. Create a new key if it was lost: keys cannot be shown again.',
  },
  api_key_revoked: {
    status: 401,
    title: 'API key revoked',
    happened: 'The API key was revoked (in the dashboard, over the API or with the command line) and no longer works.',
    next: 'Use another key of the account, or have its owner create a new one. A revoked key never works again.',
  },
  api_key_expired: {
    status: 401,
    title: 'API key expired',
    happened: 'The API key passed its `expiresAt` time and no longer works; `detail` says when it expired.',
    next: 'Create a new key (with a later expiry, or none) and replace the old one wherever it is used.',
  },
  plan_required: {
    status: 403,
    title: 'Plan required',
    happened: 'The account is on the free plan, which has no API access and cannot create keys.',
    next: 'Ask the operator of this server to move the account to the Business plan or above; the same request then succeeds.',
  },
  insufficient_scope: {
    status: 403,
    title: 'Insufficient scope',
    happened: 'The API key is valid but its scopes do not allow this route (a `checkin` key reading events, for example). `requiredScopes` lists the scopes that would.',
    next: 'Use a key that holds one of `requiredScopes`, or create one with them. Managing keys needs a key that holds every scope.',
  },
  key_exceeds_maker: {
    status: 403,
    title: 'Key exceeds its maker',
    happened: 'A key asked to create a key that would outlive it or hold a scope it lacks; a key can only make keys within its own bounds. `errors` names the field (`/expiresAt` or `/scopes`).',
    next: 'Ask for an expiry no later than the calling key\'s and only scopes it holds (or leave them out to inherit them), or create the key in the dashboard or with the command line.',
  },
  invalid_signature: {
    status: 403,
    title: 'Invalid signature',
    happened: "The blend result URL's signature does not match: the URL was changed or cut short after it was handed out.",
    next: "Read the job's status (`GET /v1/blend/status/:jobId`) for a fresh `resultUrl`, and use it exactly as given.",
  },
  csrf_failed: {
    status: 403,
    title: 'CSRF check failed',
    happened: 'A request made with the dashboard session cookie changes something but did not carry the session\'s `X-CSRF-Token` header (or carried a wrong one).',
    next: 'Send the `csrfToken` from the sign-in answer (or `GET /dashboard/api/session`) as `X-CSRF-Token` on every request that changes something (anything but GET, HEAD and OPTIONS). API clients use an API key instead and need no token.',
  },
  signup_disabled: {
    status: 403,
    title: 'Sign-up disabled',
    happened: 'This server does not let anyone create an account from the dashboard.',
    next: 'Ask the operator of this server for an account; they create it with the command line.',
  },
  not_found: {
    status: 404,
    title: 'Not found',
    happened: 'There is no such route, or no resource with this id in your account (an id of another account, or of the wrong shape, is answered the same way).',
    next: 'Check the path and the id (ids carry a prefix such as `evt_` or `tkt_`), and that you use a key of the account that owns the resource. Retrying does not help.',
  },
  result_url_expired: {
    status: 410,
    title: 'Result URL expired',
    happened: "The blend result URL is past its validity (7 days by default); the image may still exist.",
    next: "Read the job's status (`GET /v1/blend/status/:jobId`): a completed job returns a freshly signed `resultUrl`.",
  },
  job_not_cancellable: {
    status: 409,
    title: 'Job not cancellable',
    happened: 'The blend job has already completed or failed, so there is nothing left to stop; `jobStatus` says which. (A cancel asked for before the outcome was recorded wins.)',
    next: "Read the job's status (`GET /v1/blend/status/:jobId`) for its result or failure. Only a `queued` or `processing` job can be cancelled.",
  },
  too_many_streams: {
    status: 429,
    title: 'Too many event streams',
    happened: 'The account already has as many open event streams of blend jobs on this server as it may (`limit` says how many); the new one was not opened.',
    next: 'Close a stream you no longer read (each ends by itself after its job finishes), or poll `GET /v1/blend/status/:jobId` instead; then open it again.',
  },
  already_checked_in: {
    status: 409,
    title: 'Already checked in',
    happened: 'The ticket was checked in before; a ticket admits once. `checkedInAt` and `checkinId` tell when and which check-in.',
    next: 'Do not admit the holder again unless you undo the first check-in (`DELETE /v1/events/:id/checkin/:ticketId`); show `checkedInAt` at the door to settle disputes.',
  },
  not_checked_in: {
    status: 409,
    title: 'Not checked in',
    happened: 'An undo of a check-in was asked for a ticket that is not checked in (never, or already undone).',
    next: 'Nothing to undo: read the ticket to see its state. Repeating the undo is safe and answers the same.',
  },
  already_inside: {
    status: 409,
    title: 'Already inside',
    happened: 'An entry scan through a check-in list named a ticket that is inside on that list (entered, and no exit scanned since). `ticketId`, `checkedInAt` and `checkinId` name the entry.',
    next: 'Do not admit the holder again: the ticket is in use. If the holder left, scan the exit first (on a list that scans exits), or undo the entry (`DELETE /v1/events/:id/checkin/:ticketId?listId=`).',
  },
  not_inside: {
    status: 409,
    title: 'Not inside',
    happened: 'An exit scan through a check-in list named a ticket that is not inside on that list: it never entered, or it exited already.',
    next: 'Nothing to record: let the holder leave. Scan entries through the same list as exits so that its count of who is inside stays right.',
  },
  wrong_list: {
    status: 409,
    title: 'Wrong check-in list',
    happened: "The ticket's type is not among the ticket types the check-in list admits (`ticketTypeIds`).",
    next: 'Send the holder to an entrance whose list admits their ticket type, or add the type to the list (`PATCH /v1/events/:id/checkin-lists/:listId`).',
  },
  not_yet_valid: {
    status: 409,
    title: 'Not yet valid',
    happened: "The scan's time is before the check-in list's `validFrom`.",
    next: 'Admit the holder from `validFrom` on, or move `validFrom` earlier (`PATCH /v1/events/:id/checkin-lists/:listId`).',
  },
  list_expired: {
    status: 409,
    title: 'Check-in list expired',
    happened: "The scan's time is after the check-in list's `validUntil`.",
    next: 'The list no longer admits anyone; use another list, or move `validUntil` later (`PATCH /v1/events/:id/checkin-lists/:listId`).',
  },
  list_in_use: {
    status: 409,
    title: 'Check-in list in use',
    happened: 'The check-in list has recorded scans, so deleting it would lose the door\'s history and counts; nothing was deleted.',
    next: 'Keep the list, and stop it admitting anyone by setting `validUntil` to now (`PATCH /v1/events/:id/checkin-lists/:listId`). A list without scans can be deleted.',
  },
  ticket_cancelled: {
    status: 409,
    title: 'Ticket cancelled',
    happened: 'The ticket is cancelled, so it can no longer be checked in, transferred, cancelled again or have its answers edited.',
    next: 'Do not admit its holder with it; the buyer needs a new ticket (a new order). Read the ticket for its state.',
  },
  ticket_checked_in: {
    status: 409,
    title: 'Ticket checked in',
    happened: 'The ticket is checked in, or was admitted through a check-in list, so it cannot be cancelled or transferred.',
    next: 'Undo the check-in first (`DELETE /v1/events/:id/checkin/:ticketId`, with `?listId=` for each list that admitted it) if the change is really wanted, then try again.',
  },
  ticket_revoked: {
    status: 409,
    title: 'Ticket code revoked',
    happened: 'The signed code was replaced: the ticket was transferred or its code reissued (its signing key was retired), so this code is on the event\'s revocation list. `ticketId` names the ticket.',
    next: 'Ask the holder for the ticket\'s current code (its QR from `GET /v1/tickets/:id/qr.svg` or the PDF), or check the ticket in by `ticketId` after checking who holds it.',
  },
  key_retired: {
    status: 409,
    title: 'Signing key retired',
    happened: 'The code was signed by a key of the event that has since been retired (`kid` names it); codes it signed no longer admit anyone, and their tickets were given new codes.',
    next: 'Ask the holder for the ticket\'s new code (the ticket\'s QR or PDF again), and have offline scanners download `GET /v1/events/:id/checkin/offline` again.',
  },
  code_not_yet_valid: {
    status: 409,
    title: 'Code not yet valid',
    happened: 'The signed code carries a validity window that has not started yet; `validFrom` says when it starts.',
    next: 'Scan the code again from `validFrom` on; the ticket is not refused for any other reason by this answer.',
  },
  code_expired: {
    status: 409,
    title: 'Code expired',
    happened: 'The signed code carries a validity window that has ended; `validUntil` says when it ended.',
    next: 'The code no longer admits its ticket; if entry should still be allowed, check the ticket in by `ticketId`.',
  },
  signing_key_active: {
    status: 409,
    title: 'Signing key is active',
    happened: 'The key asked to be retired is the event\'s active signing key, which signs every new ticket code; an event always keeps one.',
    next: 'Rotate first (`POST /v1/events/:id/signing-keys/rotate`): the key becomes `retiring`, and can then be retired.',
  },
  sold_out: {
    status: 409,
    title: 'Sold out',
    happened: 'The order asked for more tickets than are left, of a ticket type or of the event\'s capacity; nothing was sold.',
    next: 'Read the inventory (`GET /v1/events/:id/tickets`, field `available`) and order at most that many, or another ticket type.',
  },
  tickets_available: {
    status: 409,
    title: 'Tickets available',
    happened: 'The ticket type still has places anyone may buy, so there is no waiting list to join for it yet; nobody was added. `available` says how many.',
    next: 'Order the tickets instead (`POST /v1/events/:id/orders`); join the waiting list once the type is sold out.',
  },
  waitlist_duplicate: {
    status: 409,
    title: 'Already on the waiting list',
    happened: 'This e-mail address already waits for the ticket type, or holds an offer for it (`entryId` names the entry); nobody was added.',
    next: 'Read the entry (`GET /v1/events/:id/waitlist`) for its place in the queue or its offer. An address may join again once its entry is removed, redeemed or its offer expired.',
  },
  waitlist_full: {
    status: 409,
    title: 'Waiting list full',
    happened: 'The ticket type has the most waiting entries an event may have for one type (`limit`); nobody was added.',
    next: 'Try again once people ahead have been served, or raise the quantity of the ticket type so that those waiting get offers.',
  },
  waitlist_entry_ended: {
    status: 409,
    title: 'Waiting-list entry ended',
    happened: 'The entry is not waiting and holds no open offer any more: its offer was redeemed or expired (`entryStatus` says which). Nothing changed.',
    next: 'Nothing to remove. A redeemed offer is an order now (see the event\'s orders); an expired one has passed to the next in line.',
  },
  sales_closed: {
    status: 409,
    title: 'Sales closed',
    happened: 'The ticket type is not on sale at this moment (before `salesStartAt`, after `salesEndAt`), or the event has ended; nothing was sold.',
    next: 'Order within the sales window the ticket type shows, or change the window with `PATCH /v1/events/:id/tickets/:ticketTypeId`.',
  },
  event_not_published: {
    status: 409,
    title: 'Event not published',
    happened: 'The event is still a draft, and drafts sell no tickets.',
    next: 'Publish it (`POST /v1/events/:id/publish`), then place the order again.',
  },
  event_cancelled: {
    status: 409,
    title: 'Event cancelled',
    happened: 'The event is cancelled: it cannot change, sell tickets or be cancelled again.',
    next: 'Nothing can be done with this event any more; create a new event if it takes place after all.',
  },
  event_has_tickets: {
    status: 409,
    title: 'Event has tickets',
    happened: 'The event has issued tickets (cancelled ones count), so it cannot be deleted, nor its currency changed.',
    next: 'Cancel the event instead (`POST /v1/events/:id/cancel`), which cancels and refunds its tickets and keeps the record.',
  },
  event_has_orders: {
    status: 409,
    title: 'Event has open orders',
    happened: 'The event has orders that a payment could still complete: pending ones (their buyers may be paying now) or, unless the event is cancelled, expired ones (a late payment or a manual confirmation still completes them). `pendingOrders` and `expiredOrders` say how many; nothing was deleted.',
    next: 'Cancel the event (`POST /v1/events/:id/cancel`): its pending orders are cancelled, nothing can complete any more, and an event that never issued a ticket can then be deleted. Cancelling the pending orders one by one (`POST /v1/orders/:id/cancel`) also works while none has expired.',
  },
  event_ended: {
    status: 409,
    title: 'Event ended',
    happened: 'The event\'s `endsAt` has passed, so publishing it would open a sale in which every order is refused (`sales_closed`); it stays a draft.',
    next: 'If the dates are wrong, move them (`PATCH /v1/events/:id` with a later `endsAt`) and publish again; a past event is otherwise kept as a draft, or deleted.',
  },
  event_has_no_ticket_types: {
    status: 409,
    title: 'Event has no ticket types',
    happened: 'An event without a ticket type cannot be published: nothing could be sold.',
    next: 'Create a ticket type (`POST /v1/events/:id/tickets`), then publish again.',
  },
  idempotency_key_reused: {
    status: 409,
    title: 'Idempotency key reused',
    happened: 'This `Idempotency-Key` was used on this route in the last 24 hours with another body; nothing was done.',
    next: 'Use a new key for a new operation. Reuse a key only to retry the very same request, with the same body.',
  },
  idempotency_request_in_progress: {
    status: 409,
    title: 'Idempotent request in progress',
    happened: 'A request with the same `Idempotency-Key` is still being processed.',
    next: 'Wait a moment and retry with the same key and body: you then get the first request\'s answer, and the operation happens once.',
  },
  nothing_to_pay_out: {
    status: 409,
    title: 'Nothing to pay out',
    happened: "The event's net revenue has been paid out already (or it has none).",
    next: 'Nothing to do now; pay out again after more tickets are sold. `GET /v1/events/:id/payouts` lists what was paid.',
  },
  too_many_subscriptions: {
    status: 409,
    title: 'Too many webhook subscriptions',
    happened: 'The account has as many webhook subscriptions as it may have.',
    next: 'Delete a subscription you no longer need (`DELETE /v1/webhooks/:id`), or subscribe one URL to several events instead of one URL per event.',
  },
  capacity_below_sold: {
    status: 409,
    title: 'Capacity below tickets sold',
    happened: "The event's capacity cannot go below the valid tickets it has sold, the places pending orders hold and the places vouchers keep (a waiting-list offer is one); `reserved` says how many those keep.",
    next: 'Ask for a capacity at least as large as the tickets sold (see `GET /v1/events/:id/analytics`), or cancel tickets first.',
  },
  quantity_below_sold: {
    status: 409,
    title: 'Quantity below tickets sold',
    happened: "A ticket type's quantity cannot go below its tickets sold, the places pending orders hold and the places vouchers keep (a waiting-list offer is one); `reserved` says how many those keep.",
    next: 'Ask for a quantity at least as large as `sold` of the ticket type (`GET /v1/events/:id/tickets`).',
  },
  price_locked: {
    status: 409,
    title: 'Price locked after sales',
    happened: 'The ticket type has sold tickets, so its price is fixed: buyers paid the old one.',
    next: 'Keep the price, or create a new ticket type with the new price and end the sales of the old one (`salesEndAt`).',
  },
  stripe_signature_invalid: {
    status: 400,
    title: 'Stripe signature invalid',
    happened: "A post to an account's Stripe webhook endpoint did not carry a valid `Stripe-Signature` for its body (a wrong or missing signature, a body changed on the way, a timestamp older than 5 minutes, or another webhook signing secret than the account's). Nothing was done.",
    next: "Give Montage the signing secret of the endpoint in Stripe's dashboard (`PUT /v1/payment-providers/stripe`), and forward Stripe's body byte for byte. Stripe retries the event on its own schedule.",
  },
  order_not_completed: {
    status: 409,
    title: 'Order not completed',
    happened: 'Refunds, changes and edits of answers are for completed orders; this one is pending, expired or cancelled (`orderStatus` says which), so it has no tickets and took no money to give back (a pending order keeps the answers it was placed with until it completes). Nothing changed.',
    next: 'Read the order (`GET /v1/orders/:id`). A pending order is cancelled with `POST /v1/orders/:id/cancel`, or edited once it completes; an expired or cancelled one needs nothing.',
  },
  refund_exceeds_paid: {
    status: 409,
    title: 'Refund exceeds what was paid',
    happened: 'The refund asked for more than is left of the order\'s money: what it was paid, less what was refunded or is being refunded. `refundable` says what is left; nothing was refunded.',
    next: 'Ask for at most `refundable` (or leave `amount` out to refund all of it). If it is 0, the order has been refunded in full already.',
  },
  order_not_pending: {
    status: 409,
    title: 'Order not pending',
    happened: 'The order is not waiting for its payment: it is completed already, or it was cancelled (or it expired, for a cancellation); `orderStatus` says which. Nothing changed.',
    next: 'Read the order (`GET /v1/orders/:id`) for its state. A cancelled order cannot be paid any more: place a new order.',
  },
  order_not_manual: {
    status: 409,
    title: 'Order not paid manually',
    happened: 'Only an order paid through the `manual` provider (bank transfer, cash) is confirmed through the API; this order is paid through another provider, which completes it when the money arrives.',
    next: 'Wait for the provider to report the payment (the order then completes by itself), or cancel the order (`POST /v1/orders/:id/cancel`) and place it again with `payment.provider` `manual`.',
  },
  order_expired: {
    status: 409,
    title: 'Order expired',
    happened: "The pending order's hold ran out (or it was cancelled) and its places were sold to others since, so it cannot be completed; no ticket was issued.",
    next: 'Give the money back to the buyer if it was taken, and place a new order if places are left (`GET /v1/events/:id/tickets`, field `available`).',
  },
  payment_amount_mismatch: {
    status: 409,
    title: 'Payment amount mismatch',
    happened: "The amount reported as paid is not the order's `total`; the order was not completed and nothing changed.",
    next: 'Check what the buyer paid against the order; settle the difference with the buyer, then report the payment of the whole total.',
  },
  payment_provider_not_configured: {
    status: 422,
    title: 'Payment provider not configured',
    happened: 'The order asked to be paid through a provider this account has not set up (Stripe without its keys, for example); no order was placed.',
    next: 'Set the provider up for the account first (for Stripe: `PUT /v1/payment-providers/stripe`, docs/events.md, "Stripe"), or place the order with the `manual` provider.',
  },
  payment_provider_error: {
    status: 502,
    title: 'Payment provider error',
    happened: 'The payment provider could not be reached or refused the call; what Montage had recorded for it was undone (a pending order is cancelled and its places returned; a refund is marked failed).',
    next: 'Retry later with a new request (a cancelled order cannot be paid: place it again). If it keeps happening, check the provider\'s status and the account\'s provider settings.',
  },
  question_options_in_use: {
    status: 409,
    title: 'Question options in use',
    happened: 'The change would remove options of a choice question that answers already given use (`options` lists them); nothing changed.',
    next: 'Keep those options (rename others, add new ones), or edit the answers that use them first (`PUT /v1/tickets/:id/answers`, `PUT /v1/orders/:id/answers`).',
  },
  voucher_not_found: {
    status: 404,
    title: 'Voucher not found',
    happened: 'The order named a voucher code the event does not have (codes are compared ignoring case); nothing was sold.',
    next: 'Check the code with the buyer and place the order again, or place it without `voucher`.',
  },
  voucher_not_valid: {
    status: 409,
    title: 'Voucher not valid now',
    happened: 'The voucher exists but cannot be used at this moment: before its `validFrom` or from its `validUntil` on (`validFrom` and `validUntil` say when); nothing was sold.',
    next: 'Use it within its validity, or have the organiser change it (`PATCH /v1/events/:id/vouchers/:voucherId`).',
  },
  voucher_not_applicable: {
    status: 409,
    title: 'Voucher not applicable',
    happened: 'The voucher is for one ticket type (`ticketTypeId`) and the order holds none of it; nothing was sold.',
    next: 'Order tickets of the voucher\'s ticket type, or place the order without `voucher`.',
  },
  voucher_used_up: {
    status: 409,
    title: 'Voucher used up',
    happened: 'The order has more tickets the voucher applies to than the voucher has uses left (`remaining`); nothing was sold. Pending orders that used it hold their uses until they complete, expire or are cancelled.',
    next: 'Order at most `remaining` tickets of its type with it, or place the rest without it. Uses come back when a pending order that used them expires or is cancelled.',
  },
  voucher_code_taken: {
    status: 409,
    title: 'Voucher code taken',
    happened: 'The event already has a voucher with this code (`codes` lists them; codes are compared ignoring case), or generated codes kept meeting existing ones; nothing was created.',
    next: 'Choose other codes (or another `codePrefix`), or leave the code out to have one generated.',
  },
  voucher_in_use: {
    status: 409,
    title: 'Voucher in use',
    happened: 'The change needs a voucher nothing used: it was redeemed (`redeemed`), or it is a waiting-list offer; a used voucher cannot be deleted nor its discount changed, and an offer changes only its validity and comment. Nothing changed.',
    next: 'End the voucher instead: `PATCH /v1/events/:id/vouchers/:voucherId` with `validUntil` set to now. Create a new voucher for another discount.',
  },
  too_many_questions: {
    status: 409,
    title: 'Too many questions',
    happened: 'The event has as many questions as an event may have (`limit`); nothing was created.',
    next: 'Delete a question the event no longer needs (`DELETE /v1/events/:id/questions/:questionId`), or ask for several things in one question.',
  },
  upload_quota_exceeded: {
    status: 409,
    title: 'Upload quota exceeded',
    happened: 'The account holds as many live uploads as it may (`MONTAGE_BLEND_MAX_UPLOADS`, 500 by default), or this image would take their bytes past `MONTAGE_BLEND_MAX_UPLOAD_BYTES` (5 GiB); `limit` names which. Nothing was stored.',
    next: 'Delete uploads you no longer need (`DELETE /v1/blend/uploads/:uploadId`) or wait for them to expire (`expiresAt`), then send the image again.',
  },
  upload_in_use: {
    status: 409,
    title: 'Upload in use',
    happened: 'A blend job that is still queued or processing uses this upload, so it cannot be deleted now; nothing was deleted.',
    next: 'Wait for the job to finish (`GET /v1/blend/status/:jobId`), then delete the upload, or leave it to expire.',
  },
  upload_too_large: {
    status: 413,
    title: 'Upload too large',
    happened: 'The image sent to `POST /v1/blend/uploads` has more bytes than `MONTAGE_BLEND_MAX_IMAGE_BYTES` or, as its header says, more pixels than `MONTAGE_BLEND_MAX_PIXELS`; `limit` names which. The server stopped reading there and stored nothing.',
    next: 'Scale the image down or compress it harder, and send it again.',
  },
  upload_not_an_image: {
    status: 422,
    title: 'Upload not an image',
    happened: 'The file sent to `POST /v1/blend/uploads` is not a JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF image (told by its first bytes, never by its name or Content-Type), or its dimensions could not be read from its first MiB. Nothing was stored.',
    next: 'Send the frame as JPEG or PNG (a TIFF whose directory is at its end: convert it first).',
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    happened: 'The resource exists already: an account with this email (emails are compared ignoring case and Unicode width).',
    next: 'Sign in to the existing account, or use another email.',
  },
  request_timeout: {
    status: 408,
    title: 'Request timeout',
    happened: 'The request (its headers or body) did not arrive completely in time.',
    next: 'Retry; if it keeps happening, check the network between the client and the server, or send a smaller body.',
  },
  payload_too_large: {
    status: 413,
    title: 'Payload too large',
    happened: 'The request body is larger than this server accepts (1 MiB unless the operator set another size).',
    next: 'Send a smaller body: fewer items per request, or split the work into several requests.',
  },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    happened: 'The request has a body but it is not declared as JSON.',
    next: 'Send the body as JSON with `Content-Type: application/json`.',
  },
  expectation_failed: {
    status: 417,
    title: 'Expectation failed',
    happened: 'The request carried an `Expect` header this server does not meet; the only one it meets is `100-continue`.',
    next: 'Send the request without the `Expect` header, or with `Expect: 100-continue`.',
  },
  headers_too_large: {
    status: 431,
    title: 'Request headers too large',
    happened: 'The request line and headers together are larger than this server accepts, often because of a very long URL or many cookies.',
    next: 'Shorten the URL (put large data in a JSON body) and drop the headers and cookies the API does not need.',
  },
  rate_limited: {
    status: 429,
    title: 'Rate limited',
    happened: "The account used up one of its rate-limit windows (per minute, per day or per hour for blending), or there were too many dashboard sign-in attempts; the request was not carried out.",
    next: 'Wait the number of seconds in `Retry-After`, then retry. The `RateLimit` and `X-RateLimit-*` headers of every answer show what is left, so a client can slow down before it gets here.',
  },
  internal_error: {
    status: 500,
    title: 'Internal error',
    happened: 'Something failed inside the server; it is not a problem with your request.',
    next: 'Retry later (POST requests with their `Idempotency-Key`, so nothing happens twice). If it persists, report the `requestId` to the operator: the server log has the details under it.',
  },
  unavailable: {
    status: 503,
    title: 'Unavailable',
    happened: 'The server cannot serve the request right now: its database (or object store) cannot be reached, or it is shutting down.',
    next: 'Retry after `Retry-After` seconds (POST requests with their `Idempotency-Key`); another server process may answer meanwhile.',
  },
} as const satisfies Record<string, ErrorCodeDefinition>;

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

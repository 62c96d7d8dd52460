import { type TSchema, Type } from 'typebox';
import { BlendJobSchema } from '../blend/blend.schemas.js';
import { CheckinSchema, CheckinUndoneSchema, EventSchema, OrderPaymentSchema, OrderSchema, PayoutSchema, RefundSchema, TicketSchema } from '../events/events.schemas.js';
import { WaitlistEntrySchema } from '../events/waitlist.schemas.js';
import { PageQuery, pageSchema } from '../http/paging.js';
import { Nullable, NullableTimestamp, ref, StringEnum, Timestamp } from '../schemas.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from './outbox.js';

/** The name of a webhook event. */
export const WebhookEventName = StringEnum(WEBHOOK_EVENTS, { $id: 'WebhookEventName', description: 'The name of a webhook event.' });
/** What a subscription lists: event names, or `*` for every event. */
const SubscribedEvent = StringEnum([...WEBHOOK_EVENTS, '*'], { description: 'An event name, or * for every event.' });

export const SubscriptionSchema = Type.Object(
  {
    id: Type.String({ examples: ['wh_01m80eg3tperaacsapew6ns732'] }),
    url: Type.String(),
    events: Type.Unsafe<string[]>(Type.Array(SubscribedEvent, { maxItems: 20 })),
    description: Nullable(Type.String()),
    status: StringEnum(['enabled', 'disabled']),
    disabledAt: NullableTimestamp,
    disabledReason: Type.Unsafe<'gone' | 'failing' | null>({ type: ['string', 'null'], enum: ['gone', 'failing', null], description: '`gone`: the endpoint answered 410; `failing`: every delivery failed for the configured span.' }),
    failingSince: NullableTimestamp,
    previousSecretExpiresAt: Nullable(Timestamp, {
      description: 'Until then, deliveries also carry a signature made with the secret replaced by the last rotation; null when none does.',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'WebhookSubscription' },
);

export const CreatedSubscriptionSchema = Type.Object(
  {
    ...SubscriptionSchema.properties,
    secret: Type.String({ description: 'Signing secret (Standard Webhooks). Shown only when the subscription is created and when its secret is rotated.', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
  },
  { $id: 'CreatedWebhookSubscription' },
);

export const CreateSubscriptionBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'http or https; no credentials in the URL.' }),
    events: Type.Array(SubscribedEvent, { minItems: 1, maxItems: 20, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { $id: 'CreateWebhookSubscriptionRequest', additionalProperties: false, examples: [{ url: 'https://hooks.example.com/montage', events: ['ticket.purchased', 'checkin.completed'], description: 'CRM sync' }] },
);

export const AttemptSchema = Type.Object(
  {
    id: Type.String({ examples: ['whd_01m80eg3tperaacsapew6ns732'] }),
    messageId: Type.String(),
    event: Type.Unsafe<string>(ref(WebhookEventName)),
    attempt: Type.Integer({ description: '1 for the first try, then each retry.' }),
    url: Type.String(),
    succeeded: Type.Boolean(),
    statusCode: Nullable(Type.Integer()),
    durationMs: Type.Integer(),
    error: Nullable(Type.String(), { description: 'Why no answer came (timeout, refused connection, refused address).' }),
    responseSnippet: Nullable(Type.String(), { description: 'The first 1 KiB of the answer.' }),
    createdAt: Timestamp,
  },
  { $id: 'WebhookAttempt' },
);

export const ListQuery = Type.Object(PageQuery, { additionalProperties: false });

export const SubscriptionPage = pageSchema('WebhookSubscriptionPage', SubscriptionSchema);
export const AttemptPage = pageSchema('WebhookAttemptPage', AttemptSchema);

/** What blend.completed carries. */
export const BlendCompletedSchema = Type.Object(
  {
    resultUrl: Type.String({ format: 'uri', description: 'Signed, expiring URL of the result; works without the API key. A presigned URL of the object store when the server keeps results in one.' }),
    processingTime: Type.Integer({ description: 'Milliseconds from start of processing to the stored result.' }),
    qualityScore: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { $id: 'BlendCompleted' },
);

/** The `data` of each event's messages (outbox.ts writes them; docs/webhooks.md lists them). */
const WEBHOOK_DATA: Record<WebhookEvent, TSchema> = {
  'event.created': EventSchema,
  'event.published': EventSchema,
  'event.cancelled': EventSchema,
  'ticket.purchased': TicketSchema,
  'ticket.cancelled': TicketSchema,
  'ticket.transferred': TicketSchema,
  'checkin.completed': CheckinSchema,
  'checkin.undone': CheckinUndoneSchema,
  'order.expired': OrderSchema,
  'order.cancelled': OrderSchema,
  'payment.completed': OrderPaymentSchema,
  'payment.refunded': RefundSchema,
  'payout.processed': PayoutSchema,
  'rsvp.submitted': OrderPaymentSchema,
  'order.changed': OrderSchema,
  'waitlist.offered': WaitlistEntrySchema,
  'waitlist.offer_expired': WaitlistEntrySchema,
  'blend.started': BlendJobSchema,
  'blend.completed': BlendCompletedSchema,
  'blend.failed': BlendJobSchema,
  'blend.cancelled': BlendJobSchema,
};

/** `ticket.purchased` → `TicketPurchasedMessage`. */
export const messageSchemaName = (event: WebhookEvent) =>
  `${event.split('.').map((part) => part[0]!.toUpperCase() + part.slice(1)).join('')}Message`;

/** The body of each event's deliveries, one named schema per event. */
export const webhookMessageSchemas = WEBHOOK_EVENTS.map((event) =>
  Type.Object(
    {
      id: Type.String({ pattern: '^msg_[0-9a-z]{26}$', description: 'The message id; also the webhook-id header. Retries of a message keep it.' }),
      event: Type.Literal(event),
      ...(event.startsWith('blend.') ? { jobId: Type.String({ pattern: '^job_[0-9a-z]{26}$' }) } : {}),
      timestamp: Timestamp,
      data: ref(WEBHOOK_DATA[event]),
    },
    { $id: messageSchemaName(event), description: `The body of a ${event} delivery.` },
  ),
);

/** Every named schema of the webhook area, for the OpenAPI document's components. */
export const webhookComponents = [WebhookEventName, SubscriptionSchema, SubscriptionPage, CreatedSubscriptionSchema, CreateSubscriptionBody, AttemptSchema, AttemptPage, BlendCompletedSchema, ...webhookMessageSchemas];

/** Each webhook event with the named schema of its body, for the OpenAPI `webhooks` section. */
export const webhookDocs = () => WEBHOOK_EVENTS.map((event) => ({ event, schemaName: messageSchemaName(event) }));

import { Type } from 'typebox';
import { PageQuery } from '../http/paging.js';
import { Nullable, NullableTimestamp, StringEnum, Timestamp } from '../schemas.js';
import { WEBHOOK_EVENTS } from './outbox.js';

const EventName = Type.String({ minLength: 1, maxLength: 64, description: `One of ${WEBHOOK_EVENTS.join(', ')}, or * for all.` });

export const SubscriptionSchema = Type.Object(
  {
    id: Type.String({ examples: ['wh_01m80eg3tperaacsapew6ns732'] }),
    url: Type.String(),
    events: Type.Array(Type.String()),
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
    events: Type.Array(EventName, { minItems: 1, maxItems: 20, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false, examples: [{ url: 'https://hooks.example.com/montage', events: ['ticket.purchased', 'checkin.completed'], description: 'CRM sync' }] },
);

export const AttemptSchema = Type.Object(
  {
    id: Type.String({ examples: ['whd_01m80eg3tperaacsapew6ns732'] }),
    messageId: Type.String(),
    event: Type.String(),
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

import { Type } from 'typebox';
import { pageSchema } from '../http/paging.js';
import { Nullable, NullableTimestamp, PathId, StringEnum, Timestamp, VisibleText } from '../schemas.js';
import { SCOPES, type Scope } from './accounts.service.js';

export const ScopeSchema = StringEnum(SCOPES, { description: 'API key scope' });
/** The scopes of a key, as answered (the service hands out its read-only lists). */
const Scopes = Type.Unsafe<readonly Scope[]>(Type.Array(ScopeSchema, { maxItems: SCOPES.length }));

export const ApiKeySchema = Type.Object(
  {
    id: Type.String({ examples: ['key_01jd0c8n4ffm5b6d2x0v9k3q7r'] }),
    name: Type.String(),
    prefix: Type.String({ description: 'First 8 characters of the key, for recognising it.', examples: ['mtg_7Hq2'] }),
    scopes: Scopes,
    createdAt: Timestamp,
    lastUsedAt: NullableTimestamp,
    expiresAt: NullableTimestamp,
    revokedAt: NullableTimestamp,
  },
  { $id: 'ApiKey' },
);

export const CreatedApiKeySchema = Type.Object(
  {
    ...ApiKeySchema.properties,
    key: Type.String({ description: 'The secret key. Shown only in this response.', pattern: '^mtg_[0-9A-Za-z]{40}$' }),
  },
  { $id: 'CreatedApiKey' },
);

export const CreateKeyBody = Type.Object(
  {
    name: Type.Optional(VisibleText(100)),
    scopes: Type.Optional(Type.Array(ScopeSchema, { minItems: 1, maxItems: SCOPES.length, uniqueItems: true })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', maxLength: 64, description: 'When the key stops working.' })),
  },
  { $id: 'CreateApiKeyRequest', examples: [{ name: 'Door scanner, north gate', scopes: ['checkin'] }], additionalProperties: false },
);

const WindowUsage = Type.Object({
  name: Type.String({ examples: ['events-minute'] }),
  limit: Type.Integer(),
  remaining: Type.Integer(),
  reset: Type.Integer({ description: 'Unix seconds when the window resets.' }),
  windowSeconds: Type.Integer(),
});

export const AccountSchema = Type.Object(
  {
    id: Type.String({ examples: ['acct_01jd0c8n4ffm5b6d2x0v9k3q7r'] }),
    email: Type.String(),
    plan: StringEnum(['free', 'business', 'enterprise']),
    createdAt: Timestamp,
    limits: Type.Object({
      blendPerHour: Type.Integer(),
      eventsPerMinute: Type.Integer(),
      eventsPerDay: Type.Integer(),
    }),
    usage: Type.Array(WindowUsage),
    key: Type.Object({
      id: Type.String(),
      name: Type.String(),
      prefix: Type.String(),
      scopes: Scopes,
      expiresAt: NullableTimestamp,
    }),
  },
  { $id: 'Account' },
);

export const KeyParams = Type.Object({ id: PathId('API key id (`key_...`)') });

export const ApiKeyPage = pageSchema('ApiKeyPage', ApiKeySchema);

export const WebhookSecretSchema = Type.Object(
  {
    secret: Type.String({
      description: "Signs every delivery to a blend job's own webhookUrl.",
      pattern: '^whsec_[A-Za-z0-9+/=]+$',
      maxLength: 100,
      examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    }),
    previousSecretExpiresAt: Nullable(Timestamp, {
      description: 'Until then, deliveries also carry a signature made with the secret this one replaced; null when none does.',
    }),
    rotationOverlapSeconds: Type.Integer({
      description: 'How long, after a rotation, the replaced secret keeps signing beside the new one.',
      format: 'int32',
      minimum: 0,
      maximum: 2_147_483_647,
      examples: [86400],
    }),
  },
  { $id: 'WebhookSecret' },
);

/** Every named schema of the account area, for the OpenAPI document's components. */
export const accountComponents = [AccountSchema, ApiKeySchema, ApiKeyPage, CreatedApiKeySchema, CreateKeyBody, WebhookSecretSchema];

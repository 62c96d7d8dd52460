import { STATUS_CODES } from 'node:http';
import type { SwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { HealthStatusSchema } from './health.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A body the handler reads itself, as a stream (a multipart upload): shown in the document, never validated or buffered. */
    streamedBody?: { schema: TSchema; mediaType: string };
  }
}

const PROBLEM_TYPE = 'application/problem+json';
const PROBLEM_REF = { $ref: 'Problem#' } as const;

/**
 * The named schemas of the API (the areas' own, given by app.ts): registered with the app, so that
 * routes refer to them (`ref()`), the serialiser resolves them, and the OpenAPI document lists them
 * under components/schemas. (Problem is registered by the problem plugin.)
 */
export function registerComponents(app: FastifyInstance, components: readonly TSchema[]): void {
  const schemas: TSchema[] = [HealthStatusSchema, ...components];
  for (const schema of schemas) app.addSchema(schema);
}

/** A webhook the API sends: its event name and the named schema of its body. */
export interface WebhookDoc {
  event: string;
  schemaName: string;
}

/** The error response of one status, listing the codes a route can answer with it. */
function problemResponse(codes: readonly ErrorCode[]) {
  const status = ERROR_CODES[codes[0]!].status;
  const described = [...new Set(codes)].map((code) => `\`${code}\``).join(', ');
  return {
    description: `${STATUS_CODES[status]}: ${described} (each explained at /docs/errors)`,
    'x-codes': [...new Set(codes)],
    content: { [PROBLEM_TYPE]: { schema: PROBLEM_REF } },
  };
}

/**
 * The error responses of a route's own failures (a conflict, a missing resource), by status. The
 * failures every route of its kind can have (invalid input, authentication, rate limit, outage) are
 * added to the document by `openapiTransform`.
 */
export function problems(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);
  return Object.fromEntries([...byStatus].map(([status, list]) => [status, problemResponse(list)])) as Record<number, ReturnType<typeof problemResponse>>;
}

const header = (description: string, schema: Record<string, unknown> = { type: 'string', maxLength: 200 }) => ({ ...schema, description });

const HEADERS = {
  'X-Request-Id': header('The id of this request (the one the caller sent, when it was sane); quote it when reporting a problem.', { type: 'string', pattern: '^[\\w.:-]{1,128}$', maxLength: 128 }),
  'X-RateLimit-Limit': header('Requests allowed in the rate-limit window closest to exhaustion.', { type: 'integer', format: 'int64', minimum: 1, maximum: 1_000_000_000 }),
  'X-RateLimit-Remaining': header('Requests left in that window.', { type: 'integer', format: 'int64', minimum: 0, maximum: 1_000_000_000 }),
  'X-RateLimit-Reset': header('Unix seconds when that window resets.', { type: 'integer', format: 'int64', minimum: 0, maximum: 100_000_000_000 }),
  RateLimit: header('IETF draft: that window, requests left and seconds until it resets, e.g. `"events-minute";r=998;t=42`.', { type: 'string', maxLength: 200, pattern: '^"[a-z-]+";r=\\d+;t=\\d+$' }),
  'RateLimit-Policy': header('IETF draft: every window of the area, e.g. `"events-minute";q=1000;w=60, "events-day";q=50000;w=86400`.', { type: 'string', maxLength: 500 }),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer', format: 'int32', minimum: 1, maximum: 86_400 }),
  Location: header('The path of what was created.', { type: 'string', maxLength: 300, format: 'uri-reference' }),
  Link: header('`<path?cursor=...>; rel="next"` when another page follows.', { type: 'string', maxLength: 1200 }),
  'WWW-Authenticate': header('`Bearer realm="montage"`.', { type: 'string', maxLength: 100 }),
};

const RATE_LIMIT_HEADERS = (['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy'] as const).map((name) => [name, HEADERS[name]] as const);

/** Refused before the rate limit is spent (guard.ts): these answers carry no rate-limit headers. */
const BEFORE_RATE_LIMIT = new Set([401, 403]);
const SUCCESS_TEXT: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content' };

const IDEMPOTENCY_KEY = {
  type: 'object',
  properties: {
    'Idempotency-Key': {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]{1,255}$',
      description: 'Makes the request safe to retry for 24 hours: a retry with the same key and body gets the first answer again; another body is 409 idempotency_key_reused.',
    },
  },
};

type Schema = Record<string, any>;

/**
 * The document's view of a route (swagger `transform`), from what the route really does: error
 * responses as problem+json with the codes its kind of route can answer, the headers every answer
 * carries (X-Request-Id; the rate-limit headers once the budget is spent; Location, Link,
 * Retry-After, WWW-Authenticate where they are sent), and the Idempotency-Key request header on
 * the POSTs that honour it. Request bodies are shown as their named components.
 */
export function openapiTransform({ schema, url, route }: { schema: Schema; url: string; route: RouteOptions }): { schema: Schema; url: string } {
  if (!schema || schema.hide) return { schema, url };
  const authenticated = !(Array.isArray(schema.security) && schema.security.length === 0);
  const method = String(route.method);
  const idempotent = authenticated && method === 'POST' && route.config?.idempotent !== false;

  const codes = new Set<ErrorCode>(['internal_error', 'unavailable']);
  if (schema.querystring || schema.params || schema.body) codes.add('invalid_request');
  if (authenticated) for (const code of ['unauthorized', 'api_key_revoked', 'api_key_expired', 'plan_required', 'rate_limited'] as const) codes.add(code);
  if (authenticated && route.config?.scope !== undefined) codes.add('insufficient_scope');
  if (schema.params) codes.add('not_found');
  const streamed = route.config?.streamedBody;
  if (schema.body || streamed) {
    codes.add('payload_too_large');
    codes.add('unsupported_media_type');
  }
  if (idempotent) {
    codes.add('idempotency_key_reused');
    codes.add('idempotency_request_in_progress');
  }

  const response: Schema = {};
  for (const [status, entry] of Object.entries<Schema>(schema.response ?? {})) {
    if (Array.isArray(entry['x-codes'])) {
      for (const code of entry['x-codes']) codes.add(code);
      continue;
    }
    const headers: Schema = { 'X-Request-Id': HEADERS['X-Request-Id'], ...(entry.headers ?? {}) };
    if (authenticated) for (const [name, value] of RATE_LIMIT_HEADERS) headers[name] = value;
    if (status === '201' || status === '202') headers.Location = HEADERS.Location;
    if (typeof entry.$ref === 'string' && entry.$ref.endsWith('Page#')) headers.Link = HEADERS.Link;
    const name = typeof entry.$ref === 'string' ? entry.$ref.replace(/#$/, '') : null;
    response[status] = { ...entry, description: entry.description ?? (name ? `${SUCCESS_TEXT[status] ?? status}: ${name}` : SUCCESS_TEXT[status] ?? status), headers };
  }

  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const { 'x-codes': _codes, ...problem } = problemResponse(list);
    const headers: Schema = { 'X-Request-Id': HEADERS['X-Request-Id'] };
    if (authenticated && status < 500 && !BEFORE_RATE_LIMIT.has(status)) for (const [name, value] of RATE_LIMIT_HEADERS) headers[name] = value;
    if (status === 429 || status === 503) headers['Retry-After'] = HEADERS['Retry-After'];
    if (status === 401) headers['WWW-Authenticate'] = HEADERS['WWW-Authenticate'];
    response[status] = { ...problem, headers };
  }

  const documented = streamed ? { ...streamed.schema } : schema.body;
  const body = typeof documented?.$id === 'string' ? { $ref: `${documented.$id}#` } : documented;
  const consumes = streamed ? { consumes: [streamed.mediaType] } : {};
  return { schema: { ...schema, ...(body ? { body } : {}), ...consumes, ...(idempotent ? { headers: IDEMPOTENCY_KEY } : {}), response }, url };
}

const WEBHOOK_HEADERS = [
  ['webhook-id', 'The message id (the body\'s `id`); the same on every retry, so a receiver can drop duplicates.', { type: 'string', pattern: '^msg_[0-9a-z]{26}$' }],
  ['webhook-timestamp', 'Unix seconds when this attempt was signed.', { type: 'string', pattern: '^\\d{1,12}$' }],
  ['webhook-signature', 'Standard Webhooks signature: `v1,<base64 HMAC-SHA256 of id.timestamp.body>`, space-separated when several.', { type: 'string', maxLength: 1000 }],
] as const;

/** The OpenAPI 3.1 `webhooks` section: one entry per event, with its typed body. */
function webhooks(docs: readonly WebhookDoc[]) {
  return Object.fromEntries(
    docs.map(({ event, schemaName }) => [
      event,
      {
        post: {
          operationId: `${schemaName.replace(/Message$/, '').replace(/^./, (c) => c.toLowerCase())}Webhook`,
          summary: `${event}: delivered to subscriptions that list it (or *)`,
          description: event.startsWith('blend.')
            ? 'Delivered to the subscriptions that list it, and to the job\'s own webhookUrl (signed with the account\'s webhook secret).'
            : 'Delivered to the subscriptions that list it, signed with the subscription\'s secret.',
          tags: ['webhooks'],
          security: [],
          parameters: WEBHOOK_HEADERS.map(([name, description, schema]) => ({ in: 'header', name, required: true, description, schema: { maxLength: 100, ...schema } })),
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${schemaName}` } } } },
          responses: {
            '2XX': { description: 'Received. Any other answer, or none in time, is retried on the schedule in docs/webhooks.md.' },
            '410': { description: 'Gone: the subscription is disabled and receives nothing more.' },
          },
        },
      },
    ]),
  );
}

const TAGS = [
  ['account', 'The caller\'s account and its API keys'],
  ['events', 'Events: create, publish, cancel'],
  ['ticket types', 'Ticket types and their live inventory'],
  ['orders', 'Orders that issue tickets'],
  ['tickets', 'Tickets: read, cancel, transfer'],
  ['attendees', 'Attendees and their export'],
  ['check-in', 'Door check-in, undo and history'],
  ['analytics', 'Totals and time series'],
  ['payouts', 'Payouts of net revenue'],
  ['webhooks', 'Subscriptions, deliveries and the messages delivered'],
  ['blend', 'Photo blending jobs and their results'],
  ['operations', 'Health probes'],
] as const;

/** Options of @fastify/swagger for this API; `webhookDocs`: the webhooks it sends. */
export function swaggerOptions(config: Config, webhookDocs: readonly WebhookDoc[]): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Montage API',
        version: '1.0.0',
        description:
          'Photo blending and event management. Every route answers under both /v1 and /api/v1 (only /v1 is listed). ' +
          'Errors are RFC 9457 problem details (application/problem+json); see /docs/errors for every code.',
      },
      // x-internal: this server is the public one (OWASP's inventory rule asks every server to say).
      servers: [{ url: config.publicUrl, ...{ 'x-internal': false } }],
      tags: TAGS.map(([name, description]) => ({ name, description })),
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'mtg_ API key' } } },
      security: [{ apiKey: [] }],
      webhooks: webhooks(webhookDocs),
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: openapiTransform,
  };
}

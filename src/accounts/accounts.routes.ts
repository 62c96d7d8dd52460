import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { PageQuery, withLinkHeader } from '../http/paging.js';
import { ref } from '../schemas.js';
import { problems } from '../http/openapi.js';
import { AccountSchema, ApiKeyPage, ApiKeySchema, CreateKeyBody, CreatedApiKeySchema, KeyParams, WebhookSecretSchema } from './accounts.schemas.js';
import * as accounts from './accounts.service.js';
import * as webhookSecret from './webhook-secret.service.js';

export const accountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (accountId: string) => new TenantScope(app.db, accountId);

  app.get(
    '/account',
    {
      schema: {
        operationId: 'getAccount',
        tags: ['account'],
        summary: "The caller's account, plan, limits, usage of each rate-limit window and the key's scopes",
        response: { 200: ref(AccountSchema) },
      },
    },
    (request) => accounts.describeAccount(app.db, app.config, app.rateLimits, request.principal!),
  );

  app.get(
    '/account/webhook-secret',
    {
      config: { scope: 'webhooks' },
      schema: {
        operationId: 'getAccountWebhookSecret',
        tags: ['account'],
        summary: "The account's signing secret for deliveries to a blend job's own webhookUrl",
        description:
          'Subscriptions have their own secrets; this one signs deliveries that have no subscription. ' +
          '`previousSecretExpiresAt` says until when the secret replaced by the last rotation still signs too.',
        response: { 200: ref(WebhookSecretSchema) },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return webhookSecret.readWebhookSecret(app.db, request.principal!.accountId, app.config.webhookSecretOverlapMs);
    },
  );

  app.post(
    '/account/webhook-secret/rotate',
    {
      config: { scope: 'webhooks', idempotent: false },
      schema: {
        tags: ['account'],
        operationId: 'rotateAccountWebhookSecret',
        summary: "Replace the account's webhook signing secret; the old one keeps signing beside it for the overlap",
        description:
          'Every delivery without a subscription is signed with the new secret from now on, and also with the old one until ' +
          '`previousSecretExpiresAt` (MONTAGE_WEBHOOK_SECRET_OVERLAP, 24 h by default): `webhook-signature: v1,<new> v1,<old>`. ' +
          'Rotating again within the overlap retires the oldest secret at once. Idempotency-Key is not honoured: a stored response would hold the secret.',
        response: { 200: ref(WebhookSecretSchema) },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return webhookSecret.rotateWebhookSecret(app.db, request.principal!.accountId, app.config.webhookSecretOverlapMs);
    },
  );

  app.get(
    '/keys',
    {
      config: { scope: 'all' },
      schema: {
        operationId: 'listApiKeys',
        tags: ['account'],
        summary: "List the account's API keys, newest first (secrets are never shown again)",
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: ref(ApiKeyPage) },
      },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await accounts.listApiKeys(scope(request.principal!.accountId), request.query)),
  );

  app.post(
    '/keys',
    {
      config: { scope: 'all', idempotent: false },
      schema: {
        operationId: 'createApiKey',
        tags: ['account'],
        summary: 'Create an API key; the response is the only time the key is shown',
        description:
          'A key made with a key expires no later than its maker and holds none of the scopes its maker lacks (403 key_exceeds_maker, naming the field); without expiresAt or scopes it gets its maker\'s. Idempotency-Key is not honoured here: a stored response would hold the secret.',
        body: CreateKeyBody,
        response: { 201: ref(CreatedApiKeySchema) },
      },
    },
    async (request, reply) => {
      const { name, scopes, expiresAt } = request.body;
      const principal = request.principal!;
      const account = { id: principal.accountId, plan: principal.plan };
      const created = await accounts.createApiKey(app.db, account, { name, scopes, expiresAt }, principal.keyBounds);
      return reply.code(201).header('Location', `/v1/keys/${created.id}`).header('Cache-Control', 'no-store').send(created);
    },
  );

  app.get(
    '/keys/:id',
    {
      config: { scope: 'all' },
      schema: { operationId: 'getApiKey', tags: ['account'], summary: 'Read an API key', params: KeyParams, response: { 200: ref(ApiKeySchema) } },
    },
    (request) => accounts.getApiKey(scope(request.principal!.accountId), request.params.id),
  );

  app.post(
    '/keys/:id/revoke',
    {
      config: { scope: 'all' },
      schema: {
        operationId: 'revokeApiKey',
        tags: ['account'],
        summary: 'Revoke an API key: it stops working at once (revoking twice is a no-op)',
        params: KeyParams,
        response: { 200: ref(ApiKeySchema) },
      },
    },
    async (request) => {
      const revoked = await accounts.revokeApiKey(scope(request.principal!.accountId), request.params.id);
      app.keyCache.clear();
      return revoked;
    },
  );
};

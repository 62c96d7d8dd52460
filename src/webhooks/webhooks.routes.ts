import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { withLinkHeader } from '../http/paging.js';
import { problems } from '../http/openapi.js';
import { IdParam, ref } from '../schemas.js';
import { AttemptPage, CreatedSubscriptionSchema, CreateSubscriptionBody, ListQuery, SubscriptionPage, SubscriptionSchema } from './webhooks.schemas.js';
import * as webhooks from './webhooks.service.js';

const Params = IdParam('Webhook subscription id (`wh_...`)');

export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const config = { scope: 'webhooks' as const };
  const tags = ['webhooks'];

  app.get(
    '/webhooks',
    { config, schema: { operationId: 'listWebhookSubscriptions', tags, summary: 'List webhook subscriptions, newest first (no secrets)', querystring: ListQuery, response: { 200: ref(SubscriptionPage) } } },
    async (request, reply) => withLinkHeader(request, reply, await webhooks.listSubscriptions(scope(request), request.query)),
  );

  app.post(
    '/webhooks',
    {
      config: { ...config, idempotent: false },
      schema: {
        operationId: 'createWebhookSubscription',
        tags,
        summary: 'Subscribe an endpoint to events; the response is the only time the signing secret is shown',
        description: 'Idempotency-Key is not honoured here: a stored response would hold the secret.',
        body: CreateSubscriptionBody,
        response: { 201: ref(CreatedSubscriptionSchema), ...problems('too_many_subscriptions') },
      },
    },
    async (request, reply) => {
      const created = await webhooks.createSubscription(scope(request), request.body, app.config.allowPrivateNetwork);
      return reply.code(201).header('Location', `/v1/webhooks/${created.id}`).header('Cache-Control', 'no-store').send(created);
    },
  );

  app.get(
    '/webhooks/:id',
    { config, schema: { operationId: 'getWebhookSubscription', tags, summary: 'Read a webhook subscription', params: Params, response: { 200: ref(SubscriptionSchema) } } },
    (request) => webhooks.getSubscription(scope(request), request.params.id),
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      config: { ...config, idempotent: false },
      schema: {
        tags,
        operationId: 'rotateWebhookSubscriptionSecret',
        summary: "Replace a subscription's signing secret; the old one keeps signing beside it for the overlap",
        description:
          'Deliveries are signed with the new secret from now on, and also with the old one until `previousSecretExpiresAt` ' +
          '(MONTAGE_WEBHOOK_SECRET_OVERLAP, 24 h by default): `webhook-signature: v1,<new> v1,<old>`. ' +
          'Idempotency-Key is not honoured: a stored response would hold the secret.',
        params: Params,
        response: { 200: ref(CreatedSubscriptionSchema) },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return webhooks.rotateSubscriptionSecret(scope(request), request.params.id, app.config.webhookSecretOverlapMs);
    },
  );

  app.delete(
    '/webhooks/:id',
    { config, schema: { operationId: 'deleteWebhookSubscription', tags, summary: 'Delete a webhook subscription; nothing more is delivered to it', params: Params, response: { 204: Type.Null() } } },
    async (request, reply) => {
      await webhooks.deleteSubscription(scope(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config,
      schema: { operationId: 'listWebhookDeliveries', tags, summary: 'Delivery attempts to this subscription, newest first', params: Params, querystring: ListQuery, response: { 200: ref(AttemptPage) } },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await webhooks.listAttempts(scope(request), request.params.id, request.query)),
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../../http/openapi.js';
import { ref } from '../../schemas.js';
import { deleteStripeSettings, getStripeSettings, putStripeSettings } from './stripe-settings.service.js';
import { StripeSettingsBody, StripeSettingsSchema } from './stripe.schemas.js';

/** The account's Stripe keys (behind the API key guard): managing where money goes needs a key with every scope. */
export const stripeSettingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const config = { scope: 'all' as const };
  const tags = ['account'];

  app.get(
    '/payment-providers/stripe',
    { config, schema: { operationId: 'getStripeSettings', tags, summary: "The account's Stripe settings: which key (its last 4 characters), never the secrets", response: { 200: ref(StripeSettingsSchema), ...problems('not_found') } } },
    (request) => getStripeSettings(app.db, request.principal!.accountId, app.config.publicUrl),
  );

  app.put(
    '/payment-providers/stripe',
    {
      config,
      schema: {
        operationId: 'putStripeSettings',
        tags,
        summary: "Save the account's Stripe secret key and webhook signing secret (replacing any saved before)",
        description: 'The answer names the key by its last 4 characters and gives the webhook URL to enter in Stripe\'s dashboard; neither secret is ever shown again.',
        body: StripeSettingsBody,
        response: { 200: ref(StripeSettingsSchema) },
      },
    },
    (request) => putStripeSettings(app.db, request.principal!.accountId, request.body, app.config.publicUrl),
  );

  app.delete(
    '/payment-providers/stripe',
    { config, schema: { operationId: 'deleteStripeSettings', tags, summary: "Forget the account's Stripe keys: no new Stripe orders, and Stripe's webhooks are no longer accepted", response: { 204: Type.Null(), ...problems('not_found') } } },
    async (request, reply) => {
      await deleteStripeSettings(app.db, request.principal!.accountId);
      return reply.code(204).send(null);
    },
  );
};

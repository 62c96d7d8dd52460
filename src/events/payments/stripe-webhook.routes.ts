import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../../http/openapi.js';
import { ref } from '../../schemas.js';
import { StripeWebhookParams, StripeWebhookReceiptSchema } from './stripe.schemas.js';
import { receiveStripeEvent } from './stripe-webhook.service.js';

/**
 * The endpoint Stripe posts an account's events to. Outside the API key guard (Stripe holds no
 * key): the signature over the raw body is the proof, so this context reads the body as bytes.
 */
export const stripeWebhookRoutes: FastifyPluginAsyncTypebox<{ listed: boolean }> = async (app, { listed }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.post(
    '/payments/stripe/webhook/:accountId',
    {
      schema: {
        ...(listed ? {} : { hide: true }),
        operationId: 'receiveStripeWebhook',
        tags: ['orders'],
        summary: "Stripe's webhook endpoint of an account: completes the orders paid on Stripe Checkout",
        description:
          'Called by Stripe, not by clients: no API key; the `Stripe-Signature` header, checked with the account\'s webhook secret over the raw body, is the proof. ' +
          'Acts on `checkout.session.completed` (paid) and `checkout.session.async_payment_succeeded`; answers 200 to every other event. A repeated delivery of one event has no second effect.',
        security: [],
        params: StripeWebhookParams,
        headers: Type.Object({ 'stripe-signature': Type.Optional(Type.String({ maxLength: 2000, description: "Stripe's signature of the body: `t=<unix seconds>,v1=<hex HMAC-SHA256>`." })) }),
        response: { 200: ref(StripeWebhookReceiptSchema), ...problems('stripe_signature_invalid') },
      },
    },
    async (request) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const outcome = await receiveStripeEvent(app.db, request.params.accountId, body, request.headers['stripe-signature'], request.log);
      return { received: true as const, outcome };
    },
  );
};

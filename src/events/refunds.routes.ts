import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { TenantScope } from '../db/tenant.js';
import { problems } from '../http/openapi.js';
import type { Scope } from '../http/principal.js';
import { IdParam, ref } from '../schemas.js';
import { PaymentSchema } from './events.schemas.js';
import { RefundOrderBody } from './refunds.schemas.js';
import * as refunds from './refunds.service.js';

const WRITE: readonly Scope[] = ['events:write'];

export const refundRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);

  app.post(
    '/orders/:id/refunds',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'refundOrder',
        tags: ['orders'],
        summary: "Give back some or all of an order's money (tickets stay as they are)",
        description:
          'Through the order\'s payment provider. Never more than was paid less what was refunded or is being refunded, whatever the concurrency: 409 `refund_exceeds_paid` with `refundable`. 201 with the refund (`status` `succeeded`) and `payment.refunded` fires; if the provider refuses, the refund is `failed`, its amount free again, and the answer is 502 `payment_provider_error`. Send an Idempotency-Key to retry safely.',
        params: IdParam('Order id (`ord_...`)'),
        body: RefundOrderBody,
        response: { 201: ref(PaymentSchema), ...problems('order_not_completed', 'refund_exceeds_paid', 'payment_provider_error') },
      },
    },
    async (request, reply) => {
      const refund = await refunds.refundOrder(scope(request), request.params.id, request.body);
      return reply.code(201).send(refund);
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { TenantScope } from '../db/tenant.js';
import type { Scope } from '../http/principal.js';
import { problems } from '../http/openapi.js';
import { IdParam, ref } from '../schemas.js';
import { ChangeOrderBody, OrderChangeSchema } from './order-changes.schemas.js';
import * as orderChanges from './order-changes.service.js';

const WRITE: readonly Scope[] = ['events:write'];
const OrderParams = IdParam('Order id (`ord_...`)');

export const orderChangeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);

  app.post(
    '/orders/:id/changes',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'changeOrder',
        tags: ['orders'],
        summary: 'Change an order: cancel some of its tickets, move others to another ticket type',
        description:
          'One transaction: all of it or nothing. Cancelled tickets return their places; a moved ticket takes a place of its new type (a sold-out type refuses the change) and gets a new code, the old one revoked. `difference` says what the change did to the order\'s value: a dearer type adds to `balanceDue` (confirmed paid with `POST /v1/orders/:id/confirm`); what cancels and cheaper types free pays off the balance first, the rest is refunded through the order\'s provider after the commit (unless `refund: false`; 502 `payment_provider_error` if the provider refuses: the change stands, the refund is `failed` and can be asked again). Fires `order.changed`.',
        params: OrderParams,
        body: ChangeOrderBody,
        response: { 200: ref(OrderChangeSchema), ...problems('order_not_completed', 'ticket_cancelled', 'ticket_checked_in', 'sold_out', 'event_cancelled', 'payment_provider_error') },
      },
    },
    (request) => orderChanges.changeOrder(scope(request), request.params.id, request.body),
  );
};

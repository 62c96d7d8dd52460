import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TenantScope } from '../db/tenant.js';
import type { Scope } from '../http/principal.js';
import { problems } from '../http/openapi.js';
import { IdParam, ref } from '../schemas.js';
import { ChangeOrderBody, OrderChangeSchema } from './order-changes.schemas.js';
import * as orderChanges from './order-changes.service.js';

const WRITE: readonly Scope[] = ['events:write'];
const OrderParams = IdParam('Order id (`ord_...`)');

export const orderChangeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: { principal: { accountId: string } | null }) => new TenantScope(app.db, request.principal!.accountId);

  app.post(
    '/orders/:id/changes',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'changeOrder',
        tags: ['orders'],
        summary: 'Change an order: cancel some of its tickets, move others to another ticket type',
        description:
          'One transaction: all of it or nothing. Cancelled tickets return their places; a moved ticket takes a place of its new type (a sold-out type refuses the change) and gets a new code, the old one revoked. `difference` says what the change did to the order\'s value. Fires `order.changed`.',
        params: OrderParams,
        body: ChangeOrderBody,
        response: { 200: ref(OrderChangeSchema), ...problems('ticket_cancelled', 'ticket_checked_in', 'sold_out', 'event_cancelled') },
      },
    },
    (request) => orderChanges.changeOrder(scope(request), request.params.id, request.body),
  );
};

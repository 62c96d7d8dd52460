import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Scope } from '../http/principal.js';
import { TenantScope } from '../db/tenant.js';
import { PageQuery, withLinkHeader } from '../http/paging.js';
import { problems } from '../http/openapi.js';
import { IdParam, ref } from '../schemas.js';
import { invalid } from '../errors.js';
import * as analytics from './analytics.service.js';
import * as attendees from './attendees.service.js';
import * as checkinLists from './checkin-lists.service.js';
import { UndoQuery } from './checkin-lists.schemas.js';
import * as checkins from './checkins.service.js';
import * as schemas from './events.schemas.js';
import * as events from './events.service.js';
import * as orderChanges from './order-changes.service.js';
import * as orders from './orders.service.js';
import * as payouts from './payouts.service.js';
import * as tickets from './tickets.service.js';

const READ: readonly Scope[] = ['events:read', 'events:write'];
const WRITE: readonly Scope[] = ['events:write'];
const CHECKIN: readonly Scope[] = ['checkin', 'events:write'];

const EventParams = IdParam('Event id (`evt_...`)');
const TicketParams = IdParam('Ticket id (`tkt_...`)');
const OrderParams = IdParam('Order id (`ord_...`)');

export const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const tags = ['events'];

  app.get(
    '/events',
    {
      config: { scope: READ },
      schema: { operationId: 'listEvents', tags, summary: 'List events, newest first', querystring: schemas.EventListQuery, response: { 200: ref(schemas.EventPage) } },
    },
    async (request, reply) => withLinkHeader(request, reply, await events.listEvents(scope(request), request.query)),
  );

  app.post(
    '/events',
    {
      config: { scope: WRITE },
      schema: { operationId: 'createEvent', tags, summary: 'Create an event (as a draft)', body: schemas.CreateEventBody, response: { 201: ref(schemas.EventSchema) } },
    },
    async (request, reply) => {
      const event = await events.createEvent(scope(request), request.body);
      return reply.code(201).header('Location', `/v1/events/${event.id}`).send(event);
    },
  );

  app.get(
    '/events/:id',
    { config: { scope: READ }, schema: { operationId: 'getEvent', tags, summary: 'Read an event', params: EventParams, response: { 200: ref(schemas.EventSchema) } } },
    async (request) => events.presentEvent(await events.getEvent(scope(request), request.params.id)),
  );

  app.patch(
    '/events/:id',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'updateEvent',
        tags,
        summary: 'Update an event (partial)',
        description: 'Once ticket types exist the currency is fixed; capacity may not drop below the tickets sold; a cancelled event does not change.',
        params: EventParams,
        body: schemas.UpdateEventBody,
        response: { 200: ref(schemas.EventSchema), ...problems('event_cancelled', 'event_has_tickets', 'capacity_below_sold') },
      },
    },
    (request) => events.updateEvent(scope(request), request.params.id, request.body),
  );

  app.delete(
    '/events/:id',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'deleteEvent',
        tags,
        summary: 'Delete an event that never issued a ticket',
        description:
          'Refused while the event has issued a ticket (cancelled ones count: 409 `event_has_tickets`) or has an order a payment could still complete: a pending one, or an expired one of an event that is not cancelled (409 `event_has_orders`). Cancel the event first; an event that never issued a ticket can then be deleted. Its vouchers, waiting list and cancelled or expired orders go with it.',
        params: EventParams,
        response: { 204: Type.Null(), ...problems('event_has_tickets', 'event_has_orders') },
      },
    },
    async (request, reply) => {
      await events.deleteEvent(scope(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/events/:id/publish',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'publishEvent',
        tags,
        summary: 'Publish an event (needs a ticket type; publishing again is a no-op)',
        description: 'A draft whose `endsAt` has passed is not published (409 `event_ended`): it could sell nothing. Publishing an event that is published already is a 200 that changes nothing.',
        params: EventParams,
        response: { 200: ref(schemas.EventSchema), ...problems('event_cancelled', 'event_has_no_ticket_types', 'event_ended') },
      },
    },
    (request) => events.publishEvent(scope(request), request.params.id),
  );

  app.post(
    '/events/:id/cancel',
    {
      config: { scope: WRITE },
      schema: { operationId: 'cancelEvent', tags, summary: "Cancel an event: every valid ticket is cancelled, paid ones refunded through their order's provider", params: EventParams, response: { 200: ref(schemas.EventSchema), ...problems('event_cancelled') } },
    },
    (request) => events.cancelEvent(scope(request), request.params.id),
  );

  app.get(
    '/events/:id/tickets',
    {
      config: { scope: READ },
      schema: {
        operationId: 'listTicketTypes',
        tags: ['ticket types'],
        summary: 'List ticket types with live inventory, oldest first',
        params: EventParams,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: ref(schemas.TicketTypePage) },
      },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await events.listTicketTypes(scope(request), request.params.id, request.query)),
  );

  app.post(
    '/events/:id/tickets',
    {
      config: { scope: WRITE },
      schema: { operationId: 'createTicketType', tags: ['ticket types'], summary: 'Create a ticket type', params: EventParams, body: schemas.CreateTicketTypeBody, response: { 201: ref(schemas.TicketTypeSchema), ...problems('event_cancelled') } },
    },
    async (request, reply) => {
      const type = await events.createTicketType(scope(request), request.params.id, request.body);
      return reply.code(201).header('Location', `/v1/events/${type.eventId}/tickets/${type.id}`).send(type);
    },
  );

  app.get(
    '/events/:id/tickets/:ticketTypeId',
    {
      config: { scope: READ },
      schema: { operationId: 'getTicketType', tags: ['ticket types'], summary: 'Read a ticket type with live inventory', params: schemas.EventTicketParams, response: { 200: ref(schemas.TicketTypeSchema) } },
    },
    (request) => events.getTicketType(scope(request), request.params.id, request.params.ticketTypeId),
  );

  app.patch(
    '/events/:id/tickets/:ticketTypeId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'updateTicketType',
        tags: ['ticket types'],
        summary: 'Update a ticket type (quantity not below sold; price only before any sale)',
        params: schemas.EventTicketParams,
        body: schemas.UpdateTicketTypeBody,
        response: { 200: ref(schemas.TicketTypeSchema), ...problems('event_cancelled', 'quantity_below_sold', 'price_locked') },
      },
    },
    (request) => events.updateTicketType(scope(request), request.params.id, request.params.ticketTypeId, request.body),
  );

  app.post(
    '/events/:id/orders',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'createOrder',
        tags: ['orders'],
        summary: 'Place an order: issues its tickets, all or nothing, or holds its places until it is paid',
        description:
          'Never sells or holds more than a ticket type\'s quantity or the event\'s capacity, whatever the concurrency. A free order, or a paid one without `payment`, completes at once. A paid order with `payment` is `pending`: its places are held until `expiresAt` (the event\'s `holdMinutes`), its tickets issued when the payment completes it (docs/events.md, "Orders and payments"). Send an Idempotency-Key to retry safely.',
        params: EventParams,
        body: schemas.CreateOrderBody,
        response: {
          201: ref(schemas.OrderSchema),
          ...problems('sold_out', 'sales_closed', 'event_not_published', 'event_cancelled', 'voucher_not_found', 'voucher_not_valid', 'voucher_not_applicable', 'voucher_used_up', 'payment_provider_not_configured', 'payment_provider_error'),
        },
      },
    },
    async (request, reply) => {
      const order = await orders.createOrder(scope(request), request.params.id, request.body);
      return reply.code(201).header('Location', `/v1/orders/${order.id}`).send(order);
    },
  );

  app.get(
    '/events/:id/orders',
    {
      config: { scope: READ },
      schema: {
        operationId: 'listOrders',
        tags: ['orders'],
        summary: "List an event's orders, newest first (optionally of one state), with their tickets and payments",
        params: EventParams,
        querystring: schemas.OrderListQuery,
        response: { 200: ref(schemas.OrderPage) },
      },
    },
    async (request, reply) => withLinkHeader(request, reply, await orders.listOrders(scope(request), request.params.id, request.query)),
  );

  app.get(
    '/orders/:id',
    {
      config: { scope: READ },
      schema: { operationId: 'getOrder', tags: ['orders'], summary: 'Read an order with its tickets (their current state) and payments', params: OrderParams, response: { 200: ref(schemas.OrderSchema) } },
    },
    (request) => orders.getOrder(scope(request), request.params.id),
  );

  app.post(
    '/orders/:id/confirm',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'confirmOrder',
        tags: ['orders'],
        summary: 'Confirm the manual payment of a pending order: it completes and its tickets are issued',
        description:
          'Only for orders paid through the `manual` provider (bank transfer, cash). An expired order is completed too if its places are still free (else 409 `order_expired`); a completed or cancelled one is 409 `order_not_pending`. A completed order that owes a `balanceDue` (an order change moved tickets to a dearer type), whatever its provider: the balance is recorded paid (a `manual` charge) and `order.changed` fires.',
        params: OrderParams,
        body: schemas.ConfirmOrderBody,
        response: { 200: ref(schemas.OrderSchema), ...problems('order_not_manual', 'order_not_pending', 'order_expired') },
      },
      // The body is optional: none is `{}`.
      preValidation: (request, _reply, done) => {
        request.body ??= {};
        done();
      },
    },
    (request) => orders.confirmOrder(scope(request), request.params.id, request.body ?? {}),
  );

  app.post(
    '/orders/:id/cancel',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'cancelOrder',
        tags: ['orders'],
        summary: 'Cancel a pending order: its held places return to inventory',
        description: 'Only a pending order; a completed order keeps its state (cancel its tickets one by one instead), an expired or cancelled one is 409 `order_not_pending`.',
        params: OrderParams,
        response: { 200: ref(schemas.OrderSchema), ...problems('order_not_pending') },
      },
    },
    (request) => orders.cancelOrder(scope(request), request.params.id),
  );

  app.get(
    '/tickets/:id',
    { config: { scope: READ }, schema: { operationId: 'getTicket', tags: ['tickets'], summary: 'Read a ticket', params: TicketParams, response: { 200: ref(schemas.TicketSchema) } } },
    (request) => tickets.getTicket(scope(request), request.params.id),
  );

  app.post(
    '/tickets/:id/cancel',
    {
      config: { scope: WRITE },
      schema: { operationId: 'cancelTicket', tags: ['tickets'], summary: "Cancel a ticket: its place returns to inventory, a paid ticket is refunded through its order's provider", params: TicketParams, response: { 200: ref(schemas.TicketSchema), ...problems('ticket_cancelled', 'ticket_checked_in', 'payment_provider_error') } },
    },
    (request) => orderChanges.cancelTicket(scope(request), request.params.id),
  );

  app.post(
    '/tickets/:id/transfer',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'transferTicket',
        tags: ['tickets'],
        summary: 'Transfer a ticket to a new holder; it gets a new code and the old one stops working',
        params: TicketParams,
        body: schemas.TransferBody,
        response: { 200: ref(schemas.TicketSchema), ...problems('ticket_cancelled', 'ticket_checked_in') },
      },
    },
    (request) => tickets.transferTicket(scope(request), request.params.id, request.body),
  );

  app.get(
    '/events/:id/attendees',
    {
      config: { scope: READ },
      schema: { operationId: 'listAttendees', tags: ['attendees'], summary: 'List attendees (one per valid ticket) and their check-in status', params: EventParams, querystring: schemas.AttendeeListQuery, response: { 200: ref(schemas.AttendeePage) } },
    },
    async (request, reply) => withLinkHeader(request, reply, await attendees.listAttendees(scope(request), request.params.id, request.query)),
  );

  app.get(
    '/events/:id/attendees/export',
    {
      config: { scope: READ },
      schema: {
        operationId: 'exportAttendees',
        tags: ['attendees'],
        summary: 'Export attendees as CSV (default) or NDJSON, streamed',
        description:
          'CSV: every cell is quoted; a cell, or any piece of it after , ; | tab or a line break, that starts with = + - @ tab or CR (past spaces and quotes) gets an apostrophe in front, so spreadsheets do not run it as a formula. NDJSON carries values as they are.',
        params: EventParams,
        querystring: schemas.ExportQuery,
        response: {
          200: {
            description: 'CSV or NDJSON',
            content: {
              'text/csv': { schema: Type.Unsafe<string | Readable>({ type: 'string', examples: [attendees.EXPORT_EXAMPLES.csv] }) },
              'application/x-ndjson': { schema: Type.Unsafe<string | Readable>({ type: 'string', examples: [attendees.EXPORT_EXAMPLES.json] }) },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const file = await attendees.exportAttendees(scope(request), request.params.id, request.query);
      return reply.type(file.contentType).header('Content-Disposition', `attachment; filename="${file.filename}"`).send(file.stream);
    },
  );

  app.post(
    '/events/:id/checkin',
    {
      config: { scope: CHECKIN },
      schema: {
        operationId: 'checkIn',
        tags: ['check-in'],
        summary: 'Check a ticket in by ticketId or by code',
        description:
          'A second check-in of the same ticket is 409 already_checked_in with the first check-in\'s checkedInAt and checkinId. A signed code is verified first (docs/events.md, Signed ticket codes): a code replaced by a transfer or reissue is 409 ticket_revoked, one of a retired key 409 key_retired. With `listId`, the scan goes through that check-in list (entry or exit, its ticket types and window; a repeated `scanId` has no second effect).',
        params: EventParams,
        body: schemas.CheckinBody,
        response: {
          201: ref(schemas.CheckinSchema),
          ...problems('already_checked_in', 'ticket_cancelled', 'ticket_revoked', 'key_retired', 'code_not_yet_valid', 'code_expired', 'already_inside', 'not_inside', 'wrong_list', 'not_yet_valid', 'list_expired'),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.listId === undefined) {
        if (body.direction !== undefined) throw invalid('/direction', 'needs listId');
        if (body.scanId !== undefined) throw invalid('/scanId', 'needs listId');
      }
      const checkin =
        body.listId === undefined
          ? await checkins.checkIn(scope(request), request.params.id, body, request.principal!.keyId)
          : await checkinLists.checkInOnList(scope(request), request.params.id, body, request.principal!.keyId);
      return reply.code(201).header('Location', `/v1/events/${checkin.eventId}/checkins/${checkin.id}`).send(checkin);
    },
  );

  app.get(
    '/events/:id/checkins',
    {
      config: { scope: READ },
      schema: { operationId: 'listCheckIns', tags: ['check-in'], summary: 'The check-in history: every check-in and undo (who, when, gate), newest first', params: EventParams, querystring: schemas.CheckinListQuery, response: { 200: ref(schemas.CheckinHistoryPage) } },
    },
    async (request, reply) => withLinkHeader(request, reply, await checkins.listCheckIns(scope(request), request.params.id, request.query)),
  );

  app.get(
    '/events/:id/checkins/:childId',
    {
      config: { scope: READ },
      schema: { operationId: 'getCheckIn', tags: ['check-in'], summary: 'Read a check-in (or undo) with its ticket as it is now', params: schemas.EventChildParams, response: { 200: ref(schemas.CheckinSchema) } },
    },
    (request) => checkins.getCheckIn(scope(request), request.params.id, request.params.childId),
  );

  app.delete(
    '/events/:id/checkin/:ticketId',
    {
      config: { scope: CHECKIN },
      schema: {
        operationId: 'undoCheckIn',
        tags: ['check-in'],
        summary: 'Undo the check-in of a ticket (with listId: its last admitted entry on that check-in list)',
        params: schemas.EventCheckinParams,
        querystring: UndoQuery,
        response: { 200: ref(schemas.TicketSchema), ...problems('not_checked_in', 'ticket_cancelled') },
      },
    },
    (request) =>
      request.query.listId === undefined
        ? checkins.undoCheckIn(scope(request), request.params.id, request.params.ticketId, request.principal!.keyId)
        : checkinLists.undoOnList(scope(request), request.params.id, request.params.ticketId, request.query.listId),
  );

  app.get(
    '/events/:id/analytics',
    { config: { scope: READ }, schema: { operationId: 'getEventAnalytics', tags: ['analytics'], summary: 'Totals: tickets, money, check-ins, per ticket type', params: EventParams, response: { 200: ref(schemas.AnalyticsSchema) } } },
    (request) => analytics.eventAnalytics(scope(request), request.params.id),
  );

  app.get(
    '/events/:id/analytics/sales',
    {
      config: { scope: READ },
      schema: { operationId: 'getSalesSeries', tags: ['analytics'], summary: 'Sales and cancellations per minute, hour or day (empty buckets are zeros)', params: EventParams, querystring: schemas.SeriesQuery, response: { 200: ref(schemas.SalesSeriesSchema) } },
    },
    (request) => analytics.salesSeries(scope(request), request.params.id, request.query),
  );

  app.get(
    '/events/:id/analytics/checkins',
    {
      config: { scope: READ },
      schema: { operationId: 'getCheckInSeries', tags: ['analytics'], summary: 'Check-ins and undos per minute, hour or day (empty buckets are zeros)', params: EventParams, querystring: schemas.SeriesQuery, response: { 200: ref(schemas.CheckinSeriesSchema) } },
    },
    (request) => analytics.checkinSeries(scope(request), request.params.id, request.query),
  );

  app.post(
    '/events/:id/payouts',
    { config: { scope: WRITE }, schema: { operationId: 'createPayout', tags: ['payouts'], summary: "Pay out the event's net revenue not yet paid out", params: EventParams, response: { 201: ref(schemas.PayoutSchema), ...problems('nothing_to_pay_out') } } },
    async (request, reply) => {
      const payout = await payouts.createPayout(scope(request), request.params.id);
      return reply.code(201).header('Location', `/v1/events/${payout.eventId}/payouts/${payout.id}`).send(payout);
    },
  );

  app.get(
    '/events/:id/payouts/:childId',
    { config: { scope: READ }, schema: { operationId: 'getPayout', tags: ['payouts'], summary: 'Read a payout', params: schemas.EventChildParams, response: { 200: ref(schemas.PayoutSchema) } } },
    (request) => payouts.getPayout(scope(request), request.params.id, request.params.childId),
  );

  app.get(
    '/events/:id/payouts',
    {
      config: { scope: READ },
      schema: { operationId: 'listPayouts', tags: ['payouts'], summary: 'List payouts, newest first', params: EventParams, querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: ref(schemas.PayoutPage) } },
    },
    async (request, reply) =>
      withLinkHeader(request, reply, await payouts.listPayouts(scope(request), request.params.id, request.query)),
  );
};

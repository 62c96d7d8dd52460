import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { TenantScope } from '../db/tenant.js';
import { problems } from '../http/openapi.js';
import { withLinkHeader } from '../http/paging.js';
import type { Scope } from '../http/principal.js';
import { IdParam, ref } from '../schemas.js';
import * as schemas from './waitlist.schemas.js';
import * as waitlist from './waitlist.service.js';

const READ: readonly Scope[] = ['events:read', 'events:write'];
const WRITE: readonly Scope[] = ['events:write'];

const EventParams = IdParam('Event id (`evt_...`)');

/** The waiting list of an event's sold-out ticket types (docs/events.md, "Waiting list"). */
export const waitlistRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const tags = ['waiting list'];

  app.post(
    '/events/:id/waitlist',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'joinWaitlist',
        tags,
        summary: 'Put a person on the waiting list of a sold-out ticket type',
        description:
          'Only when the type has no place anyone may buy (409 `tickets_available` with `available` otherwise). The entry joins the end of its type\'s queue; when a place frees, the first in line gets an offer (a single-use voucher, `waitlist.offered`). One waiting or offered entry per e-mail address and type (409 `waitlist_duplicate`). The event must be on sale, as for an order.',
        params: EventParams,
        body: schemas.JoinWaitlistBody,
        response: { 201: ref(schemas.WaitlistEntrySchema), ...problems('event_not_published', 'event_cancelled', 'sales_closed', 'tickets_available', 'waitlist_duplicate', 'waitlist_full') },
      },
    },
    async (request, reply) => reply.code(201).send(await waitlist.joinWaitlist(scope(request), request.params.id, request.body)),
  );

  app.get(
    '/events/:id/waitlist',
    {
      config: { scope: READ },
      schema: {
        operationId: 'listWaitlist',
        tags,
        summary: 'List the waiting list in queue order, with each waiting entry\'s position',
        params: EventParams,
        querystring: schemas.WaitlistListQuery,
        response: { 200: ref(schemas.WaitlistEntryPage) },
      },
    },
    async (request, reply) => withLinkHeader(request, reply, await waitlist.listWaitlist(scope(request), request.params.id, request.query)),
  );

  app.delete(
    '/events/:id/waitlist/:entryId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'removeWaitlistEntry',
        tags,
        summary: 'Take a person off the waiting list (an open offer ends and passes on)',
        description:
          'The entry becomes `removed` and is answered. A waiting entry leaves the queue; an offered one\'s voucher ends now and its place is offered to the next in line. Removing a removed entry answers it unchanged; a redeemed or expired one is 409 `waitlist_entry_ended`.',
        params: schemas.WaitlistEntryParams,
        response: { 200: ref(schemas.WaitlistEntrySchema), ...problems('waitlist_entry_ended') },
      },
    },
    (request) => waitlist.removeEntry(scope(request), request.params.id, request.params.entryId),
  );
};

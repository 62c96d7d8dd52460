import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { problems } from '../http/openapi.js';
import { PageQuery, withLinkHeader } from '../http/paging.js';
import type { Scope } from '../http/principal.js';
import { IdParam, ref } from '../schemas.js';
import * as schemas from './checkin-lists.schemas.js';
import * as lists from './checkin-lists.service.js';

const READ: readonly Scope[] = ['events:read', 'events:write'];
const WRITE: readonly Scope[] = ['events:write'];
const CHECKIN: readonly Scope[] = ['checkin', 'events:write'];
/** A scanner (checkin) and a reader (events:read) both see a list's conflicts. */
const CONFLICTS: readonly Scope[] = ['checkin', 'events:read', 'events:write'];

const EventParams = IdParam('Event id (`evt_...`)');

/** Check-in lists (docs/events.md, At the door): their settings and counts, offline sync, conflicts. */
export const checkinListRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const tags = ['check-in lists'];

  app.post(
    '/events/:id/checkin-lists',
    {
      config: { scope: WRITE },
      schema: { operationId: 'createCheckinList', tags, summary: 'Create a check-in list', params: EventParams, body: schemas.CreateCheckinListBody, response: { 201: ref(schemas.CheckinListSchema) } },
    },
    async (request, reply) => {
      const list = await lists.createList(scope(request), request.params.id, request.body);
      return reply.code(201).header('Location', `/v1/events/${list.eventId}/checkin-lists/${list.id}`).send(list);
    },
  );

  app.get(
    '/events/:id/checkin-lists',
    {
      config: { scope: READ },
      schema: { operationId: 'listCheckinLists', tags, summary: 'List check-in lists with their counts, oldest first', params: EventParams, querystring: schemas.CheckinListQuery, response: { 200: ref(schemas.CheckinListPage) } },
    },
    async (request, reply) => withLinkHeader(request, reply, await lists.listLists(scope(request), request.params.id, request.query)),
  );

  app.get(
    '/events/:id/checkin-lists/:listId',
    { config: { scope: READ }, schema: { operationId: 'getCheckinList', tags, summary: 'Read a check-in list with its counts', params: schemas.CheckinListParams, response: { 200: ref(schemas.CheckinListSchema) } } },
    (request) => lists.getList(scope(request), request.params.id, request.params.listId),
  );

  app.patch(
    '/events/:id/checkin-lists/:listId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'updateCheckinList',
        tags,
        summary: 'Update a check-in list (partial); its counts stay, the change applies to later scans',
        params: schemas.CheckinListParams,
        body: schemas.UpdateCheckinListBody,
        response: { 200: ref(schemas.CheckinListSchema) },
      },
    },
    (request) => lists.updateList(scope(request), request.params.id, request.params.listId, request.body),
  );

  app.delete(
    '/events/:id/checkin-lists/:listId',
    {
      config: { scope: WRITE },
      schema: { operationId: 'deleteCheckinList', tags, summary: 'Delete a check-in list that has no scans', params: schemas.CheckinListParams, response: { 204: Type.Null(), ...problems('list_in_use') } },
    },
    async (request, reply) => {
      await lists.deleteList(scope(request), request.params.id, request.params.listId);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/events/:id/checkin-lists/:listId/conflicts',
    {
      config: { scope: CONFLICTS },
      schema: {
        operationId: 'listCheckinConflicts',
        tags,
        summary: 'Conflicts of a check-in list: second admissions of a ticket on a list that admits once, newest first',
        params: schemas.CheckinListParams,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: ref(schemas.ConflictPage) },
      },
    },
    async (request, reply) => withLinkHeader(request, reply, await lists.listConflicts(scope(request), request.params.id, request.params.listId, request.query)),
  );

  app.post(
    '/events/:id/checkin/sync',
    {
      config: { scope: CHECKIN },
      schema: {
        operationId: 'syncCheckins',
        tags,
        summary: "Upload a scanner's offline scans (up to 1000), idempotent by scanId",
        description:
          'All scans are recorded in one transaction. On a list that admits once, two admissions of one ticket keep the earliest by scannedAt; the other is a conflict, whichever arrived first.',
        params: EventParams,
        body: schemas.SyncBody,
        response: { 200: ref(schemas.SyncResponse) },
      },
    },
    (request) => lists.sync(scope(request), request.params.id, request.body, request.principal!.keyId),
  );
};

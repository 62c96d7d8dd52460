import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { PageQuery, withLinkHeader } from '../http/paging.js';
import { problems } from '../http/openapi.js';
import type { Scope } from '../http/principal.js';
import { IdParam, ref } from '../schemas.js';
import * as schemas from './door.schemas.js';
import * as door from './door.service.js';
import * as render from './ticket-render.service.js';

const READ: readonly Scope[] = ['events:read', 'events:write'];
const WRITE: readonly Scope[] = ['events:write'];
/** The offline data is what a door scanner's key (scope `checkin`) downloads. */
const DOOR_READ: readonly Scope[] = ['checkin', 'events:read', 'events:write'];

const EventParams = IdParam('Event id (`evt_...`)');
const TicketParams = IdParam('Ticket id (`tkt_...`)');

const binary = (contentType: string, description: string) => ({
  description,
  content: { [contentType]: { schema: Type.Unsafe<Buffer | string | Uint8Array>({ type: 'string', format: 'binary', maxLength: 10_000_000 }) } },
});

/** At the door (docs/events.md, "At the door"): signing keys, the offline data, tickets as QR and PDF. */
export const doorRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);

  app.get(
    '/events/:id/signing-keys',
    {
      config: { scope: READ },
      schema: {
        operationId: 'listSigningKeys',
        tags: ['check-in'],
        summary: "List the event's ticket signing keys, oldest first (public halves only)",
        params: EventParams,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: ref(schemas.SigningKeyPage) },
      },
    },
    async (request, reply) => withLinkHeader(request, reply, await door.listSigningKeys(scope(request), request.params.id, request.query)),
  );

  app.post(
    '/events/:id/signing-keys/rotate',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'rotateSigningKey',
        tags: ['check-in'],
        summary: 'Make a new active signing key; the former active key becomes retiring (its codes still verify)',
        params: EventParams,
        response: { 201: ref(schemas.SigningKeySchema) },
      },
    },
    async (request, reply) => reply.code(201).send(await door.rotateSigningKey(scope(request), request.params.id)),
  );

  app.post(
    '/events/:id/signing-keys/:kid/retire',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'retireSigningKey',
        tags: ['check-in'],
        summary: 'Retire a signing key: its codes are refused, and every valid ticket it signed gets a new code',
        description: 'The active key cannot be retired (409 signing_key_active): rotate first. Retiring a retired key changes nothing.',
        params: schemas.SigningKeyParams,
        response: { 200: ref(schemas.SigningKeySchema), ...problems('signing_key_active') },
      },
    },
    (request) => door.retireSigningKey(scope(request), request.params.id, request.params.kid),
  );

  app.get(
    '/events/:id/checkin/offline',
    {
      config: { scope: DOOR_READ },
      schema: {
        operationId: 'getCheckinOfflineData',
        tags: ['check-in'],
        summary: "What a door scanner needs to check tickets offline: the event, its public keys, the signed revocation list, its ticket types, its check-in lists",
        description: "Send the `ETag` back as `If-None-Match`: 304 while nothing a scanner needs has changed. The tag covers the check-in lists' settings but not their counts, which change with every scan.",
        params: EventParams,
        response: {
          200: { ...ref(schemas.CheckinOfflineDataSchema), headers: { ETag: { type: 'string', maxLength: 40, description: 'Send back as If-None-Match.' } } },
          304: { description: 'Not modified: the If-None-Match header named this ETag. No body.', type: 'null' },
        },
      },
    },
    async (request, reply) => {
      const data = await door.offlineData(scope(request), request.params.id);
      reply.header('ETag', data.etag).header('Cache-Control', 'private, no-cache');
      // A 304 has no body, so no Content-Type or Content-Length either (RFC 9110 15.4.5): send nothing.
      const match = request.headers['if-none-match'];
      if (match !== undefined && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === data.etag)) return (reply.code(304) as FastifyReply).send();
      return data.body();
    },
  );

  app.get(
    '/tickets/:id/qr.svg',
    { config: { scope: READ }, schema: { operationId: 'getTicketQrSvg', tags: ['tickets'], summary: "The ticket's QR code (its code) as SVG", params: TicketParams, response: { 200: binary('image/svg+xml', 'SVG image') } } },
    async (request, reply) => reply.type('image/svg+xml').header('Cache-Control', 'private, no-store').send(await render.ticketQrSvg(scope(request), request.params.id)),
  );

  app.get(
    '/tickets/:id/qr.png',
    { config: { scope: READ }, schema: { operationId: 'getTicketQrPng', tags: ['tickets'], summary: "The ticket's QR code (its code) as PNG, 512 pixels square", params: TicketParams, response: { 200: binary('image/png', 'PNG image') } } },
    async (request, reply) => reply.type('image/png').header('Cache-Control', 'private, no-store').send(await render.ticketQrPng(scope(request), request.params.id)),
  );

  app.get(
    '/tickets/:id/pdf',
    {
      config: { scope: READ },
      schema: {
        operationId: 'getTicketPdf',
        tags: ['tickets'],
        summary: 'A printable ticket (A6 PDF): event, holder, ticket type, venue and time in the event\'s time zone, QR code',
        params: TicketParams,
        response: { 200: binary('application/pdf', 'PDF document') },
      },
    },
    async (request, reply) => {
      const { pdf, filename } = await render.ticketPdf(scope(request), request.params.id);
      return reply.type('application/pdf').header('Content-Disposition', `inline; filename="${filename}"`).header('Cache-Control', 'private, no-store').send(Buffer.from(pdf));
    },
  );
};

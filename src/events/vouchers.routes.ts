import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { problems } from '../http/openapi.js';
import { withLinkHeader } from '../http/paging.js';
import type { Scope } from '../http/principal.js';
import { IdParam, ref } from '../schemas.js';
import * as schemas from './vouchers.schemas.js';
import * as vouchers from './vouchers.service.js';

const READ: readonly Scope[] = ['events:read', 'events:write'];
const WRITE: readonly Scope[] = ['events:write'];

const EventParams = IdParam('Event id (`evt_...`)');

/** An event's vouchers (docs/events.md, "Vouchers"): discounts, hidden ticket types unlocked, places reserved. */
export const voucherRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const tags = ['vouchers'];

  app.post(
    '/events/:id/vouchers',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'createVoucher',
        tags,
        summary: 'Create a voucher (its code given or generated)',
        params: EventParams,
        body: schemas.CreateVoucherBody,
        response: { 201: ref(schemas.VoucherSchema), ...problems('voucher_code_taken', 'sold_out', 'event_cancelled') },
      },
    },
    async (request, reply) => {
      const voucher = await vouchers.createVoucher(scope(request), request.params.id, request.body);
      return reply.code(201).header('Location', `/v1/events/${voucher.eventId}/vouchers/${voucher.id}`).send(voucher);
    },
  );

  app.post(
    '/events/:id/vouchers/bulk',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'createVouchers',
        tags,
        summary: 'Create up to 1,000 vouchers alike, with generated or given codes, all or none',
        params: EventParams,
        body: schemas.BulkVouchersBody,
        response: { 201: ref(schemas.VoucherBatchSchema), ...problems('voucher_code_taken', 'sold_out', 'event_cancelled') },
      },
    },
    async (request, reply) => reply.code(201).send(await vouchers.createVoucherBatch(scope(request), request.params.id, request.body)),
  );

  app.get(
    '/events/:id/vouchers',
    {
      config: { scope: READ },
      schema: { operationId: 'listVouchers', tags, summary: 'List vouchers, newest first, optionally of one code or ticket type', params: EventParams, querystring: schemas.VoucherListQuery, response: { 200: ref(schemas.VoucherPage) } },
    },
    async (request, reply) => withLinkHeader(request, reply, await vouchers.listVouchers(scope(request), request.params.id, request.query)),
  );

  app.get(
    '/events/:id/vouchers/:voucherId',
    { config: { scope: READ }, schema: { operationId: 'getVoucher', tags, summary: 'Read a voucher', params: schemas.VoucherParams, response: { 200: ref(schemas.VoucherSchema) } } },
    (request) => vouchers.getVoucher(scope(request), request.params.id, request.params.voucherId),
  );

  app.patch(
    '/events/:id/vouchers/:voucherId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'updateVoucher',
        tags,
        summary: 'Update a voucher (partial): uses, validity, comment; its discount while unused; reserving on or off',
        params: schemas.VoucherParams,
        body: schemas.UpdateVoucherBody,
        response: { 200: ref(schemas.VoucherSchema), ...problems('voucher_in_use', 'sold_out', 'event_cancelled') },
      },
    },
    (request) => vouchers.updateVoucher(scope(request), request.params.id, request.params.voucherId, request.body),
  );

  app.delete(
    '/events/:id/vouchers/:voucherId',
    {
      config: { scope: WRITE },
      schema: {
        operationId: 'deleteVoucher',
        tags,
        summary: 'Delete a voucher nothing used (a used one is ended with validUntil instead)',
        params: schemas.VoucherParams,
        response: { 204: Type.Null(), ...problems('voucher_in_use') },
      },
    },
    async (request, reply) => {
      await vouchers.deleteVoucher(scope(request), request.params.id, request.params.voucherId);
      return reply.code(204).send(null);
    },
  );
};

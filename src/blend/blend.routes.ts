import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { AppError } from '../errors.js';
import { withLinkHeader } from '../http/paging.js';
import { SESSION_KEY_PREFIX } from '../http/principal.js';
import { PathId, ref } from '../schemas.js';
import { problems } from '../http/openapi.js';
import { BlendJobPage, BlendJobSchema, ListJobsQuery, ResultParams, ResultQuery, startBody } from './blend.schemas.js';
import * as blend from './blend.service.js';
import { CONTENT_TYPES, type OutputFormat } from './media.js';
import type { ResultStore } from './storage.js';
import { uploadRoutes } from './uploads.routes.js';

const JobParams = Type.Object({ jobId: PathId('Blend job id (`job_...`)') }, { additionalProperties: false });

export const blendRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(uploadRoutes);
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const config = { scope: 'blend' as const, area: 'blend' as const };
  // The dashboard's page shows results from its own origin (its CSP, and a bucket its browser may not reach): Montage's own URLs; API clients get the store's.
  const links = (request: FastifyRequest) => blend.resultLinks(app.config, app.resultStore, request.principal!.key.prefix === SESSION_KEY_PREFIX);
  const tags = ['blend'];

  app.post(
    '/blend/start',
    {
      config,
      schema: {
        operationId: 'startBlend',
        tags,
        summary: 'Start a blend job: the images are fetched, aligned and blended in the background',
        description:
          'Answers 202 with the queued job and `Location` of its status. Poll the status or receive blend.* webhooks. `images` may name uploads (`upl_...`) beside URLs: each must be a live upload of the account.',
        body: startBody(app.config.blend),
        response: { 202: ref(BlendJobSchema) },
      },
    },
    async (request, reply) => {
      const job = await blend.startJob(scope(request), request.body, app.config);
      return reply.code(202).header('Location', `/v1/blend/status/${job.jobId}`).send(job);
    },
  );

  app.get(
    '/blend/status/:jobId',
    { config, schema: { operationId: 'getBlendStatus', tags, summary: "A blend job's status, and its result once completed", params: JobParams, response: { 200: ref(BlendJobSchema) } } },
    (request) => blend.getJob(scope(request), request.params.jobId, app.config, links(request)),
  );

  app.get(
    '/blend/jobs',
    { config, schema: { operationId: 'listBlendJobs', tags, summary: 'Blend jobs, newest first, filtered by project and status', querystring: ListJobsQuery, response: { 200: ref(BlendJobPage) } } },
    async (request, reply) => withLinkHeader(request, reply, await blend.listJobs(scope(request), request.query, app.config, links(request))),
  );
};

const RESULT_HEADERS = {
  ETag: { type: 'string', maxLength: 40, description: 'The job id, quoted: send it back as If-None-Match.' },
  'Cache-Control': { type: 'string', maxLength: 100, description: '`private, max-age=<seconds until the URL expires, at most a day>, immutable`' },
};

/** Result images behind signed URLs: no API key, so they work in an <img> tag. */
export function resultRoutes(store: ResultStore): FastifyPluginAsyncTypebox {
  return async (app) => {
    for (const prefix of ['/v1', '/api/v1']) {
      app.get(
        `${prefix}/blend/results/:file`,
        {
          schema: {
            hide: prefix !== '/v1',
            operationId: 'getBlendResult',
            tags: ['blend'],
            summary: 'A result image, by the signed URL of its job status (no API key)',
            security: [],
            params: ResultParams,
            querystring: ResultQuery,
            response: {
              200: {
                description: 'The result image, in the format the job asked for',
                headers: RESULT_HEADERS,
                content: Object.fromEntries(Object.values(CONTENT_TYPES).map((type) => [type, { schema: Type.Unsafe<Buffer | Readable>({ type: 'string', format: 'binary', maxLength: 2_000_000_000 }) }])),
              },
              304: { description: 'Not modified: the If-None-Match header named this ETag. No body.', type: 'null', headers: RESULT_HEADERS },
              ...problems('invalid_signature', 'result_url_expired', 'not_found'),
            },
          },
        },
        async (request, reply) => {
          const row = await blend.resolveResultUrl(app.db, request.params.file, request.query.expires, request.query.signature);
          const etag = `"${row.id}"`;
          const maxAge = Math.max(0, Math.min(86_400, request.query.expires - Math.floor(Date.now() / 1000)));
          reply.header('ETag', etag).header('Cache-Control', `private, max-age=${maxAge}, immutable`);
          // A 304 has no body, so no Content-Type or Content-Length either (RFC 9110 15.4.5): send nothing.
          if (request.headers['if-none-match'] === etag) return (reply.code(304) as FastifyReply).send();
          const object = await store.open(row.resultKey!);
          if (!object) throw new AppError('not_found', 'The result image is no longer stored.');
          return reply
            .type(CONTENT_TYPES[row.resultFormat as OutputFormat])
            .header('Content-Length', String(object.size))
            .header('X-Content-Type-Options', 'nosniff')
            .send(object.stream);
        },
      );
    }
  };
}

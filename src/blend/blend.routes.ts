import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { AppError } from '../errors.js';
import { withLinkHeader } from '../http/paging.js';
import { SESSION_KEY_PREFIX } from '../http/principal.js';
import { PathId, ref } from '../schemas.js';
import { problems } from '../http/openapi.js';
import { BlendJobPage, BlendJobSchema, ListJobsQuery, ResultParams, ResultQuery, startBody } from './blend.schemas.js';
import * as blend from './blend.service.js';
import { cancelJob } from './cancel.js';
import { BlendEventStreams } from './event-stream.js';
import { CONTENT_TYPES, type OutputFormat } from './media.js';
import type { ResultStore } from './storage.js';
import { uploadRoutes } from './uploads.routes.js';
import { BlendJobWatch } from './watch.js';

const JobParams = Type.Object({ jobId: PathId('Blend job id (`job_...`)') }, { additionalProperties: false });

/** The event streams of the server (one for its /v1 and /api/v1 routes), made with its first context and ended when it closes. */
const streamsOf = new WeakMap<object, BlendEventStreams>();

function eventStreams(app: FastifyInstance): BlendEventStreams {
  let streams = streamsOf.get(app.server);
  if (!streams) {
    const watch = new BlendJobWatch(app.db, app.log);
    const made = (streams = new BlendEventStreams(watch));
    streamsOf.set(app.server, made);
    // Open streams would hold close() until they end by themselves.
    app.addHook('preClose', (done) => {
      made.closeAll();
      watch.stop();
      done();
    });
  }
  return streams;
}

const EVENTS_DESCRIPTION = [
  'Server-sent events (`text/event-stream`) of the job: first `progress` with its current state, then a `progress` event each time its status or progress changes',
  '(`data`: `{"jobId", "status", "progress"}`, progress as in the status record, at most every 250 ms within a stage), and finally one event named after how it ended,',
  '`completed`, `failed` or `cancelled`, whose `data` is the whole status record; then the stream ends (an EventSource should close itself on that event, or it reconnects).',
  'A comment line (`: heartbeat`) comes every 15 s. The job may run in any process: its row is read every 200 ms. At most 10 open streams per account and server process',
  '(429 `too_many_streams`); a stream ends after an hour (reconnect to go on). Works with the API key and with the dashboard session.',
].join(' ');

export const blendRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(uploadRoutes);
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const config = { scope: 'blend' as const, area: 'blend' as const };
  // The dashboard's page shows results from its own origin (its CSP, and a bucket its browser may not reach): Montage's own URLs; API clients get the store's.
  const links = (request: FastifyRequest) => blend.resultLinks(app.config, app.resultStore, request.principal!.key.prefix === SESSION_KEY_PREFIX);
  const tags = ['blend'];
  const streams = eventStreams(app);

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
    '/blend/status/:jobId/events',
    {
      config,
      schema: {
        operationId: 'streamBlendStatus',
        tags,
        summary: "A blend job's progress as server-sent events, until it completes, fails or is cancelled",
        description: EVENTS_DESCRIPTION,
        params: JobParams,
        response: {
          200: {
            description: 'The event stream; it ends after the final event.',
            content: {
              'text/event-stream': {
                schema: Type.Unsafe<Readable>({
                  type: 'string',
                  maxLength: 10_000_000,
                  examples: ['event: progress\ndata: {"jobId":"job_01m80eg3tperaacsapew6ns732","status":"processing","progress":{"stage":"aligning","fraction":0.571,"framesDone":4,"framesTotal":7}}\n\n'],
                }),
              },
            },
          },
          ...problems('not_found', 'too_many_streams'),
        },
      },
    },
    async (request, reply) => {
      const tenant = scope(request);
      const linked = links(request);
      const job = await blend.getJob(tenant, request.params.jobId, app.config, linked);
      const stream = streams.stream(tenant.accountId, job, () => blend.getJob(tenant, job.jobId, app.config, linked).catch(() => null));
      // The client went away: its stream ends and its place is free.
      reply.raw.once('close', stream.close);
      return reply.type('text/event-stream; charset=utf-8').header('Cache-Control', 'no-store').header('X-Accel-Buffering', 'no').send(stream.body);
    },
  );

  app.post(
    '/blend/jobs/:jobId/cancel',
    {
      config,
      schema: {
        operationId: 'cancelBlendJob',
        tags,
        summary: 'Cancel a blend job: a queued job at once, a processing one once its worker has stopped it (within a second)',
        description:
          'A queued job is `cancelled` at once: 200 with the record, and blend.cancelled. A processing job is asked to stop: 202 with the record (still `processing`, with `cancelRequestedAt`); its worker, in whichever process, stops the engine within about a second, frees its memory and records `cancelled` with blend.cancelled. Cancelling a cancelled job answers 200 with it; one that completed or failed first is 409 `job_not_cancellable`.',
        params: JobParams,
        response: { 200: ref(BlendJobSchema), 202: ref(BlendJobSchema), ...problems('not_found', 'job_not_cancellable') },
      },
    },
    async (request, reply) => {
      const { accepted, job } = await cancelJob(scope(request), request.params.jobId, app.config);
      return reply.code(accepted ? 202 : 200).send(job);
    },
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

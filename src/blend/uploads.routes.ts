import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { TenantScope } from '../db/tenant.js';
import { AppError } from '../errors.js';
import { problems } from '../http/openapi.js';
import { withLinkHeader } from '../http/paging.js';
import { notJson } from '../http/problem.js';
import { ref } from '../schemas.js';
import { BlendUploadPage, BlendUploadRequest, BlendUploadSchema, ListUploadsQuery, UploadParams } from './uploads.schemas.js';
import { UPLOAD_BUFFER_BYTES } from './upload-intake.js';
import * as uploads from './uploads.service.js';

/** Other form fields an upload may carry (and that are ignored), and their size: a bound on what is parsed. */
const MAX_FIELDS = 10;
const MAX_FIELD_BYTES = 1024;

/** The multipart parser's refusals, as the API's problems (anything else is rethrown as it is). */
function multipartRefusal(err: unknown, maxImageBytes: number): unknown {
  switch ((err as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('upload_too_large', `The image is larger than ${maxImageBytes} bytes (MONTAGE_BLEND_MAX_IMAGE_BYTES); nothing was stored.`, { limit: 'bytes' });
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('invalid_request', 'Send one image as multipart/form-data, in the field `file`.', {}, [{ path: '/file', message: 'must be one file of a multipart/form-data body' }]);
    case 'FST_MP_PREMATURE_CLOSE':
      return new AppError('invalid_request', 'The request ended before the whole image arrived; nothing was stored.');
    default:
      return err;
  }
}

/**
 * Images sent instead of linked (docs/blend.md, "Uploads"): one image per multipart request,
 * streamed into the object store while its bytes, header and pixels are checked.
 */
export const uploadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const limits = app.config.blend;
  // The multipart parser for these routes only: every other route reads JSON alone.
  await app.register(multipart, {
    highWaterMark: UPLOAD_BUFFER_BYTES,
    fileHwm: UPLOAD_BUFFER_BYTES,
    limits: { fileSize: limits.maxImageBytes + 1, files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: MAX_FIELDS + 1, headerPairs: 20 },
  });
  // The upload (POST) leaves a body of any other type (the image's own bytes, say) unread, so that
  // it answers what docs/blend.md says (400, path /file: send a multipart form) rather than the
  // JSON routes' 415, whose advice would be wrong for it. The other routes here refuse such a body
  // with that 415, rather than answer and leave the server to read and discard all of it.
  app.addContentTypeParser('*', (request, _payload, done) => (request.method === 'POST' ? done(null, undefined) : done(notJson(), undefined)));
  const scope = (request: FastifyRequest) => new TenantScope(app.db, request.principal!.accountId);
  const config = { scope: 'blend' as const, area: 'blend' as const };
  const tags = ['blend'];

  app.post(
    '/blend/uploads',
    {
      // An image is not replayed from an idempotency store: a retried upload is a new upload (the unused one expires).
      config: { ...config, idempotent: false, streamedBody: { schema: BlendUploadRequest, mediaType: 'multipart/form-data' } },
      schema: {
        operationId: 'createBlendUpload',
        tags,
        summary: 'Upload one image for blend jobs (multipart/form-data, field `file`)',
        description:
          'The image is checked while it arrives: more than MONTAGE_BLEND_MAX_IMAGE_BYTES bytes, more than MONTAGE_BLEND_MAX_PIXELS pixels (read from its header) or not an image at all is refused there, and nothing is stored. Name its `id` in `images` of `POST /v1/blend/start`. It expires after MONTAGE_BLEND_UPLOAD_TTL (24 h).',
        response: { 201: ref(BlendUploadSchema), ...problems('upload_too_large', 'upload_not_an_image', 'upload_quota_exceeded') },
      },
    },
    async (request, reply) => {
      let upload;
      try {
        const part = await request.file();
        if (!part || part.fieldname !== 'file') {
          throw new AppError('invalid_request', 'Send the image in the field `file` of a multipart/form-data body.', {}, [{ path: '/file', message: 'is required' }]);
        }
        upload = await uploads.receiveUpload(scope(request), part.file, app.resultStore, limits, request.log);
      } catch (err) {
        // The rest of a refused body is not read: the connection closes after the answer.
        reply.header('Connection', 'close');
        throw multipartRefusal(err, limits.maxImageBytes);
      }
      return reply.code(201).header('Location', `/v1/blend/uploads/${upload.id}`).send(upload);
    },
  );

  app.get(
    '/blend/uploads',
    { config, schema: { operationId: 'listBlendUploads', tags, summary: "The account's live uploads, newest first", querystring: ListUploadsQuery, response: { 200: ref(BlendUploadPage) } } },
    async (request, reply) => withLinkHeader(request, reply, await uploads.listUploads(scope(request), request.query)),
  );

  app.get(
    '/blend/uploads/:uploadId',
    { config, schema: { operationId: 'getBlendUpload', tags, summary: 'An upload, while it lives', params: UploadParams, response: { 200: ref(BlendUploadSchema) } } },
    (request) => uploads.getUpload(scope(request), request.params.uploadId),
  );

  app.delete(
    '/blend/uploads/:uploadId',
    {
      config,
      schema: {
        operationId: 'deleteBlendUpload',
        tags,
        summary: 'Delete an upload and its bytes (refused while a queued or processing job uses it)',
        params: UploadParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...problems('upload_in_use') },
      },
    },
    async (request, reply) => {
      await uploads.deleteUpload(scope(request), request.params.uploadId, app.resultStore, request.log);
      return reply.code(204).send(null);
    },
  );
};

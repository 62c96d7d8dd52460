import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { isDatabaseUnavailable } from '../db/database.js';
import { AppError, ERROR_CODES, type FieldError } from '../errors.js';
import { PATTERN_MESSAGES } from '../schemas.js';
import { newId } from '../ids.js';

/** RFC 9457 problem details, as every error response carries them. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ examples: ['/docs/errors#not_found'] }),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ description: 'Stable machine-readable error code (snake_case).' }),
    detail: Type.String(),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem', additionalProperties: true, description: 'RFC 9457 problem details' },
);

export function problemBody(request: FastifyRequest, error: AppError) {
  const { status, title } = ERROR_CODES[error.code];
  return {
    type: `/docs/errors#${error.code}`,
    title,
    status,
    code: error.code,
    detail: error.detail,
    requestId: request.id,
    ...(error.errors ? { errors: error.errors } : {}),
    ...error.extensions,
  };
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: AppError) {
  if (error.status === 401) reply.header('WWW-Authenticate', 'Bearer realm="montage"');
  // A string payload skips the response serializer, so extension members are kept.
  return reply
    .code(error.status)
    .type('application/problem+json')
    .send(JSON.stringify(problemBody(request, error)));
}

interface AjvError {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

function fieldErrors(context: string | undefined, validation: AjvError[]): FieldError[] {
  const part = context === 'body' ? '' : `/${context ?? ''}`.replace(/^\/querystring/, '/query');
  return validation.map((v) => {
    let path = v.instancePath ?? '';
    let message = v.message ?? 'is invalid';
    if (v.keyword === 'additionalProperties' && typeof v.params?.additionalProperty === 'string') {
      path = `${path}/${v.params.additionalProperty}`;
      message = 'is not a known property';
    } else if (v.keyword === 'required' && typeof v.params?.missingProperty === 'string') {
      path = `${path}/${v.params.missingProperty}`;
      message = 'is required';
    } else if (v.keyword === 'pattern' && typeof v.params?.pattern === 'string') {
      message = PATTERN_MESSAGES[v.params.pattern] ?? message;
    }
    return { path: `${part}${path}` || '/', message };
  });
}

/** The 415 of a body in a media type a route does not read (every route reads JSON; the upload route a multipart form too). */
export const notJson = () => new AppError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');

/** Translates anything thrown into a problem+json; never leaks a stack, SQL or file path. */
export function toAppError(error: FastifyError): AppError {
  if (error instanceof AppError) return error;
  // A lost or refused database connection (a restart, a failover) is an outage, not a bug: 503.
  if (isDatabaseUnavailable(error)) return new AppError('unavailable', 'The database cannot be reached right now; retry the request in a moment.');
  if (error.validation) {
    const errors = fieldErrors(error.validationContext, error.validation as AjvError[]);
    const first = errors[0];
    return new AppError('invalid_request', first ? `${first.path} ${first.message}` : 'Request is invalid.', {}, errors);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than this server accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return notJson();
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_request', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', 'Content-Length does not match the body.');
    case 'FST_ERR_BAD_URL':
      return new AppError('invalid_request', 'The path is not valid percent-encoded UTF-8.');
  }
  if (error.statusCode === 400) return new AppError('invalid_request', 'The request is malformed.');
  return new AppError('internal_error', 'Something went wrong on our side. Quote the request id when you report it.');
}

/** A problem with its own request id and headers, for refusals that come before Fastify has a request. */
function standaloneProblem(error: AppError): { headers: Record<string, string | number>; json: string } {
  const body = problemBody({ id: newId('request') } as FastifyRequest, error);
  const json = JSON.stringify(body);
  return { headers: { 'Content-Type': 'application/problem+json; charset=utf-8', 'Content-Length': Buffer.byteLength(json), 'X-Request-Id': body.requestId }, json };
}

/** A problem written straight to Node's response. */
export function writeProblem(res: ServerResponse, error: AppError): void {
  const { headers, json } = standaloneProblem(error);
  res.writeHead(error.status, headers).end(json);
}

/**
 * What Node's HTTP parser refuses before Fastify sees a request (headers too large, not HTTP at
 * all, too slow to arrive) is answered as a problem too, with a request id; then the connection
 * closes, since the parser cannot find where the next request would start.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('headers_too_large', 'The request line and headers are larger than this server accepts.')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout', 'The request did not arrive in time.')
        : new AppError('invalid_request', 'The request is not valid HTTP.');
  const { headers, json } = standaloneProblem(error);
  const head = [`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), 'Connection: close'];
  if (socket.writable) socket.write(`${head.join('\r\n')}\r\n\r\n${json}`);
  socket.destroy(err);
}

export const problemPlugin = fp(
  async (app: FastifyInstance) => {
    app.addSchema(ProblemSchema);

    app.setErrorHandler((error: FastifyError, request, reply) => {
      const appError = toAppError(error);
      if (appError.status >= 500) request.log.error({ err: error }, 'request failed');
      if (appError.code === 'unavailable' && !reply.hasHeader('retry-after')) reply.header('Retry-After', '1');
      return sendProblem(request, reply, appError);
    });

    app.setNotFoundHandler((request, reply) =>
      sendProblem(request, reply, new AppError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)),
    );
  },
  { name: 'problem' },
);

/** Response schemas for the error statuses every route can answer with. */
export const problemResponses = {
  '4xx': { $ref: 'Problem#' },
  '5xx': { $ref: 'Problem#' },
} as const;


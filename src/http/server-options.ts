import type { Server } from 'node:http';
import { type FastifyHttpOptions, LogController, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { loggableUrl } from './log-url.js';
import { cachedSerializerFactory } from './serializers.js';
import { clientErrorHandler, sendProblem, toAppError, writeProblem } from './problem.js';

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const MAX_PARAM_LENGTH = 500;

/** Believe the nearest `hops` proxies (proxy-addr counts hops from the socket, starting at 0). */
const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops;

/** Fastify's options for this server: logs, limits, request ids, and errors before routing as problems. */
export function serverOptions(config: Config, logger: FastifyServerOptions['logger'] | undefined): FastifyHttpOptions<Server> {
  return {
    logger: logger ?? {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie'],
      // Fastify's own request lines (if any) name the URL as the request log does: without secrets.
      serializers: { req: (req: FastifyRequest) => ({ method: req.method, url: loggableUrl(req.url), host: req.host, remoteAddress: req.ip }) },
    },
    bodyLimit: config.bodyLimitBytes,
    // Behind a load balancer, request.ip is the client it names (MONTAGE_TRUST_PROXY), so per-client
    // limits (dashboard sign-in) count clients, not the proxy.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : (config.trustProxy ?? false),
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    requestIdHeader: false,
    // A caller's own X-Request-Id is kept when it is sane, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newId('request');
    },
    // While closing, requests on connections still open get our own 503 problem (shutdown.ts).
    return503OnClosing: false,
    // What fails before routing (a path that is not valid percent-encoding, a request Node's parser
    // refuses) is answered in the API's error shape as well.
    frameworkErrors: (error, request, reply) => sendProblem(request, reply.header('X-Request-Id', request.id), toAppError(error)),
    clientErrorHandler,
    // Checked in onRequest instead (shutdown.ts), so that the 400 is a problem like any other.
    http: { requireHostHeader: false },
    // Response serializers compiled once per distinct schema (serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: cachedSerializerFactory() } },
    routerOptions: {
      maxParamLength: MAX_PARAM_LENGTH,
      // No ID is that long: answer like any unknown ID, in the API's error shape.
      onMaxParamLength: (_path, _req, res) => writeProblem(res, new AppError('not_found', 'No such resource.')),
    },
  };
}

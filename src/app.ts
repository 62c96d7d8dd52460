import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { Type } from 'typebox';
import sjson from 'secure-json-parse';
import { accountRoutes } from './accounts/accounts.routes.js';
import type { AuthCache } from './accounts/accounts.service.js';
import { KeyCache } from './accounts/key-cache.js';
import type { Config } from './config.js';
import { dashboardRoutes } from './dashboard/dashboard.routes.js';
import { eventRoutes } from './events/events.routes.js';
import { webhookRoutes } from './webhooks/webhooks.routes.js';
import { type DatabaseHandle, type Db, openDatabase } from './db/database.js';
import { errorDocsRoutes } from './http/error-docs.js';
import { healthRoutes } from './http/health.js';
import { completeIdempotencyKey, idempotencyPreHandler, releaseIdempotencyKey } from './http/idempotency.js';
import { guard } from './http/guard.js';
import { metricsPlugin } from './http/metrics.js';
import { registerComponents, swaggerOptions } from './http/openapi.js';
import { clientErrorHandler, problemPlugin, sendProblem, toAppError, writeProblem } from './http/problem.js';
import { blendRoutes, resultRoutes } from './blend/blend.routes.js';
import { sampleRoutes } from './blend/samples.routes.js';
import { createResultStore, type ResultStore } from './blend/storage.js';
import { AppError } from './errors.js';
import { RateLimits } from './http/rate-limit.js';
import { validatorCompiler } from './http/validation.js';
import { loggableUrl } from './http/log-url.js';
import { corsOptions } from './http/cors.js';
import { newId } from './ids.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    db: Db;
    database: DatabaseHandle;
    rateLimits: RateLimits;
    keyCache: AuthCache;
    resultStore: ResultStore;
  }
}

export interface BuildOptions {
  /** An open database; otherwise one is opened from `config` and closed with the app. */
  database?: DatabaseHandle;
  /** Pino options, or false for no logs (tests). */
  logger?: FastifyServerOptions['logger'];
  /** Extra versioned routes (tests of the shared HTTP pieces). */
  extraRoutes?: FastifyPluginAsyncTypebox;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const MAX_PARAM_LENGTH = 500;

const MAX_JSON_DEPTH = 64;
const NO_QUERY = Type.Object({}, { additionalProperties: false });

function refuseBody(request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
  const body = request.body;
  const empty = body === undefined || (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0);
  done(empty ? undefined : new AppError('invalid_request', 'This route takes no body.', {}, [{ path: '/', message: 'must be empty' }]));
}

/**
 * The JSON pointer of the first string holding a NUL character (PostgreSQL cannot store one),
 * `too_deep` past MAX_JSON_DEPTH levels of nesting, or null. Iterative: a body is client input.
 */
function nulPath(value: unknown): string | 'too_deep' | null {
  const stack: Array<[unknown, string, number]> = [[value, '', 0]];
  while (stack.length > 0) {
    const [item, path, depth] = stack.pop()!;
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return path || '/';
    } else if (item && typeof item === 'object') {
      if (depth >= MAX_JSON_DEPTH) return 'too_deep';
      for (const [key, child] of Object.entries(item)) stack.push([child, `${path}/${key}`, depth + 1]);
    }
  }
  return null;
}

/** Believe the nearest `hops` proxies (proxy-addr counts hops from the socket, starting at 0). */
const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops;

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const database = options.database ?? openDatabase(config);
  const app = Fastify({
    logger: options.logger ?? {
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
    // While closing, requests on connections still open get our own 503 problem (onRequest below).
    return503OnClosing: false,
    // What fails before routing (a path that is not valid percent-encoding, a request Node's parser
    // refuses) is answered in the API's error shape as well.
    frameworkErrors: (error, request, reply) => sendProblem(request, reply.header('X-Request-Id', request.id), toAppError(error)),
    clientErrorHandler,
    // Checked in onRequest instead, so that the 400 is a problem like any other.
    http: { requireHostHeader: false },
    routerOptions: {
      maxParamLength: MAX_PARAM_LENGTH,
      // No ID is that long: answer like any unknown ID, in the API's error shape.
      onMaxParamLength: (_path, _req, res) => writeProblem(res, new AppError('not_found', 'No such resource.')),
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Node answers an Expect it does not know with a bare 417; this one is a problem.
  app.server.on('checkExpectation', (_req, res) => writeProblem(res, new AppError('expectation_failed', 'The only expectation this server meets is 100-continue.')));

  app.decorate('config', config);
  app.decorate('database', database);
  app.decorate('db', database.db);
  app.decorate('rateLimits', new RateLimits(config));
  app.decorate('keyCache', new KeyCache(config.authCacheTtlMs) as AuthCache);
  app.decorate('resultStore', createResultStore(config));
  app.decorateRequest('principal', null);
  app.decorateRequest('idempotency', null);
  app.setValidatorCompiler(validatorCompiler());

  app.addHook('onClose', async () => {
    await app.rateLimits.close();
    if (!options.database) await database.close();
  });

  // JSON only: any other media type with a body is 415. An empty body is no body.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = sjson.parse(body as string, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      const error = new Error('The request body is not valid JSON.') as FastifyError;
      error.code = 'FST_ERR_CTP_INVALID_JSON_BODY';
      error.statusCode = 400;
      return done(error, undefined);
    }
    const nul = nulPath(parsed);
    if (nul === 'too_deep') return done(new AppError('invalid_request', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
    if (nul) return done(new AppError('invalid_request', `${nul} holds a NUL character.`, {}, [{ path: nul, message: 'must not hold a NUL character' }]), undefined);
    done(null, parsed);
  });

  // A NUL in a path is an ID that cannot exist; in a query string it is invalid.
  // (Hooks on every request are callback-style: an async hook costs a promise per request.)
  app.addHook('preValidation', (request, _reply, done) => {
    const params = request.params as Record<string, string> | undefined;
    if (params && Object.values(params).some((v) => typeof v === 'string' && v.includes('\u0000'))) {
      return done(new AppError('not_found', 'No such resource.'));
    }
    const nul = nulPath(request.query);
    if (nul) return done(new AppError('invalid_request', `query ${nul} holds a NUL character.`, {}, [{ path: `/query${nul}`, message: 'must not hold a NUL character' }]));
    done();
  });

  // Once close() begins (SIGTERM), the listener stops and in-flight requests finish; a request that
  // still arrives on an open keep-alive connection is told to go elsewhere, and its connection closes.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') return done(new AppError('invalid_request', 'An HTTP/1.1 request needs a Host header.'));
    if (!closing) return done();
    reply.header('Connection', 'close');
    done(new AppError('unavailable', 'This server is shutting down; retry the request.'));
  });
  // A request still in flight is answered, and its keep-alive connection then closes, so that
  // close() is not held until the connection idles out.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('Connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    done();
    request.log.info(
      { method: request.method, url: loggableUrl(request.url), statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      'request',
    );
  });

  await app.register(problemPlugin);
  await app.register(metricsPlugin, { token: config.metricsToken, apiHost: config.host, port: config.metricsPort, host: config.metricsHost });
  registerComponents(app, config);
  await app.register(swagger, swaggerOptions(config));
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await app.register(errorDocsRoutes);
  await app.register(healthRoutes);

  const versioned: FastifyPluginAsyncTypebox<{ listed: boolean }> = async (api, { listed }) => {
    // Unknown query parameters are refused everywhere, not only where a route lists some; a route
    // that takes no body refuses one (an empty object aside); the /api/v1 copies stay out of the docs.
    api.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, ...(route.schema?.querystring ? {} : { querystring: NO_QUERY }), ...(listed ? {} : { hide: true }) };
      if (!route.schema.body && route.method !== 'GET') {
        const existing = route.preValidation ? [route.preValidation].flat() : [];
        route.preValidation = [...existing, refuseBody];
      }
    });
    // Before the guard: a preflight is answered without a key and spends no rate limit.
    if (config.corsOrigins.length > 0) await api.register(cors, corsOptions(config.corsOrigins));
    api.addHook('onRequest', (request, reply) => guard(app.db, app.keyCache, app.rateLimits, request, reply));
    api.addHook('preHandler', (request, reply, done) => {
      if (request.method !== 'POST' || request.headers['idempotency-key'] === undefined) return done();
      idempotencyPreHandler(app.db, request, reply).then((replayed) => (replayed ? undefined : done()), done);
    });
    api.addHook('onSend', (request, reply, payload, done) => {
      const claim = request.idempotency;
      if (!claim) return done(null, payload);
      request.idempotency = null;
      const settle =
        typeof payload === 'string'
          ? completeIdempotencyKey(app.db, claim, reply.statusCode, reply.getHeaders(), payload)
          : releaseIdempotencyKey(app.db, claim);
      // If the answer cannot be stored (the database went away), it is still the answer: the change
      // it reports has committed or rolled back already. The key's claim then lapses like a crashed one's.
      settle.then(
        () => done(null, payload),
        (err: Error) => {
          request.log.warn({ err }, 'could not store the answer of an idempotent request');
          done(null, payload);
        },
      );
    });
    await api.register(accountRoutes);
    await api.register(eventRoutes);
    await api.register(webhookRoutes);
    await api.register(blendRoutes);
    if (options.extraRoutes) await api.register(options.extraRoutes);
  };
  await app.register(resultRoutes(app.resultStore));
  await app.register(sampleRoutes);
  await app.register(dashboardRoutes);
  await app.register(versioned, { prefix: '/v1', listed: true });
  await app.register(versioned, { prefix: '/api/v1', listed: false });

  return app;
}

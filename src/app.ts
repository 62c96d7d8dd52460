import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { accountRoutes } from './accounts/accounts.routes.js';
import { accountComponents } from './accounts/accounts.schemas.js';
import { type AuthCache, authenticate } from './accounts/accounts.service.js';
import { KeyCache } from './accounts/key-cache.js';
import { blendRoutes, resultRoutes } from './blend/blend.routes.js';
import { blendComponents } from './blend/blend.schemas.js';
import { BLEND_FAILURES } from './blend/failures.js';
import { sampleRoutes } from './blend/samples.routes.js';
import { createResultStore, type ResultStore } from './blend/storage.js';
import type { Config } from './config.js';
import { dashboardRoutes } from './dashboard/dashboard.routes.js';
import { scannerRoutes } from './dashboard/scanner.routes.js';
import { sessionPrincipal } from './dashboard/sessions.service.js';
import { type DatabaseHandle, type Db, openDatabase } from './db/database.js';
import { AppError } from './errors.js';
import { doorComponents } from './events/door.schemas.js';
import { doorRoutes } from './events/door.routes.js';
import { checkinListComponents } from './events/checkin-lists.schemas.js';
import { checkinListRoutes } from './events/checkin-lists.routes.js';
import { questionComponents } from './events/questions.schemas.js';
import { voucherComponents } from './events/vouchers.schemas.js';
import { voucherRoutes } from './events/vouchers.routes.js';
import { questionRoutes } from './events/questions.routes.js';
import { eventRoutes } from './events/events.routes.js';
import { eventComponents } from './events/events.schemas.js';
import { useStripeApi } from './events/payments/stripe.js';
import { stripeSettingsRoutes } from './events/payments/stripe.routes.js';
import { stripeWebhookRoutes } from './events/payments/stripe-webhook.routes.js';
import { stripeComponents } from './events/payments/stripe.schemas.js';
import { orderChangeRoutes } from './events/order-changes.routes.js';
import { refundRoutes } from './events/refunds.routes.js';
import { refundComponents } from './events/refunds.schemas.js';
import { orderChangeComponents } from './events/order-changes.schemas.js';
import { waitlistComponents } from './events/waitlist.schemas.js';
import { waitlistRoutes } from './events/waitlist.routes.js';
import { corsOptions } from './http/cors.js';
import { errorDocsRoutes } from './http/error-docs.js';
import { type Authenticators, guardPlugin } from './http/guard.js';
import { healthRoutes } from './http/health.js';
import { idempotencyPlugin } from './http/idempotency.js';
import { jsonBodyPlugin } from './http/json-body.js';
import { metricsPlugin } from './http/metrics.js';
import { registerComponents, swaggerOptions } from './http/openapi.js';
import { problemPlugin, writeProblem } from './http/problem.js';
import { RateLimits } from './http/rate-limit.js';
import { requestLogPlugin } from './http/request-log.js';
import { routeSchemaPlugin } from './http/route-schema.js';
import { serverOptions } from './http/server-options.js';
import { shutdownPlugin } from './http/shutdown.js';
import { validatorCompiler } from './http/validation.js';
import { webhookRoutes } from './webhooks/webhooks.routes.js';
import { webhookComponents, webhookDocs } from './webhooks/webhooks.schemas.js';

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

/** The server: the shared HTTP pieces (http/), then each area's routes, under /v1 behind the guard. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const database = options.database ?? openDatabase(config);
  const app = Fastify(serverOptions(config, options.logger)).withTypeProvider<TypeBoxTypeProvider>();

  // Node answers an Expect it does not know with a bare 417; this one is a problem.
  app.server.on('checkExpectation', (_req, res) => writeProblem(res, new AppError('expectation_failed', 'The only expectation this server meets is 100-continue.')));

  app.decorate('config', config);
  useStripeApi(config.stripeApiBase);
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
    app.resultStore.close?.();
    if (!options.database) await database.close();
  });

  // Who may call the versioned API: the dashboard's session (accounts signed in), else an API key.
  const authenticators: Authenticators = {
    session: (request) => sessionPrincipal(app.db, request),
    key: (request) => authenticate(app.db, app.keyCache, request.headers.authorization, (err) => request.log.warn({ err }, 'could not record key use')),
  };

  await app.register(jsonBodyPlugin);
  await app.register(shutdownPlugin);
  await app.register(requestLogPlugin);
  await app.register(problemPlugin);
  await app.register(metricsPlugin, { token: config.metricsToken, apiHost: config.host, port: config.metricsPort, host: config.metricsHost });
  registerComponents(app, [...accountComponents, ...eventComponents, ...orderChangeComponents, ...refundComponents, ...doorComponents, ...checkinListComponents, ...questionComponents, ...voucherComponents, ...waitlistComponents, ...stripeComponents, ...webhookComponents, ...blendComponents(config.blend)]);
  await app.register(swagger, swaggerOptions(config, webhookDocs()));
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await app.register(errorDocsRoutes, { blendFailures: BLEND_FAILURES });
  await app.register(healthRoutes);

  const versioned: FastifyPluginAsyncTypebox<{ listed: boolean }> = async (api, { listed }) => {
    await api.register(routeSchemaPlugin, { listed });
    // Before the guard: a preflight is answered without a key and spends no rate limit.
    if (config.corsOrigins.length > 0) await api.register(cors, corsOptions(config.corsOrigins));
    await api.register(guardPlugin, { authenticators, limits: app.rateLimits });
    await api.register(idempotencyPlugin, { db: app.db });
    await api.register(accountRoutes);
    await api.register(eventRoutes);
    await api.register(orderChangeRoutes);
    await api.register(refundRoutes);
    await api.register(doorRoutes);
    await api.register(checkinListRoutes);
    await api.register(questionRoutes);
    await api.register(voucherRoutes);
    await api.register(waitlistRoutes);
    await api.register(stripeSettingsRoutes);
    await api.register(webhookRoutes);
    await api.register(blendRoutes);
    if (options.extraRoutes) await api.register(options.extraRoutes);
  };
  await app.register(resultRoutes(app.resultStore));
  await app.register(sampleRoutes);
  await app.register(dashboardRoutes);
  await app.register(scannerRoutes);
  // Stripe's webhook posts carry no API key: their own context, beside the guarded API.
  await app.register(stripeWebhookRoutes, { prefix: '/v1', listed: true });
  await app.register(stripeWebhookRoutes, { prefix: '/api/v1', listed: false });
  await app.register(versioned, { prefix: '/v1', listed: true });
  await app.register(versioned, { prefix: '/api/v1', listed: false });

  return app;
}

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { collectDefaultMetrics, type Metric, Registry } from 'prom-client';
import { AppError } from '../errors.js';
import { sendProblem } from './problem.js';
import { type CollectedMetric, RequestMetrics } from './request-metrics.js';

/** Request counts and latency by route pattern and status, at /metrics (Prometheus text). */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: { token: string | null }) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const recorded = new RequestMetrics([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]);
    // The registry reads a metric through its get() alone (request-metrics.ts); its type wants a whole prom-client metric.
    const register = (metric: CollectedMetric) => registry.registerMetric(metric as unknown as Metric);
    register(recorded.counter('montage_http_requests_total', 'HTTP requests answered, by method, route pattern and status'));
    register(recorded.histogram('montage_http_request_duration_seconds', 'Time to answer HTTP requests, by method, route pattern and status'));
    app.addHook('onResponse', (request, reply, done) => {
      done();
      // The route pattern, never the raw URL: IDs in paths would make the label set unbounded.
      recorded.record(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    });

    // Digests have one length, so comparing them leaks nothing about the token's.
    const digest = (text: string) => createHash('sha256').update(text).digest();
    const expected = options.token ? digest(`Bearer ${options.token}`) : null;
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (expected) {
        if (!timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
          return sendProblem(request, reply, new AppError('unauthorized', 'Send the metrics token as Authorization: Bearer <token>.'));
        }
      }
      return reply.type(registry.contentType).send(await registry.metrics());
    });
  },
  { name: 'metrics' },
);

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { AppError } from '../errors.js';
import { sendProblem } from './problem.js';

/** Request counts and latency by route pattern and status, at /metrics (Prometheus text). */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: { token: string | null }) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const requests = new Counter({
      name: 'montage_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    });
    const duration = new Histogram({
      name: 'montage_http_request_duration_seconds',
      help: 'Time to answer HTTP requests, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });

    // One pair of series per method, route pattern and status, bound once: binding labels on
    // every request costs more than counting it.
    const series = new Map<string, { count: { inc(): void }; time: { observe(seconds: number): void } }>();
    app.addHook('onResponse', (request, reply, done) => {
      done();
      // The route pattern, never the raw URL: IDs in paths would make the label set unbounded.
      const route = request.routeOptions.url ?? 'unmatched';
      const id = `${request.method} ${reply.statusCode} ${route}`;
      let bound = series.get(id);
      if (!bound) {
        const labels = { method: request.method, route, status: String(reply.statusCode) };
        series.set(id, (bound = { count: requests.labels(labels), time: duration.labels(labels) }));
      }
      bound.count.inc();
      bound.time.observe(reply.elapsedTime / 1000);
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

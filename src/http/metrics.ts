import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { collectDefaultMetrics, type Metric, Registry } from 'prom-client';
import { AppError } from '../errors.js';
import { isLoopbackHost } from '../net/addresses.js';
import { sendProblem, writeProblem } from './problem.js';
import { type CollectedMetric, RequestMetrics } from './request-metrics.js';

/** Whether a proxy forwarded the request (it names a client of its own). */
function forwarded(headers: http.IncomingHttpHeaders): boolean {
  return headers.forwarded !== undefined || headers['x-forwarded-for'] !== undefined || headers['x-real-ip'] !== undefined;
}

export interface MetricsOptions {
  /** When set, /metrics needs `Authorization: Bearer <token>`, wherever it is served. */
  token: string | null;
  /** Where the API listens (HOST): without a token, /metrics on the API port answers only if that is loopback. */
  apiHost: string;
  /** A listener of its own for /metrics (MONTAGE_METRICS_PORT); then the API port serves none. */
  port: number | null;
  /** Where that listener binds (MONTAGE_METRICS_HOST). */
  host: string;
}


/**
 * Request counts and latency by route pattern and status, at /metrics (Prometheus text). Closed by
 * default: with MONTAGE_METRICS_TOKEN set it needs the token; without one it answers only when the
 * API listens on loopback alone, or on a listener of its own (MONTAGE_METRICS_PORT, bound to
 * MONTAGE_METRICS_HOST, 127.0.0.1 unless told), which the API port then leaves out.
 */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: MetricsOptions) => {
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
    /** Why a request for the metrics is refused, or null. */
    const refusal = (authorization: string | undefined, open: boolean): AppError | null => {
      if (expected) {
        return timingSafeEqual(digest(authorization ?? ''), expected) ? null : new AppError('unauthorized', 'Send the metrics token as Authorization: Bearer <token>.');
      }
      if (open) return null;
      return new AppError(
        'unauthorized',
        'The metrics are closed: this server listens beyond loopback (or the request came through a proxy) and MONTAGE_METRICS_TOKEN is not set. Set it and send Authorization: Bearer <token>, or serve the metrics on a port of their own with MONTAGE_METRICS_PORT.',
      );
    };

    if (options.port === null) {
      const open = isLoopbackHost(options.apiHost);
      app.get('/metrics', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
        // A proxy on this machine (docs/deploy.md's nginx) makes every client look local: a request it
        // forwarded is not one from this machine, so it needs the token.
        const refused = refusal(request.headers.authorization, open && !forwarded(request.headers));
        if (refused) return sendProblem(request, reply, refused);
        return reply.type(registry.contentType).send(await registry.metrics());
      });
      return;
    }

    // The listener of its own: /metrics only, open to whoever can reach its host (or with the token).
    const server = http.createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return writeProblem(res, new AppError('not_found', 'This listener serves GET /metrics only.'));
      const refused = refusal(req.headers.authorization, true);
      if (refused) return writeProblem(res, refused);
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        () => writeProblem(res, new AppError('internal_error', 'The metrics could not be collected.')),
      );
    });
    app.addHook('onReady', async () => {
      await new Promise<void>((resolve, reject) => {
        server.once('error', (err: NodeJS.ErrnoException) =>
          reject(new AppError('unavailable', err.code === 'EADDRINUSE' ? `${options.host}:${options.port} is in use; set MONTAGE_METRICS_PORT to another port.` : `cannot listen on ${options.host}:${options.port} for metrics: ${err.message}`)),
        );
        server.listen(options.port!, options.host, () => resolve());
      });
      app.log.info({ metrics: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${(server.address() as net.AddressInfo).port}/metrics` }, 'metrics listener');
    });
    app.addHook('onClose', async () => {
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
  },
  { name: 'metrics' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';

/**
 * The door every request passes first (one onRequest hook, as every request pays for each):
 * its X-Request-Id goes on the answer, an HTTP/1.1 request without a Host header is a 400 problem,
 * and once close() begins (SIGTERM) the listener stops and in-flight requests finish, while a
 * request that still arrives on an open keep-alive connection is told to go elsewhere (503), and
 * its connection closes. Needs the server option `return503OnClosing: false` (Fastify's own 503
 * would not be a problem) and `http.requireHostHeader: false` (likewise for the Host check).
 */
export const shutdownPlugin = fp(
  async (app: FastifyInstance) => {
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
  },
  { name: 'shutdown' },
);

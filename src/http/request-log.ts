import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { loggableUrl } from './log-url.js';

/** One log line per answered request, its URL without secrets (log-url.ts), after the answer is sent. */
export const requestLogPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onResponse', (request, reply, done) => {
      done();
      request.log.info(
        { method: request.method, url: loggableUrl(request.url), statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
        'request',
      );
    });
  },
  { name: 'request-log' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { loggableUrl } from './log-url.js';

/**
 * One log line per answered request, its URL without secrets (log-url.ts), after the answer is sent.
 * At a level that drops the line (`warn`, as a busy server runs) nothing is built: cleaning the URL
 * costs more than pino's check, on every request.
 */
export const requestLogPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onResponse', (request, reply, done) => {
      done();
      // (A logger that cannot tell, as Fastify's silent one, is given the line.)
      if ((request.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') === false) return;
      request.log.info(
        { method: request.method, url: loggableUrl(request.url), statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
        'request',
      );
    });
  },
  { name: 'request-log' },
);

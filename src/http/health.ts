import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ping } from '../db/database.js';
import { AppError } from '../errors.js';
import { problemResponses, sendProblem } from './problem.js';

const Status = Type.Object({ status: Type.String({ examples: ['ok'] }) });

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    { schema: { tags: ['operations'], summary: 'The process is up', security: [], response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'The database answers',
        security: [],
        response: { 200: Status, ...problemResponses },
      },
    },
    async (request, reply) => {
      try {
        await ping(app.db);
        return { status: 'ok' };
      } catch (err) {
        request.log.warn({ err }, 'database not reachable');
        return sendProblem(request, reply, new AppError('unavailable', 'The database is not reachable.'));
      }
    },
  );
};

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ping } from '../db/database.js';
import { AppError } from '../errors.js';
import { ref } from '../schemas.js';
import { problems } from './openapi.js';
import { sendProblem } from './problem.js';

export const HealthStatusSchema = Type.Object({ status: Type.Literal('ok') }, { $id: 'HealthStatus' });
const Status = ref(HealthStatusSchema);

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    { schema: { operationId: 'getLiveness', tags: ['operations'], summary: 'The process is up', security: [], response: { 200: Status } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['operations'],
        summary: 'The database answers',
        security: [],
        response: { 200: Status, ...problems('unavailable') },
      },
    },
    async (request, reply) => {
      try {
        await ping(app.db);
        return { status: 'ok' as const };
      } catch (err) {
        request.log.warn({ err }, 'database not reachable');
        return sendProblem(request, reply, new AppError('unavailable', 'The database is not reachable.'));
      }
    },
  );
};

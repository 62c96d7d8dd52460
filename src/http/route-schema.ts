import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { AppError } from '../errors.js';

const NO_QUERY = Type.Object({}, { additionalProperties: false });

function refuseBody(request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
  const body = request.body;
  const empty = body === undefined || (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0);
  done(empty ? undefined : new AppError('invalid_request', 'This route takes no body.', {}, [{ path: '/', message: 'must be empty' }]));
}

export interface RouteSchemaOptions {
  /** False: the routes stay out of the OpenAPI document (the /api/v1 copies). */
  listed: boolean;
}

/**
 * Rewrites each route of its context as it is added: unknown query parameters are refused
 * everywhere, not only where a route lists some; a route that takes no body refuses one (an
 * empty object aside); unlisted routes are hidden from the docs. Register it before the routes.
 */
export const routeSchemaPlugin = fp(
  async (app: FastifyInstance, { listed }: RouteSchemaOptions) => {
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, ...(route.schema?.querystring ? {} : { querystring: NO_QUERY }), ...(listed ? {} : { hide: true }) };
      if (!route.schema.body && route.method !== 'GET') {
        const existing = route.preValidation ? [route.preValidation].flat() : [];
        route.preValidation = [...existing, refuseBody];
      }
    });
  },
  { name: 'route-schema' },
);

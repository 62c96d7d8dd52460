import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';
import { type Principal, SCOPES, type Scope } from './principal.js';
import { type Area, type RateLimits, rateLimitHeaders } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The key needs one of these scopes; `all`: a key holding every scope (managing keys,
     * so a door-scanner key cannot mint a stronger one). Omitted: any valid key (GET /account).
     */
    scope?: Scope | readonly Scope[] | 'all';
    /** Rate-limit area; everything but /blend is the event area. */
    area?: Area;
    /** `false` where a stored response would hold a secret (a new API key). */
    idempotent?: boolean;
  }
}

/** The ways a request proves who it is, given by the areas that own them (app.ts). */
export interface Authenticators {
  /** The principal of the request's dashboard session cookie, or null (no session: try the key). */
  session(request: FastifyRequest): Promise<Principal | null>;
  /** The principal of the request's API key (Authorization header); throws 401 and kin. */
  key(request: FastifyRequest): Promise<Principal>;
}

/**
 * Runs before every versioned route, in a fixed order: authenticate the key, or else the
 * dashboard's session cookie (401; 403 csrf_failed), check the
 * account's plan (403 plan_required), the key's scopes (403 insufficient_scope), then spend
 * from the account's rate limits (429). Rate-limit headers go on every authenticated response.
 */
export async function guard(auth: Authenticators, limits: RateLimits, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  // A request with an Authorization header is a client's, never the dashboard's: no session lookup.
  const session = request.headers.authorization === undefined ? await auth.session(request) : null;
  const principal = session ?? (await auth.key(request));
  request.principal = principal;
  if (principal.plan === 'free') {
    throw new AppError('plan_required', 'API access requires the Business plan or above; this account is on the free plan.');
  }
  const { scope, area = 'events' } = request.routeOptions.config;
  if (scope === 'all') {
    if (principal.scopes.length < SCOPES.length) {
      throw new AppError('insufficient_scope', 'Managing API keys needs a key that holds every scope.', { requiredScopes: SCOPES });
    }
  } else if (scope !== undefined) {
    const needed: readonly Scope[] = typeof scope === 'string' ? [scope] : scope;
    if (!needed.some((s) => principal.scopes.includes(s))) {
      throw new AppError('insufficient_scope', `This API key lacks the scope ${needed.join(' or ')}.`, { requiredScopes: needed });
    }
  }
  const verdict = await limits.consume(principal.accountId, principal.plan, area);
  reply.headers(rateLimitHeaders(verdict));
  if (!verdict.allowed) {
    reply.header('Retry-After', String(verdict.retryAfterSeconds));
    throw new AppError('rate_limited', `Rate limit ${verdict.closest.name} of ${verdict.closest.limit} requests is used up; retry in ${verdict.retryAfterSeconds} s.`);
  }
}

export interface GuardOptions {
  authenticators: Authenticators;
  limits: RateLimits;
}

/** The guard on every route of the context it is registered in (the versioned API). */
export const guardPlugin = fp(
  async (app: FastifyInstance, { authenticators, limits }: GuardOptions) => {
    app.addHook('onRequest', (request, reply) => guard(authenticators, limits, request, reply));
  },
  { name: 'guard' },
);

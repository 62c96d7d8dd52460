import type { FastifyCorsOptions } from '@fastify/cors';

const MAX_AGE_SECONDS = 600;

/**
 * CORS for browser clients on other origins (a door-scanner web app), on the API only: the
 * dashboard is same-origin and signs in with a cookie. Keys travel in Authorization, so no
 * credentials mode is ever allowed: a page elsewhere cannot ride on a dashboard session.
 * `origins`: MONTAGE_CORS_ORIGINS as config.ts checked it (origins, or `*` alone).
 */
export function corsOptions(origins: string[]): FastifyCorsOptions {
  return {
    origin: origins[0] === '*' ? '*' : origins,
    credentials: false,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['Link', 'Location', 'Retry-After', 'X-Request-Id', 'Idempotent-Replayed', 'Content-Disposition', 'RateLimit', 'RateLimit-Policy', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
    maxAge: MAX_AGE_SECONDS,
    // Any OPTIONS is answered (204) rather than a plain-text 400 when it lacks the preflight headers.
    strictPreflight: false,
  };
}

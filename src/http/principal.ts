import type { Plan } from '../config.js';

/** The scopes an API key may hold; a route names the ones it needs (`config.scope`). */
export const SCOPES = ['blend', 'events:read', 'events:write', 'checkin', 'webhooks'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What a key made by a key may have at most: its maker's scopes (`null`: every scope) and expiry
 * (`null`: none). The owner (dashboard session, command line) makes keys without bounds.
 */
export interface KeyBounds {
  readonly scopes: readonly Scope[] | null;
  readonly expiresAt: number | null;
}

/** `key.prefix` of a dashboard session's principal: what marks a caller as the dashboard's page. */
export const SESSION_KEY_PREFIX = 'session';

/** Who is calling. Shared by every request of a cached key (frozen): never change one. */
export interface Principal {
  readonly accountId: string;
  readonly plan: Plan;
  readonly keyId: string;
  readonly scopes: readonly Scope[];
  /** Bounds on the keys this caller makes: its own, when it is a key; null for the owner's session. */
  readonly keyBounds: KeyBounds | null;
  readonly key: { readonly id: string; readonly name: string; readonly prefix: string; readonly scopes: readonly Scope[]; readonly expiresAt: string | null };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the guard on every versioned route; null elsewhere. */
    principal: Principal | null;
  }
}

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { keyScopes, type Principal } from '../accounts/accounts.service.js';
import { SESSION_KEY_PREFIX } from '../http/principal.js';
import type { Config, Plan } from '../config.js';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { randomBase62 } from '../ids.js';
import { iso } from '../time.js';
import * as repo from './dashboard.repository.js';

export const SESSION_COOKIE = 'montage_session';
const TOUCH_EVERY_MS = 60_000;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The value of one cookie in the Cookie header, or undefined. */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface Session {
  id: string;
  accountId: string;
  email: string;
  plan: Plan;
  /** When the account (not the session) was created. */
  accountCreatedAt: number;
  csrfToken: string;
  expiresAt: number;
}

/** Starts a session; the token goes only into the cookie, its hash only into the database. */
export async function startSession(
  db: Db,
  config: Config,
  account: { id: string; email: string; plan: string; createdAt: number },
): Promise<{ token: string; session: Session }> {
  const token = randomBase62(43);
  const now = Date.now();
  const session: Session = {
    id: `sess_${randomBase62(26)}`,
    accountId: account.id,
    email: account.email,
    plan: account.plan as Plan,
    accountCreatedAt: account.createdAt,
    csrfToken: randomBytes(32).toString('base64url'),
    expiresAt: now + config.sessionTtlMs,
  };
  await repo.insertSession(db, { id: session.id, accountId: account.id, tokenHash: sha256(token), csrfToken: session.csrfToken, createdAt: now, expiresAt: session.expiresAt, lastSeenAt: now });
  // Expired sessions of anyone are swept here, where sessions are made, rather than by a timer.
  await repo.deleteExpiredSessions(db, now);
  return { token, session };
}

/** The live session the request's cookie names, or null. */
export async function findSession(db: Db, request: FastifyRequest): Promise<Session | null> {
  const token = readCookie(request, SESSION_COOKIE);
  if (!token) return null;
  const now = Date.now();
  const row = await repo.findLiveSession(db, sha256(token), now);
  if (!row) return null;
  if (row.lastSeenAt < now - TOUCH_EVERY_MS) await repo.touchSession(db, row.id, now);
  return {
    id: row.id,
    accountId: row.accountId,
    email: row.email,
    plan: row.plan as Plan,
    accountCreatedAt: row.accountCreatedAt,
    csrfToken: row.csrfToken,
    expiresAt: row.expiresAt,
  };
}

/** State-changing requests of a session must echo its CSRF token: a cookie alone proves nothing. */
export function checkCsrf(request: FastifyRequest, session: Session): void {
  if (SAFE_METHODS.has(request.method)) return;
  const given = request.headers['x-csrf-token'];
  if (typeof given !== 'string' || !sameSecret(given, session.csrfToken)) {
    throw new AppError('csrf_failed', 'Requests made with the dashboard session must carry its X-CSRF-Token header.');
  }
}

/**
 * The /v1 guard's way in for the dashboard: a request with no Authorization header but a live
 * session cookie acts as the session's account with every scope; plan, rate limits and tenant
 * checks then apply exactly as for an API key. Null when there is no such session.
 */
export async function sessionPrincipal(db: Db, request: FastifyRequest): Promise<Principal | null> {
  if (request.headers.authorization !== undefined) return null;
  const session = await findSession(db, request);
  if (!session) return null;
  checkCsrf(request, session);
  const scopes = keyScopes(null);
  return {
    accountId: session.accountId,
    plan: session.plan,
    keyId: session.id,
    scopes,
    // The owner, signed in: keys made here are not bounded by another key.
    keyBounds: null,
    key: { id: session.id, name: 'Dashboard session', prefix: SESSION_KEY_PREFIX, scopes, expiresAt: iso(session.expiresAt) },
  };
}

export async function endSession(db: Db, session: Session): Promise<void> {
  await repo.deleteSession(db, session.id);
}

/** HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Secure behind https. */
export function setSessionCookie(reply: FastifyReply, config: Config, token: string, maxAgeMs: number): void {
  const secure = config.publicUrl.startsWith('https:') ? '; Secure' : '';
  reply.header('Set-Cookie', `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}${secure}`);
}

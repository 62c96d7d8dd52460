import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { ExpressionBuilder } from 'kysely';
import type { Database, Db } from '../db/database.js';
import { AppError } from '../errors.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** How long a first request may run before a retry may take its key over (the first one died). */
const LOCK_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const REPLAYED_HEADERS = ['content-type', 'location', 'link'];

export interface IdempotencyClaim {
  accountId: string;
  method: string;
  path: string;
  idempotencyKey: string;
}

/** JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same body. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * What a key is bound to besides account and method: the route's pattern with its decoded
 * parameters put back in one canonical spelling, so `/v1/events/evt_1/orders` and the same path
 * with any character percent-encoded (`/v1/%65vents/%65vt_1/orders`) are one request, as they are
 * one route with one event to the server. `/api/v1/x` and `/v1/x` are one route too.
 */
export function idempotencyPath(pattern: string, params: Record<string, string>): string {
  const path = pattern.replace(/:(\w+)|\*/g, (_match, name: string | undefined) => encodeURIComponent(params[name ?? '*'] ?? ''));
  return path.startsWith('/api/v1/') ? path.slice(4) : path;
}

/** The row of one claim: (account, method, path, key) is the table's primary key. */
const sameKey = (claim: IdempotencyClaim) => (eb: ExpressionBuilder<Database, 'idempotencyKeys'>) =>
  eb.and({ accountId: claim.accountId, method: claim.method, path: claim.path, idempotencyKey: claim.idempotencyKey });

type Outcome = { kind: 'proceed'; claim: IdempotencyClaim } | { kind: 'replay'; status: number; headers: Record<string, string>; body: string };

/**
 * Claims an idempotency key for this request (docs/api.md, Idempotency): the first request
 * with a key proceeds; a retry with the same body replays the stored answer; a retry with
 * another body, or while the first still runs, is refused.
 */
export async function claimIdempotencyKey(db: Db, claim: IdempotencyClaim, body: unknown): Promise<Outcome> {
  if (!KEY_PATTERN.test(claim.idempotencyKey)) {
    throw new AppError('invalid_request', 'Idempotency-Key must be 1 to 255 visible ASCII characters.', {}, [
      { path: '/headers/idempotency-key', message: 'must be 1 to 255 visible ASCII characters' },
    ]);
  }
  const requestHash = createHash('sha256').update(canonicalJson(body)).digest('hex');
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = Date.now();
    const inserted = await db
      .insertInto('idempotencyKeys')
      .values({
        ...claim,
        requestHash,
        state: 'in_progress',
        responseStatus: null,
        responseHeaders: null,
        responseBody: null,
        createdAt: now,
        lockedUntil: now + LOCK_MS,
      })
      .onConflict((oc) => oc.columns(['accountId', 'method', 'path', 'idempotencyKey']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { kind: 'proceed', claim };

    const existing = await db.selectFrom('idempotencyKeys').selectAll().where(sameKey(claim)).executeTakeFirst();
    if (!existing) continue; // removed between our insert and select: try again
    if (existing.createdAt <= now - IDEMPOTENCY_TTL_MS) {
      await releaseIdempotencyKey(db, claim, existing.createdAt);
      continue;
    }
    if (existing.requestHash !== requestHash) {
      throw new AppError(
        'idempotency_key_reused',
        `Idempotency-Key ${claim.idempotencyKey} was used with another request body within 24 hours.`,
      );
    }
    if (existing.state === 'completed') {
      return {
        kind: 'replay',
        status: existing.responseStatus ?? 200,
        headers: JSON.parse(existing.responseHeaders ?? '{}') as Record<string, string>,
        body: existing.responseBody ?? '',
      };
    }
    if (existing.lockedUntil > now) {
      throw new AppError('idempotency_request_in_progress', `A request with Idempotency-Key ${claim.idempotencyKey} is still in progress.`);
    }
    // The first request's process died while holding the key: take it over, if nobody else just did.
    const taken = await db
      .updateTable('idempotencyKeys')
      .set({ lockedUntil: now + LOCK_MS })
      .where(sameKey(claim))
      .where('lockedUntil', '=', existing.lockedUntil)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 1) return { kind: 'proceed', claim };
  }
  throw new AppError('idempotency_request_in_progress', `A request with Idempotency-Key ${claim.idempotencyKey} is still in progress.`);
}

/** Stores the answer for replay; a 5xx is not stored, so a retry runs again. */
export async function completeIdempotencyKey(
  db: Db,
  claim: IdempotencyClaim,
  status: number,
  headers: Record<string, unknown>,
  body: string,
): Promise<void> {
  if (status >= 500) {
    await releaseIdempotencyKey(db, claim);
    return;
  }
  const kept: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) if (headers[name] !== undefined) kept[name] = String(headers[name]);
  await db
    .updateTable('idempotencyKeys')
    .set({ state: 'completed', responseStatus: status, responseHeaders: JSON.stringify(kept), responseBody: body })
    .where(sameKey(claim))
    .execute();
}

export async function releaseIdempotencyKey(db: Db, claim: IdempotencyClaim, createdAt?: number): Promise<void> {
  let query = db.deleteFrom('idempotencyKeys').where(sameKey(claim));
  if (createdAt !== undefined) query = query.where('createdAt', '=', createdAt);
  await query.execute();
}

export async function purgeExpiredIdempotencyKeys(db: Db, now = Date.now()): Promise<number> {
  const result = await db.deleteFrom('idempotencyKeys').where('createdAt', '<=', now - IDEMPOTENCY_TTL_MS).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export function sendReplay(reply: FastifyReply, outcome: Extract<Outcome, { kind: 'replay' }>) {
  return reply.code(outcome.status).headers(outcome.headers).header('Idempotent-Replayed', 'true').send(outcome.body);
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: IdempotencyClaim | null;
  }
}

/** Claims the request's Idempotency-Key; true when the stored answer was replayed instead. */
export async function idempotencyPreHandler(db: Db, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  const header = request.headers['idempotency-key'];
  if (request.method !== 'POST' || header === undefined || !request.principal) return false;
  if (request.routeOptions.config.idempotent === false) return false;
  const outcome = await claimIdempotencyKey(
    db,
    {
      accountId: request.principal.accountId,
      method: request.method,
      path: idempotencyPath(request.routeOptions.url ?? request.url.split('?')[0]!, request.params as Record<string, string>),
      idempotencyKey: Array.isArray(header) ? header.join(',') : header,
    },
    request.body,
  );
  if (outcome.kind === 'replay') {
    sendReplay(reply, outcome);
    return true;
  }
  request.idempotency = outcome.claim;
  return false;
}

/**
 * Idempotency-Key on the POST routes of its context: the key is claimed before the handler (or the
 * stored answer replayed), and the answer stored once it is sent. Needs the guard's principal.
 */
export const idempotencyPlugin = fp(
  async (app: FastifyInstance, { db }: { db: Db }) => {
    app.addHook('preHandler', (request, reply, done) => {
      if (request.method !== 'POST' || request.headers['idempotency-key'] === undefined) return done();
      idempotencyPreHandler(db, request, reply).then((replayed) => (replayed ? undefined : done()), done);
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      const claim = request.idempotency;
      if (!claim) return done(null, payload);
      request.idempotency = null;
      const settle =
        typeof payload === 'string'
          ? completeIdempotencyKey(db, claim, reply.statusCode, reply.getHeaders(), payload)
          : releaseIdempotencyKey(db, claim);
      // If the answer cannot be stored (the database went away), it is still the answer: the change
      // it reports has committed or rolled back already. The key's claim then lapses like a crashed one's.
      settle.then(
        () => done(null, payload),
        (err: Error) => {
          request.log.warn({ err }, 'could not store the answer of an idempotent request');
          done(null, payload);
        },
      );
    });
  },
  { name: 'idempotency', dependencies: ['guard'] },
);

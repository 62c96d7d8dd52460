import type { Config, Plan } from '../config.js';
import { PLANS } from '../config.js';
import type { Db } from '../db/database.js';
import { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { type KeyBounds, type Principal, SCOPES, type Scope } from '../http/principal.js';
import type { RateLimits } from '../http/rate-limit.js';
import { iso, parseTime } from '../time.js';
import * as repo from './accounts.repository.js';
import { KeyCache } from './key-cache.js';
import { API_KEY_PATTERN, generateApiKey, hashApiKey, hashPassword, newWebhookSecret } from './secrets.js';

export { type KeyBounds, type Principal, SCOPES, type Scope } from '../http/principal.js';

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
const MAX_KEY_LIFETIME_MS = 5 * 365 * 86_400_000;

/**
 * The one form in which emails are stored and compared: NFKC (fullwidth `ａ` is `a`, `ℌ` is `H`),
 * then lower case (after NFKC, which can make capitals: `㎒` is `MHz`), trimmed. Every place an
 * email comes in (sign-up, sign-in, the command line) goes through it.
 */
export function canonicalEmail(email: string): string {
  return email.normalize('NFKC').trim().toLowerCase();
}

/** The canonical email, refused (400) unless it looks like one. */
export function normaliseEmail(email: string): string {
  const normalised = canonicalEmail(email);
  if (!EMAIL.test(normalised)) throw invalid('/email', 'must be an email address');
  return normalised;
}

export interface NewAccount {
  email: string;
  plan?: Plan;
  password?: string;
}

export async function createAccount(db: Db, input: NewAccount) {
  const email = normaliseEmail(input.email);
  const plan = input.plan ?? 'business';
  if (!PLANS.includes(plan)) throw invalid('/plan', `must be one of ${PLANS.join(', ')}`);
  if (input.password !== undefined && (input.password.length < 10 || input.password.length > 1024)) {
    throw invalid('/password', 'must be 10 to 1024 characters');
  }
  const exists = () => new AppError('conflict', `An account with email ${email} exists.`);
  // Checked first to spare the password hash; the insert decides when two sign-ups race.
  if (await repo.findAccountByEmail(db, email)) throw exists();
  const now = Date.now();
  const account = {
    id: newId('account'),
    email,
    plan,
    passwordHash: input.password === undefined ? null : await hashPassword(input.password),
    webhookSecret: newWebhookSecret(),
    createdAt: now,
    updatedAt: now,
  };
  if (!(await repo.insertAccount(db, account))) throw exists();
  return account;
}

export async function accountByEmail(db: Db, email: string) {
  const account = await repo.findAccountByEmail(db, normaliseEmail(email));
  if (!account) throw new AppError('not_found', `No account with email ${canonicalEmail(email)}.`);
  return account;
}

export function parseScopes(scopes: readonly string[] | undefined): Scope[] | null {
  if (scopes === undefined) return null;
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw invalid('/scopes', `has unknown scope ${unknown.join(', ')} (known: ${SCOPES.join(', ')})`);
  if (scopes.length === 0) throw invalid('/scopes', 'must name at least one scope (omit it for every scope)');
  return [...new Set(scopes as Scope[])];
}

export interface NewKey {
  name?: string;
  scopes?: readonly string[];
  /** Either a lifetime (command line) or a moment (API). */
  expiresInMs?: number;
  expiresAt?: string;
}

const MIN_KEY_LIFETIME_MS = 60_000;

/** A request for more than the maker holds: 403, naming the field. */
const beyondMaker = (path: string, message: string) =>
  new AppError('key_exceeds_maker', `${path} ${message}`, {}, [{ path, message }]);

/**
 * The scopes and expiry of a key made by a key: no scope its maker lacks, no later expiry; what
 * the request leaves out is the maker's.
 */
function boundedByMaker(maker: KeyBounds, scopes: Scope[] | null, expiresAt: number | null) {
  if (scopes !== null && maker.scopes !== null) {
    const extra = scopes.filter((s) => !maker.scopes!.includes(s));
    if (extra.length > 0) throw beyondMaker('/scopes', `has ${extra.join(', ')}, which the key making it lacks; it holds ${maker.scopes.join(', ')}`);
  }
  if (maker.expiresAt !== null && expiresAt !== null && expiresAt > maker.expiresAt) {
    throw beyondMaker('/expiresAt', `is later than the expiry of the key making it, ${iso(maker.expiresAt)}`);
  }
  return { scopes: scopes ?? (maker.scopes ? [...maker.scopes] : null), expiresAt: expiresAt ?? maker.expiresAt };
}

/**
 * Creates a key; the returned `key` is the only time the secret is ever seen. `maker`: the bounds
 * of the key that asks for it (API), or null when the owner does (dashboard, command line).
 */
export async function createApiKey(db: Db, account: { id: string; plan: string }, input: NewKey, maker: KeyBounds | null = null) {
  if (account.plan === 'free') {
    throw new AppError('plan_required', 'Creating API keys requires the Business plan or above.');
  }
  const requestedScopes = parseScopes(input.scopes);
  const now = Date.now();
  const requestedExpiry = input.expiresAt !== undefined ? parseTime(input.expiresAt, '/expiresAt') : input.expiresInMs !== undefined ? now + input.expiresInMs : null;
  if (requestedExpiry !== null && (requestedExpiry < now + MIN_KEY_LIFETIME_MS || requestedExpiry > now + MAX_KEY_LIFETIME_MS)) {
    throw invalid(input.expiresAt !== undefined ? '/expiresAt' : '--expires-in', 'must be between 1 minute and 5 years from now');
  }
  // An inherited expiry may be under a minute away: it is the maker's, not a typo.
  const { scopes, expiresAt } = maker ? boundedByMaker(maker, requestedScopes, requestedExpiry) : { scopes: requestedScopes, expiresAt: requestedExpiry };
  const key = generateApiKey();
  const row = {
    id: newId('apiKey'),
    accountId: account.id,
    name: input.name?.trim() || 'API key',
    prefix: key.slice(0, 8),
    keyHash: hashApiKey(key),
    scopes: scopes ? JSON.stringify(scopes) : null,
    createdAt: now,
    lastUsedAt: null,
    expiresAt,
    revokedAt: null,
  };
  await repo.insertApiKey(db, row);
  return { ...presentKey(row), key };
}

export function keyScopes(stored: string | null): Scope[] {
  return stored === null ? [...SCOPES] : (JSON.parse(stored) as Scope[]);
}

export function presentKey(row: repo.ApiKeyView) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: keyScopes(row.scopes),
    createdAt: iso(row.createdAt),
    lastUsedAt: iso(row.lastUsedAt),
    expiresAt: iso(row.expiresAt),
    revokedAt: iso(row.revokedAt),
  };
}

export type PresentedKey = ReturnType<typeof presentKey>;

export async function listApiKeys(scope: TenantScope, query: PageParams): Promise<Page<PresentedKey>> {
  const page = pageRequest(query, listTag('keys'));
  const rows = await repo.listKeys(scope, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentKey);
}

export async function getApiKey(scope: TenantScope, id: string): Promise<PresentedKey> {
  const row = await repo.findKey(scope, id);
  if (!row) throw notFound('API key', id);
  return presentKey(row);
}

/** Revokes a key; revoking a revoked key is a no-op that returns it as it is. */
export async function revokeApiKey(scope: TenantScope, id: string): Promise<PresentedKey> {
  const revoked = await repo.revokeKey(scope, id, Date.now());
  if (revoked) return presentKey(revoked);
  return getApiKey(scope, id);
}

/** Revokes by id whatever the account (command line, run by the operator). */
export async function revokeApiKeyById(db: Db, id: string): Promise<PresentedKey> {
  const owner = await repo.findKeyOwner(db, id);
  if (!owner) throw notFound('API key', id);
  return revokeApiKey(new TenantScope(db, owner.accountId), id);
}

type KeyRecord = NonNullable<Awaited<ReturnType<typeof repo.findKeyByHash>>>;
export type AuthCache = KeyCache<KeyRecord>;

/** The principal of each cached key record, made once (frozen: every request of the key shares it). */
const principals = new WeakMap<KeyRecord, Principal>();

/** Keys whose use was recorded in the last minute (bounded, like the auth cache). */
const recentlyTouched = new KeyCache<true>(60_000);

/** Resolves `Authorization: Bearer mtg_...`; each failure is its own code (docs/api.md, Authentication). */
export async function authenticate(db: Db, cache: AuthCache, authorization: string | undefined, log: (err: unknown) => void): Promise<Principal> {
  if (!authorization) {
    throw new AppError('unauthorized', 'Send your API key as Authorization: Bearer <API_KEY>.');
  }
  const match = /^Bearer +(\S+)$/i.exec(authorization.trim());
  if (!match || !API_KEY_PATTERN.test(match[1]!)) {
    throw new AppError('unauthorized', 'The Authorization header is malformed: expected Bearer mtg_ followed by 40 characters.');
  }
  const hash = hashApiKey(match[1]!);
  const now = Date.now();
  let key = cache.get(hash, now);
  if (!key) {
    key = await repo.findKeyByHash(db, hash);
    if (!key) throw new AppError('unauthorized', 'This API key is not known.');
    cache.set(hash, key, now);
  }
  if (key.revokedAt !== null) throw new AppError('api_key_revoked', `API key ${key.prefix}... was revoked.`);
  if (key.expiresAt !== null && key.expiresAt <= now) {
    throw new AppError('api_key_expired', `API key ${key.prefix}... expired at ${iso(key.expiresAt)}.`);
  }
  if (!recentlyTouched.get(key.id, now)) {
    recentlyTouched.set(key.id, true, now);
    repo.touchKey(db, key.id, now).catch(log);
  }
  let principal = principals.get(key);
  if (!principal) {
    const scopes = keyScopes(key.scopes);
    principal = Object.freeze({
      accountId: key.accountId,
      plan: key.plan as Plan,
      keyId: key.id,
      scopes: Object.freeze(scopes),
      keyBounds: Object.freeze({ scopes: key.scopes === null ? null : Object.freeze(scopes), expiresAt: key.expiresAt }),
      key: Object.freeze({ id: key.id, name: key.name, prefix: key.prefix, scopes, expiresAt: iso(key.expiresAt) }),
    });
    principals.set(key, principal);
  }
  return principal;
}

/** The caller's account, plan, limits, current usage of each window and the key's own scopes. */
export async function describeAccount(db: Db, config: Config, limits: RateLimits, principal: Principal) {
  const account = await repo.findAccountById(db, principal.accountId);
  if (!account) throw new AppError('unauthorized', 'This API key is not known.');
  const plan = account.plan as Plan;
  return {
    id: account.id,
    email: account.email,
    plan,
    createdAt: iso(account.createdAt),
    limits: plan === 'free' ? { blendPerHour: 0, eventsPerMinute: 0, eventsPerDay: 0 } : config.limits[plan],
    usage: plan === 'free' ? [] : await limits.usage(account.id, plan),
    key: principal.key,
  };
}

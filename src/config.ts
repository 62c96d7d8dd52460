import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Every setting Montage reads from the environment, validated once at start. */
export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  dataDir: string;
  /** `null` means the embedded SQLite file `montage.db` in `dataDir`. */
  databaseUrl: string | null;
  redisUrl: string | null;
  allowPrivateNetwork: boolean;
  webhookRetrySchedule: number[];
  webhookDisableAfterMs: number;
  /** After a rotation, how long deliveries are signed with the old account webhook secret too. */
  webhookSecretOverlapMs: number;
  limits: Record<ApiPlan, PlanLimits>;
  blend: BlendLimits;
  logLevel: LogLevel;
  jobLeaseMs: number;
  resultUrlTtlMs: number;
  metricsToken: string | null;
  bodyLimitBytes: number;
  /** How long an authenticated key is remembered by a process (0: not at all). */
  authCacheTtlMs: number;
  /** How long `serve` and `worker` wait at start for a database that cannot be reached yet (0: not at all). */
  databaseWaitMs: number;
  /** How long a stopping process (SIGTERM) may take to finish its requests and jobs before it exits anyway. */
  shutdownTimeoutMs: number;
  /** Lifetime of a dashboard sign-in session. */
  sessionTtlMs: number;
  /** Whether the dashboard lets anyone create an account (on the free plan). */
  dashboardSignup: boolean;
  /** A listener of its own for /metrics (then the API port has none); null: /metrics is on the API port. */
  metricsPort: number | null;
  /** Where that listener binds. */
  metricsHost: string;
  /** Origins whose browser pages may call the API (CORS); `*` for any; empty: CORS is off. */
  corsOrigins: string[];
  /** Proxies whose X-Forwarded-For names the client (MONTAGE_TRUST_PROXY): a hop count, or addresses and CIDR ranges; null: none. */
  trustProxy: number | string[] | null;
  /** Where the Stripe provider sends its API calls (MONTAGE_STRIPE_API_BASE); null: Stripe's own (api.stripe.com). */
  stripeApiBase: StripeApiBase | null;
  /** Where uploads and results are kept (MONTAGE_STORAGE_URL); null: `DATA_DIR/results/`. */
  storage: ObjectStorageConfig | null;
}

/** An S3-compatible bucket (docs/deploy.md, "Object storage"). */
export interface ObjectStorageConfig {
  bucket: string;
  /** Prepended to every key, without slashes at either end; '' for none. */
  prefix: string;
  /** `http(s)://host[:port]` of a store other than AWS S3 (MinIO, R2); null: AWS S3 of `region`. */
  endpoint: string | null;
  region: string;
  /** Bucket in the path (`endpoint/bucket/key`) rather than in the host name: MinIO and most local stores need it. */
  pathStyle: boolean;
  /** From AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; null: the SDK's own chain (profile, instance or task role). */
  credentials: StorageCredentials | null;
}

export interface StorageCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The address of Stripe's API as the `stripe` package takes it (its constructor's host, port and protocol). */
export interface StripeApiBase {
  host: string;
  port: number;
  protocol: 'http' | 'https';
}

/** Bounds on every blend job (docs/blend.md, Limits and configuration); each breach is a failure code. */
export interface BlendLimits {
  /** Images per job of a type that holds every frame at once (composite, auto, and any job with preserveBackground). */
  maxImages: number;
  /** Images per job of a type folded one frame at a time (mean, lighten, darken, the layer modes). */
  maxStreamingImages: number;
  /** Images per median job (blended by bands of rows). */
  maxMedianImages: number;
  /** Images per exposure or focus job (blended in passes over its spooled frames); at most 256, the frames a focus stack's choice byte can name. */
  maxPyramidImages: number;
  /** Bytes a median job's bands of rows may take (every frame's band of the rows being blended). */
  medianBandBytes: number;
  maxImageBytes: number;
  maxPixels: number;
  fetchTimeoutMs: number;
  maxRedirects: number;
  jobTimeoutMs: number;
  maxAttempts: number;
  /** Blend jobs worked at once by one process. */
  concurrency: number;
  /** Worker threads for pixel work in one process. */
  threads: number;
  /** How long a finished job and its result image are kept (0: for ever). */
  retentionMs: number;
  /** Pixels one job may hold: the sum over its frames of the larger of the frame's and the first frame's pixel count. */
  maxJobPixels: number;
  /** Bytes the blend jobs of one process may hold at once, by their estimates (src/blend/memory.ts); a job that would exceed it waits. */
  memoryBytes: number;
  /** How long an uploaded image stays usable (docs/blend.md, "Uploads"). */
  uploadTtlMs: number;
  /** Live uploads one account may hold at once, by count and by bytes. */
  maxUploads: number;
  maxUploadBytes: number;
}

export type Plan = 'free' | 'business' | 'enterprise';
export type ApiPlan = Exclude<Plan, 'free'>;
export const PLANS: readonly Plan[] = ['free', 'business', 'enterprise'];

export interface PlanLimits {
  blendPerHour: number;
  eventsPerMinute: number;
  eventsPerDay: number;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

const DEFAULT_LIMITS: Record<ApiPlan, PlanLimits> = {
  business: { blendPerHour: 1000, eventsPerMinute: 1000, eventsPerDay: 50000 },
  enterprise: { blendPerHour: 10000, eventsPerMinute: 10000, eventsPerDay: 1000000 },
};

/** Pixels per blend job: 10 frames of 12 MP, 5 of 24 MP, 2 of 60 MP (docs/blend.md, "Memory", sizes its memory). */
const DEFAULT_MAX_JOB_PIXELS = 120_000_000;

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `500ms`, `5s`, `5m`, `2h`, `7d`; returns milliseconds or null when malformed. */
export function parseDuration(text: string): number | null {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return null;
  return Number(match[1]) * DURATION_UNITS[match[2]!]!;
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function duration(env: Env, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  const ms = parseDuration(raw);
  if (ms === null || ms <= 0) throw new ConfigError(name, `must be a duration such as 30s, 5m, 2h or 7d, got "${raw}"`);
  return ms;
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** A size in bytes: `1073741824`, `512MB`, `2GB`, `1.5GiB`. */
function size(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?$/i.exec(raw.trim());
  if (!match) throw new ConfigError(name, `must be a size such as 2GB, 512MB or a number of bytes, got "${raw}"`);
  const value = Math.round(Number(match[1]) * SIZE_UNITS[(match[2] ?? '').toLowerCase()]!);
  if (value < min) throw new ConfigError(name, `must be at least ${min} bytes, got ${value}`);
  return value;
}

/** Memory this process may use: the machine's, or its container's limit when lower. */
function availableMemory(): number {
  const constrained = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  return constrained && constrained > 0 ? Math.min(constrained, os.totalmem()) : os.totalmem();
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(name, `must be 1 or 0, got "${raw}"`);
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw;
}

function planLimits(env: Env, name: string, fallback: PlanLimits): PlanLimits {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const limits = { ...fallback };
  for (const part of raw.split(',')) {
    const [key, value] = part.split('=').map((s) => s.trim());
    if (!key || !(key in fallback)) {
      throw new ConfigError(name, `unknown limit "${key ?? ''}" (expected ${Object.keys(fallback).join(', ')})`);
    }
    if (!value || !/^\d+$/.test(value) || Number(value) < 1) {
      throw new ConfigError(name, `limit ${key} must be a positive whole number`);
    }
    limits[key as keyof PlanLimits] = Number(value);
  }
  return limits;
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const publicUrl = url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  const logLevel = (env.MONTAGE_LOG_LEVEL || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('MONTAGE_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }

  const scheduleRaw = env.MONTAGE_WEBHOOK_RETRY_SCHEDULE || '5s,5m,30m,2h,5h,10h,10h';
  const webhookRetrySchedule = scheduleRaw.split(',').map((part) => {
    const ms = parseDuration(part);
    if (ms === null) throw new ConfigError('MONTAGE_WEBHOOK_RETRY_SCHEDULE', `"${part}" is not a duration such as 5s, 5m or 2h`);
    return ms;
  });

  return {
    port,
    host,
    publicUrl: publicUrl.replace(/\/+$/, ''),
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    allowPrivateNetwork: flag(env, 'MONTAGE_ALLOW_PRIVATE_NETWORK'),
    webhookRetrySchedule,
    webhookDisableAfterMs: duration(env, 'MONTAGE_WEBHOOK_DISABLE_AFTER', '5d'),
    webhookSecretOverlapMs: env.MONTAGE_WEBHOOK_SECRET_OVERLAP === '0' ? 0 : duration(env, 'MONTAGE_WEBHOOK_SECRET_OVERLAP', '24h'),
    limits: {
      business: planLimits(env, 'MONTAGE_LIMITS_BUSINESS', DEFAULT_LIMITS.business),
      enterprise: planLimits(env, 'MONTAGE_LIMITS_ENTERPRISE', DEFAULT_LIMITS.enterprise),
    },
    blend: {
      maxImages: integer(env, 'MONTAGE_BLEND_MAX_IMAGES', 10, 2, 100),
      maxStreamingImages: integer(env, 'MONTAGE_BLEND_MAX_STREAMING_IMAGES', 500, 2, 5000),
      maxMedianImages: integer(env, 'MONTAGE_BLEND_MAX_MEDIAN_IMAGES', 100, 2, 1000),
      maxPyramidImages: integer(env, 'MONTAGE_BLEND_MAX_PYRAMID_IMAGES', 100, 2, 256),
      medianBandBytes: size(env, 'MONTAGE_BLEND_MEDIAN_BAND_MEMORY', 256 * 1024 * 1024, 16 * 1024 * 1024),
      maxImageBytes: integer(env, 'MONTAGE_BLEND_MAX_IMAGE_BYTES', 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      maxPixels: integer(env, 'MONTAGE_BLEND_MAX_PIXELS', 50_000_000, 1024, 500_000_000),
      fetchTimeoutMs: duration(env, 'MONTAGE_BLEND_FETCH_TIMEOUT', '20s'),
      maxRedirects: integer(env, 'MONTAGE_BLEND_MAX_REDIRECTS', 3, 0, 10),
      jobTimeoutMs: duration(env, 'MONTAGE_BLEND_JOB_TIMEOUT', '120s'),
      maxAttempts: integer(env, 'MONTAGE_BLEND_MAX_ATTEMPTS', 3, 1, 20),
      concurrency: integer(env, 'MONTAGE_BLEND_CONCURRENCY', Math.max(1, Math.floor(os.availableParallelism() / 2)), 1, 64),
      threads: integer(env, 'MONTAGE_BLEND_THREADS', os.availableParallelism(), 1, 64),
      retentionMs: env.MONTAGE_BLEND_RETENTION === '0' ? 0 : duration(env, 'MONTAGE_BLEND_RETENTION', '30d'),
      maxJobPixels: integer(env, 'MONTAGE_BLEND_MAX_JOB_PIXELS', DEFAULT_MAX_JOB_PIXELS, 1024, 10_000_000_000),
      memoryBytes: size(env, 'MONTAGE_BLEND_MEMORY', Math.floor(availableMemory() / 2), 1024 * 1024),
      uploadTtlMs: duration(env, 'MONTAGE_BLEND_UPLOAD_TTL', '24h'),
      maxUploads: integer(env, 'MONTAGE_BLEND_MAX_UPLOADS', 500, 1, 1_000_000),
      maxUploadBytes: size(env, 'MONTAGE_BLEND_MAX_UPLOAD_BYTES', 5 * 1024 ** 3, 1024),
    },
    logLevel,
    jobLeaseMs: duration(env, 'MONTAGE_JOB_LEASE', '30s'),
    resultUrlTtlMs: duration(env, 'MONTAGE_RESULT_URL_TTL', '7d'),
    metricsToken: env.MONTAGE_METRICS_TOKEN || null,
    bodyLimitBytes: integer(env, 'MONTAGE_BODY_LIMIT', 1024 * 1024, 1024, 64 * 1024 * 1024),
    authCacheTtlMs: env.MONTAGE_AUTH_CACHE_TTL === '0' ? 0 : duration(env, 'MONTAGE_AUTH_CACHE_TTL', '2s'),
    shutdownTimeoutMs: duration(env, 'MONTAGE_SHUTDOWN_TIMEOUT', '10s'),
    databaseWaitMs: env.MONTAGE_DATABASE_WAIT === '0' ? 0 : duration(env, 'MONTAGE_DATABASE_WAIT', '30s'),
    sessionTtlMs: duration(env, 'MONTAGE_SESSION_TTL', '12h'),
    dashboardSignup: flag(env, 'MONTAGE_DASHBOARD_SIGNUP'),
    ...metricsListener(env, port),
    corsOrigins: corsOrigins(env, 'MONTAGE_CORS_ORIGINS'),
    trustProxy: trustProxy(env, 'MONTAGE_TRUST_PROXY'),
    stripeApiBase: stripeApiBase(env, 'MONTAGE_STRIPE_API_BASE'),
    storage: objectStorage(env, 'MONTAGE_STORAGE_URL'),
  };
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const STORAGE_OPTIONS = ['endpoint', 'region', 'pathStyle'];

/**
 * `s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1&pathStyle=true`. Errors name
 * the part that is wrong and never repeat the text: a secret pasted into the URL stays out of logs.
 */
function objectStorage(env: Env, name: string): ObjectStorageConfig | null {
  const raw = env[name]?.trim();
  if (!raw) return null;
  const match = /^s3:\/\/([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/.exec(raw);
  if (!match) throw new ConfigError(name, 'must be s3://<bucket>[/<prefix>][?endpoint=...&region=...&pathStyle=true]');
  const [, bucket = '', path = '', query = ''] = match;
  if (bucket.includes('@') || bucket.includes(':')) {
    throw new ConfigError(name, 'must not carry credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead');
  }
  if (!BUCKET.test(bucket)) throw new ConfigError(name, 'the bucket name must be 3 to 63 lower-case letters, digits, dots or hyphens');
  const prefix = path.replace(/^\/+|\/+$/g, '');
  if (prefix.length > 200 || !/^[A-Za-z0-9._/-]*$/.test(prefix) || prefix.includes('//')) {
    throw new ConfigError(name, 'the prefix (after the bucket) must be at most 200 letters, digits, dots, hyphens, underscores and single slashes');
  }
  const options = new URLSearchParams(query);
  for (const key of options.keys()) {
    if (!STORAGE_OPTIONS.includes(key)) throw new ConfigError(name, `unknown option "${key.slice(0, 40)}" (expected ${STORAGE_OPTIONS.join(', ')})`);
  }
  const region = options.get('region') || env.AWS_REGION || 'us-east-1';
  if (!/^[a-z0-9-]{1,40}$/.test(region)) throw new ConfigError(name, 'region must be a region name such as us-east-1, eu-central-1 or auto');
  const pathStyle = options.get('pathStyle') ?? 'false';
  if (!['true', 'false', '1', '0'].includes(pathStyle)) throw new ConfigError(name, 'pathStyle must be true or false');
  return { bucket, prefix, endpoint: storageEndpoint(name, options.get('endpoint')), region, pathStyle: pathStyle === 'true' || pathStyle === '1', credentials: storageCredentials(env) };
}

function storageEndpoint(name: string, raw: string | null): string | null {
  if (raw === null || raw === '') return null;
  let parsed: URL | null = null;
  try {
    parsed = new URL(raw);
  } catch {
    // reported below
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.username || parsed.password || parsed.pathname !== '/' || parsed.search || parsed.hash) {
    throw new ConfigError(name, 'endpoint must be http(s)://host[:port] with nothing after it and no credentials');
  }
  return parsed.origin;
}

/** Both keys or neither (then the SDK looks for a profile or a role); a half pair is a mistake to report, without its value. */
function storageCredentials(env: Env): StorageCredentials | null {
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim();
  if (!accessKeyId && !secretAccessKey) return null;
  if (!accessKeyId) throw new ConfigError('AWS_ACCESS_KEY_ID', 'is not set, but AWS_SECRET_ACCESS_KEY is: set both or neither');
  if (!secretAccessKey) throw new ConfigError('AWS_SECRET_ACCESS_KEY', 'is not set, but AWS_ACCESS_KEY_ID is: set both or neither');
  const sessionToken = env.AWS_SESSION_TOKEN?.trim();
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/**
 * `https://stripe-proxy.internal:8443` or `http://127.0.0.1:12111`: a stand-in or a proxy that
 * answers as Stripe's API does. Scheme, host and port only: the package adds the paths itself.
 */
function stripeApiBase(env: Env, name: string): StripeApiBase | null {
  const raw = url(env, name, ['http:', 'https:']);
  if (raw === null) return null;
  const parsed = new URL(raw);
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password) {
    throw new ConfigError(name, 'must be a scheme, a host and optionally a port, nothing after (e.g. http://127.0.0.1:12111)');
  }
  const protocol = parsed.protocol === 'http:' ? 'http' : 'https';
  const port = parsed.port ? Number(parsed.port) : protocol === 'http' ? 80 : 443;
  return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port, protocol };
}

/**
 * Which proxies in front of the server are believed when they name the client in X-Forwarded-For:
 * a number of hops (`1`: the nearest), or a list of addresses and CIDR ranges (`127.0.0.1,10.0.0.0/8`).
 * Unset, none is: every client is the address that connected.
 */
function trustProxy(env: Env, name: string): number | string[] | null {
  const text = env[name]?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops < 1 || hops > 10) throw new ConfigError(name, `a hop count must be 1 to 10, got "${text}"`);
    return hops;
  }
  const entries = text.split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = net.isIP(address ?? '');
    const maxBits = family === 6 ? 128 : 32;
    if (!family || extra !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > maxBits))) {
      throw new ConfigError(name, `"${entry}" is neither an address nor a CIDR range (e.g. 127.0.0.1 or 10.0.0.0/8)`);
    }
  }
  return entries;
}

function metricsListener(env: Env, apiPort: number): { metricsPort: number | null; metricsHost: string } {
  const metricsPort = env.MONTAGE_METRICS_PORT ? integer(env, 'MONTAGE_METRICS_PORT', 0, 1, 65535) : null;
  if (metricsPort !== null && metricsPort === apiPort) throw new ConfigError('MONTAGE_METRICS_PORT', `must differ from PORT (${apiPort})`);
  const metricsHost = env.MONTAGE_METRICS_HOST || '127.0.0.1';
  if (env.MONTAGE_METRICS_HOST && metricsPort === null) throw new ConfigError('MONTAGE_METRICS_HOST', 'has no effect without MONTAGE_METRICS_PORT');
  return { metricsPort, metricsHost };
}

/**
 * `https://door.example.com,https://app.example.com`: each an origin as a browser sends it
 * (scheme, host, port if not the default; no path, no trailing slash), or `*` alone.
 */
function corsOrigins(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const list = raw.split(',').map((part) => part.trim());
  if (list.includes('*')) {
    if (list.length > 1) throw new ConfigError(name, '* allows every origin and cannot be listed with others');
    return ['*'];
  }
  for (const origin of list) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      // reported below
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin) {
      throw new ConfigError(name, `"${origin}" is not an origin such as https://app.example.com (scheme and host, a port if not the default, nothing after)`);
    }
  }
  return [...new Set(list)];
}

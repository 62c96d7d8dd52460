// Bad-input fuzzing of every operation of a running Montage server, from its own OpenAPI document.
// Independent of src/: it speaks HTTP only, so it fuzzes a test app and a real process alike.
//
//   const report = await fuzz({ baseUrl, key, requests: 1500, seed: 42 });
//
// Seeds the key's account with real resources, then sends `requests` generated requests, round
// robin over every operation (fast-check draws each one from a seed derived from `seed` and its
// index), learns ids, codes and cursors from the answers, and checks every answer (properties.ts).
import fc from 'fast-check';
import { Client, type Outcome } from './client.js';
import { startFixtures } from './fixtures.js';
import { type Operation, operationsOf, type Schema } from './openapi.js';
import { Pool } from './pool.js';
import { violations } from './properties.js';
import { type FuzzRequest, requestFor } from './request.js';
import { seedAccount, seedEvents } from './seed.js';

export interface FuzzOptions {
  /** `http://127.0.0.1:8080` */
  baseUrl: string;
  /** A key of a Business or Enterprise account holding every scope. */
  key: string;
  /** A key of the same account past its expiry (the API cannot make one); optional. */
  expiredKey?: string;
  /** Requests to generate (one sent twice at once counts once). */
  requests: number;
  seed: number;
  /** Per request; no answer in time is a hang (a violation). Default 10 s. */
  timeoutMs?: number;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** How long to wait for the seeded blend job (0 when no worker runs). Default 0. */
  blendWaitMs?: number;
  /** Operations the document does not list; default: the dashboard's session routes and the ops pages. */
  unlisted?: Operation[];
  /** Progress lines. */
  log?: (line: string) => void;
  /** Called with every request and what came of it (debugging the generator). */
  onResult?: (operation: string, request: FuzzRequest, outcome: Outcome) => void;
}

export interface OperationStats {
  operation: string;
  requests: number;
  /** Count by HTTP status; 0 for no answer. */
  statuses: Record<number, number>;
}

export interface Violation {
  operation: string;
  index: number;
  request: FuzzRequest;
  status: number | null;
  problems: string[];
  /** The first 500 characters of the answer's body (or the transport error). */
  snippet: string;
  /** A curl command that sends the same request ($KEY and friends stand for the seeded keys). */
  curl: string;
}

export interface FuzzReport {
  seed: number;
  /** Requests generated. */
  generated: number;
  /** Requests sent: the generated ones, and the second copy of those sent twice at once. */
  requests: number;
  durationMs: number;
  operations: OperationStats[];
  statuses: Record<number, number>;
  violationCount: number;
  /** The first 100 violations, in full. */
  violations: Violation[];
  hangs: number;
  serverErrors: number;
  /** Webhook deliveries the loopback receiver got (a worker must run for any to come). */
  webhookDeliveries: number;
}

// The route takes any string as email; `format` here makes the valid sign-ups the generator needs.
const Credentials: Schema = {
  type: 'object',
  required: ['email', 'password'],
  properties: { email: { type: 'string', minLength: 1, maxLength: 320, format: 'email' }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
  additionalProperties: false,
};
const unlisted = (method: string, path: string, body: Schema | null = null): Operation => ({ key: `${method} ${path}`, method, path, parameters: [], body, public: true });

/** Montage routes outside the OpenAPI document: the dashboard's session API and the operations pages. */
export const UNLISTED_OPERATIONS: Operation[] = [
  unlisted('POST', '/dashboard/api/signup', Credentials),
  unlisted('POST', '/dashboard/api/login', Credentials),
  unlisted('GET', '/dashboard/api/session'),
  unlisted('POST', '/dashboard/api/logout'),
  unlisted('POST', '/dashboard/api/password', {
    type: 'object',
    required: ['currentPassword', 'newPassword'],
    properties: { currentPassword: { type: 'string', minLength: 1, maxLength: 1024 }, newPassword: { type: 'string', minLength: 10, maxLength: 1024 } },
    additionalProperties: false,
  }),
  unlisted('GET', '/metrics'),
  unlisted('GET', '/docs/errors'),
  unlisted('GET', '/openapi.json'),
];

const MAX_KEPT = 100;
/** Fresh events every so many requests (seed.ts, seedEvents). */
const RESEED_EVERY = 500;

/** A 32-bit seed per request, so any one of them can be drawn again on its own. */
export const requestSeed = (seed: number, index: number) => (Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2d) + Math.imul(index + 1, 0x9e3779b1)) | 0;

export async function fuzz(options: FuzzOptions): Promise<FuzzReport> {
  const { timeoutMs = 10_000, concurrency = 4, blendWaitMs = 0, log = () => {} } = options;
  const started = performance.now();
  const client = new Client(options.baseUrl, timeoutMs, concurrency);
  const fixtures = await startFixtures();
  try {
    const spec = await client.send({ method: 'GET', path: '/openapi.json', headers: {}, notes: [] });
    if (!spec.ok || spec.answer.status !== 200) throw new Error(`GET /openapi.json: ${spec.ok ? spec.answer.status : spec.error}`);
    const operations = [...operationsOf(JSON.parse(spec.answer.body.toString('utf8'))), ...(options.unlisted ?? UNLISTED_OPERATIONS)];
    log(`${operations.length} operations; seeding the account...`);

    const pool = new Pool();
    const credentials = await seedAccount(client, pool, { key: options.key, expiredKey: options.expiredKey, urls: fixtures.urls, blendWaitMs });
    const names = new Map([
      [credentials.key, '$KEY'],
      [credentials.restricted, '$CHECKIN_KEY'],
      [credentials.revoked, '$REVOKED_KEY'],
      [credentials.expired ?? '', '$EXPIRED_KEY'],
    ]);
    const ctx = { pool, credentials, urls: fixtures.urls };
    log(`seeded: ${pool.prefixes().map((p) => `${pool.of(p).length} ${p}`).join(', ')}${pool.results.length ? ', a blend result' : ''}`);

    const order = schedule(operations.length, options.requests, options.seed);
    const stats = operations.map((op) => ({ operation: op.key, requests: 0, statuses: {} as Record<number, number> }));
    const kept: Violation[] = [];
    let violationCount = 0;
    let hangs = 0;
    let serverErrors = 0;
    let next = 0;
    let done = 0;
    let sent = 0;

    const one = async (index: number) => {
      const op = operations[order[index]!]!;
      const request = fc.sample(requestFor(op, ctx), { seed: requestSeed(options.seed, index), numRuns: 1 })[0]!;
      const outcomes = await Promise.all(request.twin ? [client.send(request), client.send(request)] : [client.send(request)]);
      for (const outcome of outcomes) {
        options.onResult?.(op.key, request, outcome);
        const stat = stats[order[index]!]!;
        stat.requests++;
        sent++;
        const status = outcome.ok ? outcome.answer.status : 0;
        stat.statuses[status] = (stat.statuses[status] ?? 0) + 1;
        if (status >= 500) serverErrors++;
        if (!outcome.ok && outcome.hang) hangs++;
        const problems = outcome.ok
          ? [outcome.answer, ...(outcome.more ?? [])].flatMap((answer) => violations(request.method, answer))
          : [outcome.hang ? `hang: ${outcome.error}` : `no answer: ${outcome.error}`];
        if (problems.length) {
          violationCount++;
          if (kept.length < MAX_KEPT) kept.push(violation(op, index, request, outcome, problems, options.baseUrl, names));
        } else if (outcome.ok && outcome.answer.status < 300) {
          // A 204 to a DELETE: what the path named last is gone.
          if (request.method === 'DELETE' && outcome.answer.status === 204) pool.forget(request.path.split('?')[0]!.split('/').pop()!);
          else learn(pool, op.key, outcome.answer.headers, outcome.answer.body);
        }
      }
    };

    const progressEvery = Math.max(500, Math.round(options.requests / 10));
    // No request starts while events are reseeded: one that learnt the new ids could cancel them mid-way.
    let reseeding: Promise<void> | null = null;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < order.length) {
          if (reseeding) {
            await reseeding;
            continue;
          }
          const index = next++;
          if (index > 0 && index % RESEED_EVERY === 0) {
            reseeding = seedEvents(client, pool, options.key).finally(() => (reseeding = null));
            await reseeding;
          }
          await one(index);
          if (++done % progressEvery === 0) log(`${done}/${order.length} requests, ${violationCount} violations`);
        }
      }),
    );

    const statuses: Record<number, number> = {};
    for (const s of stats) for (const [code, n] of Object.entries(s.statuses)) statuses[Number(code)] = (statuses[Number(code)] ?? 0) + n;
    return {
      seed: options.seed,
      generated: order.length,
      requests: sent,
      durationMs: Math.round(performance.now() - started),
      operations: stats,
      statuses,
      violationCount,
      violations: kept,
      hangs,
      serverErrors,
      webhookDeliveries: fixtures.deliveries(),
    };
  } finally {
    client.close();
    await fixtures.close();
  }
}

/** Operation indexes: every operation once per round, each round in its own seeded order. */
function schedule(operations: number, requests: number, seed: number): number[] {
  const rounds = Math.ceil(requests / operations);
  const all = Array.from({ length: operations }, (_, i) => i);
  const order: number[] = [];
  for (let round = 0; round < rounds; round++) order.push(...fc.sample(fc.shuffledSubarray(all, { minLength: operations }), { seed: requestSeed(seed, -1 - round), numRuns: 1 })[0]!);
  return order.slice(0, requests);
}

function learn(pool: Pool, operation: string, headers: Record<string, string | string[] | undefined>, body: Buffer): void {
  if (typeof headers.etag === 'string') pool.etags.set(operation, headers.etag);
  if (!/^application\/json/.test(String(headers['content-type'] ?? ''))) return;
  try {
    const json = JSON.parse(body.toString('utf8'));
    pool.harvest(json, operation);
    pool.addSession(headers['set-cookie'], json?.csrfToken);
  } catch {
    // violations() has reported a JSON answer that is not JSON.
  }
}

function violation(op: Operation, index: number, request: FuzzRequest, outcome: Outcome, problems: string[], baseUrl: string, names: Map<string, string>): Violation {
  const snippet = outcome.ok ? outcome.answer.body.toString('utf8').slice(0, 500) : outcome.error;
  return { operation: op.key, index, request: redact(request, names), status: outcome.ok ? outcome.answer.status : null, problems, snippet, curl: curl(baseUrl, redact(request, names)) };
}

function redact(request: FuzzRequest, names: Map<string, string>): FuzzRequest {
  const swap = (text: string) => [...names].reduce((t, [secret, name]) => (secret ? t.split(secret).join(name) : t), text);
  return { ...request, headers: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, swap(v)])) };
}

/** Bash ANSI-C quoting: every byte that is not plain printable ASCII as \xHH. */
function quote(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte >= 0x20 && byte < 0x7f && c !== '\\' && c !== "'" ? c : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return `$'${out}'`;
}

function curl(baseUrl: string, request: FuzzRequest): string {
  const header = ([k, v]: [string, string]) => (/\$[A-Z_]+/.test(v) ? `-H "${k}: ${v}"` : `-H ${quote(`${k}: ${v}`)}`);
  const body = request.body === undefined ? '' : request.body.length > 4096 ? ` --data-binary "$(head -c ${request.body.length} /dev/zero | tr '\\0' x)" # stands for a ${request.body.length}-byte body` : ` --data-binary ${quote(request.body)}`;
  return `curl -sS -X ${request.method} --path-as-is ${quote(`${baseUrl}${request.path}`)} ${Object.entries(request.headers).map(header).join(' ')}${body}`;
}

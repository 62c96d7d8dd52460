import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { createAccount, createApiKey, type NewKey } from '../src/accounts/accounts.service.js';
import { type BuildOptions, buildApp } from '../src/app.js';
import { type Config, loadConfig, type Plan } from '../src/config.js';
import { type DatabaseHandle, type Engine, openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startWorkers } from '../src/workers.js';

/** The engines this run tests on (scripts/test.mjs sets them; PostgreSQL gets a fresh database per run). */
export const ENGINES = (process.env.MONTAGE_TEST_ENGINES ?? 'sqlite').split(',').filter(Boolean) as Engine[];

/** Where a test app keeps its data: a temp SQLite directory, or a fresh PostgreSQL schema. */
export interface Storage {
  engine: Engine;
  env: Record<string, string>;
}

let counter = 0;

const cleanups = new WeakMap<TestContext, Array<() => unknown>>();

/**
 * Teardown that runs after the test, the last registered first: a server stops before the schema it
 * uses is dropped. (node:test runs `t.after` hooks first-registered first, and stops at the first
 * that throws, which once left a killed server's successor running and the run hanging.) Every step
 * runs even when an earlier one fails; the first failure is reported.
 */
export function onCleanup(t: TestContext, step: () => unknown): void {
  let steps = cleanups.get(t);
  if (!steps) {
    const list: Array<() => unknown> = [];
    cleanups.set(t, (steps = list));
    t.after(async () => {
      let failure: unknown;
      for (const run of list.reverse()) {
        try {
          await run();
        } catch (err) {
          failure ??= err;
        }
      }
      if (failure) throw failure;
    });
  }
  steps.push(step);
}

export async function freshStorage(t: TestContext, engine: Engine): Promise<Storage> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-test-'));
  onCleanup(t, () => fs.rmSync(dataDir, { recursive: true, force: true }));
  if (engine === 'sqlite') return { engine, env: { DATA_DIR: dataDir } };
  const base = process.env.TEST_DATABASE_URL;
  if (!base) throw new Error('TEST_DATABASE_URL is not set: run the tests with npm test');
  const schema = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  onCleanup(t, async () => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
  });
  return { engine, env: { DATA_DIR: dataDir, DATABASE_URL: `${base}?schema=${schema}` } };
}

/** A fetch Response whose JSON tests read freely. */
export type ApiResponse = Omit<Response, 'json'> & { json(): Promise<any> };

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: DatabaseHandle;
  /** `http://127.0.0.1:<port>`: tests speak real HTTP over loopback. */
  url: string;
  /** Creates an account (and a key with every scope unless the plan is free). */
  account(plan?: Plan, key?: NewKey): Promise<{ accountId: string; email: string; key: string }>;
  key(accountId: string, plan: Plan, key?: NewKey): Promise<string>;
  fetch(pathname: string, init?: RequestInit & { key?: string; json?: unknown }): Promise<ApiResponse>;
}

export async function startApp(
  t: TestContext,
  storage: Storage,
  env: Record<string, string> = {},
  options: Omit<BuildOptions, 'database'> & { workers?: boolean } = {},
): Promise<TestApp> {
  const config = loadConfig({ PORT: '0', MONTAGE_LOG_LEVEL: 'silent', ...storage.env, ...env });
  const database = openDatabase(config);
  await migrateToLatest(database);
  const { workers: withWorkers, ...buildOptions } = options;
  const app = await buildApp(config, { database, logger: false, ...buildOptions });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const silent = { info() {}, warn() {}, error() {} };
  const workers = withWorkers ? startWorkers(database, config, silent) : null;
  onCleanup(t, async () => {
    await app.close();
    await workers?.stop(1000);
    await database.close();
  });
  const key: TestApp['key'] = async (accountId, plan, input = {}) =>
    (await createApiKey(database.db, { id: accountId, plan }, input)).key;
  return {
    app,
    config,
    database,
    url: address,
    key,
    async account(plan = 'business', input = {}) {
      const email = `user${counter++}.${Date.now()}@example.com`;
      const account = await createAccount(database.db, { email, plan });
      return { accountId: account.id, email, key: plan === 'free' ? '' : await key(account.id, plan, input) };
    },
    fetch(pathname, init = {}) {
      const { key: apiKey, json, headers, ...rest } = init;
      const h = new Headers(headers);
      if (apiKey) h.set('authorization', `Bearer ${apiKey}`);
      if (json !== undefined) h.set('content-type', 'application/json');
      return fetch(`${address}${pathname}`, { ...rest, headers: h, body: json !== undefined ? JSON.stringify(json) : rest.body });
    },
  };
}

/** Asserts the RFC 9457 shape every error has, and returns the body. */
export async function problem(response: ApiResponse, status: number, code: string): Promise<Record<string, any>> {
  const body = (await response.json()) as Record<string, any>;
  assert.deepStrictEqual({ status: response.status, code: body.code }, { status, code }, JSON.stringify(body));
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(body.status, status);
  assert.equal(body.type, `/docs/errors#${code}`);
  assert.ok(typeof body.title === 'string' && body.title.length > 0);
  assert.ok(typeof body.detail === 'string' && body.detail.length > 0);
  assert.equal(body.requestId, response.headers.get('x-request-id'));
  // A stack frame is `at name (file:line:column)`: a bare "at … (" also matches an id that ends in "at" before a parenthesis.
  assert.ok(!/\bat [^()"]+ \(\S+:\d+:\d+\)|node_modules|\/work\/|select |insert into/i.test(JSON.stringify(body)), 'no stack, path or SQL');
  return body;
}


/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
export async function until<T>(check: () => Promise<T> | T, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');
const BIN = path.resolve(import.meta.dirname, '../bin/montage.js');

/**
 * A Montage command (`argv` after node) in a process of its own, resolved once its output says
 * `ready`; killed when the test ends unless it has exited by then. An exit before that rejects with
 * `<name> exited (code)` and its output (tests match on it).
 */
function montageProcess(t: TestContext, argv: string[], env: Record<string, string>, ready: string, name: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  onCleanup(t, () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    return new Promise((r) => child.once('exit', r));
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes(ready)) resolve(child);
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`${name} exited (${code}): ${out}`)));
  });
}

/** `montage serve` in a process of its own (the real command line), resolved once it listens. */
export function serveProcess(t: TestContext, env: Record<string, string>): Promise<ChildProcess> {
  return montageProcess(t, ['--import', 'tsx', CLI, 'serve'], env, 'Montage is running', 'server');
}

/** `montage worker` of the built server (`npm run build`) in a process of its own, resolved once it works the queue. */
export function workerProcess(t: TestContext, env: Record<string, string>): Promise<ChildProcess> {
  return montageProcess(t, [BIN, 'worker'], { ...env, MONTAGE_LOG_LEVEL: 'info' }, 'Montage worker running', 'worker');
}

/** The status of blend job `jobId` once it has completed or failed (polled). */
export function settledJob(api: Pick<TestApp, 'fetch'>, key: string, jobId: string, timeoutMs = 60_000): Promise<any> {
  return until(
    async () => {
      const job = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
      return job.status === 'completed' || job.status === 'failed' ? job : null;
    },
    timeoutMs,
    `blend job ${jobId}`,
  );
}

/** The PNG files of `dir` served over loopback by name, until the test ends: the server's base URL. */
export async function fileServer(t: TestContext, dir: string): Promise<string> {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.basename(req.url ?? '/'));
    if (!fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/png' }).end(fs.readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Two frames of the median-crowd fixture served over loopback: their URLs. */
export async function fixtureFrames(t: TestContext): Promise<string[]> {
  const base = await fileServer(t, path.resolve(import.meta.dirname, 'fixtures/blend/median-crowd'));
  return [`${base}/1.png`, `${base}/2.png`];
}

/** The database of `env`, migrated, with a business account and a key: for tests that run the server as a process. */
export async function databaseWithAccount(t: TestContext, env: Record<string, string>) {
  const database = openDatabase(loadConfig({ ...env, MONTAGE_LOG_LEVEL: 'silent' }));
  onCleanup(t, () => database.close());
  await migrateToLatest(database);
  const account = await createAccount(database.db, { email: `process.${Date.now()}.${counter++}@example.com` });
  const { key } = await createApiKey(database.db, account, {});
  return { database, account, key };
}

/** Settings that let webhooks reach a receiver on loopback and retry within a test's time. */
export const FAST_WEBHOOKS = { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms' };

/** One account's key, speaking JSON to the API: `send` answers the response, `expect` checks its status and answers its body. */
export function jsonClient(api: TestApp, key: string) {
  const send = (method: string, path: string, json?: unknown) => api.fetch(`/v1${path}`, { method, key, json });
  const expect = async (status: number, method: string, path: string, json?: unknown): Promise<any> => {
    const res = await send(method, path, json);
    const text = await res.text();
    assert.equal(res.status, status, `${method} ${path} answered ${res.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  };
  /** A full path (`/v1/...`): the answer as it is. */
  const call = (method: string, path: string, json?: unknown, headers?: Record<string, string>): Promise<ApiResponse> =>
    api.fetch(path, { method, key, ...(json !== undefined ? { json } : {}), ...(headers ? { headers } : {}) });
  /** A full path: the JSON of a 2xx answer (any other fails the test, with its body). */
  const ok = async (method: string, path: string, json?: unknown): Promise<any> => {
    const res = await call(method, path, json);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
    return res.json();
  };
  return { key, send, expect, call, ok };
}
export type JsonClient = ReturnType<typeof jsonClient>;

/**
 * One account speaking to the API with one key (a full-scope key unless told otherwise): `send`
 * answers the response, `expect` checks its status and answers its body. `onAnswer`, when given,
 * sees every answer's body and headers as text (a test that searches everything it was sent).
 */
export class AccountClient {
  constructor(
    readonly api: TestApp,
    readonly accountId: string,
    readonly key: string,
    private readonly onAnswer?: (body: string, headers: string) => void,
  ) {}

  static async create(api: TestApp, onAnswer?: (body: string, headers: string) => void): Promise<AccountClient> {
    const { accountId, key } = await api.account('business');
    return new AccountClient(api, accountId, key, onAnswer);
  }

  /** The same account with a key restricted to `scopes`. */
  async withScopes(scopes: string[]): Promise<AccountClient> {
    return new AccountClient(this.api, this.accountId, await this.api.key(this.accountId, 'business', { scopes }), this.onAnswer);
  }

  async send(method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const res = await this.api.fetch(`/v1${path}`, { method, key: this.key, json, headers });
    if (!this.onAnswer) return res;
    const body = Buffer.from(await res.arrayBuffer());
    this.onAnswer(body.toString('latin1'), [...res.headers].join('\n'));
    return new Response(res.status === 304 || res.status === 204 ? null : body, { status: res.status, headers: res.headers }) as ApiResponse;
  }

  get = (path: string) => this.send('GET', path);
  post = (path: string, json?: unknown) => this.send('POST', path, json);
  patch = (path: string, json: unknown) => this.send('PATCH', path, json);
  delete = (path: string) => this.send('DELETE', path);

  /** Sends, asserts the status (showing the body when it differs) and returns the parsed body. */
  async expect(status: number, method: string, path: string, json?: unknown): Promise<any> {
    const res = await this.send(method, path, json);
    const text = await res.text();
    assert.equal(res.status, status, `${method} ${path} answered ${res.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  }
}

/** A webhook receiver on loopback that answers 200 and keeps the bodies it got, closed when the test ends. */
export async function hookReceiver(t: TestContext): Promise<{ url: string; got: any[] }> {
  const got: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      got.push(JSON.parse(body));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(t, () => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

/**
 * One server for the enclosing describe block, started before its tests and stopped (its storage
 * dropped) after them: startApp and freshStorage only use the context to register their cleanups.
 */
export function sharedServer(engine: Engine): () => TestApp {
  let api: TestApp | undefined;
  const cleanups: Array<() => unknown> = [];
  const context = { after: (fn: () => unknown) => void cleanups.push(fn) } as unknown as TestContext;
  before(async () => {
    api = await startApp(context, await freshStorage(context, engine));
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => api!;
}

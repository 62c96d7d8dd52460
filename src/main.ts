import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { accountByEmail, createAccount, createApiKey, presentKey, revokeApiKeyById } from './accounts/accounts.service.js';
import { buildApp } from './app.js';
import { type Config, ConfigError, loadConfig, type Plan } from './config.js';
import { setPassword } from './dashboard/password.service.js';
import { type DatabaseHandle, isDatabaseUnavailable, openDatabase, ping } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { TenantScope } from './db/tenant.js';
import { AppError } from './errors.js';
import { notifyOtherProcesses } from './jobs/signal.js';
import { startWorkers, type WorkerLog } from './jobs/workers.js';

const USAGE = `Usage: montage <command>

  serve [--no-worker]        API server (and background workers unless --no-worker); same as npm start
  worker                     background workers only
  migrate                    apply database migrations
  accounts create --email E [--plan free|business|enterprise] [--password P]
  accounts set-password --email E --password P   sets the password that signs in to the dashboard
  keys create --email E [--name N] [--scopes a,b] [--expires-in 30d]
  keys list --email E
  keys revoke KEY_ID

Configuration comes from the environment (PORT, HOST, DATA_DIR, DATABASE_URL, REDIS_URL, ...): see README.md.`;

const out = (line: string) => process.stdout.write(`${line}\n`);

/** Opens the database, brings it up to date (unless the command is `migrate` itself) and runs `work`. */
async function withDatabase<T>(config: Config, work: (handle: DatabaseHandle) => Promise<T>, migrate = true): Promise<T> {
  const handle = openDatabase(config);
  try {
    if (migrate) await migrateToLatest(handle);
    return await work(handle);
  } finally {
    await handle.close();
  }
}

/**
 * Opens the database for a long-running process and brings it up to date. A database that cannot
 * be reached yet (it starts beside us, it is failing over) is retried every second for
 * MONTAGE_DATABASE_WAIT; any other error, or a database still away after that, stops the start.
 */
async function openForService(config: Config, log: (line: string) => void): Promise<DatabaseHandle> {
  const handle = openDatabase(config);
  const deadline = Date.now() + config.databaseWaitMs;
  try {
    for (let waited = false; ; waited = true) {
      try {
        await ping(handle.db);
        if (waited) log('The database answers; starting.');
        break;
      } catch (err) {
        if (!isDatabaseUnavailable(err) || Date.now() >= deadline) throw err;
        if (!waited) log(`The database (${handle.location}) cannot be reached yet; retrying for up to ${Math.round(config.databaseWaitMs / 1000)} s (MONTAGE_DATABASE_WAIT).`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    await migrateToLatest(handle);
    return handle;
  } catch (err) {
    await handle.close().catch(() => {});
    if (isDatabaseUnavailable(err)) throw new AppError('unavailable', `The database (${handle.location}) cannot be reached: ${(err as Error).message}`);
    throw err;
  }
}

function parseExpiresIn(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d{1,6})([mhd])$/.exec(text);
  if (!match) throw new AppError('invalid_request', '--expires-in takes <n>m, <n>h or <n>d, e.g. 30d.');
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}

/**
 * On SIGTERM or SIGINT, runs `stop` (given the time it may take) and exits 0; if it fails, or has
 * not finished within MONTAGE_SHUTDOWN_TIMEOUT, exits 1 anyway: a leased job left behind is taken
 * over by another worker when its lease runs out, so exiting late is worse than exiting unfinished.
 */
function onShutdown(config: Config, log: WorkerLog, stop: (graceMs: number) => Promise<void>) {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      if (stopping) return;
      stopping = true;
      const started = Date.now();
      log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
      setTimeout(() => {
        log.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown took too long; exiting');
        process.exit(1);
      }, config.shutdownTimeoutMs).unref();
      // Jobs in flight get most of the time; the rest is for handing back their leases.
      stop(Math.max(0, config.shutdownTimeoutMs - 1000)).then(
        () => {
          log.info({ ms: Date.now() - started }, 'stopped');
          process.exit(0);
        },
        (err) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}

async function serve(config: Config, withWorker: boolean): Promise<void> {
  const handle = await openForService(config, (line) => process.stderr.write(`${line}\n`));
  const app = await buildApp(config, { database: handle });
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close();
    await handle.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new AppError('unavailable', code === 'EADDRINUSE' ? `${config.host}:${config.port} is in use; set PORT to another port.` : `cannot listen on ${config.host}:${config.port}: ${String(err)}`);
  }
  const workers = withWorker ? startWorkers(handle, config, app.log) : null;
  // Jobs this process queues are announced to the workers of the others (jobs/signal.ts).
  const stopNotifying = notifyOtherProcesses(handle, app.log);
  // Stop listening and finish the requests in flight while the workers finish or hand back their
  // jobs; what those last requests and hand-backs queued is announced before the pool closes.
  onShutdown(config, app.log, async (graceMs) => {
    await Promise.all([app.close(), workers?.stop(graceMs)]);
    await stopNotifying();
    await handle.close();
  });
  const accounts = await handle.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const base = config.publicUrl;
  out('');
  out(`Montage is running (${handle.engine}: ${handle.location}${withWorker ? ', with workers' : ''})`);
  out(`  API       ${base}/v1   (also ${base}/api/v1)`);
  out(`  API docs  ${base}/docs   (OpenAPI: ${base}/openapi.json)`);
  out(`  Dashboard ${base}/dashboard   (sign in with an account made with --password)`);
  out(`  Health    ${base}/healthz  ${base}/readyz  ${base}/metrics`);
  if (Number(accounts.n) === 0) {
    out('');
    out('No accounts yet. Create one and its first API key in another terminal:');
    out('  npx montage accounts create --email you@example.com --plan business');
    out('  npx montage keys create --email you@example.com');
    out(`Then: curl -H "Authorization: Bearer <key>" ${base}/v1/account`);
  }
  out('');
}

async function worker(config: Config): Promise<void> {
  const log = pino({ level: config.logLevel });
  const handle = await openForService(config, (line) => log.warn(line));
  const workers = startWorkers(handle, config, log);
  const stopNotifying = notifyOtherProcesses(handle, log);
  log.info({ workerId: workers.runner.workerId, database: `${handle.engine}: ${handle.location}` }, 'Montage worker running');
  onShutdown(config, log, async (graceMs) => {
    await workers.stop(graceMs);
    await stopNotifying();
    await handle.close();
  });
  // Keep the process alive until a signal stops it.
  setInterval(() => {}, 1 << 30);
}

export async function main(argv: string[]): Promise<number> {
  const [command, sub] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    out(USAGE);
    return command ? 0 : 1;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  try {
    return await run(config, command, sub, argv);
  } catch (err) {
    if (err instanceof AppError) {
      process.stderr.write(`${err.code}: ${err.detail}\n`);
      return 1;
    }
    throw err;
  }
}

async function run(config: Config, command: string, sub: string | undefined, argv: string[]): Promise<number> {
  const options = {
    email: { type: 'string' },
    plan: { type: 'string' },
    password: { type: 'string' },
    name: { type: 'string' },
    scopes: { type: 'string' },
    'expires-in': { type: 'string' },
    'no-worker': { type: 'boolean' },
  } as const;
  const rest = command === 'accounts' || command === 'keys' ? argv.slice(2) : argv.slice(1);
  const { values, positionals } = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  const requireEmail = () => {
    if (!values.email) throw new AppError('invalid_request', '--email is required.');
    return values.email;
  };

  switch (`${command}${command === 'accounts' || command === 'keys' ? ` ${sub ?? ''}` : ''}`) {
    case 'serve':
      await serve(config, !values['no-worker']);
      return 0;
    case 'worker':
      await worker(config);
      return 0;
    case 'migrate':
      await withDatabase(config, async (handle) => {
        const applied = await migrateToLatest(handle);
        out(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
      }, false);
      return 0;
    case 'accounts create':
      return withDatabase(config, async ({ db }) => {
        const account = await createAccount(db, { email: requireEmail(), plan: values.plan as Plan | undefined, password: values.password });
        out(`Created account ${account.id} (${account.email}, plan ${account.plan})`);
        return 0;
      });
    case 'accounts set-password':
      return withDatabase(config, async ({ db }) => {
        const account = await accountByEmail(db, requireEmail());
        if (values.password === undefined) throw new AppError('invalid_request', '--password is required.');
        await setPassword(db, account.id, values.password);
        out(`Set the password of ${account.email}; its dashboard sessions were signed out.`);
        return 0;
      });
    case 'keys create':
      return withDatabase(config, async ({ db }) => {
        const account = await accountByEmail(db, requireEmail());
        const key = await createApiKey(db, account, {
          name: values.name,
          scopes: values.scopes?.split(',').map((s) => s.trim()),
          expiresInMs: parseExpiresIn(values['expires-in']),
        });
        out(`Created key ${key.id} "${key.name}" for ${account.email}; scopes ${key.scopes.join(',')}${key.expiresAt ? `; expires ${key.expiresAt}` : ''}.`);
        out('Store it now: it is shown only once.');
        out(key.key);
        return 0;
      });
    case 'keys list':
      return withDatabase(config, async ({ db }) => {
        const account = await accountByEmail(db, requireEmail());
        const rows = await new TenantScope(db, account.id).selectFrom('apiKeys').selectAll().orderBy('id', 'desc').execute();
        for (const key of rows.map(presentKey)) {
          const state = key.revokedAt ? 'revoked' : key.expiresAt && Date.parse(key.expiresAt) <= Date.now() ? 'expired' : 'active';
          out([key.id, key.prefix, state, key.name, key.scopes.join(','), `created ${key.createdAt}`, `last used ${key.lastUsedAt ?? 'never'}`].join('\t'));
        }
        if (rows.length === 0) out(`No keys for ${account.email}.`);
        return 0;
      });
    case 'keys revoke':
      return withDatabase(config, async ({ db }) => {
        const id = positionals[0];
        if (!id) throw new AppError('invalid_request', 'Name the key: montage keys revoke KEY_ID.');
        const key = await revokeApiKeyById(db, id);
        out(`Revoked ${key.id} (${key.prefix}...) at ${key.revokedAt}`);
        return 0;
      });
    default:
      process.stderr.write(`Unknown command: ${argv.join(' ')}\n${USAGE}\n`);
      return 1;
  }
}

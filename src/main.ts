import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { pino } from 'pino';
import { accountByEmail, createAccount, createApiKey, presentKey, revokeApiKeyById } from './accounts/accounts.service.js';
import { CLI_INVOCATION, describeDatabase, PACKAGE_ROOT, startupBanner } from './banner.js';
import { type Config, ConfigError, loadConfig, type Plan } from './config.js';
import { setPassword } from './dashboard/password.service.js';
import { type DatabaseHandle, isDatabaseUnavailable, openDatabase, ping } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { TenantScope } from './db/tenant.js';
import { AppError } from './errors.js';
import { type BlendCommandOptions, blendCommand, CommandFailure } from './blend/blend.cli.js';
import { notifyOtherProcesses } from './jobs/signal.js';
import type { Logger } from './logger.js';

/** Exit status of a command line that could not be understood (unknown command or option, missing value). */
export const USAGE_ERROR = 2;

const out = (line: string) => process.stdout.write(`${line}\n`);

/** Opens the database, brings it up to date (unless the command is `migrate` itself) and runs `work`. */
async function withDatabase<T>(config: Config, work: (handle: DatabaseHandle) => Promise<T>, migrate = true): Promise<T> {
  const handle = openDatabase(config);
  // On stderr, so that stdout stays what scripts read: a key made in another database than the
  // server's is the mistake this line is there to show.
  process.stderr.write(`Database: ${describeDatabase(handle)}\n`);
  try {
    if (migrate) await migrateToLatest(handle);
    return await work(handle);
  } catch (err) {
    if (isDatabaseUnavailable(err)) throw new AppError('unavailable', `The database (${handle.location}) cannot be reached: ${(err as Error).message}`);
    throw err;
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

/**
 * On SIGTERM or SIGINT, runs `stop` (given the time it may take) and exits 0; if it fails, or has
 * not finished within MONTAGE_SHUTDOWN_TIMEOUT, exits 1 anyway: a leased job left behind is taken
 * over by another worker when its lease runs out, so exiting late is worse than exiting unfinished.
 */
function onShutdown(config: Config, log: Logger, stop: (graceMs: number) => Promise<void>) {
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

/**
 * The bucket of MONTAGE_STORAGE_URL must answer before a process serves or works: a wrong name,
 * endpoint, region or key would otherwise fail every blend job, one at a time. Checked once; a
 * store that is down stops the start (exit 1) and the supervisor tries again, as for the database.
 */
async function checkObjectStore(config: Config): Promise<void> {
  if (!config.storage) return;
  const { createResultStore } = await import('./blend/storage.js');
  const store = createResultStore(config);
  try {
    await store.check?.();
  } finally {
    store.close?.();
  }
}

// The server and the workers (the blend engine, sharp) are loaded by the commands that run them only:
// `keys create` or `--help` starts in a fraction of the time.
async function serve(config: Config, withWorker: boolean): Promise<void> {
  const [{ buildApp }, { startWorkers }] = await Promise.all([import('./app.js'), import('./workers.js')]);
  await checkObjectStore(config);
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
  // One write: a reader of the output (a supervisor, a test) never sees half a banner.
  out(startupBanner({ config, database: handle, withWorker, accounts: Number(accounts.n) }).join('\n'));
}

async function worker(config: Config): Promise<void> {
  const { startWorkers } = await import('./workers.js');
  const log = pino({ level: config.logLevel });
  await checkObjectStore(config);
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

const VERSION: string = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')).version;

/**
 * Commander's error messages, as one line: "error: unknown command 'kyes'\n(Did you mean keys?)"
 * becomes "Unknown command 'kyes'. Did you mean 'keys'?".
 */
function usageLine(message: string): string {
  const [, text = message, oneOf = '', names] = /^(?:error: )?([\s\S]*?)(?:\n\(Did you mean (one of )?(.+)\?\))?\s*$/.exec(message) ?? [];
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  if (!names) return sentence;
  return `${sentence}. Did you mean ${oneOf}${names.split(', ').map((name) => `'${name}'`).join(', ')}?`;
}

/** The full name of a command, for the hint after a usage error: "montage keys create". */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Every command and subcommand: usage errors as one line and a hint, never an exit of their own. */
function configureTree(command: Command): void {
  command
    .exitOverride()
    .showSuggestionAfterError()
    .showHelpAfterError(`Run '${commandPath(command)} --help' for its usage.`)
    .configureOutput({ outputError: (text, write) => write(`${usageLine(text)}\n`) });
  for (const sub of command.commands) configureTree(sub);
}

/**
 * Options a command cannot run without. Checked before the action rather than by commander's
 * requiredOption, which runs first of all: a mistyped `--emial` is then reported as unknown, with
 * `--email` suggested, rather than as a missing `--email`.
 */
const REQUIRED = new WeakSet<Option>();
function required(flags: string, description: string): Option {
  const option = new Option(flags, `${description} (required)`);
  REQUIRED.add(option);
  return option;
}

function checkRequired(command: Command): void {
  for (const option of command.options) {
    if (REQUIRED.has(option) && command.getOptionValue(option.attributeName()) === undefined) {
      command.error(`error: required option '${option.flags}' not specified`, { exitCode: USAGE_ERROR, code: 'commander.missingMandatoryOptionValue' });
    }
  }
}

function parseExpiresIn(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d{1,6})([mhd])$/.exec(text);
  if (!match) throw new AppError('invalid_request', '--expires-in takes <n>m, <n>h or <n>d, e.g. 30d.');
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}

/** The command line. Each action loads the configuration itself, so that --help needs none. */
export function program(): Command {
  const montage = new Command('montage')
    .description('Self-hostable API server for photo blending and event management.')
    .version(VERSION, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .helpCommand('help [command]', 'print the help of a command')
    .addHelpText(
      'after',
      `
Run it in the checkout (the folder of Montage's package.json) as:
  ${CLI_INVOCATION} <command> [options]
--no stops npx from downloading an unrelated package of the same name; -- hands the options
that follow (--help too) to montage. npm start is ${CLI_INVOCATION} serve.

Configuration comes from the environment (PORT, HOST, DATA_DIR, DATABASE_URL, REDIS_URL, ...),
see README.md. Each command that uses the database names it on stderr ("Database: ..."): run the
commands with the DATA_DIR or DATABASE_URL of the server they are meant for.`,
    );

  montage
    .command('serve')
    .description('API server and background workers in one process (npm start)')
    .option('--no-worker', 'API server only, beside any number of `montage worker` processes')
    .action(async (options: { worker: boolean }) => serve(loadConfig(), options.worker));

  montage
    .command('worker')
    .description('background workers only (blend jobs, webhook deliveries)')
    .action(async () => worker(loadConfig()));

  montage
    .command('migrate')
    .description('apply database migrations (every start also does)')
    .action(async () =>
      withDatabase(loadConfig(), async (handle) => {
        const applied = await migrateToLatest(handle);
        out(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
      }, false),
    );

  const accounts = montage.command('accounts').description('accounts: create, set-password');
  accounts
    .command('create')
    .description('create an account')
    .addOption(required('--email <email>', "the account's email"))
    .option('--plan <plan>', 'free, business or enterprise (default: business)')
    .option('--password <password>', 'a password, to sign in to the dashboard')
    .action(async (options: { email: string; plan?: string; password?: string }) =>
      withDatabase(loadConfig(), async ({ db }) => {
        const account = await createAccount(db, { email: options.email, plan: options.plan as Plan | undefined, password: options.password });
        out(`Created account ${account.id} (${account.email}, plan ${account.plan})`);
      }),
    );

  accounts
    .command('set-password')
    .description('give an account a password for the dashboard, or a new one (signs out its dashboard sessions)')
    .addOption(required('--email <email>', "the account's email"))
    .addOption(required('--password <password>', 'the new password (10 to 1024 characters)'))
    .action(async (options: { email: string; password: string }) =>
      withDatabase(loadConfig(), async ({ db }) => {
        const account = await accountByEmail(db, options.email);
        await setPassword(db, account.id, options.password);
        out(`Set the password of ${account.email}; its dashboard sessions were signed out.`);
      }),
    );

  const keys = montage.command('keys').description('API keys: create, list, revoke');
  keys
    .command('create')
    .description('create an API key and print it, alone on the last line (shown only once)')
    .addOption(required('--email <email>', 'the email of the account the key is for'))
    .option('--name <name>', 'a name to recognise the key by')
    .option('--scopes <list>', 'comma-separated: blend, events:read, events:write, checkin, webhooks (default: all)')
    .option('--expires-in <duration>', '<n>m, <n>h or <n>d, e.g. 30d (default: never)')
    .action(async (options: { email: string; name?: string; scopes?: string; expiresIn?: string }) =>
      withDatabase(loadConfig(), async ({ db }) => {
        const account = await accountByEmail(db, options.email);
        const key = await createApiKey(db, account, {
          name: options.name,
          scopes: options.scopes?.split(',').map((s) => s.trim()),
          expiresInMs: parseExpiresIn(options.expiresIn),
        });
        out(`Created key ${key.id} "${key.name}" for ${account.email}; scopes ${key.scopes.join(',')}${key.expiresAt ? `; expires ${key.expiresAt}` : ''}.`);
        out('Store it now: it is shown only once.');
        out(key.key);
      }),
    );
  keys
    .command('list')
    .description("list an account's keys (never their secrets)")
    .addOption(required('--email <email>', "the account's email"))
    .action(async (options: { email: string }) =>
      withDatabase(loadConfig(), async ({ db }) => {
        const account = await accountByEmail(db, options.email);
        const rows = await new TenantScope(db, account.id).selectFrom('apiKeys').selectAll().orderBy('id', 'desc').execute();
        for (const key of rows.map(presentKey)) {
          const state = key.revokedAt ? 'revoked' : key.expiresAt && Date.parse(key.expiresAt) <= Date.now() ? 'expired' : 'active';
          out([key.id, key.prefix, state, key.name, key.scopes.join(','), `created ${key.createdAt}`, `last used ${key.lastUsedAt ?? 'never'}`].join('\t'));
        }
        if (rows.length === 0) out(`No keys for ${account.email}.`);
      }),
    );
  keys
    .command('revoke')
    .description('revoke a key: running servers refuse it within MONTAGE_AUTH_CACHE_TTL (2 s)')
    .argument('<key-id>', 'the id of the key (key_..., see keys list)')
    .action(async (id: string) =>
      withDatabase(loadConfig(), async ({ db }) => {
        const key = await revokeApiKeyById(db, id);
        out(`Revoked ${key.id} (${key.prefix}...) at ${key.revokedAt}`);
      }),
    );

  montage
    .command('blend')
    .description('upload images to a running server, blend them, wait and write the result (docs/blend.md, "Uploads")')
    .argument('<files...>', 'the images, the reference frame first')
    .addOption(required('--type <type>', 'the blend type: auto, median, mean, exposure, focus, composite, lighten, ...'))
    .addOption(new Option('--server <url>', 'the server').env('MONTAGE_SERVER').default('http://127.0.0.1:8080'))
    .addOption(new Option('--key <key>', 'an API key with the blend scope').env('MONTAGE_API_KEY'))
    .option('--out <file>', "where to write the result; its extension picks the format: .jpg (default), .png, .webp, .avif (default: <jobId>.jpg)")
    .option('--no-align', 'do not align the frames (a tripod set)')
    .option('--json', 'print the finished job as JSON on stdout instead of the file name')
    .action(async (files: string[], options: Omit<BlendCommandOptions, 'key'> & { key?: string }, command: Command) => {
      if (!options.key) command.error('error: --key or MONTAGE_API_KEY is required', { exitCode: USAGE_ERROR, code: 'commander.missingMandatoryOptionValue' });
      if (files.length < 2) command.error('error: a blend needs at least 2 files', { exitCode: USAGE_ERROR, code: 'commander.missingArgument' });
      await blendCommand(files, { ...options, key: options.key! });
    });

  montage.hook('preAction', (_, action) => checkRequired(action));
  configureTree(montage);
  return montage;
}

/**
 * Runs the command line; resolves to the exit status: 0, 1 for a refusal (one line `code: message`
 * or `Configuration error: ...` on stderr), 2 for a command line that could not be understood.
 */
export async function main(argv: string[]): Promise<number> {
  try {
    await program().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    // Help and version end with exit code 0; every other CommanderError is a usage error, already printed.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : USAGE_ERROR;
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      return 1;
    }
    if (err instanceof AppError) {
      process.stderr.write(`${err.code}: ${err.detail}\n`);
      return 1;
    }
    if (err instanceof CommandFailure) {
      process.stderr.write(`${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

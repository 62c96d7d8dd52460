import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ENGINES, freshStorage, problem, startApp, until } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'src/cli.ts');
// Resolved here, so that the command line can also run from another directory.
const TSX = import.meta.resolve('tsx');

/** Runs the command line; a command that has not ended after `timeoutMs` (a server started by mistake) is killed. */
function montage(args: string[], env: Record<string, string>, options: { cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, CLI, ...args], { env: { ...process.env, ...env }, cwd: options.cwd });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

for (const engine of ENGINES) {
  describe(`command line (${engine})`, () => {
    test('accounts create, keys create|list|revoke: a headless install gets its first key', async (t) => {
      const storage = await freshStorage(t, engine);
      const migrate = await montage(['migrate'], storage.env);
      assert.equal(migrate.code, 0, migrate.stderr);

      const created = await montage(['accounts', 'create', '--email', 'A@Example.com', '--plan', 'business', '--password', 'correct horse battery'], storage.env);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /acct_[0-9a-z]{26}/);

      const key = await montage(['keys', 'create', '--email', 'a@example.com', '--name', 'ci', '--scopes', 'events:read,checkin', '--expires-in', '30d'], storage.env);
      assert.equal(key.code, 0, key.stderr);
      const secret = lastLine(key.stdout);
      assert.match(secret, /^mtg_[0-9A-Za-z]{40}$/, 'the key alone on the last line');

      // A key revoked by another process (this command line) stops working within the auth cache's TTL.
      const api = await startApp(t, storage, { MONTAGE_AUTH_CACHE_TTL: '300ms' });
      const account = await api.fetch('/v1/account', { key: secret });
      assert.equal(account.status, 200);
      const body = await account.json();
      assert.equal(body.email, 'a@example.com');
      assert.deepEqual(body.key.scopes, ['events:read', 'checkin']);
      assert.ok(Math.abs(Date.parse(body.key.expiresAt) - Date.now() - 30 * 86_400_000) < 60_000);

      const stored = await api.database.db.selectFrom('accounts').select('passwordHash').where('email', '=', 'a@example.com').executeTakeFirstOrThrow();
      assert.match(stored.passwordHash ?? '', /^scrypt\$/);
      assert.ok(!stored.passwordHash!.includes('correct horse'));

      const list = await montage(['keys', 'list', '--email', 'a@example.com'], storage.env);
      assert.equal(list.code, 0, list.stderr);
      assert.ok(list.stdout.includes(body.key.id) && list.stdout.includes('active'));
      assert.ok(!list.stdout.includes(secret), 'list never shows the secret');

      const revoke = await montage(['keys', 'revoke', body.key.id], storage.env);
      assert.equal(revoke.code, 0, revoke.stderr);
      await until(async () => (await api.fetch('/v1/account', { key: secret })).status === 401, 2000, 'the revocation to reach the server');
      await problem(await api.fetch('/v1/account', { key: secret }), 401, 'api_key_revoked');
      assert.match((await montage(['keys', 'list', '--email', 'a@example.com'], storage.env)).stdout, /revoked/);
    });

    test('refusals exit non-zero with one line naming the reason', async (t) => {
      const storage = await freshStorage(t, engine);
      assert.equal((await montage(['accounts', 'create', '--email', 'free@example.com', '--plan', 'free'], storage.env)).code, 0);
      const cases: Array<[string[], RegExp]> = [
        [['keys', 'create', '--email', 'free@example.com'], /^plan_required: /],
        [['keys', 'create', '--email', 'nobody@example.com'], /^not_found: /],
        [['accounts', 'create', '--email', 'free@example.com'], /^conflict: /],
        [['accounts', 'create', '--email', 'x@example.com', '--plan', 'gold'], /^invalid_request: \/plan/],
        [['keys', 'create', '--email', 'free@example.com', '--expires-in', '3 weeks'], /^invalid_request: --expires-in/],
        [['keys', 'revoke', 'key_nope'], /^not_found: /],
      ];
      for (const [args, pattern] of cases) {
        const run = await montage(args, storage.env);
        assert.equal(run.code, 1, args.join(' '));
        // The database line, then the one line naming the reason.
        const [database, reason, ...more] = run.stderr.trimEnd().split('\n');
        assert.match(database ?? '', /^Database: /, `${args.join(' ')}: ${run.stderr}`);
        assert.deepEqual(more, [], `${args.join(' ')}: ${run.stderr}`);
        assert.match(reason ?? '', pattern, args.join(' '));
      }
    });

    test('each command that uses the database names it on stderr: the SQLite file or the PostgreSQL database, never a password', async (t) => {
      const storage = await freshStorage(t, engine);
      let env = storage.env;
      let expected: string;
      if (engine === 'sqlite') {
        // A relative DATA_DIR is named as the absolute file it resolves to, from where the command ran.
        const cwd = path.dirname(storage.env.DATA_DIR!);
        env = { DATA_DIR: path.basename(storage.env.DATA_DIR!) };
        expected = `Database: SQLite ${path.join(storage.env.DATA_DIR!, 'montage.db')}`;
        const run = await montage(['migrate'], env, { cwd });
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.stderr, `${expected}\n`);
        assert.ok(fs.existsSync(path.join(storage.env.DATA_DIR!, 'montage.db')));
        return;
      }
      // The test server trusts local connections, so a URL with a password still connects.
      const url = new URL(storage.env.DATABASE_URL!);
      url.password = 'pw-in-userinfo';
      url.searchParams.set('password', 'pw-in-query');
      env = { ...storage.env, DATABASE_URL: url.toString() };
      const schema = url.searchParams.get('schema');
      expected = `Database: PostgreSQL postgres://${url.host}${url.pathname} (schema ${schema})`;
      const migrate = await montage(['migrate'], env);
      assert.equal(migrate.code, 0, migrate.stderr);
      assert.equal(migrate.stderr, `${expected}\n`);
      assert.equal((await montage(['accounts', 'create', '--email', 'db@example.com'], env)).stderr, `${expected}\n`);
      const key = await montage(['keys', 'create', '--email', 'db@example.com'], env);
      assert.equal(key.stderr, `${expected}\n`);
      assert.match(lastLine(key.stdout), /^mtg_[0-9A-Za-z]{40}$/, 'stdout is unchanged: the key alone on the last line');
      for (const run of [migrate, key]) assert.ok(!/pw-in-/.test(run.stdout + run.stderr), 'no password');
    });
  });
}

describe('node flags', () => {
  test('npm start runs node with --max-semi-space-size=64, node applies it, and the service units of docs/deploy.md give the same', () => {
    const root = path.resolve(import.meta.dirname, '..');
    const start: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
    // `exec`: the shell npm runs the script in becomes node, so npm's SIGTERM reaches the server (cli-start.test.ts).
    const flags = /^exec node((?: --[\w-]+(?:=\S+)?)*) bin\/montage\.js serve$/.exec(start)?.[1]?.trim().split(' ');
    assert.ok(flags, `npm start: ${start}`);
    assert.ok(flags.includes('--max-semi-space-size=64'), `npm start: ${start}`);
    // In effect, not only accepted: V8's heap limit counts the young generation (3 semi-spaces), and
    // a later flag overriding it would show here.
    const heapLimit = (args: string[], env: NodeJS.ProcessEnv = {}) => {
      const run = spawnSync(process.execPath, [...args, '-p', 'require("node:v8").getHeapStatistics().heap_size_limit'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '', ...env } });
      assert.equal(run.status, 0, run.stderr);
      return Number(run.stdout);
    };
    const withFlags = heapLimit(flags);
    assert.equal(withFlags - heapLimit([]), 3 * (64 - 16) * 1024 * 1024, 'three semi-spaces of 64 MB instead of 16');
    const units = fs.readFileSync(path.join(root, 'docs', 'deploy.md'), 'utf8');
    assert.ok(units.includes(`Environment=NODE_OPTIONS=${flags.join(' ')}\n`), 'docs/deploy.md: the systemd unit passes the flags of npm start');
    assert.equal(heapLimit([], { NODE_OPTIONS: flags.join(' ') }), withFlags, 'node takes the flags from NODE_OPTIONS too');
  });
});

describe('configuration', () => {
  test('a bad value stops the process with a message naming the variable', async (t) => {
    const storage = await freshStorage(t, 'sqlite');
    for (const [name, value] of [
      ['PORT', 'eighty'],
      ['DATABASE_URL', 'mysql://localhost/x'],
      ['MONTAGE_LIMITS_BUSINESS', 'eventsPerMinute=lots'],
      ['MONTAGE_WEBHOOK_RETRY_SCHEDULE', '5s,soon'],
      ['MONTAGE_LOG_LEVEL', 'loud'],
      ['MONTAGE_ALLOW_PRIVATE_NETWORK', 'yes'],
      ['MONTAGE_JOB_LEASE', '0s'],
    ]) {
      const run = await montage(['migrate'], { ...storage.env, [name!]: value! });
      assert.equal(run.code, 1, name);
      assert.match(run.stderr, new RegExp(`^Configuration error: ${name}: `), name);
    }
  });
});

describe('help, version and usage errors', () => {
  const COMMANDS = [[], ['serve'], ['worker'], ['migrate'], ['accounts'], ['accounts', 'create'], ['keys'], ['keys', 'create'], ['keys', 'list'], ['keys', 'revoke']];

  test('every command and subcommand has --help (stdout, exit 0), with no configuration read and no database opened', async (t) => {
    const storage = await freshStorage(t, 'sqlite');
    // A configuration that would stop any command: help must not need it.
    const env = { ...storage.env, PORT: 'eighty' };
    const helps = new Map<string, string>();
    for (const command of COMMANDS) {
      const run = await montage([...command, '--help'], env);
      helps.set(command.join(' '), run.stdout);
      assert.equal(run.code, 0, `${command.join(' ')} --help: ${run.stderr}`);
      assert.equal(run.stderr, '', `${command.join(' ')} --help`);
      assert.ok(run.stdout.startsWith(`Usage: ${['montage', ...command].join(' ')} `), `${command.join(' ')} --help: ${run.stdout}`);
    }
    assert.match(helps.get('keys create')!, /--email <email> +the email of the account the key is for \(required\)/);
    assert.match(helps.get('serve')!, /--no-worker/);
    assert.match(helps.get('keys revoke')!, /Usage: montage keys revoke \[options\] <key-id>/);
    // The other spellings of the same.
    for (const [args, usage] of [[['keys', 'create', '-h'], 'montage keys create'], [['help', 'keys'], 'montage keys'], [['keys', 'help', 'revoke'], 'montage keys revoke']] as const) {
      const run = await montage([...args], env);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      assert.ok(run.stdout.startsWith(`Usage: ${usage} `), `${args.join(' ')}: ${run.stdout}`);
    }
    const top = await montage(['help'], env);
    assert.equal(top.code, 0);
    for (const command of ['serve', 'worker', 'migrate', 'accounts', 'keys']) assert.match(top.stdout, new RegExp(`^  ${command}\\b`, 'm'), command);
    assert.match(top.stdout, /npx --no -- montage <command>/, 'how to run it without fetching a package');
    assert.deepEqual(fs.readdirSync(storage.env.DATA_DIR!), [], 'no database made');
  });

  test('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-v']) {
      const run = await montage([flag], {});
      assert.deepEqual(run, { code: 0, stdout: `${version}\n`, stderr: '' }, flag);
    }
  });

  test('a mistyped command or option gets a suggestion; parser errors are usage errors: one line and a hint, exit 2', async (t) => {
    const storage = await freshStorage(t, 'sqlite');
    // PORT=0: should `serve` start by mistake, it must not take a real port (the run is killed after 30 s).
    const env = { ...storage.env, PORT: '0' };
    const cases: Array<[string[], string, string]> = [
      [['kyes'], "Unknown command 'kyes'. Did you mean 'keys'?", 'montage'],
      [['acounts', 'create'], "Unknown command 'acounts'. Did you mean 'accounts'?", 'montage'],
      [['keys', 'craete', '--email', 'a@example.com'], "Unknown command 'craete'. Did you mean 'create'?", 'montage keys'],
      [['keys', 'create', '--emial', 'a@example.com'], "Unknown option '--emial'. Did you mean '--email'?", 'montage keys create'],
      [['keys', 'create', '--email', 'a@example.com', '--bogus'], "Unknown option '--bogus'", 'montage keys create'],
      [['serve', '--port', '8081'], "Unknown option '--port'", 'montage serve'],
      [['migrate', 'now'], "Too many arguments for 'migrate'. Expected 0 arguments but got 1.", 'montage migrate'],
      [['keys', 'create'], "Required option '--email <email>' not specified", 'montage keys create'],
      [['keys', 'create', '--name', 'ci'], "Required option '--email <email>' not specified", 'montage keys create'],
      [['accounts', 'create', '--plan', 'business'], "Required option '--email <email>' not specified", 'montage accounts create'],
      [['keys', 'list'], "Required option '--email <email>' not specified", 'montage keys list'],
      [['keys', 'list', '--email'], "Option '--email <email>' argument missing", 'montage keys list'],
      [['keys', 'revoke'], "Missing required argument 'key-id'", 'montage keys revoke'],
    ];
    for (const [args, message, command] of cases) {
      const run = await montage(args, env);
      assert.deepEqual(run, { code: 2, stdout: '', stderr: `${message}\nRun '${command} --help' for its usage.\n` }, args.join(' '));
    }
    // No command at all: the help, on stderr, as a usage error.
    const bare = await montage([], env);
    assert.equal(bare.code, 2);
    assert.equal(bare.stdout, '');
    assert.match(bare.stderr, /^Usage: montage /);
    assert.deepEqual(fs.readdirSync(storage.env.DATA_DIR!), [], 'no database opened for a command line that was not understood');
  });
});

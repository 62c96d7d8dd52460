import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ENGINES, freshStorage, problem, startApp, until } from './helpers.js';

const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');

function montage(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
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
        assert.notEqual(run.code, 0, args.join(' '));
        assert.equal(run.stderr.trimEnd().split('\n').length, 1, `${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, pattern, args.join(' '));
      }
    });
  });
}

describe('node flags', () => {
  test('npm start runs node with --max-semi-space-size=64, node applies it, and the service units of docs/deploy.md give the same', () => {
    const root = path.resolve(import.meta.dirname, '..');
    const start: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
    const flags = /^node((?: --[\w-]+(?:=\S+)?)*) bin\/montage\.js serve$/.exec(start)?.[1]?.trim().split(' ');
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

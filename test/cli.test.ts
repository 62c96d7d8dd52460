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
  test('the bin and npm start run node with the same flags, and node takes them', () => {
    const root = path.resolve(import.meta.dirname, '..');
    const shebang = fs.readFileSync(path.join(root, 'bin', 'montage.js'), 'utf8').split('\n')[0]!;
    const start: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
    const fromBin = /^#!(\/usr\/bin\/env) (-S node((?: --\S+)*))$/.exec(shebang);
    const fromStart = /^node((?: --\S+)*) bin\/montage\.js serve$/.exec(start);
    assert.ok(fromBin, `the bin's first line: ${shebang}`);
    assert.ok(fromStart, `npm start: ${start}`);
    assert.equal(fromBin[3], fromStart[1]);
    assert.match(fromStart[1]!, / --max-semi-space-size=64\b/);
    // As the kernel runs the bin (npx, a service manager): the interpreter with the rest of the line
    // as one argument. node's execArgv then ends with this check's own -p and its script.
    const run = spawnSync(fromBin[1]!, [fromBin[2]!, '-p', 'process.execArgv.slice(0, -2).join()'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), fromStart[1]!.trim().split(' ').join());
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

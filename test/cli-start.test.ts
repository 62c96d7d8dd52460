// What a newcomer meets first: `npm start`, the banner of `serve` and the commands it prints,
// and the spellings of `npx` in the documentation.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { databaseEnvironment, shellQuote, startupBanner } from '../src/banner.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { ENGINES, freePort, freshStorage, onCleanup, until } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const TSX = import.meta.resolve('tsx');

/** `npx` and `npm start` run the compiled command line (bin/montage.js imports dist/): it must be the current one. */
function assertBuilt(): void {
  const built = fs.statSync(path.join(ROOT, 'dist', 'cli.js'), { throwIfNoEntry: false })?.mtimeMs;
  assert.ok(built, 'dist/ is missing: run npm run build');
  const sources = fs.readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const newest = Math.max(...sources.map((f) => fs.statSync(path.join(ROOT, 'src', f)).mtimeMs));
  assert.ok(built >= newest, 'dist/ is older than src/: run npm run build');
}

/** The environment of a terminal that has none of the server's database settings. */
function bareEnv(): Record<string, string> {
  const { DATA_DIR: _dataDir, DATABASE_URL: _databaseUrl, ...env } = process.env;
  return env as Record<string, string>;
}

interface Output {
  text: string;
}

function collect(child: ChildProcess): Output {
  const output = { text: '' };
  child.stdout!.on('data', (d) => (output.text += d));
  child.stderr!.on('data', (d) => (output.text += d));
  return output;
}

/** Every process below `pid`, from `ps` (Linux and macOS). */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  for (let frontier = [pid]; frontier.length; ) {
    frontier = rows.filter(([, parent]) => frontier.includes(parent)).map(([child]) => child);
    found.push(...frontier);
  }
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket.destroy() && true));
    socket.once('error', () => resolve(false));
  });

/** Kills, when the test ends, whatever is left of a process tree the test started. */
function killTreeAtEnd(t: TestContext, child: ChildProcess, tree: () => number[]): void {
  onCleanup(t, () => {
    for (const pid of [...tree(), child.pid!]) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
}

for (const engine of ENGINES) {
  describe(`first start (${engine})`, () => {
    test('the banner of serve prints the commands for a first key: run as printed, from anywhere, they make a key this server accepts', async (t) => {
      assertBuilt();
      const storage = await freshStorage(t, engine);
      const port = await freePort();
      const server = spawn(process.execPath, ['--import', TSX, path.join(ROOT, 'src/cli.ts'), 'serve', '--no-worker'], {
        env: { ...process.env, ...storage.env, PORT: String(port), MONTAGE_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const output = collect(server);
      killTreeAtEnd(t, server, () => []);
      await until(() => /\/v1\/account\n/.test(output.text) || server.exitCode !== null, 60_000, 'the banner');
      const banner = output.text.slice(output.text.indexOf('Montage is running'));
      const commands = banner
        .slice(banner.indexOf('No accounts yet.'))
        .split('\n\n')[0]!
        .split('\n')
        .slice(1)
        .map((line) => line.replace(/^ {2}/, ''));

      const prefix =
        engine === 'sqlite' ? `DATA_DIR=${shellQuote(storage.env.DATA_DIR!)} ` : `DATABASE_URL=${shellQuote(storage.env.DATABASE_URL!)} `;
      assert.deepEqual(commands, [
        `cd ${shellQuote(ROOT)}`,
        `${prefix}npx --no -- montage accounts create --email you@example.com --plan business`,
        `KEY=$(${prefix}npx --no -- montage keys create --email you@example.com | tail -n 1)`,
        `curl -H "Authorization: Bearer $KEY" http://127.0.0.1:${port}/v1/account`,
      ]);
      assert.ok(!banner.includes('Private-network'), 'private-network fetching is off');

      // Literally, in a shell started elsewhere with none of the server's settings.
      const script = ['set -e', ...commands, 'echo', 'echo "KEY=$KEY"'].join('\n');
      const shell = spawn('sh', ['-c', script], { cwd: os.tmpdir(), env: bareEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      shell.stdout.on('data', (d) => (stdout += d));
      shell.stderr.on('data', (d) => (stderr += d));
      const code = await new Promise((resolve) => shell.on('close', resolve));
      assert.equal(code, 0, `${stdout}\n${stderr}`);
      // Each command named the server's database on stderr.
      const database = engine === 'sqlite' ? `SQLite ${path.join(storage.env.DATA_DIR!, 'montage.db')}` : 'PostgreSQL postgres://';
      assert.equal(stderr.split('\n').filter((line) => line.startsWith(`Database: ${database}`)).length, 2, stderr);
      const account = JSON.parse(/^\{.*\}$/m.exec(stdout)?.[0] ?? 'null');
      assert.equal(account?.email, 'you@example.com', `the printed curl: ${stdout}`);
      const key = /^KEY=(mtg_[0-9A-Za-z]{40})$/m.exec(stdout)?.[1];
      assert.ok(key, stdout);
      const response = await fetch(`http://127.0.0.1:${port}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(response.status, 200);
    });

    test('npm start: SIGTERM to the npm process stops the server', async (t) => {
      assertBuilt();
      const storage = await freshStorage(t, engine);
      const port = await freePort();
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        env: { ...process.env, ...storage.env, PORT: String(port), MONTAGE_LOG_LEVEL: 'warn', MONTAGE_SHUTDOWN_TIMEOUT: '5s' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const output = collect(npm);
      let tree: number[] = [];
      killTreeAtEnd(t, npm, () => tree);
      await until(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status === 200, 60_000, `the server (${output.text})`);
      tree = descendants(npm.pid!);
      assert.ok(tree.length > 0, 'npm runs the server in a child process');

      npm.kill('SIGTERM');
      await until(async () => !tree.some(alive) && !(await portOpen(port)), 10_000, `every process under npm to exit and the port to close (left: ${tree.filter(alive).join(', ')})`).catch((err) => {
        throw new Error(`${(err as Error).message}\n${output.text}`);
      });
      await until(() => npm.exitCode !== null || npm.signalCode !== null, 5000, 'npm to exit');
    });
  });
}

describe('the first key, as the banner prints it', () => {
  const facts = (env: Record<string, string>, accounts = 0) => {
    const config = loadConfig({ PORT: '8080', ...env });
    return startupBanner({ config, database: { engine: config.databaseUrl ? 'postgres' : 'sqlite', location: 'x' }, withWorker: true, accounts }, '/srv/montage').join('\n');
  };

  test('with the default database, plain commands; with another, its DATA_DIR or DATABASE_URL; a password never', () => {
    assert.match(facts({ DATA_DIR: '/srv/montage/data' }), /^ {2}npx --no -- montage accounts create/m, 'the default DATA_DIR of the checkout needs no prefix');
    assert.match(facts({ DATA_DIR: '/var/lib/my data' }), /^ {2}DATA_DIR='\/var\/lib\/my data' npx --no -- montage accounts create /m);
    assert.match(facts({ DATABASE_URL: 'postgres://montage@db:5432/prod?schema=a' }), /^ {2}DATABASE_URL='postgres:\/\/montage@db:5432\/prod\?schema=a' npx --no -- montage /m);
    const withPassword = facts({ DATABASE_URL: 'postgres://montage:s3cr%3Ft@db:5432/prod?password=other-s3cret&schema=a' });
    assert.ok(!/s3cr/.test(withPassword), withPassword);
    assert.match(withPassword, /DATABASE_URL='postgres:\/\/montage:<password>@db:5432\/prod\?password=<password>&schema=a' npx --no -- montage /);
    assert.match(withPassword, /<password> stands for the password in this server's DATABASE_URL, which is not printed/);
    assert.match(facts({ DATA_DIR: '/x' }, 3), /A new API key, in another terminal:\n {2}cd \/srv\/montage\n {2}DATA_DIR=\/x npx --no -- montage keys create --email E/);
    assert.deepEqual(databaseEnvironment({ dataDir: '/srv/montage/data', databaseUrl: null }, '/srv/montage'), { prefix: '', hidesPassword: false });
  });

  test('the banner says when private-network fetching is on', () => {
    assert.match(facts({ MONTAGE_ALLOW_PRIVATE_NETWORK: '1' }), /Private-network fetching is ON \(MONTAGE_ALLOW_PRIVATE_NETWORK=1\)/);
    assert.ok(!facts({}).includes('Private-network'));
  });

  test("the database's location names host, port, database and schema, never a user's password", async () => {
    const handle = openDatabase({ dataDir: os.tmpdir(), databaseUrl: 'postgres://montage:pw-in-userinfo@db.internal:6543/prod?password=pw-in-query&schema=tenant_a' });
    try {
      assert.equal(handle.location, 'postgres://db.internal:6543/prod (schema tenant_a)');
    } finally {
      await handle.close();
    }
  });
});

describe('npx', () => {
  // Outside the checkout, `npx montage` downloads and runs an unrelated public package of that name;
  // `--no` makes npx refuse to download anything, and `--` keeps npx from reading `montage` as the
  // value of `--no` (`npx --no montage --version` prints npm's version): one spelling is safe.
  const unsafe = (text: string) =>
    [...text.matchAll(/\b(?:npx|npm (?:exec|x))((?:\s+-[^\s`]*)*)\s+montage\b/g)].filter((m) => m[1]!.trim() !== '--no --').map((m) => m[0]);

  test('README, docs, the help texts and the banner never spell a command that could fetch another package', () => {
    assert.deepEqual(unsafe('npx montage keys; npm exec -- montage; npx --no -- montage; npx --no montage; npm exec --no -- montage'), ['npx montage', 'npm exec -- montage', 'npx --no montage']);
    const under = (dir: string, ext: RegExp): string[] =>
      fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? under(`${dir}/${e.name}`, ext) : ext.test(e.name) ? [`${dir}/${e.name}`] : []));
    // Everything a person reads: the docs, the READMEs, the command line's and the dashboard's texts.
    const files = ['README.md', 'bench/README.md', 'samples/README.md', ...under('docs', /\.md$/), ...under('src', /\.ts$/), ...under('web/dashboard/src', /\.tsx?$/)];
    for (const file of files) assert.deepEqual(unsafe(fs.readFileSync(path.join(ROOT, file), 'utf8')), [], file);
    const banner = startupBanner({ config: loadConfig({ DATA_DIR: '/x' }), database: { engine: 'sqlite', location: '/x/montage.db' }, withWorker: true, accounts: 0 }).join('\n');
    assert.match(banner, /npx --no -- montage keys create/);
    assert.deepEqual(unsafe(banner), []);
  });

  test('in the checkout, npx --no -- montage runs this command line, options included; elsewhere it downloads nothing', async (t) => {
    assertBuilt();
    // A registry on loopback that offers a stranger's `montage`, and records what npx asks of it.
    const requests: string[] = [];
    const registry = http.createServer((req, res) => {
      requests.push(req.url ?? '');
      const base = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
      const manifest = { name: 'montage', version: '9.9.9', bin: { montage: 'cli.js' }, dist: { tarball: `${base}/montage/-/montage-9.9.9.tgz` } };
      if (req.url === '/montage') res.setHeader('content-type', 'application/json').end(JSON.stringify({ name: 'montage', 'dist-tags': { latest: '9.9.9' }, versions: { '9.9.9': manifest } }));
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    onCleanup(t, () => new Promise((resolve) => registry.close(resolve)));
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-npx-'));
    onCleanup(t, () => fs.rmSync(cache, { recursive: true, force: true }));
    const env = { ...bareEnv(), npm_config_registry: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/`, npm_config_cache: path.join(cache, 'cache') };
    // npx reads the installed tree first: 57-85 s on a machine busy with a test run (2026-11-28), past the 60 s this allowed.
    const npx = (cwd: string) =>
      new Promise<{ status: number | null; stdout: string }>((resolve) => {
        execFile('npx', ['--no', '--', 'montage', '--version'], { cwd, env, timeout: 180_000 }, (err, stdout) => resolve({ status: err ? ((err as { code?: number }).code ?? -1) : 0, stdout }));
      });

    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.deepEqual(await npx(path.join(ROOT, 'docs')), { status: 0, stdout: `${version}\n` }, 'in the checkout (any folder of it), --version reaches montage');
    // Outside, there is no montage of ours: npx fails, or runs another program of that name on the
    // PATH (ImageMagick's `montage`, where it is installed), never this one and never a download.
    const outside = await npx(cache);
    assert.notEqual(outside.stdout, `${version}\n`, 'outside the checkout this command line is not run');
    assert.ok(!requests.some((url) => url.endsWith('.tgz')), `no package downloaded: ${requests.join(', ')}`);
  });
});

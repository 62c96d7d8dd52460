import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { ENGINES, onCleanup } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '..');

interface Failure {
  op: string;
  at: number;
  status: number;
  code: string | null;
  error: string | null;
  proxyError: string | null;
  explained: 'api' | 'postgres' | null;
}

interface SoakResult {
  pass: boolean;
  invariants: Array<{ name: string; pass: boolean; detail: string }>;
  failures: Failure[];
  faults: Array<{ kind: string; at: number; endAt: number; terminated?: number }>;
  traffic: { orders: number; checkins: number; blendJobs: number };
  text: string;
}

/**
 * The short form of `npm run soak` (bench/soak.mjs): a proxy in front of 2 `serve --no-worker`
 * processes and 2 `worker` processes on one PostgreSQL database, the local Redis and an S3-compatible
 * object store (s3rver) for blend results, each process with a DATA_DIR of its own; 30 s of
 * mixed traffic during which a worker and an API process are killed with SIGKILL and restarted and
 * every PostgreSQL backend of the database is terminated for 3 s; then every invariant. It runs
 * src/ through tsx (what is checked out, no build) in its own process, which cleans up after itself.
 */
test(
  'soak: 2 API processes and 2 workers keep every invariant through SIGKILLs and a PostgreSQL cut',
  { skip: ENGINES.includes('postgres') ? false : 'needs PostgreSQL', timeout: 180_000 },
  async (t: TestContext) => {
    const out = path.join(os.tmpdir(), `montage-soak-${process.pid}-${Date.now()}.json`);
    onCleanup(t, () => fs.rmSync(out, { force: true }));
    const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'soak.mjs'), '--short', '--json', out], {
      cwd: ROOT,
      env: { ...process.env, SOAK_MONTAGE: 'src', SOAK_POSTGRES: process.env.TEST_DATABASE_URL, BENCH_NO_DOCS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // On SIGTERM the soak stops its processes and drops its database before it exits.
    onCleanup(t, async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    });

    const code = await exited;
    assert.ok(fs.existsSync(out), `the soak wrote no result (exit ${code}):\n${output.slice(-8000)}`);
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as SoakResult;
    t.diagnostic(result.text.split('\n').slice(0, 14).join('\n'));

    assert.deepEqual(
      result.faults.map((f) => f.kind),
      ['worker', 'api', 'postgres'],
    );
    assert.ok((result.faults[2]!.terminated ?? 0) > 0, 'the cut terminated backends');
    assert.ok(result.traffic.orders > 0 && result.traffic.checkins > 0 && result.traffic.blendJobs > 0, JSON.stringify(result.traffic));

    // No answer is a 500: a database that cannot be reached is a 503 `unavailable`.
    assert.deepEqual(result.failures.filter((f) => f.status === 500), []);
    // Proxy 502s and lost connections only while an API process was down; 503s only while PostgreSQL was cut.
    assert.deepEqual(result.failures.filter((f) => f.explained === null), []);
    assert.ok(result.failures.filter((f) => f.explained === 'api').every((f) => f.proxyError !== null || f.error !== null));
    assert.ok(result.failures.filter((f) => f.explained === 'postgres').every((f) => f.status === 503 && f.code === 'unavailable'));

    // The processes share no directory: results went to the bucket and are read from it.
    assert.ok(result.invariants.some((i) => i.name.startsWith('blend results in the object store')), 'the object store was checked');
    for (const invariant of result.invariants) assert.ok(invariant.pass, `${invariant.name}: ${invariant.detail}`);
    assert.equal(code, 0, output.slice(-8000));
  },
);

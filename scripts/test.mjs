#!/usr/bin/env node
// Runs the test suite with node's test runner, on SQLite and on PostgreSQL.
// PostgreSQL: a fresh database per run on MONTAGE_TEST_POSTGRES (default: the local server),
// dropped afterwards. Without a reachable server the run goes on with SQLite only, except in CI.
// Usage: npm test [-- file.test.ts ...]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const walk = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
const args = process.argv.slice(2);
const files = args.length ? args : walk(path.join(root, 'test')).filter((f) => f.endsWith('.test.ts')).sort();

const env = { ...process.env };
let engines = (env.MONTAGE_TEST_ENGINES ?? 'sqlite,postgres').split(',').filter(Boolean);
const adminUrl = env.MONTAGE_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
let dbName = null;

async function admin(statement) {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

if (engines.includes('postgres')) {
  dbName = `montage_test_${Date.now()}_${process.pid}`;
  try {
    await admin(`create database ${dbName}`);
    const url = new URL(adminUrl);
    url.pathname = `/${dbName}`;
    env.TEST_DATABASE_URL = url.toString();
    console.log(`PostgreSQL: fresh database ${dbName}`);
  } catch (err) {
    dbName = null;
    if (env.CI) {
      console.error(`PostgreSQL at ${adminUrl} is not reachable (${err.message}); CI runs every database test on it.`);
      process.exit(1);
    }
    console.warn(`PostgreSQL at ${adminUrl} is not reachable (${err.message}): running the SQLite half only.`);
    engines = engines.filter((e) => e !== 'postgres');
  }
}
env.MONTAGE_TEST_ENGINES = engines.join(',');

// A test that hangs fails after 10 minutes instead of holding the run; handles a test left open
// (a child process, a socket) cannot keep a finished file alive; and the whole run is stopped after
// 75 minutes, so a wedged run fails loudly inside CI's 90 instead of timing out silently.
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-timeout=600000', '--test-force-exit', ...files],
  { stdio: 'inherit', env, cwd: root, timeout: 75 * 60_000, killSignal: 'SIGKILL' },
);
if (result.error) console.error(`the test run was stopped: ${result.error.message}`);

if (dbName) await admin(`drop database if exists ${dbName} with (force)`).catch((err) => console.warn(`could not drop ${dbName}: ${err.message}`));
process.exit(result.status ?? 1);

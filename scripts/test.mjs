#!/usr/bin/env node
// Runs the test suite with node's test runner, on SQLite and on PostgreSQL.
// PostgreSQL: a fresh database per run on MONTAGE_TEST_POSTGRES (default: the local server),
// dropped afterwards. Without a reachable server the run goes on with SQLite only, except in CI.
// Usage: npm test [-- file.test.ts ...]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const walk = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
const args = process.argv.slice(2);
const files = args.length ? args : walk(path.join(root, 'test')).filter((f) => f.endsWith('.test.ts')).sort();

const env = { ...process.env };
// How many files run at once (see the run below); a bad value stops before anything is made.
const concurrency = Number(env.MONTAGE_TEST_CONCURRENCY ?? 2);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`MONTAGE_TEST_CONCURRENCY must be a whole number of at least 1, not "${env.MONTAGE_TEST_CONCURRENCY}"`);
  process.exit(2);
}
let engines = (env.MONTAGE_TEST_ENGINES ?? 'sqlite,postgres').split(',').filter(Boolean);
const adminUrl = env.MONTAGE_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
let dbName = null;

/** Runs one statement on the admin connection; its rows. */
async function admin(statement, params) {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return (await client.query(statement, params)).rows;
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
// Two files run at once (node's default is one fewer than the cores: one on a 2-core machine): a
// third of a serial run's time the machine was idle (vmstat), its files waiting on browsers, servers,
// databases and timers. Every file keeps its own data (temp directories, a PostgreSQL database of
// its own made by test/database-per-file.mjs, Redis keys of its own, free ports), so files running
// together do not meet. MONTAGE_TEST_CONCURRENCY sets another number (checked above, before any
// database is made).
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--import', pathToFileURL(path.join(root, 'test', 'database-per-file.mjs')).href, '--test', '--test-reporter=spec', '--test-timeout=600000', '--test-force-exit', `--test-concurrency=${concurrency}`, ...files],
  { stdio: 'inherit', env, cwd: root, timeout: 75 * 60_000, killSignal: 'SIGKILL' },
);
if (result.error) console.error(`the test run was stopped: ${result.error.message}`);

if (dbName) {
  // The run's database and the files' own (test/database-per-file.mjs names them after it).
  const names = await admin('select datname from pg_database where datname = $1 or left(datname, $2) = $3', [dbName, dbName.length + 1, `${dbName}_`]).catch((err) => {
    console.warn(`could not list ${dbName} and its files' databases: ${err.message}`);
    return [];
  });
  for (const { datname } of names) await admin(`drop database if exists ${datname} with (force)`).catch((err) => console.warn(`could not drop ${datname}: ${err.message}`));
}
process.exit(result.status ?? 1);

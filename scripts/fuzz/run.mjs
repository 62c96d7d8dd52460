#!/usr/bin/env node
// npm run fuzz: bad-input fuzzing of every route of a real Montage server process (src/cli.ts
// serve, workers included), on SQLite (default) or PostgreSQL, with scripts/fuzz/fuzz.ts. Prints a
// per-route table and rewrites this engine's section of docs/fuzz.md. Exits 1 on any violation,
// or when the server is not up and ready after the run.
//
//   FUZZ_ENGINE=sqlite|postgres   where Montage keeps its data (PostgreSQL: a fresh schema, dropped after)
//   FUZZ_REQUESTS=10000           generated requests
//   FUZZ_SEED=<n>                 fast-check seed (default: from the clock; printed, and in the report)
//   FUZZ_CONCURRENCY=4            requests in flight
//   FUZZ_TIMEOUT_MS=10000         per request; no answer in time is a hang
//   FUZZ_POSTGRES=postgres://postgres@127.0.0.1:5432/test
//   FUZZ_NO_DOCS=1                leave docs/fuzz.md as it is
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { cleanupAll, freePort, machine, makeTempDir, montageEnv, onCleanup, ROOT, runCommand, startProcess, tables, waitForHttp } from '../../bench/lib.mjs';
import { fuzz } from './fuzz.ts';

const DOC_FILE = path.join(ROOT, 'docs', 'fuzz.md');
const CLI = ['--import', 'tsx', path.join(ROOT, 'src', 'cli.ts')];
const EMAIL = 'fuzz@example.com';

function setting(name, fallback, check = (v) => Number.isInteger(v) && v > 0) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!check(value)) throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return value;
}

const montage = (env, ...args) => runCommand(process.execPath, [...CLI, ...args], { env, label: `montage ${args.join(' ')}` });

/** A business account with two keys: the fuzzer's own, and one aged past its expiry in the database. */
async function accountAndKeys(env, engine, storage) {
  await montage(env, 'accounts', 'create', '--email', EMAIL, '--plan', 'business');
  const keyOf = async (name) => (await montage(env, 'keys', 'create', '--email', EMAIL, '--name', name)).stdout.trim().split('\n').pop().trim();
  const key = await keyOf('fuzz');
  const expiredKey = await keyOf('expired');
  if (!/^mtg_[0-9A-Za-z]{40}$/.test(key)) throw new Error(`keys create: the last line is not a key: ${key}`);
  // The API and the CLI make no key that expires within a minute: age this one directly.
  const hash = createHash('sha256').update(expiredKey).digest('hex');
  const past = Date.now() - 60_000;
  if (engine === 'sqlite') {
    const db = new Database(path.join(storage.montageDir, 'montage.db'));
    db.prepare('update api_keys set expires_at = ? where key_hash = ?').run(past, hash);
    db.close();
  } else {
    const client = new pg.Client({ connectionString: storage.adminUrl });
    await client.connect();
    await client.query(`update ${storage.schema}.api_keys set expires_at = $1 where key_hash = $2`, [past, hash]);
    await client.end();
  }
  return { key, expiredKey };
}

async function postgresSchema(adminUrl) {
  const schema = `fuzz_${Date.now()}_${process.pid}`;
  const admin = async (statement) => {
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin('select 1').catch((err) => {
    throw new Error(`PostgreSQL at ${adminUrl} is not reachable (${err.message}); set FUZZ_POSTGRES, or run on SQLite`);
  });
  onCleanup(`drop schema ${schema}`, () => admin(`drop schema if exists ${schema} cascade`));
  const url = new URL(adminUrl);
  url.searchParams.set('schema', schema);
  return { schema, url: url.toString() };
}

const pct = (n, total) => (total ? `${((100 * n) / total).toFixed(1)}%` : '-');
const statusList = (statuses) =>
  Object.entries(statuses)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([code, n]) => `${code === '0' ? 'none' : code}: ${n}`)
    .join(', ');

function report(engine, result, context) {
  const rows = result.operations.map((o) => {
    const by = (lo, hi) => Object.entries(o.statuses).reduce((sum, [code, n]) => sum + (Number(code) >= lo && Number(code) < hi ? n : 0), 0);
    return [o.operation, o.requests, by(200, 300), by(300, 400), by(400, 500), by(500, 600), statusList(o.statuses)];
  });
  const header = ['operation', 'requests', '2xx', '3xx', '4xx', '5xx', 'statuses'];
  const { text, md } = tables(header, rows, ['left', 'right', 'right', 'right', 'right', 'right', 'left']);
  const seconds = result.durationMs / 1000;
  const verdict = result.violationCount === 0 && context.serverOk
    ? `**Result: pass.** 0 violations: no 5xx, no hang, every 4xx a problem+json naming its status and request id, no stack, SQL or path in any error body, an X-Request-Id on every answer; the server was up and ready after the run.`
    : `**Result: FAIL.** ${result.violationCount} violations (${result.serverErrors} 5xx, ${result.hangs} hangs)${context.serverOk ? '' : '; the server was not ready after the run'}.`;
  const violations = result.violations.slice(0, 20).map((v) => `- \`#${v.index} ${v.operation}\` → ${v.status ?? 'no answer'}: ${v.problems.join('; ')}\n  \`${v.curl.slice(0, 400).replaceAll('`', "'")}\``);
  const m = context.machine;
  const markdown = [
    `### ${engine === 'sqlite' ? 'SQLite' : `PostgreSQL ${context.postgresVersion ?? ''}`.trim()}`,
    '',
    `\`${context.command}\`: seed **${result.seed}**, ${result.generated.toLocaleString('en')} generated requests (${(result.requests - result.generated).toLocaleString('en')} of them sent twice at once), concurrency ${context.concurrency}, ${context.timeoutMs / 1000} s per request; ${m.date}, commit ${m.commit}.`,
    `Machine: ${m.nproc} × ${m.cpu}, ${m.memory}, Node ${m.node}, ${m.os}.`,
    '',
    verdict,
    '',
    `${result.requests.toLocaleString('en')} requests sent in ${seconds.toFixed(0)} s (${(result.requests / seconds).toFixed(0)}/s); 5xx: ${result.serverErrors}; hangs: ${result.hangs}; ${context.deliveries} webhook deliveries received; server error log lines: ${context.serverErrorLines}.`,
    `Statuses: ${statusList(result.statuses)}.`,
    '',
    ...(violations.length ? ['Violations (first 20):', '', ...violations, ''] : []),
    md,
  ].join('\n');
  const plain = [`${engine}: seed ${result.seed}, ${result.requests} requests in ${seconds.toFixed(1)} s, ${result.violationCount} violations, statuses ${statusList(result.statuses)}`, '', text].join('\n');
  return { markdown, plain };
}

const DOC_HEADER = `# Fuzzing

Written by \`npm run fuzz\`; each engine's run rewrites only its own section, between its
\`<!-- fuzz:ENGINE:start -->\` and \`<!-- fuzz:ENGINE:end -->\` markers.
`;

function writeDocSection(name, markdown) {
  const start = `<!-- fuzz:${name}:start -->`;
  const end = `<!-- fuzz:${name}:end -->`;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  let doc = fs.existsSync(DOC_FILE) ? fs.readFileSync(DOC_FILE, 'utf8') : DOC_HEADER;
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  doc = from >= 0 && to > from ? doc.slice(0, from) + block + doc.slice(to + end.length) : `${doc.trimEnd()}\n\n${block}\n`;
  fs.writeFileSync(DOC_FILE, doc);
}

async function main() {
  const engine = process.env.FUZZ_ENGINE || 'sqlite';
  if (!['sqlite', 'postgres'].includes(engine)) throw new Error(`FUZZ_ENGINE must be sqlite or postgres, got "${engine}"`);
  const requests = setting('FUZZ_REQUESTS', 10_000);
  const seed = setting('FUZZ_SEED', Date.now() % 2 ** 31, Number.isInteger);
  const concurrency = setting('FUZZ_CONCURRENCY', 4);
  const timeoutMs = setting('FUZZ_TIMEOUT_MS', 10_000);
  const set = ['FUZZ_ENGINE', 'FUZZ_REQUESTS', 'FUZZ_SEED', 'FUZZ_CONCURRENCY', 'FUZZ_TIMEOUT_MS'].filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`);
  const command = `${set.length ? `${set.join(' ')} ` : ''}npm run fuzz`;
  console.log(`Fuzzing Montage on ${engine}: ${requests} requests, seed ${seed} (FUZZ_SEED=${seed} repeats it)`);

  const { dir } = makeTempDir('montage-fuzz-');
  const storage = { montageDir: dir };
  let postgresVersion;
  if (engine === 'postgres') {
    const adminUrl = process.env.FUZZ_POSTGRES || 'postgres://postgres@127.0.0.1:5432/test';
    Object.assign(storage, { adminUrl }, await postgresSchema(adminUrl));
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    postgresVersion = (await client.query('show server_version')).rows[0].server_version.split(' ')[0];
    await client.end();
  }
  const port = await freePort();
  const env = montageEnv(engine, storage, port, { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_DASHBOARD_SIGNUP: '1', MONTAGE_LOG_LEVEL: 'error' });
  await montage(env, 'migrate');
  const { key, expiredKey } = await accountAndKeys(env, engine, storage);
  const server = startProcess('montage serve', process.execPath, [...CLI, 'serve'], { env });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(server, `${baseUrl}/readyz`);

  const result = await fuzz({ baseUrl, key, expiredKey, requests, seed, concurrency, timeoutMs, blendWaitMs: 30_000, log: (line) => console.log(`  ${line}`) });

  const ready = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) }).then((r) => r.status === 200, () => false);
  const serverOk = ready && !server.exitInfo;
  const serverErrorLines = server.output().split('\n').filter((line) => /"level":(50|60)/.test(line)).length;
  await server.stop();

  const { markdown, plain } = report(engine, result, { command, concurrency, timeoutMs, machine: machine(), postgresVersion, serverOk, serverErrorLines, deliveries: result.webhookDeliveries });
  console.log(`\n${plain}\n`);
  for (const v of result.violations.slice(0, 20)) console.log(`#${v.index} ${v.operation} -> ${v.status ?? 'no answer'}: ${v.problems.join('; ')}\n  ${v.snippet.slice(0, 300)}\n  ${v.curl.slice(0, 600)}\n`);
  if (process.env.FUZZ_NO_DOCS === '1') console.log(`(${path.relative(ROOT, DOC_FILE)} left as it was)`);
  else {
    writeDocSection(engine, markdown);
    console.log(`Wrote the ${engine} section of ${path.relative(ROOT, DOC_FILE)}`);
  }
  const pass = result.violationCount === 0 && serverOk;
  console.log(pass ? 'PASS: 0 violations' : `FAIL: ${result.violationCount} violations${serverOk ? '' : ', server not ready after the run'} (${pct(result.violationCount, result.requests)} of requests)`);
  return pass ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(`\nFuzzing failed: ${err.stack ?? err}`);
} finally {
  await cleanupAll();
}
process.exit(code);

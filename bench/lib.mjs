// Shared pieces of the benchmarks: child processes, clean-up, free ports, autocannon runs,
// machine description and the sections of docs/benchmarks.md.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { nearestRank } from './answers.mjs';
import { formatSummary, summarise } from './profile-summary.mjs';

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(BENCH_DIR, '..');
export const DOC_FILE = path.join(ROOT, 'docs', 'benchmarks.md');
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// Clean-up: every child process, temp dir and database registers itself here and is removed
// in reverse order, on success, on failure and on SIGINT/SIGTERM.

const cleanups = [];
const children = new Set();
const tempDirs = new Set();

/** Registers an async clean-up; returns a function that runs it now (once) and unregisters it. */
export function onCleanup(label, fn) {
  const entry = { label, fn, done: false };
  cleanups.push(entry);
  return async () => {
    if (entry.done) return;
    entry.done = true;
    cleanups.splice(cleanups.indexOf(entry), 1);
    await fn();
  };
}

let cleaning = null;
/** Runs every registered clean-up, newest first; concurrent callers share one pass. */
export function cleanupAll() {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const entry = cleanups.pop();
      if (entry.done) continue;
      entry.done = true;
      try {
        await entry.fn();
      } catch (err) {
        console.error(`clean-up "${entry.label}" failed: ${err.message}`);
      }
    }
  })().finally(() => {
    cleaning = null;
  });
  return cleaning;
}

/**
 * Whether the module at `moduleUrl` is the script node was started with: none under `node -e` or a
 * REPL (argv[1] undefined), and compared as real paths, so a symlinked checkout or bench/ still matches.
 */
function isStartedScript(moduleUrl) {
  const started = process.argv[1];
  if (started === undefined) return false;
  const real = (file) => {
    try {
      return fs.realpathSync(file);
    } catch {
      return path.resolve(file);
    }
  };
  return real(fileURLToPath(moduleUrl)) === real(started);
}

/**
 * Runs `main` if the module at `moduleUrl` is the script node was started with (a benchmark run on
 * its own, not imported by run.mjs), then exits: a failure is printed and exits 1, every clean-up
 * runs first, and a number that `main` resolves to is the exit code (0 otherwise).
 */
export async function runAlone(moduleUrl, main) {
  if (!isStartedScript(moduleUrl)) return;
  let code = 1;
  try {
    const result = await main();
    code = typeof result === 'number' ? result : 0;
  } catch (err) {
    console.error(`\nBenchmark failed: ${err.stack ?? err}`);
  } finally {
    await cleanupAll();
  }
  process.exit(code);
}

// Last resort when the runner exits without getting through cleanupAll (a crash in it, process.exit).
process.on('exit', () => {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {}
  }
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

let signalled = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = true;
    console.error(`\n${signal}: stopping and cleaning up...`);
    cleanupAll().finally(() => process.exit(130));
  });
}

/** The value after `--name` on this process's command line, or `fallback`. */
export function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

/** `--rounds`: a whole number of at least 1, `fallback` when not given. */
export function roundsOption(fallback) {
  const rounds = Number(option('rounds', String(fallback)));
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a whole number of at least 1, not ${option('rounds')}`);
  return rounds;
}

export function makeTempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  const remove = onCleanup(`remove ${dir}`, async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    tempDirs.delete(dir);
  });
  return { dir, remove };
}

// ---------------------------------------------------------------------------------------------
// Processes

export async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts a long-running child (a server under test). Its output is kept (last 64 KiB) for error
 * messages; `stop()` sends SIGTERM and SIGKILL after `graceMs`.
 */
export function startProcess(label, command, args, { env, cwd = ROOT, graceMs = 10_000 } = {}) {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk.toString()).slice(-65536);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
    child.on('error', (err) => {
      children.delete(child);
      keep(`\n[spawn error] ${err.message}\n`);
      resolve({ code: null, signal: null, error: err });
    });
  });
  let exitInfo = null;
  exited.then((info) => (exitInfo = info));

  const stop = onCleanup(`stop ${label} (pid ${child.pid})`, async () => {
    if (exitInfo) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  });

  return {
    label,
    child,
    exited,
    get exitInfo() {
      return exitInfo;
    },
    output: () => output,
    stop,
  };
}

/** Polls `url` until it answers `expectStatus`; fails at once if the process dies. */
export async function waitForHttp(proc, url, { timeoutMs = 30_000, headers = {}, expectStatus = 200 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (proc.exitInfo) {
      throw new Error(`${proc.label} exited (code ${proc.exitInfo.code}, signal ${proc.exitInfo.signal}) before answering ${url}:\n${proc.output()}`);
    }
    try {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === expectStatus) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = err.cause?.code ?? err.message;
    }
    await sleep(100);
  }
  throw new Error(`${proc.label} did not answer ${url} with ${expectStatus} within ${timeoutMs} ms (last: ${last}):\n${proc.output()}`);
}

/** Runs a short command to completion; throws with its output on a non-zero exit. */
export function runCommand(command, args, { env, cwd = ROOT, label = `${command} ${args.join(' ')}` } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', (err) => {
      children.delete(child);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      children.delete(child);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${label} failed (code ${code}, signal ${signal}):\n${stdout}${stderr}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Load generation: autocannon always runs in its own process, never in the server's event loop.

const AUTOCANNON = path.join(path.dirname(require.resolve('autocannon/package.json')), 'autocannon.js');

/**
 * One autocannon run. Throws if any response was not 2xx, or on connection errors or timeouts.
 * Returns requests/s (average of the per-second samples), latencies in ms and counts.
 */
export async function autocannon(url, { connections = 50, duration = 10, headers = {}, title = url } = {}) {
  const cpuBefore = cpuTimes();
  const args = [AUTOCANNON, '-j', '-n', '-c', String(connections), '-d', String(duration)];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  args.push(url);
  const { stdout } = await runCommand(process.execPath, args, { label: `autocannon ${title}` });
  const line = stdout.trim().split('\n').pop();
  let result;
  try {
    result = JSON.parse(line);
  } catch {
    throw new Error(`autocannon ${title}: could not read its JSON output:\n${stdout}`);
  }
  const ok = result['2xx'];
  const problems = [];
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx responses`);
  if (result.errors > 0) problems.push(`${result.errors} connection errors`);
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`);
  if (!(ok > 0)) problems.push('no 2xx response at all');
  if (problems.length) {
    const codes = Object.entries(result.statusCodeStats ?? {})
      .map(([code, s]) => `${code}: ${s.count}`)
      .join(', ');
    throw new Error(`autocannon ${title}: ${problems.join(', ')} (status codes: ${codes || 'none'})`);
  }
  const cpu = cpuUsage(cpuBefore, cpuTimes());
  return {
    cpu,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    avgLatency: result.latency.average,
    maxLatency: result.latency.max,
    requests: ok,
    duration: result.duration,
  };
}

/** Aggregate CPU jiffies from /proc/stat (null where there is none). */
export function cpuTimes() {
  const line = safeRead('/proc/stat').split('\n')[0];
  if (!line?.startsWith('cpu ')) return null;
  const [user, nice, system, idle, iowait, irq, softirq, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return { busy: user + nice + system + irq + softirq, idle: idle + iowait, steal };
}

/** Machine-wide CPU use between two cpuTimes(): busy and steal (time the hypervisor took) in %. */
export function cpuUsage(a, b) {
  if (!a || !b) return null;
  const busy = b.busy - a.busy;
  const idle = b.idle - a.idle;
  const steal = b.steal - a.steal;
  const total = busy + idle + steal;
  return total > 0 ? { busyPct: (100 * busy) / total, stealPct: (100 * steal) / total } : null;
}

// ---------------------------------------------------------------------------------------------
// Machine description and docs/benchmarks.md

export function machine() {
  const cpuinfo = safeRead('/proc/cpuinfo');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  const nproc = spawnSync('nproc', { encoding: 'utf8' }).stdout?.trim() || String(os.availableParallelism());
  const memKb = Number(/^MemTotal:\s+(\d+) kB$/m.exec(safeRead('/proc/meminfo'))?.[1] ?? os.totalmem() / 1024);
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim();
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim();
  return {
    nproc,
    cpu: model,
    memory: `${(memKb / 1024 / 1024).toFixed(1)} GiB`,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit: git ? `${git}${dirty ? ' (src/ has uncommitted changes)' : ''}` : 'unknown',
  };
}

function safeRead(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export function packageVersion(name) {
  try {
    return JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return 'unknown';
  }
}

const DOC_HEADER = `# Benchmarks

Measured with \`npm run bench\` (see [bench/README.md](../bench/README.md)). Each benchmark
rewrites only its own section, between its \`<!-- bench:NAME:start -->\` and
\`<!-- bench:NAME:end -->\` markers; text outside the markers is kept.
`;

/** Replaces (or appends) the section of docs/benchmarks.md between the markers of `name`. */
export function writeDocSection(name, markdown) {
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  let doc = fs.existsSync(DOC_FILE) ? fs.readFileSync(DOC_FILE, 'utf8') : DOC_HEADER;
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from >= 0 && to > from) doc = doc.slice(0, from) + block + doc.slice(to + end.length);
  else doc = `${doc.trimEnd()}\n\n${block}\n`;
  fs.mkdirSync(path.dirname(DOC_FILE), { recursive: true });
  fs.writeFileSync(DOC_FILE, doc);
}

/** A plain-text table for stdout and a Markdown one for the docs, from the same rows. */
export function tables(header, rows, align = []) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const pad = (cell, i) => (align[i] === 'right' ? String(cell).padStart(widths[i]) : String(cell).padEnd(widths[i]));
  const text = [header.map(pad).join('  '), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map((r) => r.map(pad).join('  '))].join('\n');
  const md = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (align[i] === 'right' ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  return { text, md };
}

export function seconds(name, fallback, min = 1) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number of seconds (>= ${min}), got "${raw}"`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Montage under test: the build, fresh PostgreSQL databases, the server's environment, the
// CLI-made account and key, CPU profiles.

const log = (line) => process.stdout.write(`${line}\n`);

/** Compiles dist/ (unless BENCH_NO_BUILD=1, then only checks that it exists). */
export async function build() {
  if (process.env.BENCH_NO_BUILD === '1') {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run npm run build (or drop BENCH_NO_BUILD)');
    return;
  }
  log('Building dist/ (tsc -p tsconfig.build.json)...');
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await runCommand(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { label: 'tsc -p tsconfig.build.json' });
  if (!fs.existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing after the build');
}

export const postgresAdminUrl = () => process.env.BENCH_POSTGRES || 'postgres://postgres@127.0.0.1:5432/test';

export async function adminQuery(adminUrl, statement, params) {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await client.query(statement, params);
  } finally {
    await client.end();
  }
}

let dbCounter = 0;
/** A fresh PostgreSQL database for one run, dropped on clean-up. */
export async function freshPostgres(adminUrl) {
  const dbName = `montage_bench_${Date.now()}_${process.pid}_${++dbCounter}`;
  try {
    await adminQuery(adminUrl, `create database ${dbName}`);
  } catch (err) {
    throw new Error(`PostgreSQL at ${adminUrl} refused "create database" (${err.message}); set BENCH_POSTGRES, or BENCH_ENGINES=sqlite to skip it`);
  }
  onCleanup(`drop database ${dbName}`, () => adminQuery(adminUrl, `drop database if exists ${dbName} with (force)`));
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const version = (await adminQuery(url.toString(), 'show server_version')).rows[0].server_version;
  return { dbName, url: url.toString(), version };
}

/** Limits so high that the rate limiter runs but never refuses. */
export const RAISED_LIMITS = 'blendPerHour=100000000,eventsPerMinute=100000000,eventsPerDay=1000000000';

/**
 * The environment of a Montage process: nothing from the caller's Montage configuration leaks
 * in (a DATABASE_URL, REDIS_URL, limits...); `storage.montageDir` is its DATA_DIR, `storage.url`
 * its PostgreSQL database when `engine` is postgres; `extra` is added last.
 */
export function montageEnv(engine, storage, port, extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('MONTAGE_') || ['DATABASE_URL', 'REDIS_URL', 'PORT', 'HOST', 'DATA_DIR', 'PUBLIC_URL'].includes(k)) continue;
    env[k] = v;
  }
  Object.assign(env, {
    DATA_DIR: storage.montageDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    MONTAGE_LOG_LEVEL: 'warn',
    MONTAGE_LIMITS_BUSINESS: RAISED_LIMITS,
  });
  if (engine === 'postgres') env.DATABASE_URL = storage.url;
  return Object.assign(env, extra);
}

export const MONTAGE_BIN = path.join(ROOT, 'bin', 'montage.js');

/**
 * The node flags `npm start` runs the server with (package.json: `exec node FLAGS bin/montage.js serve`),
 * so that every benchmarked Montage process runs as it does there. Read on first use.
 */
let nodeFlags = null;
export function montageNodeFlags() {
  if (nodeFlags) return nodeFlags;
  const start = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts?.start ?? '';
  const match = /^(?:exec\s+)?node((?:\s+--[\w-]+(?:=\S+)?)*)\s+bin\/montage\.js serve\s*$/.exec(start);
  if (!match) throw new Error(`package.json's start script is not "[exec] node [--flag[=value] ...] bin/montage.js serve": "${start}"`);
  nodeFlags = match[1].trim().split(/\s+/).filter(Boolean);
  return nodeFlags;
}

/** node's arguments for a Montage command, with the flags `npm start` gives the server. */
export const montageArgs = (...args) => [...montageNodeFlags(), MONTAGE_BIN, ...args];

/** Runs the Montage CLI with `env`. */
export const montageCli = (env, ...args) => runCommand(process.execPath, montageArgs(...args), { env, label: `montage ${args.join(' ')}` });

/** A business account and its first key, made with the CLI (`cli`: another checkout's, as montageCli calls it); returns the key. */
export async function createAccountAndKey(env, email = 'bench@example.com', cli = montageCli) {
  await cli(env, 'accounts', 'create', '--email', email, '--plan', 'business');
  const created = await cli(env, 'keys', 'create', '--email', email, '--name', 'bench');
  const apiKey = created.stdout.trim().split('\n').pop().trim();
  if (!/^mtg_[0-9A-Za-z]{40}$/.test(apiKey)) throw new Error(`keys create: the last line is not a key:\n${created.stdout}`);
  return apiKey;
}

/** The JSON body of `res`; throws with the body when the status is not `status`. */
export async function checkedJson(res, what, status = 200) {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status}: ${text}`);
  return JSON.parse(text);
}

/**
 * With BENCH_PROFILE=1: node flags writing a .cpuprofile of a process into bench/profiles/,
 * and `report(title, requests)` printing the summary of what was written.
 */
export function profiling(enabled, label) {
  if (!enabled) return { nodeArgs: [], report: () => {} };
  const dir = path.join(BENCH_DIR, 'profiles', `${new Date().toISOString().replace(/[:.]/g, '-')}-${label}`);
  fs.mkdirSync(dir, { recursive: true });
  return {
    dir,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    report(title, requests, top = 30) {
      const files = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
      if (files.length === 0) log(`    (no .cpuprofile was written to ${dir})`);
      for (const f of files) {
        const file = path.join(dir, f);
        log(`\n${formatSummary(summarise(file, top), `${title}: ${path.relative(ROOT, file)}`, requests)}\n`);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Small measurements

/** Resident set size (VmRSS) and its high-water mark (VmHWM) of a process, in bytes; null if gone. */
export function processMemory(pid) {
  const status = safeRead(`/proc/${pid}/status`);
  const rss = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!rss) return null;
  const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return { rss: Number(rss[1]) * 1024, hwm: hwm ? Number(hwm[1]) * 1024 : null };
}

/** Nearest-rank percentile (p in 0..100) of an array of numbers. */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  return nearestRank(Float64Array.from(values).sort(), p);
}

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** `npm run bench -- NAME` as it was run, with the BENCH_* variables that were set. */
export function commandLine(variables) {
  const set = variables.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`);
  const args = process.argv.slice(2);
  return `${set.length ? `${set.join(' ')} ` : ''}npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`;
}

let specCounter = 0;
/**
 * Runs bench/load-client.mjs (or, when `spec.rate` is set, bench/rate-client.mjs) in its own
 * process with `spec` (see those files), `bodies` (an array of request bodies, JSON-encoded
 * here) written to `dir`. Resolves to its result.
 */
export async function loadClient(dir, spec, bodies) {
  const n = ++specCounter;
  const specFile = path.join(dir, `load-${n}.json`);
  const full = { ...spec };
  if (bodies) {
    full.bodiesFile = path.join(dir, `bodies-${n}.json`);
    fs.writeFileSync(full.bodiesFile, JSON.stringify(bodies.map((b) => (typeof b === 'string' ? b : JSON.stringify(b)))));
  }
  fs.writeFileSync(specFile, JSON.stringify(full));
  // With a `rate`: the open-loop client (requests on a fixed schedule); without: autocannon's closed loop.
  const client = spec.rate ? 'rate-client.mjs' : 'load-client.mjs';
  const { stdout } = await runCommand(process.execPath, [path.join(BENCH_DIR, client), specFile], { label: `load client ${spec.title ?? spec.path}` });
  for (const f of [specFile, full.bodiesFile]) if (f) fs.rmSync(f, { force: true });
  return JSON.parse(stdout.trim().split('\n').pop());
}

/** Machine-wide CPU use over `ms` milliseconds of doing nothing here: what else is running. */
export async function backgroundLoad(ms = 2000) {
  const before = cpuTimes();
  await sleep(ms);
  return cpuUsage(before, cpuTimes());
}

/** CPU time (user + system) a process has used so far, in seconds; null if it is gone. */
export function processCpuSeconds(pid) {
  const stat = safeRead(`/proc/${pid}/stat`);
  if (!stat) return null;
  // The command name (2nd field) may hold spaces: count the fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  const hz = 100; // USER_HZ on Linux
  return ticks / hz;
}

/**
 * CPU seconds used so far by each PostgreSQL backend serving database `dbName` (from
 * pg_stat_activity and /proc; the server must run on this machine): a Map pid -> seconds.
 */
export async function postgresBackendsCpu(dbUrl, dbName) {
  const { rows } = await adminQuery(dbUrl, 'select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [dbName]);
  const cpu = new Map();
  for (const { pid } of rows) {
    const seconds = processCpuSeconds(pid);
    if (seconds !== null) cpu.set(pid, seconds);
  }
  return cpu;
}

/** CPU seconds the backends used between two postgresBackendsCpu() snapshots (new backends count in full). */
export function postgresCpuBetween(before, after) {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/**
 * What PostgreSQL has read so far in database `dbUrl`, from its statistics views: per index, its
 * scans and the index entries they read; per table, its sequential scans and the rows they read.
 * Backends report these when idle, at most once a second and at the latest 10 s after their last
 * statement (PostgreSQL 15), so a snapshot taken sooner after a load misses part of it: see
 * postgresReadsSettled.
 */
export async function postgresReads(dbUrl) {
  const [indexes, tables] = await Promise.all([
    adminQuery(dbUrl, 'select relname, indexrelname, idx_scan, idx_tup_read from pg_stat_user_indexes'),
    adminQuery(dbUrl, 'select relname, seq_scan, seq_tup_read from pg_stat_user_tables'),
  ]);
  const reads = new Map();
  for (const r of indexes.rows) reads.set(`index ${r.indexrelname}`, { scans: Number(r.idx_scan), rows: Number(r.idx_tup_read) });
  for (const r of tables.rows) reads.set(`seq ${r.relname}`, { scans: Number(r.seq_scan), rows: Number(r.seq_tup_read) });
  return reads;
}

/** postgresReads once the backends have reported what they read (waits out PostgreSQL's 10 s idle report interval). */
export async function postgresReadsSettled(dbUrl) {
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  return postgresReads(dbUrl);
}

/**
 * What was read between two postgresReads snapshots, per request: for each index or table whose
 * reads grew, scans and rows (index entries, or a sequential scan's rows) per request, most rows first.
 */
export function postgresReadsBetween(before, after, requests) {
  const out = [];
  for (const [name, a] of after) {
    const b = before.get(name) ?? { scans: 0, rows: 0 };
    if (a.scans > b.scans) out.push({ name, scans: (a.scans - b.scans) / requests, rows: (a.rows - b.rows) / requests });
  }
  return out.sort((x, y) => y.rows - x.rows);
}

/** A small seeded generator (mulberry32) of numbers in [0, 1): the same data and the same mix of operations on every run. */
export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Fills an RGB frame (`data`, `width` pixels a row) with a smooth gradient and noise, so that a
 * warp benchmark meets neither one value everywhere nor pure noise; the same bytes every run.
 */
export function fillTexture(frame, width) {
  const next = seeded(7);
  for (let i = 0; i < frame.data.length; i++) frame.data[i] = (((i / 3) % width) * 0.05 + next() * 60) & 255;
  return frame;
}

/** The stage timings of the last job the server logged (`blend completed`), as `name=ms` pairs. */
export function lastStages(output) {
  const line = output.split('\n').findLast((l) => l.includes('"blend completed"'));
  if (!line) return '(none logged)';
  return Object.entries(JSON.parse(line).stages ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
}

// Shared pieces of the benchmarks: child processes, clean-up, free ports, autocannon runs,
// machine description and the sections of docs/benchmarks.md.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

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

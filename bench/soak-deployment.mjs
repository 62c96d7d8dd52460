// The deployment of docs/deploy.md on one machine, for bench/soak.mjs and its read benchmark
// (bench/soak-scale.mjs): Montage API and worker processes started as a supervisor would, the
// proxy in front of the API processes (bench/proxy.mjs), and the webhook receiver.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH_DIR, freePort, montageArgs, montageNodeFlags, ROOT, runCommand, startProcess, waitForHttp } from './lib.mjs';

/** How each Montage process is started: compiled dist/ (bin/montage.js), or src/ through tsx. */
export function montageCommand(s) {
  return s.source === 'src' ? [process.execPath, [...montageNodeFlags(), '--import', 'tsx', path.join(ROOT, 'src', 'cli.ts')]] : [process.execPath, montageArgs()];
}

export async function cli(s, env, ...args) {
  const [command, prefix] = montageCommand(s);
  return runCommand(command, [...prefix, ...args], { env, label: `montage ${args.join(' ')}` });
}

/** An account on `plan` and its first key, made with the CLI as an operator would. */
export async function accountWithKey(s, env, email, plan) {
  await cli(s, env, 'accounts', 'create', '--email', email, '--plan', plan);
  const created = await cli(s, env, 'keys', 'create', '--email', email, '--name', 'soak');
  return created.stdout.trim().split('\n').pop().trim();
}

// ---------------------------------------------------------------------------------------------
// The deployment: API processes, worker processes, the proxy in front.

export class Deployment {
  constructor(s, env, apiPorts, label = 'soak') {
    Object.assign(this, { s, env, apiPorts, label });
    this.api = apiPorts.map(() => null);
    this.workers = [];
    this.killed = new Set();
    this.crashes = [];
    this.startFailures = [];
    this.stopping = false;
  }

  watch(proc) {
    proc.exited.then((info) => {
      // A process that exits before it is ready failed to start: start() tries again.
      if (proc.ready && !this.killed.has(proc) && !this.stopping) this.crashes.push({ label: proc.label, ...info, output: proc.output().slice(-4000) });
    });
    return proc;
  }

  /**
   * Starts process `i` of `kind` and waits until it is ready; like a supervisor (systemd's
   * Restart=always, RestartSec=1), starts it again when it exits first, e.g. because the database
   * is unreachable while it migrates. Gives up after 60 s.
   */
  async start(kind, i) {
    const [command, prefix] = montageCommand(this.s);
    const deadline = Date.now() + 60_000;
    const env = { ...this.env, DATA_DIR: this.dataDir(kind, i) };
    for (;;) {
      const proc =
        kind === 'api'
          ? startProcess(`api ${i + 1}`, command, [...prefix, 'serve', '--no-worker'], { env: { ...env, PORT: String(this.apiPorts[i]) } })
          : // At info level a worker says when it runs (and little else: it logs no requests).
            startProcess(`worker ${i + 1}`, command, [...prefix, 'worker'], { env: { ...env, MONTAGE_LOG_LEVEL: 'info' } });
      this.watch(proc);
      (kind === 'api' ? this.api : this.workers)[i] = proc;
      try {
        if (kind === 'api') await waitForHttp(proc, `http://127.0.0.1:${this.apiPorts[i]}/readyz`, { timeoutMs: deadline - Date.now() });
        else await waitForOutput(proc, 'Montage worker running', deadline);
        proc.ready = true;
        return proc;
      } catch (err) {
        if (!proc.exitInfo || Date.now() > deadline) throw err;
        const reason = proc.output().trim().split('\n').pop();
        this.startFailures.push({ label: proc.label, at: Date.now(), reason });
        await sleep(1000);
      }
    }
  }

  /**
   * With an object store (MONTAGE_STORAGE_URL) the processes share no directory: each gets a
   * DATA_DIR of its own, as on a machine of its own (a restarted process finds its own again).
   * Without one, they share the deployment's DATA_DIR, where results live.
   */
  dataDir(kind, i) {
    if (!this.env.MONTAGE_STORAGE_URL) return this.env.DATA_DIR;
    const dir = path.join(this.env.DATA_DIR, `${kind}-${i + 1}`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** The DATA_DIR of every process slot. */
  dataDirs() {
    return [...this.api.map((_, i) => this.dataDir('api', i)), ...this.workers.map((_, i) => this.dataDir('worker', i))];
  }

  startApi(i) {
    return this.start('api', i);
  }

  startWorker(i) {
    return this.start('worker', i);
  }

  async kill(proc) {
    this.killed.add(proc);
    proc.child.kill('SIGKILL');
    await proc.exited;
  }

  /** SIGTERM to every process at once: each should finish its work and exit 0 within MONTAGE_SHUTDOWN_TIMEOUT. */
  async stop() {
    this.stopping = true;
    const all = [...this.api, ...this.workers].filter((p) => p && !p.exitInfo);
    return Promise.all(
      all.map(async (proc) => {
        const started = Date.now();
        proc.child.kill('SIGTERM');
        const timer = setTimeout(() => proc.child.kill('SIGKILL'), 20_000);
        const info = await proc.exited;
        clearTimeout(timer);
        return { label: proc.label, code: info.code, signal: info.signal, ms: Date.now() - started };
      }),
    );
  }
}

async function waitForOutput(proc, text, deadline) {
  while (!proc.output().includes(text)) {
    if (proc.exitInfo) throw new Error(`${proc.label} exited (code ${proc.exitInfo.code}) before it ran:\n${proc.output()}`);
    if (Date.now() > deadline) throw new Error(`${proc.label} did not start within 60 s:\n${proc.output()}`);
    await sleep(50);
  }
}

export async function startProxy(port, backends) {
  const proc = startProcess('proxy', process.execPath, [path.join(BENCH_DIR, 'proxy.mjs')], {
    env: { ...process.env, PORT: String(port), BACKENDS: backends.map((p) => `127.0.0.1:${p}`).join(',') },
  });
  await waitForHttp(proc, `http://127.0.0.1:${port}/__proxy`);
  return proc;
}

export async function startReceiver() {
  const port = await freePort();
  const proc = startProcess('webhook receiver', process.execPath, [path.join(BENCH_DIR, 'webhook-receiver.mjs')], { env: { ...process.env, PORT: String(port) } });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(proc, `${base}/__stats`);
  return { proc, base, url: `${base}/hook` };
}

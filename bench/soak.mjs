#!/usr/bin/env node
// Load and fault suite ("soak") on the multi-process deployment of docs/deploy.md: a loopback
// round-robin proxy (bench/proxy.mjs) in front of 2 `montage serve --no-worker` processes, and 2
// `montage worker` processes, all on one fresh PostgreSQL database, the local Redis and an
// S3-compatible object store for blend results (s3rver on loopback, bench/object-store.mjs); each
// process has a DATA_DIR of its own, so they share no directory. Mixed traffic runs through the proxy (bench/soak-traffic.mjs) while a worker and an API
// process are killed with SIGKILL and restarted and PostgreSQL's connections are cut; then the
// queue drains and the invariants are checked with SQL. The long form then measures the read
// benchmark with 1 and 2 API processes. See bench/README.md.
//
//   npm run soak                 long form: 60 s of traffic (SOAK_DURATION), figures into docs/benchmarks.md
//   npm run soak -- --short      CI form: 30 s of traffic, no scale benchmark, docs untouched
//   npm run bench -- soak        the long form, from the benchmark runner
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import {
  backgroundLoad,
  build,
  checkedJson,
  cleanupAll,
  cpuTimes,
  cpuUsage,
  freePort,
  freshPostgres,
  machine,
  makeTempDir,
  montageEnv,
  packageVersion,
  postgresAdminUrl,
  processCpuSeconds,
  processMemory,
  tables,
  writeDocSection,
} from './lib.mjs';
import { startObjectStore } from './object-store.mjs';
import { check, checkInvariants, checkObjectStore, classifyFailures, drain, PROBE_LIMITS, probeRateLimits } from './soak-checks.mjs';
import { accountWithKey, cli, Deployment, startProxy, startReceiver } from './soak-deployment.mjs';
import { scaleRead, scaleReport } from './soak-scale.mjs';
import { startImageServer, Traffic } from './soak-traffic.mjs';

export const name = 'soak';
export const description =
  '2 API processes behind a proxy + 2 workers on PostgreSQL and Redis: mixed traffic, SIGKILLs, a PostgreSQL connection cut, invariants; read throughput with 1 vs 2 API processes';

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n == null || Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US'));
const int = (n) => Math.round(n).toLocaleString('en-US');
const sec = (msValue) => `${(msValue / 1000).toFixed(1)} s`;

function durationMs(name, raw, fallback) {
  if (raw === undefined || raw === '') return fallback;
  const match = /^(\d+)(ms|s)?$/.exec(raw.trim());
  if (!match) throw new Error(`${name} must be a duration such as 60s or 45000ms, got "${raw}"`);
  return Number(match[1]) * (match[2] === 'ms' ? 1 : 1000);
}

export function settings(argv = [], env = process.env) {
  const short = argv.includes('--short') || env.SOAK_SHORT === '1';
  const jsonAt = argv.indexOf('--json');
  return {
    short,
    durationMs: durationMs('SOAK_DURATION', env.SOAK_DURATION, short ? 30_000 : 60_000),
    drainTimeoutMs: durationMs('SOAK_DRAIN_TIMEOUT', env.SOAK_DRAIN_TIMEOUT, 60_000),
    cutMs: durationMs('SOAK_CUT', env.SOAK_CUT, 3000),
    clients: Number(env.SOAK_CLIENTS || 8),
    blendEveryMs: Number(env.SOAK_BLEND_EVERY_MS || 1000),
    postgresAdminUrl: env.SOAK_POSTGRES || postgresAdminUrl(),
    redisUrl: env.SOAK_REDIS || 'redis://127.0.0.1:6379',
    // `src`: run src/cli.ts through tsx (the tests: what is checked out, no build); else dist/.
    source: env.SOAK_MONTAGE === 'src' ? 'src' : 'dist',
    scale: !short && !argv.includes('--no-scale') && env.SOAK_SCALE !== '0',
    scaleDuration: Number(env.BENCH_DURATION || 10),
    scaleWarmup: Number(env.BENCH_WARMUP ?? 3),
    scaleRounds: Number(env.BENCH_ROUNDS || 3),
    scaleConnections: Number(env.BENCH_CONNECTIONS || 50),
    json: jsonAt >= 0 ? argv[jsonAt + 1] : null,
    docs: !short && env.BENCH_NO_DOCS !== '1',
  };
}

// ---------------------------------------------------------------------------------------------
// Faults

async function killAndRestart(deployment, kind, i, t0) {
  const proc = kind === 'api' ? deployment.api[i] : deployment.workers[i];
  const at = Date.now() - t0;
  await deployment.kill(proc);
  const killedAt = Date.now() - t0;
  await (kind === 'api' ? deployment.startApi(i) : deployment.startWorker(i));
  return { fault: `SIGKILL ${proc.label} (pid ${proc.child.pid}), then restart`, at, killedAt, endAt: Date.now() - t0 };
}

/** Terminates every backend of the soak database, again and again for `durationMs`: a PostgreSQL outage as the processes see it. */
async function cutPostgres(adminUrl, dbName, durationMs, t0) {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  const at = Date.now() - t0;
  const until = Date.now() + durationMs;
  let terminated = 0;
  let rounds = 0;
  try {
    while (Date.now() < until) {
      const { rows } = await client.query(
        'select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()) killed',
        [dbName],
      );
      terminated += rows[0].n;
      rounds++;
      await sleep(100);
    }
  } finally {
    await client.end();
  }
  return { fault: `pg_terminate_backend of every backend of the database, every 100 ms for ${sec(durationMs)}`, at, endAt: Date.now() - t0, terminated, rounds };
}

// ---------------------------------------------------------------------------------------------
// The soak

export async function soak(s) {
  const started = Date.now();
  const storage = { montageDir: makeTempDir('montage-soak-data-').dir, ...(await freshPostgres(s.postgresAdminUrl)) };
  const objects = await startObjectStore();
  log(`    fresh database ${storage.dbName} (PostgreSQL ${storage.version}); object store s3://${objects.bucket} at ${objects.endpoint}; a DATA_DIR per process under ${storage.montageDir}`);
  const [apiPorts, proxyPort] = [[await freePort(), await freePort()], await freePort()];
  const base = `http://127.0.0.1:${proxyPort}`;
  const env = montageEnv('postgres', storage, 0, {
    REDIS_URL: s.redisUrl,
    PUBLIC_URL: base,
    MONTAGE_ALLOW_PRIVATE_NETWORK: '1',
    MONTAGE_JOB_LEASE: '2s',
    MONTAGE_WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,3s,5s,5s,5s',
    MONTAGE_LIMITS_ENTERPRISE: PROBE_LIMITS,
    MONTAGE_BLEND_CONCURRENCY: '1',
    MONTAGE_BLEND_THREADS: '1',
    ...objects.env,
  });

  const [receiver, images] = await Promise.all([startReceiver(), startImageServer()]);
  const closeImages = () => new Promise((resolve) => images.server.close(resolve));
  let db = null;
  try {
    await cli(s, env, 'migrate');
    const [apiKey, probeKey] = await Promise.all([
      accountWithKey(s, env, 'soak@example.com', 'business'),
      accountWithKey(s, env, 'probe@example.com', 'enterprise'),
    ]);
    const deployment = new Deployment(s, env, apiPorts);
    await Promise.all([deployment.startApi(0), deployment.startApi(1), deployment.startWorker(0), deployment.startWorker(1)]);
    const proxy = await startProxy(proxyPort, apiPorts);
    log(`    proxy ${base} -> API ${apiPorts.join(', ')}; 2 workers; receiver ${receiver.url}; setup ${sec(Date.now() - started)}`);

    // The scene: a webhook subscription for everything, an event with three hot ticket types.
    const api = (path, body) =>
      fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
    await checkedJson(await api('/v1/webhooks', { url: receiver.url, events: ['*'] }), 'POST /v1/webhooks', 201);
    const event = await checkedJson(
      await api('/v1/events', { name: 'Soak night', startsAt: '2030-06-01T18:00:00Z', endsAt: '2030-06-01T23:00:00Z', timezone: 'Europe/Berlin', currency: 'EUR' }),
      'POST /v1/events',
      201,
    );
    // One type sells out early, so the refusals at the limit are part of the run.
    const stock = [['Early bird', Math.round(s.durationMs / 200)], ['Standard', Math.round(s.durationMs / 15)], ['Door', 1_000_000]];
    event.ticketTypes = [];
    for (const [typeName, quantity] of stock) {
      event.ticketTypes.push(await checkedJson(await api(`/v1/events/${event.id}/tickets`, { name: typeName, price: 2500, quantity, maxPerOrder: 4 }), 'POST tickets', 201));
    }
    await checkedJson(await api(`/v1/events/${event.id}/publish`), 'POST publish', 200);

    // What else keeps the machine busy (the deployment is idle now).
    const background = await backgroundLoad(2000);
    // Traffic, with the faults at fixed points of it.
    log(`    traffic: ${s.clients} clients for ${sec(s.durationMs)}, a blend job every ${s.blendEveryMs} ms; faults at 25%, 45%, 65%`);
    const t0 = Date.now();
    const traffic = new Traffic({ base, apiKey, event, imageUrls: images.urls, t0 });
    const at = (fraction) => sleep(Math.round(s.durationMs * fraction));
    const cpuBefore = processCpu(deployment);
    const machineBefore = cpuTimes();
    const [, ...faults] = await Promise.all([
      traffic.run(s.durationMs, { clients: s.clients, blendEveryMs: s.blendEveryMs }),
      at(0.25).then(() => killAndRestart(deployment, 'worker', 0, t0)).then((f) => ({ ...f, kind: 'worker' })),
      at(0.45).then(() => killAndRestart(deployment, 'api', 0, t0)).then((f) => ({ ...f, kind: 'api' })),
      at(0.65).then(() => cutPostgres(s.postgresAdminUrl, storage.dbName, s.cutMs, t0)).then((f) => ({ ...f, kind: 'postgres' })),
    ]);
    const trafficMs = Date.now() - t0;
    const machineDuring = cpuUsage(machineBefore, cpuTimes());
    for (const f of faults) log(`    fault at ${sec(f.at)}: ${f.fault}; over at ${sec(f.endAt)}${f.terminated !== undefined ? ` (${f.terminated} backends terminated)` : ''}`);

    const rateLimits = await probeRateLimits(apiPorts, probeKey);
    // Opened after the cut, which would have terminated it too.
    db = new pg.Pool({ connectionString: storage.url, max: 2 });
    db.on('error', () => {});
    const drained = await drain(db, s.drainTimeoutMs);
    const cpu = processCpuSince(deployment, cpuBefore);
    const summary = traffic.recorder.summary(trafficMs);
    const failures = classifyFailures(traffic.recorder.failures, faults);
    const proxyStats = await (await fetch(`${base}/__proxy`)).json();
    const [{ id: accountId }] = (await db.query(`select id from accounts where email = 'soak@example.com'`)).rows;
    const invariants = await checkInvariants(db, { accountId, traffic, receiver, drained, rateLimits, crashes: deployment.crashes, failures });
    const [completed] = (await db.query(`select id from blend_jobs where status = 'completed' order by completed_at desc limit 1`)).rows;
    const sample = completed && (await (await fetch(`${base}/v1/blend/status/${completed.id}`, { headers: { authorization: `Bearer ${apiKey}` } })).json());
    invariants.push(await checkObjectStore(db, objects, deployment.dataDirs(), sample));

    const memory = Object.fromEntries([...deployment.api, ...deployment.workers].map((p) => [p.label, processMemory(p.child.pid)]));
    const stopped = await deployment.stop();
    invariants.push(
      check(
        'every process stops cleanly on SIGTERM',
        stopped.every((p) => p.code === 0),
        stopped.map((p) => `${p.label} exit ${p.code ?? p.signal} in ${ms(p.ms)} ms`).join(', '),
      ),
    );
    await proxy.stop();
    const startFailures = deployment.startFailures.map((f) => ({ ...f, at: f.at - t0 }));
    return { version: storage.version, trafficMs, startFailures, background, machineDuring, memory, summary, failures, faults, invariants, drained, cpu, proxy: proxyStats, traffic: trafficFigures(traffic) };
  } finally {
    await closeImages();
    await db?.end().catch(() => {});
  }
}

function trafficFigures(traffic) {
  return {
    orders: traffic.orders.length,
    tickets: traffic.orders.reduce((n, o) => n + o.tickets.length, 0),
    soldOut: traffic.soldOut,
    replayed: traffic.replayed,
    checkins: traffic.checkins.length,
    doubleScans: traffic.doubleScans,
    blendJobs: traffic.blendJobs.length,
    inDoubt: traffic.inDoubt,
  };
}

function processCpu(deployment) {
  return new Map([...deployment.api, ...deployment.workers].map((p) => [p.label, { pid: p.child.pid, cpu: processCpuSeconds(p.child.pid) ?? 0 }]));
}

/** CPU seconds per process slot since `before` (a restarted process counts from its start). */
function processCpuSince(deployment, before) {
  const out = {};
  for (const p of [...deployment.api, ...deployment.workers]) {
    const then = before.get(p.label);
    out[p.label] = (processCpuSeconds(p.child.pid) ?? 0) - (then && then.pid === p.child.pid ? then.cpu : 0);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Report

const statusList = (statuses) =>
  Object.entries(statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status}: ${int(n)}`)
    .join(', ');

function faultRows(result) {
  const { failures, faults } = result;
  return faults.map((f) => {
    const mine = failures.filter((x) => x.explained === f.kind);
    const byKind = {};
    for (const x of mine) {
      const label = x.status ? `${x.status}${x.code ? ` ${x.code}` : ''}` : `no answer (${x.error})`;
      byKind[label] = (byKind[label] ?? 0) + 1;
    }
    const last = mine.reduce((latest, x) => Math.max(latest, x.at + x.ms), 0);
    const seen =
      f.kind === 'worker'
        ? 'none (its jobs were taken over when their 2 s lease ran out)'
        : mine.length === 0
          ? 'none'
          : `${statusList(byKind)}; ${last <= f.endAt ? 'none after it was over' : `the last ${sec(last - f.endAt)} after it was over`}`;
    const what = f.kind === 'postgres' ? `${f.fault} (${f.terminated} backends terminated)` : f.fault;
    return [sec(f.at), what, sec(f.endAt), seen];
  });
}

/** `npm run soak` as it was run, with the SOAK_* and BENCH_* variables that were set. */
function commandLine() {
  const set = Object.keys(process.env)
    .filter((k) => /^(SOAK|BENCH)_/.test(k) && !['BENCH_NO_DOCS', 'BENCH_NO_BUILD'].includes(k))
    .sort()
    .map((k) => `${k}=${process.env[k]}`);
  return `${set.length ? `${set.join(' ')} ` : ''}npm run soak`;
}

export function report(s, m, result, scale) {
  const { summary, invariants } = result;
  const opRows = [
    ['all', int(summary.requests), int(summary.rps), ms(summary.p50), ms(summary.p99), ''],
    ...Object.entries(summary.ops).map(([op, o]) => [op, int(o.count), int(o.rps), ms(o.p50), ms(o.p99), statusList(o.statuses)]),
  ];
  const ops = tables(['operation', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'answers'], opRows, ['left', 'right', 'right', 'right', 'right', 'left']);
  const faults = tables(['at', 'fault', 'over at', 'failed requests it explains'], faultRows(result));
  const restarts = result.startFailures.length
    ? `Restarts that failed and were tried again a second later (as a supervisor would): ${result.startFailures.map((f) => `${f.label} at ${sec(f.at)} (${f.reason})`).join('; ')}.`
    : 'Every restart succeeded at the first try.';
  const p = result.proxy;
  const proxyLine = `The proxy passed ${int(p.requests)} requests: ${p.backends.map((b) => `${int(b.forwarded)} answered by ${b.address}`).join(', ')}; it sent ${int(p.retried)} to the other process after a refused connection or a dropped GET, and answered ${p.badGateway} with 502 (a POST a killed process had accepted).`;
  const inv = tables(['invariant', 'result', 'detail'], invariants.map((i) => [i.name, i.pass ? 'PASS' : 'FAIL', i.detail.replaceAll('\n', ' ').replaceAll('|', '\\|')]));
  const f = result.traffic;
  const failedTotal = result.failures.length;
  const counts = `Acknowledged: ${int(f.orders)} orders (${int(f.tickets)} tickets; ${int(f.soldOut)} refused sold_out; ${f.replayed} answers replayed from their Idempotency-Key), ` +
    `${int(f.checkins)} check-ins (${f.doubleScans.pairs} tickets scanned at two gates at once), ${f.blendJobs} blend jobs. ` +
    `Unsettled (every attempt failed or was still held by a lost attempt): orders ${f.inDoubt.orders}, check-ins ${f.inDoubt.checkins}, blend jobs ${f.inDoubt.blendJobs}. ` +
    `Failed requests: ${failedTotal} of ${int(summary.requests)} (${((100 * failedTotal) / Math.max(1, summary.requests)).toFixed(2)}%).`;
  const pass = invariants.every((i) => i.pass);
  const pct = (u) => (u ? `${u.busyPct.toFixed(0)}%` : '-');
  const load =
    `Machine: ${pct(result.background)} busy with other work just before the traffic, ${pct(result.machineDuring)} during it. ` +
    `CPU time of the processes during the traffic (a restarted one from its restart): ${Object.entries(result.cpu).map(([label, seconds]) => `${label} ${seconds.toFixed(1)} s`).join(', ')}; ` +
    `their peak memory (VmHWM): ${Object.entries(result.memory).map(([label, m]) => `${label} ${m?.hwm ? `${Math.round(m.hwm / 1048576)} MB` : '-'}`).join(', ')}.`;

  const scaleOut = scale ? scaleReport(s, scale) : { text: '', md: '' };

  const text = [
    `Soak: ${sec(result.trafficMs)} of traffic through the proxy, 2 API processes + 2 workers, ${s.clients} clients`,
    ops.text,
    '',
    counts,
    load,
    '',
    faults.text,
    restarts,
    proxyLine,
    '',
    inv.text,
    '',
    `Soak ${pass ? 'PASSED' : 'FAILED'}`,
    scaleOut.text,
  ].join('\n');

  const markdown = `## Soak: 2 API processes and 2 workers under load and faults

What it checks: the multi-process deployment of [deploy.md](deploy.md) under mixed traffic while
processes are killed and PostgreSQL's connections are cut, then the invariants, from the database.

- Command: \`${commandLine()}\` (long form: ${sec(s.durationMs)} of traffic, then the read benchmark below; the CI form is
  \`npm run soak -- --short\`, ${sec(30_000)} of traffic, run by \`test/soak.test.ts\`)
- Date: ${m.date}; built from commit ${m.commit}
- Machine: ${m.nproc} CPUs, ${m.cpu}, ${m.memory} RAM, ${m.os}; Node ${m.node}, PostgreSQL ${result.version}, pg ${packageVersion('pg')}, ioredis ${packageVersion('ioredis')}
- Deployment (\`bench/soak.mjs\`): \`bench/proxy.mjs\` (round-robin, skips a backend that refuses connections)
  in front of 2 \`montage serve --no-worker\`, and 2 \`montage worker\`, on one fresh PostgreSQL database, the
  local Redis and an S3-compatible object store for blend results (\`MONTAGE_STORAGE_URL\`: s3rver ${packageVersion('s3rver')} on loopback,
  \`bench/object-store.mjs\`, so \`resultUrl\` is a presigned GET of it); each process has a \`DATA_DIR\` of its own (they share
  no directory); \`MONTAGE_JOB_LEASE=2s\`, webhook retries after 200 ms, 500 ms, 1 s...,
  one blend job at a time per worker (\`MONTAGE_BLEND_CONCURRENCY=1\`, \`MONTAGE_BLEND_THREADS=1\`).
- Traffic (\`bench/soak-traffic.mjs\`): ${s.clients} clients back to back through the proxy, half reads (event, inventory, a page of
  events, an acknowledged order read back, a blend job's status), a quarter orders of 1-4 tickets on 3 hot ticket types
  (one sells out early), a quarter door check-ins of issued tickets (one in ten scanned at two gates at once), plus a
  blend job (median or mean of four 64×48 PNGs from a loopback server) every ${s.blendEveryMs} ms; every change is a webhook
  message to a loopback receiver subscribed to everything. Writes carry an \`Idempotency-Key\` and are repeated
  with it after a 5xx or a lost answer. Latencies are measured by the clients (send to last byte).
- Faults: SIGKILL of a worker at 25% of the traffic, of an API process at 45% (each restarted at once), and
  every backend of the database terminated every 100 ms for ${sec(s.cutMs)} from 65%. Then the queue drains (at most
  ${sec(s.drainTimeoutMs)}) and the invariants are checked with SQL and the receiver's log.

### Traffic

${ops.md}

${counts}

${load}

### Faults

${faults.md}

${restarts} ${proxyLine}

Failed requests are accepted only when a fault explains them: a 502 from the proxy or a lost connection
while an API process was down (requests it held when it died; the proxy sends new ones to the other
process), and a 503 \`unavailable\` while PostgreSQL was cut (the API answers a database it cannot reach with a
503 and \`Retry-After\`, never a 500). The API process was back after ${sec(result.faults.find((x) => x.kind === 'api').endAt - result.faults.find((x) => x.kind === 'api').killedAt)}.

### Invariants

${inv.md}

${scaleOut.md}`;
  return { text, markdown, pass };
}

// ---------------------------------------------------------------------------------------------
// Entry points: `npm run bench -- soak` (run) and `npm run soak [-- --short]` (main)

export async function run(argv = []) {
  const s = settings(argv);
  const m = machine();
  log(`Soak (${s.short ? 'short' : 'long'} form): ${sec(s.durationMs)} of traffic${s.scale ? ', then the read benchmark with 1 and 2 API processes' : ''}; Montage from ${s.source === 'src' ? 'src/ (tsx)' : 'dist/'}`);
  if (s.source === 'dist') await build();
  const result = await soak(s);
  await cleanupAll();
  let scale = null;
  if (s.scale) {
    log('\nRead throughput, 1 vs 2 API processes:');
    scale = await scaleRead(s);
    await cleanupAll();
  }
  const out = report(s, m, result, scale);
  if (s.json) fs.writeFileSync(s.json, JSON.stringify({ pass: out.pass, ...result, scale, text: out.text, markdown: out.markdown }, null, 2));
  return { ...out, writeDoc: s.docs };
}

async function main() {
  const argv = process.argv.slice(2);
  let code = 1;
  try {
    const result = await run(argv);
    log(`\n${result.text}`);
    if (result.writeDoc) {
      writeDocSection(name, result.markdown);
      log(`Wrote the "${name}" section of docs/benchmarks.md`);
    }
    code = result.pass ? 0 : 1;
  } catch (err) {
    console.error(`\nSoak failed: ${err.stack ?? err}`);
  } finally {
    await cleanupAll();
  }
  process.exit(code);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();

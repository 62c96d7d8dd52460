// Webhooks benchmark: how fast `montage worker` processes drain a backlog of webhook deliveries
// to a fast loopback receiver (1 worker, then 2 at once, on one PostgreSQL database), and how
// long a single change takes to reach the receiver when the queue is idle. See bench/README.md.
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  adminQuery,
  backgroundLoad,
  BENCH_DIR,
  build,
  checkedJson,
  commandLine,
  createAccountAndKey,
  freePort,
  freshPostgres,
  loadClient,
  machine,
  makeTempDir,
  median,
  montageArgs,
  montageNodeFlags,
  montageEnv,
  packageVersion,
  percentile,
  postgresAdminUrl,
  postgresBackendsCpu,
  postgresCpuBetween,
  processCpuSeconds,
  processMemory,
  profiling,
  seconds,
  startProcess,
  tables,
  waitForHttp,
} from './lib.mjs';

export const name = 'webhooks';
export const description = 'Webhook delivery: backlog drain rate with 1 and 2 worker processes, idle latency; PostgreSQL';

const TARGET_RATE = 1000;
const TARGET_LATENCY_MS = 250;
const MESSAGES_PER_ORDER = 101; // 100 x ticket.purchased + payment.completed

function settings() {
  const messages = seconds('BENCH_WEBHOOK_MESSAGES', 20_000, 1000);
  return {
    messages,
    // event.created + event.published, then orders of 100 tickets.
    orders: Math.max(1, Math.round((messages - 2) / MESSAGES_PER_ORDER)),
    workerCounts: (process.env.BENCH_WEBHOOK_WORKERS || '1,2').split(',').map((n) => Number(n.trim())),
    latencySamples: seconds('BENCH_WEBHOOK_LATENCY_SAMPLES', 30, 5),
    drainTimeout: seconds('BENCH_WEBHOOK_DRAIN_TIMEOUT', 240, 10),
    postgresAdminUrl: postgresAdminUrl(),
    profile: process.env.BENCH_PROFILE === '1',
  };
}

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n == null || Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(2) : n.toFixed(1));
const int = (n) => Math.round(n).toLocaleString('en-US');
const mb = (bytes) => (bytes == null ? '-' : (bytes / 1024 / 1024).toFixed(0));
const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
const epochMs = () => performance.timeOrigin + performance.now();

async function receiverGet(receiver, route, init) {
  const res = await fetch(`${receiver.base}${route}`, init);
  const body = await res.json();
  return { status: res.status, body };
}

async function startReceiver() {
  const port = await freePort();
  const proc = startProcess('webhook receiver', process.execPath, [path.join(BENCH_DIR, 'webhook-receiver.mjs')], { env: { ...process.env, PORT: String(port) } });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(proc, `${base}/__stats`);
  return { proc, base, url: `${base}/hook` };
}

/** A backlog through the API: an event (event.created, event.published) and orders of 100 tickets. */
async function makeBacklog(s, api, m, tmpDir, label) {
  const started = Date.now();
  const event = await api('POST', '/v1/events', {
    name: `Webhook backlog ${label}`,
    startsAt: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    endsAt: new Date(Date.now() + 30 * 86_400_000 + 4 * 3_600_000).toISOString(),
    timezone: 'Europe/Berlin',
    currency: 'EUR',
  });
  const type = await api('POST', `/v1/events/${event.id}/tickets`, { name: 'General admission', price: 2500, quantity: s.orders * 100 });
  await api('POST', `/v1/events/${event.id}/publish`, undefined, 200);
  const bodies = Array.from({ length: s.orders }, (_, i) => ({
    buyer: { name: `Buyer ${i}`, email: `buyer${i}@example.com` },
    items: [{ ticketTypeId: type.id, quantity: 100, attendees: Array.from({ length: 100 }, (_, k) => ({ name: `Guest ${i}-${k}`, email: `guest${i}.${k}@example.com` })) }],
  }));
  const r = await loadClient(
    tmpDir,
    { title: 'backlog orders', origin: m.base, method: 'POST', path: `/v1/events/${event.id}/orders`, headers: { ...m.headers, 'content-type': 'application/json' }, connections: 8, amount: s.orders, expect: [201], collect: 'tickets' },
    bodies,
  );
  if ((r.statuses[201] ?? 0) !== s.orders || r.errors || r.timeouts) throw new Error(`backlog orders: ${JSON.stringify(r.statuses)}, ${r.errors} errors; ${r.samples.join(' | ')}`);
  return { since: started, seconds: (Date.now() - started) / 1000, orders: s.orders };
}

async function jobCounts(dbUrl) {
  const { rows } = await adminQuery(dbUrl, "select status, count(*)::int as n from jobs where kind = 'webhook.deliver' group by status");
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Starts `count` worker processes at once. */
function startWorkers(s, count, env, label) {
  return Array.from({ length: count }, (_, i) => {
    const prof = profiling(s.profile, `webhooks-${label}-worker${i + 1}`);
    const proc = startProcess(`montage worker ${i + 1} of ${count}`, process.execPath, [...prof.nodeArgs, ...montageArgs('worker')], { env });
    return { proc, prof };
  });
}

async function stopWorkers(workers, deliveries) {
  const peaks = [];
  for (const w of workers) {
    const mem = processMemory(w.proc.child.pid);
    peaks.push(mem?.hwm ?? null);
    await w.proc.stop();
    const { code, signal } = w.proc.exitInfo ?? {};
    if (code) throw new Error(`${w.proc.label} exited with code ${code} (signal ${signal}):\n${w.proc.output()}`);
    w.prof.report(w.proc.label, workers.length === 1 ? deliveries : 0);
  }
  return peaks;
}

function checkAlive(procs) {
  for (const p of procs) {
    if (p.exitInfo) throw new Error(`${p.label} exited (code ${p.exitInfo.code}, signal ${p.exitInfo.signal}):\n${p.output().slice(-4000)}`);
  }
}

/** Waits until the receiver holds every expected message id; returns its stats. */
async function waitForDrain(s, receiver, expected, procs, storage) {
  const deadline = Date.now() + s.drainTimeout * 1000;
  let stats;
  let lastLog = Date.now();
  let cpuAtFirst = null;
  const cpu = () => procs.reduce((sum, p) => sum + (processCpuSeconds(p.child.pid) ?? 0), 0);
  for (;;) {
    checkAlive(procs);
    stats = (await receiverGet(receiver, '/__stats')).body;
    if (cpuAtFirst === null && stats.deliveries > 0) cpuAtFirst = { cpu: cpu(), pg: await postgresBackendsCpu(storage.url, storage.dbName), unique: stats.unique };
    if (stats.unique >= expected) {
      // CPU of the workers (and of PostgreSQL) per delivery, between the first poll that saw a delivery and the end.
      const n = cpuAtFirst ? stats.unique - cpuAtFirst.unique : 0;
      stats.workerUsPerDelivery = n > 0 ? ((cpu() - cpuAtFirst.cpu) * 1e6) / n : null;
      stats.pgUsPerDelivery = n > 0 ? (postgresCpuBetween(cpuAtFirst.pg, await postgresBackendsCpu(storage.url, storage.dbName)) * 1e6) / n : null;
      return stats;
    }
    if (Date.now() > deadline) throw new Error(`only ${stats.unique} of ${expected} messages delivered within ${s.drainTimeout} s (BENCH_WEBHOOK_DRAIN_TIMEOUT)`);
    if (Date.now() - lastLog > 10_000) {
      log(`      ... ${int(stats.unique)} of ${int(expected)} delivered`);
      lastLog = Date.now();
    }
    await sleep(100);
  }
}

/** `samples` single changes (POST /v1/events, each emits event.created), one at a time. */
async function idleLatency(s, api, receiver, procs) {
  // Any leftover of the backlog first: the queue must be empty.
  await sleep(500);
  const latencies = [];
  for (let i = 0; i < s.latencySamples; i++) {
    // A random pause, so that the changes do not line up with the workers' poll.
    await sleep(50 + Math.random() * 150);
    const event = await api('POST', '/v1/events', {
      name: `Latency probe ${i + 1}`,
      startsAt: new Date(Date.now() + 86_400_000).toISOString(),
      endsAt: new Date(Date.now() + 90_000_000).toISOString(),
      timezone: 'UTC',
      currency: 'EUR',
    });
    const answeredAt = epochMs();
    const deadline = Date.now() + 30_000;
    for (;;) {
      checkAlive(procs);
      const hit = await receiverGet(receiver, `/__find?dataId=${event.id}`);
      if (hit.status === 200) {
        if (hit.body.event !== 'event.created') throw new Error(`latency probe: ${event.id} arrived as ${hit.body.event}`);
        latencies.push(hit.body.at - answeredAt);
        break;
      }
      if (Date.now() > deadline) throw new Error(`latency probe ${i + 1}: event.created of ${event.id} not delivered within 30 s`);
      await sleep(2);
    }
  }
  return latencies;
}

async function phase(s, ctx, workerCount) {
  const { api, m, receiver, storage, workerEnv } = ctx;
  const label = `${workerCount}w`;
  log(`\n  [${workerCount} worker process${workerCount > 1 ? 'es' : ''}]`);
  await receiverGet(receiver, '/__reset', { method: 'POST' });
  const backlog = await makeBacklog(s, api, m, storage.tmpDir, label);
  const { rows } = await adminQuery(storage.url, 'select id from webhook_messages where created_at >= $1', [backlog.since]);
  const expectedIds = rows.map((r) => r.id);
  const queued = (await jobCounts(storage.url)).queued ?? 0;
  // A bulk load: fresh planner statistics, as autovacuum would make them (it may be off).
  if (process.env.BENCH_WEBHOOK_ANALYZE !== '0') await adminQuery(storage.url, 'analyze');
  log(`    backlog: ${int(expectedIds.length)} messages (${int(queued)} deliveries queued) from ${backlog.orders} orders of 100 tickets in ${backlog.seconds.toFixed(1)} s, nothing delivering (serve --no-worker)`);
  if (queued !== expectedIds.length) throw new Error(`backlog: ${queued} queued deliveries for ${expectedIds.length} messages`);

  const startedAt = epochMs();
  const workers = startWorkers(s, workerCount, workerEnv, label);
  const stats = await waitForDrain(s, receiver, expectedIds.length, workers.map((w) => w.proc), storage);
  // Jobs are marked done just after their delivery: wait for the last ones.
  let counts;
  for (let i = 0; i < 100; i++) {
    counts = await jobCounts(storage.url);
    if (!counts.queued && !counts.running) break;
    await sleep(100);
  }
  const received = (await receiverGet(receiver, '/__ids')).body;
  const missing = expectedIds.filter((id) => !(id in received));
  const duplicates = Object.values(received).reduce((n, c) => n + (c - 1), 0);
  const unexpected = Object.keys(received).length - (expectedIds.length - missing.length);
  const spanS = (stats.lastAt - stats.firstAt) / 1000;
  const result = {
    workers: workerCount,
    messages: expectedIds.length,
    deliveries: stats.deliveries,
    unique: stats.unique,
    duplicates,
    missing: missing.length,
    unexpected,
    bad: stats.bad,
    jobs: counts,
    spanS,
    rate: stats.unique / spanS,
    startupMs: stats.firstAt - startedAt,
    workerUsPerDelivery: stats.workerUsPerDelivery,
    pgUsPerDelivery: stats.pgUsPerDelivery,
    backlogSeconds: backlog.seconds,
  };
  log(
    `    drained: ${int(stats.unique)} messages (${int(stats.deliveries)} deliveries, ${duplicates} duplicates, ${missing.length} missing) ` +
      `in ${spanS.toFixed(2)} s from the first to the last delivery = ${int(result.rate)}/s; first delivery ${int(result.startupMs)} ms after the worker start; CPU per delivery: workers ${result.workerUsPerDelivery == null ? '?' : int(result.workerUsPerDelivery)} us, PostgreSQL ${result.pgUsPerDelivery == null ? '?' : int(result.pgUsPerDelivery)} us; jobs ${JSON.stringify(counts)}`,
  );
  if (missing.length || unexpected || stats.bad || counts.failed || counts.queued || counts.running) {
    throw new Error(`delivery check failed: ${missing.length} missing (e.g. ${missing.slice(0, 3).join(', ')}), ${unexpected} unexpected, ${stats.bad} malformed, jobs ${JSON.stringify(counts)}`);
  }

  if (workerCount === 1) {
    const latencies = await idleLatency(s, api, receiver, workers.map((w) => w.proc));
    result.latency = { median: median(latencies), p95: percentile(latencies, 95), max: Math.max(...latencies), min: Math.min(...latencies), n: latencies.length };
    log(`    idle latency (API response -> receiver), ${latencies.length} single changes: median ${ms(result.latency.median)} ms, p95 ${ms(result.latency.p95)} ms, max ${ms(result.latency.max)} ms`);
  }
  result.peakRss = await stopWorkers(workers, stats.deliveries);
  log(`    worker peak RSS (VmHWM): ${result.peakRss.map((b) => `${mb(b)} MB`).join(', ')}`);
  return result;
}

function report(s, ctx, runs) {
  const rows = runs.map((r) => [
    String(r.workers),
    int(r.messages),
    `${r.spanS.toFixed(2)} s`,
    int(r.rate),
    `${int(r.unique)} / ${int(r.messages)}, ${r.duplicates} dup.`,
    int(r.startupMs),
    r.workerUsPerDelivery == null ? '-' : int(r.workerUsPerDelivery),
    r.pgUsPerDelivery == null ? '-' : int(r.pgUsPerDelivery),
    r.peakRss.map((b) => mb(b)).join(' + '),
    `${r.backlogSeconds.toFixed(1)} s`,
  ]);
  const t1 = tables(
    ['Workers', 'Messages', 'First to last delivery', 'Deliveries/s', 'Delivered (unique / made)', 'First delivery after start, ms', 'Workers CPU us/delivery', 'PostgreSQL CPU us/delivery', 'Peak RSS MB', 'Backlog made in'],
    rows,
    ['right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  const lat = runs.find((r) => r.latency)?.latency;
  const t2 = lat
    ? tables(['Idle latency (API response -> receiver)', 'samples', 'median ms', 'p95 ms', 'min ms', 'max ms'], [['1 worker, empty queue, POST /v1/events', String(lat.n), ms(lat.median), ms(lat.p95), ms(lat.min), ms(lat.max)]], ['left', 'right', 'right', 'right', 'right', 'right'])
    : null;
  const verdicts = runs.map((r) => ({ pass: r.rate >= TARGET_RATE, text: `${r.workers} worker${r.workers > 1 ? 's' : ''}: >= ${int(TARGET_RATE)} deliveries/s: ${int(r.rate)}/s ${verdict(r.rate >= TARGET_RATE)}` }));
  if (lat) verdicts.push({ pass: lat.p95 < TARGET_LATENCY_MS, text: `idle latency p95 < ${TARGET_LATENCY_MS} ms: ${ms(lat.p95)} ms (median ${ms(lat.median)} ms) ${verdict(lat.p95 < TARGET_LATENCY_MS)}` });

  const text = [t1.text, ...(t2 ? ['', t2.text] : []), '', 'Targets:', ...verdicts.map((v) => `  ${v.pass ? 'PASS' : 'FAIL'}: ${v.text}`)].join('\n');
  const m = s.machine;
  const command = commandLine(['BENCH_WEBHOOK_MESSAGES', 'BENCH_WEBHOOK_WORKERS', 'BENCH_WEBHOOK_LATENCY_SAMPLES']);
  const markdown = `## Webhooks: delivery throughput and idle latency

What it measures: how fast \`node ${montageNodeFlags().join(' ')} bin/montage.js worker\` processes drain a backlog of webhook
deliveries to a fast receiver, with 1 worker process and with 2 at once on the same PostgreSQL
database, and how long one change takes to reach the receiver when the queue is empty.

- Command: \`${command}\` (from the repository root; builds \`dist/\` first)
- Date: ${m.date} (start of the run); built from commit ${m.commit}
- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memory} RAM, ${m.os}
- Software: Node ${m.node}, Fastify ${packageVersion('fastify')}, pg ${packageVersion('pg')}, PostgreSQL ${ctx.version}
- Receiver (\`bench/webhook-receiver.mjs\`): a plain \`node:http\` server in its own process on 127.0.0.1,
  answering 200 with no body to every delivery, recording each \`webhook-id\` and its arrival time.
- Montage: \`serve --no-worker\` (the API; it never delivers) and \`worker\` processes, all on one fresh
  PostgreSQL database, \`MONTAGE_ALLOW_PRIVATE_NETWORK=1\` (deliveries to loopback), \`MONTAGE_LOG_LEVEL=warn\`,
  default job lease and poll. One subscription: \`POST /v1/webhooks { url, events: ["*"] }\`.
- Backlog: per run, an event (\`event.created\`, \`event.published\`) and ${s.orders} orders of 100 tickets
  (101 messages each: 100 \`ticket.purchased\` + \`payment.completed\`) through the API while no worker runs:
  ${int(2 + s.orders * MESSAGES_PER_ORDER)} messages, one delivery job each; then \`ANALYZE\` (fresh planner statistics after the
  bulk load, as autovacuum would make them; autovacuum is \`${ctx.autovacuum}\` on this server). Then the workers start; the rate is the
  messages delivered over the time from the first delivery to the last, as the receiver saw them.
- Verified per run: every message id of the backlog (from \`webhook_messages\`) reached the receiver at least
  once, nothing else did, every body is signed and carries its id, and every delivery job ended \`done\`.
- Idle latency: with the 1-worker run's worker still running and its queue empty, ${s.latencySamples} single changes
  (\`POST /v1/events\`, which emits \`event.created\`), one at a time with a random 50-200 ms pause between them;
  latency = arrival at the receiver minus the moment the API's answer was read (same clock).
- Peak RSS: each worker's \`VmHWM\` from \`/proc/<pid>/status\` just before it is stopped. Worker CPU per
  delivery: the workers' user + system CPU time (\`/proc/<pid>/stat\`) while they drained, over the messages delivered;
  the same for the database's PostgreSQL backends (the pids of \`pg_stat_activity\` for the benchmark's database).

${t1.md}
${t2 ? `\n${t2.md}\n` : ''}
Targets:

${verdicts.map((v) => `- ${v.pass ? 'PASS' : '**FAIL**'}: ${v.text}`).join('\n')}

${runs
  .filter((r) => r.workerUsPerDelivery && r.pgUsPerDelivery)
  .map((r) => `- ${r.workers} worker${r.workers > 1 ? 's' : ''}: ${int(r.workerUsPerDelivery + r.pgUsPerDelivery)} us of CPU per delivery (workers + PostgreSQL), so this machine's ${m.nproc} CPUs top out near ${int(((Number(m.nproc) || 1) * 1e6) / (r.workerUsPerDelivery + r.pgUsPerDelivery))} deliveries/s before the receiver's share.`)
  .join('\n')}

Notes: the receiver, the API server, the workers and PostgreSQL share the machine's ${m.nproc} CPUs;
1-minute load average at the start: ${s.loadAtStart.toFixed(2)}${s.background ? `; busy with other work during the 2 s before the run: ${s.background.busyPct.toFixed(0)}%` : ''}.`;
  return { text, markdown, pass: verdicts.every((v) => v.pass) };
}

export async function run() {
  const s = settings();
  s.loadAtStart = os.loadavg()[0];
  s.machine = machine();
  log(`Webhooks benchmark: backlog of ${int(2 + s.orders * MESSAGES_PER_ORDER)} messages, worker processes ${s.workerCounts.join(' then ')}${s.profile ? ', CPU-profiling the workers' : ''}`);
  await build();
  s.background = await backgroundLoad();
  if (s.background) log(`    before it starts, the machine is ${s.background.busyPct.toFixed(0)}% busy with other work`);
  const storage = { montageDir: makeTempDir('montage-bench-webhooks-data-').dir, tmpDir: makeTempDir('montage-bench-webhooks-load-').dir };
  Object.assign(storage, await freshPostgres(s.postgresAdminUrl));
  log(`    fresh database ${storage.dbName} (PostgreSQL ${storage.version})`);
  const receiver = await startReceiver();

  const port = await freePort();
  const env = montageEnv('postgres', storage, port, { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' });
  const apiKey = await createAccountAndKey(env);
  const server = startProcess('montage serve --no-worker (postgres)', process.execPath, montageArgs('serve', '--no-worker'), { env });
  const m = { base: `http://127.0.0.1:${port}`, headers: { authorization: `Bearer ${apiKey}` } };
  await waitForHttp(server, `${m.base}/healthz`);
  const api = async (method, route, body, status = method === 'POST' ? 201 : 200) => {
    const res = await fetch(`${m.base}${route}`, {
      method,
      headers: body === undefined ? m.headers : { ...m.headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return checkedJson(res, `${method} ${route}`, status);
  };
  const subscription = await api('POST', '/v1/webhooks', { url: receiver.url, events: ['*'] });
  log(`    receiver ${receiver.url}, subscription ${subscription.id}`);

  const autovacuum = (await adminQuery(storage.url, 'show autovacuum')).rows[0].autovacuum;
  const ctx = { api, m, receiver, storage, workerEnv: env, version: storage.version, autovacuum };
  const runs = [];
  for (const count of s.workerCounts) runs.push(await phase(s, ctx, count));
  await server.stop();
  await receiver.proc.stop();
  const result = report(s, ctx, runs);
  return { ...result, writeDoc: !s.profile };
}

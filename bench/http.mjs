// HTTP benchmark: Montage's authenticated, rate-limited, tenant-scoped read routes against a
// "bare floor" (bench/floor-server.mjs: Fastify + one primary-key SELECT, nothing else), on
// SQLite and on PostgreSQL, side by side. Every server and every autocannon run is its own
// process. See bench/README.md.
import os from 'node:os';
import path from 'node:path';
import {
  autocannon,
  BENCH_DIR,
  build,
  checkedJson,
  createAccountAndKey,
  freePort,
  freshPostgres,
  machine,
  makeTempDir,
  montageNodeFlags,
  montageArgs,
  montageEnv,
  packageVersion,
  postgresAdminUrl,
  processCpuSeconds,
  profiling as profiler,
  seconds,
  startProcess,
  tables,
  waitForHttp,
} from './lib.mjs';

export const name = 'http';
export const description = 'Montage read routes (auth + rate limit + tenant scope) vs a bare Fastify + primary-key SELECT floor, SQLite and PostgreSQL';

/** The targets the single-resource GET is held to, against its own engine's floor. */
const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 10;

const ROUTES = [
  { id: 'key', label: 'GET /v1/keys/:id', target: true, path: (ctx) => `/v1/keys/${ctx.keyId}` },
  { id: 'page', label: 'GET /v1/keys?limit=20', path: () => '/v1/keys?limit=20' },
  { id: 'account', label: 'GET /v1/account', path: () => '/v1/account' },
];

const EXTRA_KEYS = 30;

/** The routes to load: all, or those BENCH_HTTP_ROUTES names (key, page, account). */
function chosenRoutes() {
  const wanted = (process.env.BENCH_HTTP_ROUTES || '').split(',').map((r) => r.trim()).filter(Boolean);
  for (const id of wanted) if (!ROUTES.some((r) => r.id === id)) throw new Error(`BENCH_HTTP_ROUTES: unknown route "${id}" (${ROUTES.map((r) => r.id).join(', ')})`);
  return wanted.length ? ROUTES.filter((r) => wanted.includes(r.id)) : ROUTES;
}

function settings() {
  const engines = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim()).filter(Boolean);
  for (const e of engines) if (e !== 'sqlite' && e !== 'postgres') throw new Error(`BENCH_ENGINES: unknown engine "${e}" (sqlite, postgres)`);
  return {
    duration: seconds('BENCH_DURATION', 10),
    warmup: seconds('BENCH_WARMUP', 3, 0),
    connections: seconds('BENCH_CONNECTIONS', 50),
    rounds: seconds('BENCH_ROUNDS', 3),
    engines,
    routes: chosenRoutes(),
    postgresAdminUrl: postgresAdminUrl(),
    profile: process.env.BENCH_PROFILE === '1',
  };
}

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const int = (n) => Math.round(n).toLocaleString('en-US');

// ---------------------------------------------------------------------------------------------

/**
 * Warm-up (discarded), then the measured run; both must be all 2xx. `pid`: the server process,
 * whose CPU time per request (user + system, from /proc) is recorded: unlike req/s it hardly
 * moves when something else shares the machine.
 */
async function measure(s, title, url, headers = {}, pid = null) {
  const warm = s.warmup > 0 ? await autocannon(url, { connections: s.connections, duration: s.warmup, headers, title: `${title} (warm-up)` }) : null;
  const cpuBefore = pid ? processCpuSeconds(pid) : null;
  const result = await autocannon(url, { connections: s.connections, duration: s.duration, headers, title });
  const cpuAfter = pid ? processCpuSeconds(pid) : null;
  const serverUs = cpuBefore !== null && cpuAfter !== null ? ((cpuAfter - cpuBefore) * 1e6) / result.requests : null;
  const cpu = result.cpu ? `, machine CPU ${result.cpu.busyPct.toFixed(0)}% busy, ${result.cpu.stealPct.toFixed(0)}% steal` : '';
  const server = serverUs !== null ? `, server CPU ${int(serverUs)} us/request` : '';
  log(`    ${title.padEnd(37)} ${int(result.rps).padStart(8)} req/s   p99 ${ms(result.p99).padStart(6)} ms   (${int(result.requests)} requests, all 2xx${server}${cpu})`);
  return { ...result, serverUs, served: result.requests + (warm?.requests ?? 0) };
}

/** With BENCH_PROFILE=1: node flags writing a .cpuprofile of a server into bench/profiles/. */
const profiling = (s, label) => profiler(s.profile, label);

// ---------------------------------------------------------------------------------------------

/** Starts the floor server of `engine`; resolves once it answers. */
async function startFloor(s, engine, storage) {
  const port = await freePort();
  const env = { ...process.env, FLOOR_ENGINE: engine, PORT: String(port), FLOOR_ROWS: '1000' };
  if (engine === 'sqlite') env.FLOOR_SQLITE_FILE = path.join(storage.floorDir, 'floor.db');
  else env.FLOOR_DATABASE_URL = storage.url;
  const prof = profiling(s, `floor-${engine}`);
  const server = startProcess(`floor server (${engine})`, process.execPath, [...prof.nodeArgs, ...montageNodeFlags(), path.join(BENCH_DIR, 'floor-server.mjs')], { env });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(server, `${base}/items/1`);
  return { server, prof, target: { url: `${base}/items/500`, headers: {} } };
}

/**
 * Creates the account and its first key with the CLI, starts `montage serve --no-worker`,
 * adds keys through the API until a full page exists, and checks every measured route once.
 */
async function startMontage(s, engine, storage) {
  const port = await freePort();
  const env = montageEnv(engine, storage, port);
  const apiKey = await createAccountAndKey(env);

  const prof = profiling(s, `montage-${engine}`);
  const server = startProcess(`montage serve (${engine})`, process.execPath, [...prof.nodeArgs, ...montageArgs('serve', '--no-worker')], { env });
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${apiKey}` };
  await waitForHttp(server, `${base}/healthz`);

  // ~30 more keys through the API, so that a full page of 20 exists.
  for (let i = 1; i <= EXTRA_KEYS; i++) {
    const res = await fetch(`${base}/v1/keys`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `bench key ${i}` }),
    });
    await checkedJson(res, 'POST /v1/keys', 201);
  }
  const first = await checkedJson(await fetch(`${base}/v1/keys?limit=1`, { headers }), 'GET /v1/keys?limit=1');
  const ctx = { keyId: first.data?.[0]?.id };
  if (!ctx.keyId) throw new Error(`GET /v1/keys?limit=1 returned no key: ${JSON.stringify(first)}`);

  // Each route answers what it should before it is loaded.
  const one = await checkedJson(await fetch(`${base}/v1/keys/${ctx.keyId}`, { headers }), 'GET /v1/keys/:id');
  if (one.id !== ctx.keyId) throw new Error(`GET /v1/keys/${ctx.keyId} returned ${JSON.stringify(one)}`);
  const page = await checkedJson(await fetch(`${base}/v1/keys?limit=20`, { headers }), 'GET /v1/keys?limit=20');
  if (page.data.length !== 20 || !page.hasMore) throw new Error(`GET /v1/keys?limit=20 returned ${page.data.length} keys, hasMore ${page.hasMore}`);
  const account = await checkedJson(await fetch(`${base}/v1/account`, { headers }), 'GET /v1/account');
  if (account.email !== 'bench@example.com') throw new Error(`GET /v1/account returned ${JSON.stringify(account)}`);

  const targets = Object.fromEntries(s.routes.map((route) => [route.id, { url: `${base}${route.path(ctx)}`, headers }]));
  return { server, prof, targets };
}

async function stopServer(handle, served) {
  await handle.server.stop();
  const { code, signal } = handle.server.exitInfo ?? {};
  if (code) throw new Error(`${handle.server.label} exited with code ${code} (signal ${signal}):\n${handle.server.output()}`);
  handle.prof.report(handle.server.label, served);
}

/**
 * Both servers of an engine are up at once (an idle one costs nothing) and measured in
 * interleaved rounds, floor then each Montage route, so that drift in the machine's load hits
 * the floor and Montage alike; each route's figure is the median of its rounds.
 */
async function engineRun(s, engine) {
  log(`\n[${engine}]`);
  const storage = { floorDir: makeTempDir(`montage-bench-floor-${engine}-`).dir, montageDir: makeTempDir(`montage-bench-data-${engine}-`).dir };
  if (engine === 'postgres') {
    Object.assign(storage, await freshPostgres(s.postgresAdminUrl));
    log(`    fresh database ${storage.dbName} (PostgreSQL ${storage.version})`);
  }
  const floorServer = await startFloor(s, engine, storage);
  const montageServer = await startMontage(s, engine, storage);
  const rounds = { floor: [], ...Object.fromEntries(s.routes.map((r) => [r.id, []])) };
  for (let round = 1; round <= s.rounds; round++) {
    if (s.rounds > 1) log(`  round ${round} of ${s.rounds}`);
    const f = floorServer.target;
    rounds.floor.push(await measure(s, `${engine} floor GET /items/:id`, f.url, f.headers, floorServer.server.child.pid));
    for (const route of s.routes) {
      const t = montageServer.targets[route.id];
      rounds[route.id].push(await measure(s, `${engine} Montage ${route.label}`, t.url, t.headers, montageServer.server.child.pid));
    }
  }
  const served = (list) => list.reduce((n, r) => n + r.served, 0);
  await stopServer(floorServer, served(rounds.floor));
  await stopServer(montageServer, s.routes.reduce((n, r) => n + served(rounds[r.id]), 0));
  return { engine, version: storage.version, rounds };
}

// ---------------------------------------------------------------------------------------------

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Median figures of a route over its rounds; `ratio`: median of the per-round ratios to the floor. */
function summariseRounds(list, floorList) {
  const rps = list.map((r) => r.rps);
  return {
    rps: median(rps),
    minRps: Math.min(...rps),
    maxRps: Math.max(...rps),
    p99: median(list.map((r) => r.p99)),
    avgLatency: median(list.map((r) => r.avgLatency)),
    serverUs: list.every((r) => r.serverUs !== null) ? median(list.map((r) => r.serverUs)) : null,
    ratio: median(list.map((r, i) => r.rps / floorList[i].rps)),
  };
}

function report(s, runs) {
  const multi = s.rounds > 1;
  const header = ['Engine', 'Server', 'Route', multi ? 'req/s (median)' : 'req/s', ...(multi ? ['req/s range'] : []), 'p99 ms', 'mean ms', 'server CPU us/req', 'vs floor'];
  const align = ['left', 'left', 'left', 'right', ...(multi ? ['right'] : []), 'right', 'right', 'right', 'right'];
  const rows = [];
  const verdicts = [];
  const row = (engine, server, label, r) => [
    engine,
    server,
    label,
    int(r.rps),
    ...(multi ? [`${int(r.minRps)}-${int(r.maxRps)}`] : []),
    ms(r.p99),
    ms(r.avgLatency),
    r.serverUs === null ? '–' : int(r.serverUs),
    `${(r.ratio * 100).toFixed(0)}%`,
  ];
  for (const run of runs) {
    const floorFigures = summariseRounds(run.rounds.floor, run.rounds.floor);
    rows.push(row(run.engine, 'floor', 'GET /items/:id', floorFigures));
    for (const route of s.routes) {
      const r = summariseRounds(run.rounds[route.id], run.rounds.floor);
      rows.push(row(run.engine, 'Montage', route.label, r));
      if (route.target) {
        const ratioOk = r.ratio >= TARGET_RATIO;
        const p99Ok = r.p99 < TARGET_P99_MS;
        verdicts.push({
          pass: ratioOk && p99Ok,
          text:
            `${run.engine}: ${route.label} >= ${TARGET_RATIO * 100}% of floor req/s: ${(r.ratio * 100).toFixed(0)}% ${ratioOk ? 'PASS' : 'FAIL'}; ` +
            `p99 < ${TARGET_P99_MS} ms: ${ms(r.p99)} ms ${p99Ok ? 'PASS' : 'FAIL'} => ${ratioOk && p99Ok ? 'PASS' : 'FAIL'}` +
            ` (the floor's own p99: ${ms(floorFigures.p99)} ms)`,
        });
      }
    }
  }
  const t = tables(header, rows, align);
  const m = s.machine;
  const cpus = runs.flatMap((r) => Object.values(r.rounds).flat()).map((r) => r.cpu).filter(Boolean);
  const range = (values) => `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}%`;
  const cpuNote = cpus.length
    ? `Machine-wide CPU during the measured runs (from /proc/stat): ${range(cpus.map((c) => c.busyPct))} busy, ` +
      `${range(cpus.map((c) => c.stealPct))} stolen by the hypervisor; 1-minute load average at the start: ${s.loadAtStart.toFixed(2)}.`
    : '';
  const pgVersion = runs.find((r) => r.engine === 'postgres')?.version;
  const nonDefault = ['BENCH_DURATION', 'BENCH_WARMUP', 'BENCH_ROUNDS', 'BENCH_CONNECTIONS', 'BENCH_ENGINES', 'BENCH_HTTP_ROUTES'].filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`);
  const command = `${nonDefault.length ? `${nonDefault.join(' ')} ` : ''}npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;

  const text = [
    t.text,
    '',
    "Targets (single-resource GET against its own engine's floor):",
    ...verdicts.map((v) => `  ${v.text}`),
    ...(cpuNote ? ['', cpuNote] : []),
  ].join('\n');

  const markdown = `## HTTP: Montage read routes vs a bare Fastify floor

What it measures: requests per second and latency of Montage's authenticated, rate-limited,
tenant-scoped read routes, against the "floor" of the same stack doing the least possible work
for a primary-key read (\`bench/floor-server.mjs\`: Fastify, one route, one primary-key
\`SELECT\`, no auth, no hooks, no logging), once on SQLite and once on PostgreSQL.

- Command: \`${command}\` (from the repository root; builds \`dist/\` first)
- Date: ${m.date} (start of the run); built from commit ${m.commit}
- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memory} RAM, ${m.os}
- Software: Node ${m.node}, Fastify ${packageVersion('fastify')}, better-sqlite3 ${packageVersion('better-sqlite3')}, pg ${packageVersion('pg')}${pgVersion ? `, PostgreSQL ${pgVersion}` : ''}, autocannon ${packageVersion('autocannon')}
- Load: autocannon in its own process, ${s.connections} connections, no pipelining; each measurement ${s.duration} s after a ${s.warmup} s warm-up (discarded); every response checked 2xx
- Rounds: ${s.rounds === 1 ? '1 (each figure is one measurement)' : `${s.rounds}, interleaved (floor, then each Montage route, per round); figures are medians over the rounds, "vs floor" the median of the per-round ratios`}
- Servers: each in its own Node process on 127.0.0.1. Montage: \`node ${montageNodeFlags().join(' ')} bin/montage.js serve --no-worker\` (the floor with the same node flags),
  \`MONTAGE_LOG_LEVEL=warn\`, business plan with limits set so high that the rate limiter runs but never refuses
  (in-memory limiter: no \`REDIS_URL\`). PostgreSQL: a fresh database per run, pg pool of 10 for both servers.
  The floor's SQLite is WAL with a prepared statement; its PostgreSQL query is a plain parameterised \`pool.query\`.

${t.md}

Targets (single-resource GET against its own engine's floor: >= ${TARGET_RATIO * 100}% of the floor's req/s and p99 < ${TARGET_P99_MS} ms):

${verdicts.map((v) => `- ${v.pass ? 'PASS' : '**FAIL**'}: ${v.text}`).join('\n')}

Notes: "vs floor" is Montage's req/s over the same engine's floor req/s. "server CPU" is the
server process's user + system time (from /proc) over the measured requests: the work of one
request, kernel socket writes included, and the steadiest figure when the machine is shared. The load generator,
the servers and PostgreSQL share the machine's ${m.nproc} CPUs, so absolute figures are lower
than on a dedicated load-test setup (the SQLite floor in particular is partly bounded by
autocannon itself); compare ratios rather than raw numbers across machines. With a closed loop of
${s.connections} connections the mean latency is about ${s.connections} / (req/s), so a p99 under ${TARGET_P99_MS} ms needs well over
${int((s.connections * 1000) / TARGET_P99_MS)} req/s: check the floor's own p99 before reading the latency target.
${cpuNote}`;

  return { text, markdown, pass: verdicts.every((v) => v.pass) };
}

export async function run() {
  const s = settings();
  s.loadAtStart = os.loadavg()[0];
  // Taken before the build, so the commit is the one that was built and measured.
  s.machine = machine();
  log(
    `HTTP benchmark: ${s.engines.join(' and ')}, ${s.connections} connections, ${s.rounds} round(s) of ` +
      `${s.warmup} s warm-up + ${s.duration} s per measurement${s.profile ? ', CPU-profiling the servers' : ''}`,
  );
  await build();
  const runs = [];
  for (const engine of s.engines) runs.push(await engineRun(s, engine));
  const result = report(s, runs);
  // CPU profiling slows the server: such figures do not go in the docs.
  return { ...result, writeDoc: !s.profile };
}

// The read benchmark of the soak's long form (bench/soak.mjs): bench/http.mjs's authenticated
// GET on PostgreSQL with the rate limits in Redis, against 1 API process, 2 API processes, and 2
// behind the proxy, with the CPU each part of the machine used.
import os from 'node:os';
import {
  autocannon,
  checkedJson,
  freePort,
  freshPostgres,
  makeTempDir,
  median,
  montageEnv,
  postgresBackendsCpu,
  postgresCpuBetween,
  processCpuSeconds,
  tables,
} from './lib.mjs';
import { accountWithKey, Deployment, startProxy } from './soak-deployment.mjs';

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n == null || Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US'));
const int = (n) => Math.round(n).toLocaleString('en-US');

async function redisPid(url) {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]) || null;
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

/** CPU seconds of each part of the system, for the split of a run's CPU time. */
async function cpuSnapshot(parts, storage) {
  return {
    api: parts.api.reduce((n, pid) => n + (processCpuSeconds(pid) ?? 0), 0),
    proxy: processCpuSeconds(parts.proxy) ?? 0,
    redis: parts.redis ? (processCpuSeconds(parts.redis) ?? 0) : 0,
    postgres: await postgresBackendsCpu(storage.url, storage.dbName),
  };
}

/**
 * The read benchmark of bench/http.mjs (an authenticated GET /v1/keys/:id, autocannon, 50
 * connections) on PostgreSQL with the rate limits in Redis, against 1 API process, against 2 (half
 * the connections each, two autocannon processes at once), and against 2 behind the proxy.
 */
export async function scaleRead(s) {
  const storage = { montageDir: makeTempDir('montage-scale-data-').dir, ...(await freshPostgres(s.postgresAdminUrl)) };
  const apiPorts = [await freePort(), await freePort()];
  const proxyPort = await freePort();
  const env = montageEnv('postgres', storage, 0, { REDIS_URL: s.redisUrl });
  const apiKey = await accountWithKey(s, env, 'scale@example.com', 'business');
  const deployment = new Deployment(s, env, apiPorts, 'scale');
  await Promise.all([deployment.startApi(0), deployment.startApi(1)]);
  const proxy = await startProxy(proxyPort, apiPorts);
  const headers = { authorization: `Bearer ${apiKey}` };
  const created = await checkedJson(
    await fetch(`http://127.0.0.1:${apiPorts[0]}/v1/keys`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'scale target' }) }),
    'POST /v1/keys',
    201,
  );
  const route = `/v1/keys/${created.id}`;
  for (const port of [...apiPorts, proxyPort]) {
    const one = await checkedJson(await fetch(`http://127.0.0.1:${port}${route}`, { headers }), `GET ${route} on ${port}`);
    if (one.id !== created.id) throw new Error(`GET ${route} on ${port} answered ${JSON.stringify(one)}`);
  }
  const parts = { api: deployment.api.map((p) => p.child.pid), proxy: proxy.child.pid, redis: await redisPid(s.redisUrl) };
  const c = s.scaleConnections;
  const configs = [
    { id: 'one', label: '1 API process', targets: [{ port: apiPorts[0], connections: c }] },
    { id: 'two', label: '2 API processes', targets: apiPorts.map((port) => ({ port, connections: c / 2 })) },
    { id: 'proxy', label: '2 API processes behind the proxy', targets: [{ port: proxyPort, connections: c }] },
  ];
  const load = (config, duration, title) =>
    Promise.all(config.targets.map((t) => autocannon(`http://127.0.0.1:${t.port}${route}`, { connections: t.connections, duration, headers, title: `${title} :${t.port}` })));
  const rounds = Object.fromEntries(configs.map((config) => [config.id, []]));
  for (let round = 1; round <= s.scaleRounds; round++) {
    for (const config of configs) {
      if (s.scaleWarmup > 0) await load(config, s.scaleWarmup, `${config.label} (warm-up)`);
      const before = await cpuSnapshot(parts, storage);
      const runs = await load(config, s.scaleDuration, config.label);
      const after = await cpuSnapshot(parts, storage);
      const seconds = s.scaleDuration;
      const figures = {
        rps: runs.reduce((n, r) => n + r.rps, 0),
        p99: Math.max(...runs.map((r) => r.p99)),
        p50: Math.max(...runs.map((r) => r.p50)),
        busyPct: median(runs.map((r) => r.cpu?.busyPct ?? NaN)),
        cores: {
          api: (after.api - before.api) / seconds,
          postgres: postgresCpuBetween(before.postgres, after.postgres) / seconds,
          redis: (after.redis - before.redis) / seconds,
          proxy: (after.proxy - before.proxy) / seconds,
        },
      };
      rounds[config.id].push(figures);
      log(`    round ${round}: ${config.label.padEnd(34)} ${int(figures.rps).padStart(7)} req/s  p99 ${ms(figures.p99).padStart(5)} ms  machine ${figures.busyPct.toFixed(0)}% busy`);
    }
  }
  await Promise.all([deployment.stop(), proxy.stop()]);
  const nproc = os.availableParallelism();
  const result = configs.map((config) => {
    const list = rounds[config.id];
    const pick = (f) => median(list.map(f));
    const cores = { api: pick((r) => r.cores.api), postgres: pick((r) => r.cores.postgres), redis: pick((r) => r.cores.redis), proxy: pick((r) => r.cores.proxy) };
    const busy = pick((r) => r.busyPct);
    cores.rest = Math.max(0, (busy / 100) * nproc - cores.api - cores.postgres - cores.redis - cores.proxy);
    return { ...config, rps: pick((r) => r.rps), p99: pick((r) => r.p99), p50: pick((r) => r.p50), busyPct: busy, cores, rounds: list.map((r) => r.rps) };
  });
  return { route, version: storage.version, nproc, configs: result };
}

/** The table and the explanation of scaleRead()'s figures, as text and as Markdown. */
export function scaleReport(s, scale) {
  const one = scale.configs.find((c) => c.id === 'one');
  const two = scale.configs.find((c) => c.id === 'two');
  const rows = scale.configs.map((c) => [
    c.label,
    int(c.rps),
    `${((100 * c.rps) / one.rps).toFixed(0)}%`,
    ms(c.p99),
    `${c.busyPct.toFixed(0)}%`,
    c.cores.api.toFixed(2),
    c.cores.postgres.toFixed(2),
    c.cores.redis.toFixed(2),
    c.cores.proxy.toFixed(2),
    c.cores.rest.toFixed(2),
  ]);
  const t = tables(
    ['deployment', 'req/s', 'vs 1', 'p99 ms', 'machine busy', 'API cores', 'PostgreSQL', 'Redis', 'proxy', 'rest (autocannon, kernel)'],
    rows,
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  const perRequest = (c) => ((1e6 * (c.cores.api + c.cores.postgres + c.cores.redis)) / c.rps).toFixed(0);
  const others = (c) => c.cores.postgres + c.cores.redis + c.cores.rest;
  const why =
    `One API process used ${one.cores.api.toFixed(2)} of a core (a Node process runs its JavaScript on one), with the machine ` +
    `${one.busyPct.toFixed(0)}% busy: PostgreSQL ${one.cores.postgres.toFixed(2)}, Redis ${one.cores.redis.toFixed(2)}, the load generator and ` +
    `kernel ${one.cores.rest.toFixed(2)}. Two API processes used ${two.cores.api.toFixed(2)} cores between them with the machine ` +
    `${two.busyPct.toFixed(0)}% busy, and served ${(two.rps / one.rps).toFixed(2)}× the requests. On ${scale.nproc} cores the cores are the limit: ` +
    `PostgreSQL, Redis and the load generator need about ${others(two).toFixed(1)} cores at this rate, which leaves the API processes ` +
    `about ${(scale.nproc - others(two)).toFixed(1)}, little more than one process already used; the second process can only take the idle ` +
    `time that was left (${Math.max(0, 100 - one.busyPct).toFixed(0)}% of the machine), and more processes and connections cost some of it ` +
    `(${perRequest(one)} µs of CPU per request in Montage, PostgreSQL and Redis with one process, ${perRequest(two)} µs with two). ` +
    `Behind the proxy the proxy itself takes ${scale.configs.find((c) => c.id === 'proxy').cores.proxy.toFixed(2)} of a core from the same two. ` +
    `With a core per API process and room for PostgreSQL and the clients, the second process adds about its own share; on this machine ` +
    `it buys availability (one process can die or restart while the other serves) more than speed.`;
  const text = `\nRead throughput (GET ${scale.route.replace(/key_\w+/, ':id')}, PostgreSQL, rate limits in Redis):\n${t.text}\n${why}`;
  const md = `### Read throughput: 1 vs 2 API processes

The read benchmark of the http section (\`GET /v1/keys/:id\`, authenticated, rate-limited, tenant-scoped;
autocannon, ${s.scaleConnections} connections, no pipelining, ${s.scaleWarmup} s warm-up then ${s.scaleDuration} s measured, every
answer checked 2xx) on PostgreSQL ${scale.version} with the rate limits in Redis (\`REDIS_URL\`, as a
multi-process deployment needs), against 1 API process, against 2 (two autocannon processes at once,
${s.scaleConnections / 2} connections each; req/s summed, p99 the higher of the two), and against 2 behind the proxy.
${s.scaleRounds === 1 ? '1 round' : `${s.scaleRounds} rounds, interleaved; figures are medians`}. The CPU columns are cores in use during the measured
run (CPU seconds per second, from \`/proc\`): the API processes together, PostgreSQL's backends for the
database, redis-server, the proxy; "rest" is the machine's busy time minus those (the load generator,
the kernel's network stack, anything else running).

${t.md}

${why}
`;
  return { text, md };
}

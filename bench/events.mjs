// Events benchmark: the event area's hot paths against a real Montage server process, on SQLite
// and on PostgreSQL (a fresh database each): seeding 100,000 tickets through the order API,
// door check-in, orders under contention, attendee pages, the streamed export and analytics.
// The load comes from bench/load-client.mjs (closed loop) or bench/rate-client.mjs (open loop, the
// check-in at its target rate), each in its own process. See bench/README.md.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import {
  adminQuery,
  backgroundLoad,
  build,
  checkedJson,
  commandLine,
  cpuTimes,
  cpuUsage,
  createAccountAndKey,
  freePort,
  freshPostgres,
  loadClient,
  machine,
  makeTempDir,
  MONTAGE_BIN,
  montageNodeFlags,
  montageEnv,
  packageVersion,
  percentile,
  median,
  postgresAdminUrl,
  postgresBackendsCpu,
  postgresCpuBetween,
  postgresReadsBetween,
  postgresReadsSettled,
  processCpuSeconds,
  processMemory,
  profiling,
  seconds,
  startProcess,
  tables,
  seeded as prng,
  waitForHttp,
} from './lib.mjs';

export const name = 'events';
export const description = 'Event area: seeding 100,000 tickets, check-in, orders under contention, attendee pages, export, analytics; SQLite and PostgreSQL';

/** Targets. */
const TARGETS = {
  checkinRate: { sqlite: 4000, postgres: 1500 },
  checkinP99Ms: 25,
  exportMs: 3000,
  exportGrowthMb: 50,
  analyticsMs: 100,
};

function settings() {
  const engines = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim()).filter(Boolean);
  for (const e of engines) if (e !== 'sqlite' && e !== 'postgres') throw new Error(`BENCH_ENGINES: unknown engine "${e}" (sqlite, postgres)`);
  const tickets = seconds('BENCH_EVENT_TICKETS', 100_000, 1000);
  if (tickets % 100 !== 0) throw new Error('BENCH_EVENT_TICKETS must be a multiple of 100 (orders of 100 tickets)');
  const s = {
    engines,
    tickets,
    checkins: seconds('BENCH_CHECKINS', 20_000, 100),
    checkinWarmup: seconds('BENCH_CHECKIN_WARMUP', 2_000, 0),
    checkinRounds: seconds('BENCH_CHECKIN_ROUNDS', 3),
    checkinSteadySeconds: seconds('BENCH_CHECKIN_STEADY', 5, 1),
    duration: seconds('BENCH_DURATION', 10),
    warmup: seconds('BENCH_WARMUP', 3, 0),
    connections: seconds('BENCH_CONNECTIONS', 50),
    seedConnections: seconds('BENCH_SEED_CONNECTIONS', 8),
    exportRuns: seconds('BENCH_EXPORT_RUNS', 3),
    analyticsRequests: seconds('BENCH_ANALYTICS_REQUESTS', 50),
    orderWarmup: seconds('BENCH_ORDER_WARMUP', 1000, 100),
    postgresAdminUrl: postgresAdminUrl(),
    profile: process.env.BENCH_PROFILE === '1',
    pgReads: process.env.BENCH_PG_READS === '1',
    serverNodeArgs: (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
    phases: choice('BENCH_EVENT_PHASES', PHASES),
    checkinVariants: choice('BENCH_CHECKIN_VARIANTS', CHECKIN_VARIANTS.map((v) => v.id)),
  };
  if (s.phases.includes('checkin')) {
    // Every variant checks in tickets of its own.
    const steady = Math.max(...engines.map((e) => steadyCheckins(s, e)));
    const needed = s.checkinVariants.length * (s.checkins + s.checkinWarmup + steady);
    if (needed > tickets) {
      throw new Error(`${s.checkinVariants.length} check-in variant(s) x (BENCH_CHECKINS + BENCH_CHECKIN_WARMUP + the steady run's ${steady}) = ${needed} exceed the ${tickets} tickets`);
    }
  }
  return s;
}

/** The check-in variants, side by side in one run (BENCH_CHECKIN_VARIANTS). */
const CHECKIN_VARIANTS = [
  { id: 'plain', label: 'check-in' },
  { id: 'list', label: 'check-in via a list' },
];

/** The phases after seeding, in order (BENCH_EVENT_PHASES; seeding always runs). */
const PHASES = ['checkin', 'attendees', 'export', 'analytics', 'orders'];

/** A comma-separated choice from `known`, in the order of `known`; all of them when unset. */
function choice(variable, known) {
  const raw = process.env[variable];
  if (!raw) return [...known];
  const picked = raw.split(',').map((p) => p.trim()).filter(Boolean);
  for (const p of picked) if (!known.includes(p)) throw new Error(`${variable}: unknown "${p}" (${known.join(', ')})`);
  if (picked.length === 0) throw new Error(`${variable}: name at least one of ${known.join(', ')}`);
  return known.filter((k) => picked.includes(k));
}

/** Check-ins of the steady run: the engine's target rate for BENCH_CHECKIN_STEADY seconds. */
const steadyCheckins = (s, engine) => TARGETS.checkinRate[engine] * s.checkinSteadySeconds;

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n == null || Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(2) : n.toFixed(1));
const int = (n) => Math.round(n).toLocaleString('en-US');
const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
const us = (n, pg) => (n == null ? '-' : pg == null ? int(n) : `${int(n)} + ${int(pg)}`);

// ---------------------------------------------------------------------------------------------
// Made-up but varied attendees: a seeded PRNG, names from several languages, and a few that
// CSV has to quote or defuse (a comma, a double quote, a leading "=" or "-").


const FIRST = [
  'Ada', 'Grace', 'Alan', 'Linus', 'Margaret', 'Katherine', 'Tim', 'Barbara', 'Dennis', 'Ken', 'Frances', 'Edsger', 'Donald', 'Radia', 'Hedy',
  'Zoë', 'José', 'Łukasz', 'Søren', 'Chloé', 'Jürgen', 'Ñuño', 'Aoife', 'Siobhán', 'Mei', 'Hiroshi', 'Yuki', 'Priya', 'Arjun', 'Fatima',
  'Omar', 'Amara', 'Kwame', 'Chidi', 'Ingrid', 'Lars', 'Olga', 'Dmitri', 'Ana', 'João', 'Lucía', 'Mateo', 'Noa', 'Elif', 'Mehmet', 'Thảo',
  'Minh', 'Sven', 'Astrid', 'Camille', 'Émile', 'Giulia', 'Marco', 'Nadia', 'Tariq', 'Leila', 'Kofi', 'Ama', 'Rosa', 'Pablo',
];
const LAST = [
  'Lovelace', 'Hopper', 'Turing', 'Torvalds', 'Hamilton', 'Johnson', 'Berners-Lee', 'Liskov', 'Ritchie', 'Thompson', 'Allen', 'Dijkstra',
  'Knuth', 'Perlman', 'Lamarr', 'Müller', 'García', 'Kowalski', 'Kierkegaard', 'Dubois', 'Schmidt', 'Núñez', "O'Brien", 'Ní Bhriain',
  'Wang', 'Nakamura', 'Tanaka', 'Sharma', 'Patel', 'Haddad', 'Okafor', 'Mensah', 'Andersen', 'Larsen', 'Ivanova', 'Petrov', 'Silva',
  'Santos', 'Fernández', 'Rossi', 'Bianchi', 'Yılmaz', 'Demir', 'Nguyễn', 'Trần', 'Lindqvist', 'Björk', 'Moreau', 'Leroy', 'Conti',
  'Khan', 'Rahman', 'Boateng', 'Asante', 'Cohen', 'Levi', 'van der Berg', 'de Vries', 'MacLeod', 'Smith, Jr.',
];
const ODD = ['Anne "Nan" Lee', '=Sum Total', '-Dash Rendell', '@Handle Person', '+Plus One'];

function emailPart(text) {
  return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '');
}

function makePeople(random) {
  let n = 0;
  return () => {
    n++;
    if (random() < 0.002) {
      const odd = ODD[Math.floor(random() * ODD.length)];
      return { name: odd, email: `${emailPart(odd) || 'odd'}.${n}@example.org` };
    }
    const first = FIRST[Math.floor(random() * FIRST.length)];
    const last = LAST[Math.floor(random() * LAST.length)];
    const domain = ['example.com', 'example.org', 'example.net', 'mail.example'][n % 4];
    return { name: `${first} ${last}`, email: `${emailPart(first)}.${emailPart(last)}.${n}@${domain}` };
  };
}

// ---------------------------------------------------------------------------------------------
// A keep-alive HTTP client for sequential reads from this process (analytics, export).

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** GET `url`; resolves to { status, ms (to the last byte), bytes, body (Buffer) }. */
function timedGet(url, headers, { keepBody = true } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.get(url, { headers, agent }, (res) => {
      const chunks = [];
      let bytes = 0;
      res.on('data', (chunk) => {
        bytes += chunk.length;
        if (keepBody) chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, ms: performance.now() - started, bytes, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------

/**
 * The Montage server of one engine. Without profiling it runs once for every phase; with
 * BENCH_PROFILE=1 it is restarted (same data) for each phase, so that each phase gets its own
 * CPU profile, summarised when the phase ends.
 */
async function montageServer(s, engine, storage) {
  const port = await freePort();
  const env = montageEnv(engine, storage, port);
  const apiKey = await createAccountAndKey(env);
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${apiKey}` };
  let current = null;

  async function start(phase) {
    const prof = profiling(s.profile, `events-${engine}-${phase}`);
    const proc = startProcess(`montage serve (${engine})`, process.execPath, [...prof.nodeArgs, ...montageNodeFlags(), ...s.serverNodeArgs, MONTAGE_BIN, 'serve', '--no-worker'], { env });
    await waitForHttp(proc, `${base}/healthz`);
    current = { proc, prof, phase };
  }
  async function stop(requests) {
    if (!current) return;
    const { proc, prof, phase } = current;
    current = null;
    await proc.stop();
    const { code, signal } = proc.exitInfo ?? {};
    if (code) throw new Error(`${proc.label} exited with code ${code} (signal ${signal}):\n${proc.output()}`);
    prof.report(`${proc.label}, phase "${phase}"`, requests);
  }

  const api = async (method, route, body, status = method === 'POST' ? 201 : 200) => {
    const res = await fetch(`${base}${route}`, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return checkedJson(res, `${method} ${route}`, status);
  };

  return {
    base,
    headers,
    api,
    get pid() {
      return current?.proc.child.pid;
    },
    /** Why the server is gone, or null while it runs. */
    death() {
      const info = current?.proc.exitInfo;
      return info ? `${current.proc.label} exited (code ${info.code}, signal ${info.signal}):\n${current.proc.output().slice(-4000)}` : null;
    },
    /** Called at the start of each phase; `requestsBefore`: what the previous phase served. */
    async phase(name, requestsBefore = 0) {
      if (!current) return start(name);
      if (!s.profile) return;
      await stop(requestsBefore);
      await start(name);
    },
    stop,
  };
}

/** Runs the load client and logs a line; throws unless every answer had an expected status. */
async function load(s, storage, title, spec, bodies, { allow = spec.expect ?? [200] } = {}) {
  const before = cpuTimes();
  const pid = storage.server?.pid;
  const serverBefore = pid ? processCpuSeconds(pid) : null;
  const readsBefore = s.pgReads && storage.url ? await postgresReadsSettled(storage.url) : null;
  const pgBefore = storage.url ? await postgresBackendsCpu(storage.url, storage.dbName) : null;
  const r = await loadClient(storage.tmpDir, { title, ...spec }, bodies);
  const pgAfter = storage.url ? await postgresBackendsCpu(storage.url, storage.dbName) : null;
  if (readsBefore) r.pgReads = postgresReadsBetween(readsBefore, await postgresReadsSettled(storage.url), r.requests);
  const death = storage.server?.death();
  if (death) throw new Error(`${title}: the server died under load: ${death}`);
  r.cpu = cpuUsage(before, cpuTimes());
  const serverAfter = pid ? processCpuSeconds(pid) : null;
  r.serverUsPerRequest = serverBefore !== null && serverAfter !== null && r.requests ? ((serverAfter - serverBefore) * 1e6) / r.requests : null;
  r.pgUsPerRequest = pgBefore && r.requests ? (postgresCpuBetween(pgBefore, pgAfter) * 1e6) / r.requests : null;
  const unexpected = Object.entries(r.statuses).filter(([code]) => !allow.includes(Number(code)));
  const cpu =
    (r.serverUsPerRequest !== null ? `; server CPU ${int(r.serverUsPerRequest)} us/request` : '') +
    (r.pgUsPerRequest !== null ? `, PostgreSQL ${int(r.pgUsPerRequest)} us/request` : '') +
    (r.cpu ? `; machine CPU ${r.cpu.busyPct.toFixed(0)}% busy, ${r.cpu.stealPct.toFixed(0)}% steal` : '');
  const codes = Object.entries(r.statuses).map(([c, n]) => `${c}: ${int(n)}`).join(', ');
  log(`    ${title.padEnd(44)} ${int(r.rate).padStart(7)}/s  p50 ${ms(r.latency.p50).padStart(5)} ms  p99 ${ms(r.latency.p99).padStart(5)} ms  (${int(r.requests)} requests, ${codes}${cpu})`);
  if (r.pgReads) {
    const top = r.pgReads.slice(0, 6).map((x) => `${x.name} ${x.scans.toFixed(2)} scans, ${x.rows.toFixed(1)} rows`);
    log(`      PostgreSQL reads per request: ${top.join('; ') || 'none'}`);
  }
  if (r.requests === 0) throw new Error(`${title}: not one answer within the run`);
  if (unexpected.length || r.errors || r.timeouts) {
    throw new Error(`${title}: unexpected answers (${codes}; ${r.errors} connection errors, ${r.timeouts} timeouts); codes ${JSON.stringify(r.codes)}; e.g. ${r.samples.join(' | ')}`);
  }
  return r;
}

/**
 * Waits until the server (and its PostgreSQL backends) are idle: a timed load run ends with
 * requests in flight that the server still works on, and they must not slow the next measurement.
 */
async function settle(storage, { quietMs = 300, maxMs = 60_000 } = {}) {
  const pid = storage.server?.pid;
  if (!pid) return;
  const deadline = Date.now() + maxMs;
  const usage = async () => (processCpuSeconds(pid) ?? 0) + (storage.url ? [...(await postgresBackendsCpu(storage.url, storage.dbName)).values()].reduce((a, b) => a + b, 0) : 0);
  let last = await usage();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = await usage();
    // Under 5% of a CPU over the interval: idle.
    if (now - last < (0.05 * quietMs) / 1000) return;
    last = now;
  }
  log(`    (the server was still busy ${maxMs / 1000} s after the run)`);
}

const FUTURE = (days, hours = 0) => new Date(Date.now() + days * 86_400_000 + hours * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');

async function createEvent(m, name, types) {
  const event = await m.api('POST', '/v1/events', {
    name,
    startsAt: FUTURE(30),
    endsAt: FUTURE(30, 10),
    timezone: 'Europe/Berlin',
    currency: 'EUR',
    venue: { name: 'Hall 7', city: 'Berlin', country: 'DE' },
  });
  const created = [];
  for (const t of types) created.push(await m.api('POST', `/v1/events/${event.id}/tickets`, t));
  await m.api('POST', `/v1/events/${event.id}/publish`, undefined, 200);
  return { id: event.id, types: created };
}

// ---------------------------------------------------------------------------------------------
// The phases of one engine

/** 100,000 tickets through the API: orders of 100 (70 general, 20 VIP, 10 early bird), each ticket its own attendee. */
async function seed(s, m, storage, results) {
  await m.phase('seed');
  const orders = s.tickets / 100;
  const split = [
    { name: 'General admission', price: 4500, per: 70 },
    { name: 'VIP', price: 12000, per: 20 },
    { name: 'Early bird', price: 3500, per: 10 },
  ];
  const big = await createEvent(
    m,
    'Benchmark festival',
    split.map((t) => ({ name: t.name, price: t.price, quantity: t.per * orders })),
  );
  const person = makePeople(prng(42));
  const bodies = [];
  for (let i = 0; i < orders; i++) {
    bodies.push({
      buyer: person(),
      items: big.types.map((type, k) => ({ ticketTypeId: type.id, quantity: split[k].per, attendees: Array.from({ length: split[k].per }, person) })),
    });
  }
  const ticketsFile = path.join(storage.tmpDir, 'tickets.txt');
  const r = await load(
    s,
    storage,
    `seed: ${int(orders)} orders of 100 tickets (${s.seedConnections} conns)`,
    { origin: m.base, method: 'POST', path: `/v1/events/${big.id}/orders`, headers: { ...m.headers, 'content-type': 'application/json' }, connections: s.seedConnections, amount: orders, expect: [201], collect: 'tickets', ticketsFile },
    bodies,
  );
  if (r.tickets !== s.tickets) throw new Error(`seeding issued ${r.tickets} tickets, expected ${s.tickets}`);
  const tickets = fs
    .readFileSync(ticketsFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [id, code] = line.split(' ');
      return { id, code };
    });
  if (new Set(tickets.map((t) => t.id)).size !== s.tickets) throw new Error('seeding: ticket ids are not distinct');
  results.seed = { orders, tickets: r.tickets, seconds: r.elapsedMs / 1000, us: r.serverUsPerRequest, pgUs: r.pgUsPerRequest, ordersPerSec: r.rate, ticketsPerSec: (r.tickets * 1000) / r.elapsedMs, p50: r.latency.p50, p99: r.latency.p99 };
  return { big, tickets, requests: r.requests };
}

/**
 * Check-in of distinct tickets in random order, half by ticketId and half by code, in two variants
 * side by side: the event-wide check-in (no list) and the same scans through a check-in list
 * (`listId` and a `scanId`, as a scanner sends them; the list admits once, every ticket type). Each
 * variant has tickets of its own; their warm-ups, rounds and open-loop runs alternate, so that the
 * machine's load hits both alike. Verified: every answer 201; the variant without a list adds up to
 * the analytics' `checkedIn`, the list variant to the list's admitted entries and tickets.
 */
async function checkin(s, m, storage, big, tickets, results) {
  const random = prng(7);
  const order = tickets.map((t) => t);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const list = await m.api('POST', `/v1/events/${big.id}/checkin-lists`, { name: 'Main entrance' });
  const gates = ['north', 'south', 'east', 'west'];
  const plainBody = (t, i) => (i % 2 ? { code: t.code, gate: gates[i % 4] } : { ticketId: t.id, gate: gates[i % 4] });
  const spec = { origin: m.base, method: 'POST', path: `/v1/events/${big.id}/checkin`, headers: { ...m.headers, 'content-type': 'application/json' }, connections: s.connections, expect: [201] };
  const rate = TARGETS.checkinRate[storage.engine];
  const steadyCount = steadyCheckins(s, storage.engine);
  const per = s.checkinWarmup + s.checkins + steadyCount;
  const variants = CHECKIN_VARIANTS.filter((v) => s.checkinVariants.includes(v.id)).map((v, k) => {
    const mine = order.slice(k * per, (k + 1) * per);
    return {
      ...v,
      body: v.id === 'list' ? (t, i) => ({ ...plainBody(t, i), listId: list.id, scanId: `bench-${i}` }) : plainBody,
      warm: mine.slice(0, s.checkinWarmup),
      measured: mine.slice(s.checkinWarmup, s.checkinWarmup + s.checkins),
      tail: mine.slice(s.checkinWarmup + s.checkins),
      rounds: [],
      created: 0,
      onlyCreated: true,
    };
  });
  let served = 0;
  const count = (v, r) => {
    served += r.requests;
    v.created += r.statuses[201] ?? 0;
    v.onlyCreated &&= Object.keys(r.statuses).every((c) => c === '201') && r.errors === 0 && r.timeouts === 0;
  };
  for (const v of variants) {
    if (v.warm.length) count(v, await load(s, storage, `${v.label} warm-up (${int(v.warm.length)}, discarded)`, { ...spec, amount: v.warm.length }, v.warm.map(v.body)));
  }
  // The measured tickets in rounds (each its own load run): the figures are the medians over the
  // rounds, so that a burst of other work on the machine moves one round, not the result.
  const size = Math.ceil(s.checkins / s.checkinRounds);
  for (let k = 0; k < s.checkinRounds; k++) {
    await analyzeAsAutovacuum(storage, results);
    for (const v of variants) {
      const part = v.measured.slice(k * size, (k + 1) * size);
      if (part.length === 0) continue;
      const offset = v.warm.length + k * size;
      const r = await load(s, storage, `${v.label} round ${k + 1}: ${int(part.length)} distinct tickets`, { ...spec, amount: part.length }, part.map((t, i) => v.body(t, offset + i)));
      count(v, r);
      v.rounds.push(r);
    }
  }
  // Then the latency of serving the target rate: requests on a fixed schedule (open loop), not
  // as fast as 50 connections can turn them round (a saturated server's latency is its queue).
  await analyzeAsAutovacuum(storage, results);
  for (const v of variants) {
    await settle(storage);
    const offset = v.warm.length + v.measured.length;
    v.steady = await load(s, storage, `${v.label} at ${int(rate)}/s: ${int(v.tail.length)} distinct tickets`, { ...spec, rate, amount: v.tail.length }, v.tail.map((t, i) => v.body(t, offset + i)));
    count(v, v.steady);
  }
  const analytics = await m.api('GET', `/v1/events/${big.id}/analytics`);
  const counts = (await m.api('GET', `/v1/events/${big.id}/checkin-lists/${list.id}`)).counts;
  for (const v of variants) {
    const { rounds, steady } = v;
    const mid = (f) => median(rounds.map(f));
    const verified = v.onlyCreated && (v.id === 'list' ? counts.entries === v.created && counts.admittedTickets === v.created : analytics.checkedIn === v.created);
    results[v.id === 'list' ? 'checkinList' : 'checkin'] = {
      label: v.label,
      requests: rounds.reduce((n, r) => n + r.requests, 0),
      rounds: rounds.length,
      rate: mid((r) => r.rate),
      rates: rounds.map((r) => r.rate),
      us: mid((r) => r.serverUsPerRequest),
      pgUs: rounds[0].pgUsPerRequest === null ? null : mid((r) => r.pgUsPerRequest),
      p50: mid((r) => r.latency.p50),
      p99: mid((r) => r.latency.p99),
      p99s: rounds.map((r) => r.latency.p99),
      cpu: rounds[Math.floor(rounds.length / 2)].cpu,
      steady: { offered: rate, rate: steady.rate, requests: steady.requests, p50: steady.latency.p50, p99: steady.latency.p99, max: steady.latency.max, lateStarts: steady.lateStarts, us: steady.serverUsPerRequest, pgUs: steady.pgUsPerRequest },
      created: v.created,
      checkedIn: analytics.checkedIn,
      listCounts: v.id === 'list' ? counts : null,
      verified,
    };
    if (!verified) {
      throw new Error(
        v.id === 'list'
          ? `check-in through a list: ${v.created} answers 201 but the list counts ${JSON.stringify(counts)}`
          : `check-in: ${v.created} answers 201 but analytics says checkedIn ${analytics.checkedIn}`,
      );
    }
  }
  return served;
}

/** Attendee pages: the first page of 100, and a name/email search. */
async function attendees(s, m, storage, big, results) {
  const variants = [
    { id: 'page', label: 'GET /attendees?limit=100', query: 'limit=100' },
    { id: 'search', label: 'GET /attendees?limit=100&q=nakamura', query: 'limit=100&q=nakamura' },
  ];
  let served = 0;
  results.attendees = [];
  for (const v of variants) {
    const route = `/v1/events/${big.id}/attendees?${v.query}`;
    const page = await m.api('GET', route);
    if (page.data.length === 0 || (page.data.length !== 100 && page.hasMore) || (v.id === 'page' && !page.hasMore)) throw new Error(`${v.label}: ${page.data.length} rows, hasMore ${page.hasMore}`);
    if (v.id === 'search' && !page.data.every((a) => `${a.name} ${a.email}`.toLowerCase().includes('nakamura'))) throw new Error(`${v.label}: a row does not match`);
    const spec = { origin: m.base, method: 'GET', path: route, headers: m.headers, connections: s.connections, expect: [200] };
    if (s.warmup) served += (await load(s, storage, `${v.label} (warm-up)`, { ...spec, duration: s.warmup })).requests;
    await settle(storage);
    const r = await load(s, storage, v.label, { ...spec, duration: s.duration });
    served += r.requests;
    await settle(storage);
    results.attendees.push({ label: v.label, rate: r.rate, us: r.serverUsPerRequest, pgUs: r.pgUsPerRequest, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests });
  }
  return served;
}

/**
 * The export, CSV and NDJSON, `s.exportRuns` times each: time to the last byte, and the
 * server's RSS sampled every 20 ms from /proc (peak minus the RSS just before the request).
 * Every run's content is checked: row count, distinct ticket ids, checked-in rows.
 */
async function exportRuns(s, m, big, expectedCheckedIn, results) {
  results.export = {};
  for (const format of ['csv', 'json']) {
    const runs = [];
    for (let i = 0; i < s.exportRuns; i++) {
      const pid = m.pid;
      const baseline = processMemory(pid).rss;
      let peak = baseline;
      const timer = setInterval(() => {
        const mem = processMemory(pid);
        if (mem && mem.rss > peak) peak = mem.rss;
      }, 20);
      let res;
      try {
        res = await timedGet(`${m.base}/v1/events/${big.id}/attendees/export?format=${format}`, m.headers);
      } finally {
        clearInterval(timer);
      }
      const after = processMemory(pid).rss;
      peak = Math.max(peak, after);
      if (res.status !== 200) throw new Error(`export ${format}: status ${res.status}: ${res.body.toString('utf8', 0, 500)}`);
      const text = res.body.toString('utf8');
      let rows;
      if (format === 'csv') {
        const records = parseCsv(text, { columns: true, relax_quotes: false });
        rows = records.map((r) => ({ ticketId: r.ticketId, checkedIn: r.checkedIn === 'true' }));
        if (!text.startsWith('ticketId,orderId,name,email,ticketTypeId,ticketTypeName,checkedIn,checkedInAt\r\n')) throw new Error('export csv: unexpected header');
      } else {
        rows = text
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line));
      }
      const distinct = new Set(rows.map((r) => r.ticketId)).size;
      const checkedIn = rows.filter((r) => r.checkedIn).length;
      if (rows.length !== s.tickets || distinct !== s.tickets || checkedIn !== expectedCheckedIn) {
        throw new Error(`export ${format}: ${rows.length} rows, ${distinct} distinct tickets, ${checkedIn} checked in; expected ${s.tickets}, ${s.tickets}, ${expectedCheckedIn}`);
      }
      runs.push({ ms: res.ms, bytes: res.bytes, rows: rows.length, growth: peak - baseline, baseline });
      log(`    export ${format === 'csv' ? 'CSV   ' : 'NDJSON'} run ${i + 1}: ${ms(res.ms)} ms to the last byte, ${mb(res.bytes)} MB, ${int(rows.length)} rows (checked), RSS ${mb(baseline)} -> peak ${mb(peak)} MB (+${mb(peak - baseline)})`);
    }
    results.export[format] = {
      runs,
      medianMs: median(runs.map((r) => r.ms)),
      maxMs: Math.max(...runs.map((r) => r.ms)),
      bytes: runs[0].bytes,
      rows: runs[0].rows,
      firstGrowth: runs[0].growth,
      maxGrowth: Math.max(...runs.map((r) => r.growth)),
    };
  }
  return 2 * s.exportRuns;
}

/** Analytics on the big event: 10 warm-up requests, then `analyticsRequests` sequential ones. */
async function analytics(s, m, big, expected, results) {
  results.analytics = [];
  const routes = [
    { label: 'GET /analytics', route: `/v1/events/${big.id}/analytics` },
    { label: 'GET /analytics/sales?interval=hour', route: `/v1/events/${big.id}/analytics/sales?interval=hour` },
  ];
  const totals = await m.api('GET', routes[0].route);
  if (totals.ticketsSold !== expected.sold || totals.checkedIn !== expected.checkedIn) throw new Error(`analytics: ${JSON.stringify(totals)}; expected sold ${expected.sold}, checkedIn ${expected.checkedIn}`);
  const sales = await m.api('GET', routes[1].route);
  const soldInBuckets = sales.buckets.reduce((n, b) => n + b.ticketsSold, 0);
  if (soldInBuckets !== expected.sold) throw new Error(`analytics/sales: buckets add up to ${soldInBuckets}, expected ${expected.sold}`);
  for (const { label, route } of routes) {
    for (let i = 0; i < 10; i++) await timedGet(`${m.base}${route}`, m.headers, { keepBody: false });
    const times = [];
    for (let i = 0; i < s.analyticsRequests; i++) {
      const res = await timedGet(`${m.base}${route}`, m.headers, { keepBody: false });
      if (res.status !== 200) throw new Error(`${label}: status ${res.status}`);
      times.push(res.ms);
    }
    const row = { label, median: median(times), p99: percentile(times, 99), max: Math.max(...times), n: times.length };
    results.analytics.push(row);
    log(`    ${label.padEnd(44)} median ${ms(row.median)} ms, p99 ${ms(row.p99)} ms over ${row.n} sequential requests`);
  }
  return routes.length * (10 + s.analyticsRequests) + 2;
}

/**
 * Orders on 3 hot ticket types of another event (stock too large to sell out), 1-4 tickets each,
 * then a sell-out check: 2,000 orders at once for 3 x 300 tickets must issue exactly 900.
 */
async function contention(s, m, storage, results) {
  const hot = await createEvent(m, 'Contention night', [
    { name: 'Standing', price: 3000, quantity: 1_000_000 },
    { name: 'Seated', price: 5000, quantity: 1_000_000 },
    { name: 'Balcony', price: 4000, quantity: 1_000_000 },
  ]);
  const random = prng(99);
  const person = makePeople(prng(123));
  const bodies = Array.from({ length: 60_000 }, () => {
    const type = hot.types[Math.floor(random() * 3)];
    const quantity = 1 + Math.floor(random() * 4);
    return { buyer: person(), items: [{ ticketTypeId: type.id, quantity, attendees: Array.from({ length: quantity }, person) }] };
  });
  const spec = { origin: m.base, method: 'POST', path: `/v1/events/${hot.id}/orders`, headers: { ...m.headers, 'content-type': 'application/json' }, connections: s.connections, expect: [201], collect: 'tickets' };
  // Both runs are counts of orders, not times: a timed run would end with orders in flight whose
  // tickets are issued but whose answers are never read, and the check below must add up.
  const warm = await load(s, storage, `orders on 3 hot types (warm-up, ${int(s.orderWarmup)})`, { ...spec, amount: s.orderWarmup }, bodies);
  let issued = warm.tickets;
  let served = warm.requests;
  const amount = Math.min(bodies.length, Math.max(500, Math.round(warm.rate * s.duration)));
  const r = await load(s, storage, `orders on 3 hot ticket types (${int(amount)})`, { ...spec, amount }, bodies.slice(s.orderWarmup).concat(bodies.slice(0, s.orderWarmup)));
  issued += r.tickets;
  served += r.requests;
  const types = (await m.api('GET', `/v1/events/${hot.id}/tickets`)).data;
  const sold = types.reduce((n, t) => n + t.sold, 0);
  const totals = await m.api('GET', `/v1/events/${hot.id}/analytics`);
  const oversold = types.some((t) => t.sold > t.quantity);
  const verified = sold === issued && totals.ticketsSold === issued && !oversold;
  if (!verified) throw new Error(`orders: ${issued} tickets issued in 201 answers, ticket types say ${sold} sold, analytics ${totals.ticketsSold}`);

  // The same orders as pending ones (manual payment): each holds its places until it expires
  // (holdMinutes, longer than the run) and issues no ticket. Same bodies, count and connections,
  // on an event of its own, so the two rates compare the two write paths.
  const held = await createEvent(m, 'Pending night', [
    { name: 'Standing', price: 3000, quantity: 1_000_000 },
    { name: 'Seated', price: 5000, quantity: 1_000_000 },
    { name: 'Balcony', price: 4000, quantity: 1_000_000 },
  ]);
  await m.api('PATCH', `/v1/events/${held.id}`, { holdMinutes: 1440 });
  const byType = new Map(hot.types.map((t, i) => [t.id, held.types[i].id]));
  const pendingBodies = bodies.map((b) => ({ ...b, payment: { provider: 'manual' }, items: b.items.map((item) => ({ ...item, ticketTypeId: byType.get(item.ticketTypeId) })) }));
  const pendingSpec = { ...spec, path: `/v1/events/${held.id}/orders`, collect: undefined };
  const pendingWarm = await load(s, storage, `pending orders on 3 hot types (warm-up, ${int(s.orderWarmup)})`, { ...pendingSpec, amount: s.orderWarmup }, pendingBodies);
  const pending = await load(s, storage, `pending orders on 3 hot ticket types (${int(amount)})`, { ...pendingSpec, amount }, pendingBodies.slice(s.orderWarmup).concat(pendingBodies.slice(0, s.orderWarmup)));
  served += pendingWarm.requests + pending.requests;
  const heldTypes = (await m.api('GET', `/v1/events/${held.id}/tickets`)).data;
  const heldTotals = await m.api('GET', `/v1/events/${held.id}/analytics`);
  const placesAsked = pendingBodies.slice(0, pendingWarm.requests).concat(pendingBodies.slice(s.orderWarmup, s.orderWarmup + pending.requests)).reduce((n, b) => n + b.items[0].quantity, 0);
  const heldPlaces = heldTypes.reduce((n, t) => n + t.held, 0);
  const pendingVerified = heldPlaces === placesAsked && heldTotals.ticketsHeld === placesAsked && heldTotals.ordersPending === pendingWarm.requests + pending.requests && heldTotals.ticketsSold === 0;
  if (!pendingVerified) throw new Error(`pending orders: ${placesAsked} places asked, types hold ${heldPlaces}, analytics ${heldTotals.ticketsHeld} held in ${heldTotals.ordersPending} orders, ${heldTotals.ticketsSold} sold`);

  // Sell-out: more demand than stock; exactly the stock is issued, the rest is 409 sold_out.
  const small = await createEvent(m, 'Sell-out night', [
    { name: 'A', price: 2000, quantity: 300 },
    { name: 'B', price: 2500, quantity: 300 },
    { name: 'C', price: 3000, quantity: 300 },
  ]);
  const rushBodies = Array.from({ length: 2000 }, (_, i) => {
    const quantity = 1 + Math.floor(random() * 3);
    return { buyer: person(), items: [{ ticketTypeId: small.types[i % 3].id, quantity }] };
  });
  const rush = await load(
    s,
    storage,
    'sell-out: 2,000 orders for 3 x 300 tickets',
    { ...spec, path: `/v1/events/${small.id}/orders`, amount: rushBodies.length, expect: [201] },
    rushBodies,
    { allow: [201, 409] },
  );
  served += rush.requests;
  const smallTypes = (await m.api('GET', `/v1/events/${small.id}/tickets`)).data;
  const smallSold = smallTypes.reduce((n, t) => n + t.sold, 0);
  const refusals = Object.entries(rush.codes);
  const rushOk = rush.tickets === 900 && smallSold === 900 && smallTypes.every((t) => t.sold === 300 && t.available === 0) && refusals.every(([c]) => c === '409 sold_out');
  if (!rushOk) throw new Error(`sell-out: ${rush.tickets} tickets in 201 answers, types sold ${smallTypes.map((t) => t.sold).join('/')}, refusals ${JSON.stringify(rush.codes)}`);
  results.orders = {
    requests: r.requests,
    rate: r.rate,
    us: r.serverUsPerRequest,
    pgUs: r.pgUsPerRequest,
    ticketsPerSec: (r.tickets * 1000) / r.elapsedMs,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpu: r.cpu,
    issued,
    sold,
    verified,
    pending: { requests: pending.requests, rate: pending.rate, us: pending.serverUsPerRequest, pgUs: pending.pgUsPerRequest, p50: pending.latency.p50, p99: pending.latency.p99, held: heldPlaces, orders: heldTotals.ordersPending, ratio: pending.rate / r.rate },
    rush: { orders: rush.requests, us: rush.serverUsPerRequest, pgUs: rush.pgUsPerRequest, created: rush.statuses[201] ?? 0, soldOut: rush.codes['409 sold_out'] ?? 0, tickets: rush.tickets, rate: rush.rate, p99: rush.latency.p99 },
  };
  return served;
}

/**
 * PostgreSQL plans from table statistics, which autovacuum refreshes about a minute after a bulk
 * load (when it is on). Right after seeding they describe near-empty tables, so the first reads
 * are timed as they are, then ANALYZE runs (what autovacuum would do) and the rest is measured on
 * fresh statistics.
 */
async function analyzeAfterSeeding(m, storage, big, results) {
  const autovacuum = (await adminQuery(storage.url, 'show autovacuum')).rows[0].autovacuum;
  const times = [];
  for (let i = 0; i < 3; i++) {
    const res = await timedGet(`${m.base}/v1/events/${big.id}/attendees?limit=100`, m.headers, { keepBody: false });
    if (res.status !== 200) throw new Error(`GET attendees before ANALYZE: status ${res.status}`);
    times.push(res.ms);
  }
  const started = performance.now();
  await adminQuery(storage.url, 'analyze');
  const analyzeMs = performance.now() - started;
  const after = (await timedGet(`${m.base}/v1/events/${big.id}/attendees?limit=100`, m.headers, { keepBody: false })).ms;
  results.staleStats = { autovacuum, pageMs: median(times), analyzeMs, afterMs: after };
  log(
    `    statistics: autovacuum is ${autovacuum}; GET /attendees?limit=100 on the statistics of before the seeding: ${ms(median(times))} ms (median of 3, one at a time); ` +
      `ANALYZE took ${ms(analyzeMs)} ms; after it: ${ms(after)} ms`,
  );
}

/**
 * Between the check-in's load runs, on a PostgreSQL server whose autovacuum is off: ANALYZE, as
 * autovacuum's auto-analyze would while the scan tables grow (it analyzes a table once 10 % of it
 * changed). Without it the plans stay those of the nearly empty tables of before the first scan,
 * and a list's check-in reads every earlier scan sequentially: its PostgreSQL CPU per check-in
 * grew from 2.0 to 5.4 ms over three rounds of 5,000 (with it: 0.7 ms, flat). Not timed.
 */
async function analyzeAsAutovacuum(storage, results) {
  if (storage.engine !== 'postgres' || results.staleStats?.autovacuum !== 'off') return;
  await adminQuery(storage.url, 'analyze');
}

async function engineRun(s, engine) {
  const idle = await backgroundLoad();
  log(`\n[${engine}] (before it starts, the machine is ${idle ? `${idle.busyPct.toFixed(0)}% busy with other work` : 'of unknown load'})`);
  const storage = { engine, montageDir: makeTempDir(`montage-bench-events-${engine}-`).dir };
  storage.tmpDir = makeTempDir(`montage-bench-events-load-${engine}-`).dir;
  if (engine === 'postgres') {
    Object.assign(storage, await freshPostgres(s.postgresAdminUrl));
    log(`    fresh database ${storage.dbName} (PostgreSQL ${storage.version})`);
  }
  const m = await montageServer(s, engine, storage);
  storage.server = m;
  const results = { engine, version: storage.version, background: idle };
  const started = Date.now();

  const { big, tickets, requests: seeded } = await seed(s, m, storage, results);
  if (engine === 'postgres') await analyzeAfterSeeding(m, storage, big, results);
  const has = (phase) => s.phases.includes(phase);
  let served = seeded;
  if (has('checkin')) {
    await m.phase('checkin', served);
    served = await checkin(s, m, storage, big, tickets, results);
  }
  // Without the check-in phase nothing is checked in.
  const checkedIn = results.checkin?.checkedIn ?? results.checkinList?.checkedIn ?? 0;
  if (has('attendees')) {
    await m.phase('attendees', served);
    served = await attendees(s, m, storage, big, results);
  }
  if (has('export')) {
    await m.phase('export', served);
    served = await exportRuns(s, m, big, checkedIn, results);
  }
  if (has('analytics')) {
    await m.phase('analytics', served);
    served = await analytics(s, m, big, { sold: s.tickets, checkedIn }, results);
  }
  if (has('orders')) {
    await m.phase('orders', served);
    served = await contention(s, m, storage, results);
  }
  await m.stop(served);
  results.seconds = (Date.now() - started) / 1000;
  log(`    ${engine} done in ${Math.round(results.seconds)} s`);
  return results;
}

// ---------------------------------------------------------------------------------------------

/** The rows and verdicts of one check-in variant (`c`: results.checkin or results.checkinList) of engine `e`. */
function checkinReport(s, e, c, writes, verdicts) {
  const what = c.listCounts ? `${int(c.created)} x 201 = the list's entries ${int(c.listCounts.entries)} and admitted tickets ${int(c.listCounts.admittedTickets)}` : `${int(c.created)} x 201 = checkedIn ${int(c.checkedIn)}`;
  writes.push([e, `${c.label}, ${int(c.requests)} distinct tickets in ${c.rounds} rounds, ${s.connections} conns (closed loop)`, `${int(c.rate)} check-ins/s (rounds ${c.rates.map(int).join(' / ')})`, ms(c.p50), ms(c.p99), us(c.us, c.pgUs), `${what}, no other answer`]);
  const st = c.steady;
  writes.push([e, `${c.label} at ${int(st.offered)}/s, ${int(st.requests)} distinct tickets, <= ${s.connections} conns (open loop)`, `${int(st.rate)} check-ins/s served`, ms(st.p50), ms(st.p99), us(st.us, st.pgUs), `max ${ms(st.max)} ms; ${int(st.lateStarts)} requests waited for a connection`]);
  const rateTarget = TARGETS.checkinRate[e];
  const rateOk = c.rate >= rateTarget;
  // The latency target holds if the p99 is under it while serving the target rate: either in
  // the saturated closed loop, in most rounds each of which also reached the rate, or in the
  // open loop at the rate, which must keep up with its schedule (within 3 %: timer slack).
  const keptUp = st.rate >= 0.97 * st.offered;
  const roundsOk = c.rates.filter((rate, k) => rate >= rateTarget && c.p99s[k] < TARGETS.checkinP99Ms).length;
  const closedOk = roundsOk * 2 > c.rounds;
  const steadyOk = keptUp && st.p99 < TARGETS.checkinP99Ms;
  verdicts.push({
    pass: rateOk && (closedOk || steadyOk),
    text:
      `${e}: ${c.label} >= ${int(rateTarget)}/s: ${int(c.rate)}/s ${verdict(rateOk)} (closed loop, ${s.connections} connections, median of ${c.rounds} rounds); ` +
      `p99 < ${TARGETS.checkinP99Ms} ms: ${verdict(closedOk || steadyOk)}, in the closed loop ${ms(c.p99)} ms (rounds ${c.p99s.map(ms).join(' / ')}, ${roundsOk} of ${c.rounds} at the rate and under it; ` +
      `mostly its queue of ${s.connections} requests), at ${int(rateTarget)}/s in the open loop ${ms(st.p99)} ms` +
      (keptUp ? '' : ` but only ${int(st.rate)}/s served`),
  });
}

function report(s, runs) {
  const verdicts = [];
  const writes = [];
  for (const r of runs) {
    const e = r.engine;
    writes.push([e, `seed: ${int(r.seed.orders)} orders x 100 tickets, ${s.seedConnections} conns`, `${int(r.seed.ordersPerSec)} orders/s (${int(r.seed.ticketsPerSec)} tickets/s)`, ms(r.seed.p50), ms(r.seed.p99), us(r.seed.us, r.seed.pgUs), `${r.seed.seconds.toFixed(1)} s for ${int(r.seed.tickets)} tickets`]);
    for (const c of [r.checkin, r.checkinList]) if (c) checkinReport(s, e, c, writes, verdicts);
    if (r.orders) {
      writes.push([
        e,
        `orders, 1-4 tickets, 3 hot types, ${int(r.orders.requests)} orders, ${s.connections} conns`,
        `${int(r.orders.rate)} orders/s (${int(r.orders.ticketsPerSec)} tickets/s)`,
        ms(r.orders.p50),
        ms(r.orders.p99),
        us(r.orders.us, r.orders.pgUs),
        `issued ${int(r.orders.issued)} = sold ${int(r.orders.sold)}, none over stock`,
      ]);
      const p = r.orders.pending;
      writes.push([
        e,
        `pending orders (manual payment, places held), same bodies, ${int(p.requests)} orders`,
        `${int(p.rate)} orders/s (${Math.round(p.ratio * 100)} % of orders)`,
        ms(p.p50),
        ms(p.p99),
        us(p.us, p.pgUs),
        `${int(p.held)} places held in ${int(p.orders)} pending orders, none sold`,
      ]);
      const pendingOk = p.ratio >= 0.8;
      verdicts.push({ pass: pendingOk, text: `${e}: pending orders within 20 % of the order throughput: ${int(p.rate)} vs ${int(r.orders.rate)} orders/s (${Math.round(p.ratio * 100)} %) ${verdict(pendingOk)}` });
      writes.push([
        e,
        `sell-out: ${int(r.orders.rush.orders)} orders for 3 x 300 tickets`,
        `${int(r.orders.rush.rate)} orders/s`,
        '-',
        ms(r.orders.rush.p99),
        us(r.orders.rush.us, r.orders.rush.pgUs),
        `${int(r.orders.rush.created)} x 201 (${r.orders.rush.tickets} tickets = stock), ${int(r.orders.rush.soldOut)} x 409 sold_out`,
      ]);
    }
  }
  const reads = [];
  for (const r of runs) for (const a of r.attendees ?? []) reads.push([r.engine, a.label, int(a.rate), ms(a.p50), ms(a.p99), us(a.us, a.pgUs)]);
  const exports = [];
  for (const r of runs) {
    for (const [format, x] of Object.entries(r.export ?? {})) {
      exports.push([r.engine, format === 'csv' ? 'CSV' : 'NDJSON', ms(x.medianMs), ms(x.maxMs), mb(x.bytes), int(x.rows), mb(x.firstGrowth), mb(x.maxGrowth)]);
      const timeOk = x.maxMs < TARGETS.exportMs;
      const memOk = x.maxGrowth < TARGETS.exportGrowthMb * 1024 * 1024;
      verdicts.push({
        pass: timeOk && memOk,
        text: `${r.engine}: export ${format === 'csv' ? 'CSV' : 'NDJSON'} of ${int(x.rows)} < ${TARGETS.exportMs / 1000} s (slowest of ${x.runs.length}): ${ms(x.maxMs)} ms ${verdict(timeOk)}; RSS growth < ${TARGETS.exportGrowthMb} MB (largest): ${mb(x.maxGrowth)} MB ${verdict(memOk)}`,
      });
    }
  }
  const stats = [];
  for (const r of runs) {
    for (const a of r.analytics ?? []) {
      stats.push([r.engine, a.label, ms(a.median), ms(a.p99), ms(a.max)]);
      const ok = a.p99 < TARGETS.analyticsMs;
      verdicts.push({ pass: ok, text: `${r.engine}: ${a.label} p99 < ${TARGETS.analyticsMs} ms: ${ms(a.p99)} ms (median ${ms(a.median)}) ${verdict(ok)}` });
    }
  }
  const t1 = tables(['Engine', 'Writes', 'Throughput', 'p50 ms', 'p99 ms', 'CPU us/req: server (+ PostgreSQL)', 'Verified'], writes, ['left', 'left', 'right', 'right', 'right', 'right', 'left']);
  const t2 = tables(['Engine', `Read (${int(s.tickets)}-ticket event)`, 'req/s', 'p50 ms', 'p99 ms', 'CPU us/req: server (+ PostgreSQL)'], reads, ['left', 'left', 'right', 'right', 'right', 'right']);
  const t3 = tables(
    ['Engine', 'Export', 'median ms', 'slowest ms', 'MB', 'rows (checked)', 'RSS growth MB (1st run)', 'RSS growth MB (largest)'],
    exports,
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  const t4 = tables(['Engine', `Analytics (${int(s.tickets)} tickets)`, 'median ms', 'p99 ms', 'max ms'], stats, ['left', 'left', 'right', 'right', 'right']);

  const cpus = runs.flatMap((r) => [r.checkin?.cpu, r.checkinList?.cpu, r.orders?.cpu]).filter(Boolean);
  const range = (values) => `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}%`;
  const background = runs.filter((r) => r.background).map((r) => `${r.engine} ${r.background.busyPct.toFixed(0)}%`);
  const cpuNote = cpus.length
    ? `Machine-wide CPU during the check-in and order runs (from /proc/stat): ${range(cpus.map((c) => c.busyPct))} busy, ${range(cpus.map((c) => c.stealPct))} stolen by the hypervisor; ` +
      `busy with other work during the 2 s before each engine's run: ${background.join(', ') || 'unknown'}; 1-minute load average at the start: ${s.loadAtStart.toFixed(2)}.`
    : '';
  const text = [t1.text, '', ...[t2, t3, t4].filter((x, k) => s.phases.includes(['attendees', 'export', 'analytics'][k])).flatMap((x) => [x.text, '']), 'Targets:', ...verdicts.map((v) => `  ${v.pass ? 'PASS' : 'FAIL'}: ${v.text}`), ...(cpuNote ? ['', cpuNote] : [])].join('\n');

  const m = s.machine;
  const pgVersion = runs.find((r) => r.engine === 'postgres')?.version;
  const stale = runs.find((r) => r.staleStats)?.staleStats;
  // What the measured CPU cost per check-in allows at most on this machine.
  const nproc = Number(m.nproc) || os.availableParallelism();
  const ceilings = runs.flatMap((r) =>
    [r.checkin, r.checkinList]
      .filter((c) => c?.us)
      .map((c) => {
        const node = 1e6 / c.us;
        const total = c.pgUs ? (nproc * 1e6) / (c.us + c.pgUs) : null;
        return (
          `${c.label[0].toUpperCase()}${c.label.slice(1)} on ${r.engine}: ${int(c.us)} us of server CPU per check-in, so one server process tops out near ${int(node)}/s` +
          (total ? `; with PostgreSQL's ${int(c.pgUs)} us on the same ${nproc} CPUs, near ${int(Math.min(node, total))}/s` : '') +
          ' (the load generator not counted).'
        );
      }),
  );
  const command = commandLine(['BENCH_DURATION', 'BENCH_WARMUP', 'BENCH_CONNECTIONS', 'BENCH_ENGINES', 'BENCH_EVENT_TICKETS', 'BENCH_CHECKINS', 'BENCH_CHECKIN_WARMUP', 'BENCH_CHECKIN_ROUNDS', 'BENCH_CHECKIN_STEADY', 'BENCH_ORDER_WARMUP', 'BENCH_SEED_CONNECTIONS', 'BENCH_EXPORT_RUNS', 'BENCH_ANALYTICS_REQUESTS', 'BENCH_SERVER_NODE_ARGS', 'BENCH_EVENT_PHASES', 'BENCH_CHECKIN_VARIANTS']);
  const has = (phase) => s.phases.includes(phase);
  const all = PHASES.every(has);
  const variants = CHECKIN_VARIANTS.filter((v) => s.checkinVariants.includes(v.id));
  const bullets = [
    `- Command: \`${command}\` (from the repository root; builds \`dist/\` first)`,
    `- Date: ${m.date} (start of the run); built from commit ${m.commit}`,
    `- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memory} RAM, ${m.os}`,
    `- Software: Node ${m.node}, Fastify ${packageVersion('fastify')}, better-sqlite3 ${packageVersion('better-sqlite3')}, pg ${packageVersion('pg')}${pgVersion ? `, PostgreSQL ${pgVersion}` : ''}, autocannon ${packageVersion('autocannon')}`,
    `- Server: \`MONTAGE_LOG_LEVEL=warn\`, business plan with \`MONTAGE_LIMITS_BUSINESS=blendPerHour=100000000,eventsPerMinute=100000000,eventsPerDay=1000000000\`
  (the rate limiter runs but never refuses; in-memory, no \`REDIS_URL\`), no webhook subscriptions; PostgreSQL pool of 10.`,
    `- Load: \`bench/load-client.mjs\` in its own process (autocannon's client, keep-alive, no pipelining, a
  different body for every request); latencies per request from write to last byte, nearest-rank percentiles.
  "CPU us/req": the server process's user + system CPU time (\`/proc/<pid>/stat\`) during the run over its requests,
  and on PostgreSQL "+" that of the database's backends (the pids of \`pg_stat_activity\` for the benchmark's database).`,
    `- Seeding: ${int(s.tickets / 100)} orders of 100 tickets (70 general admission, 20 VIP, 10 early bird; every
  ticket its own attendee: names from a seeded mix of languages, some with commas, quotes or a leading \`=\`/\`-\`/\`@\`/\`+\`),
  ${s.seedConnections} connections; the time is from the first request to the last answer.`,
  ];
  if (has('checkin')) {
    bullets.push(`- Check-in: ${int(s.checkinWarmup)} check-ins of warm-up (discarded), then ${int(s.checkins)} measured in ${s.checkinRounds} rounds (one
  load run each; the figures are the medians over the rounds), each a different ticket in random order, half by
  \`ticketId\` and half by \`code\`, ${s.connections} connections. Then the latency of serving the target rate
  (${Object.entries(TARGETS.checkinRate).map(([e, r]) => `${int(r)}/s on ${e}`).join(', ')}) for ${s.checkinSteadySeconds} s: \`bench/rate-client.mjs\` starts
  the requests on a fixed schedule whatever the answers do (open loop, at most ${s.connections} connections, Node's
  http client), each latency from its scheduled start to its last byte, so a wait for a connection counts. The
  p99 target holds if the p99 stays under it while serving the target rate: in the closed loop, in most rounds each
  of which also reached the rate (a saturated server's p99, about ${s.connections} / rate of queue), or in the open loop.
  ${variants.length > 1 ? `Two variants with the same load, tickets of their own each, their warm-ups, rounds and open-loop runs alternating
  (so the machine's load hits both alike): ` : 'The variant: '}${variants
      .map((v) => (v.id === 'list' ? '*check-in via a list* (\`listId\` of a check-in list that admits once and every ticket type, and a \`scanId\` per scan, as the scanner page sends them)' : '*check-in* (the event-wide check-in, no list)'))
      .join(' and ')}.
  Verified: every answer 201, and the 201s (warm-up included) equal \`checkedIn\` of \`GET /v1/events/:id/analytics\` (without a list),
  or the list's admitted \`entries\` and \`admittedTickets\` (\`GET /v1/events/:id/checkin-lists/:listId\`; a list's scans do not change \`checkedIn\`).`);
  }
  if (has('orders')) {
    bullets.push(`- Orders: one item of 1-4 tickets of one of 3 ticket types (stock 1,000,000 each) per order, ${s.connections}
  connections; ${int(s.orderWarmup)} orders of warm-up (discarded), then as many orders as the warm-up's rate
  gives in ${s.duration} s (a count, not a time, so that every answer is read and the tickets add up). Verified: tickets in the 201 answers = \`sold\`
  of the ticket types = analytics \`ticketsSold\`, none above its stock. Sell-out: 2,000 orders of 1-3 tickets at once
  for 3 types of 300: exactly 900 tickets issued, every refusal a 409 \`sold_out\`. Pending orders: the same bodies with
  \`payment: {provider: "manual"}\` on an event of their own (\`holdMinutes\` 1440, so none expires during the run), same
  warm-up and count; verified: the places held by the ticket types = analytics \`ticketsHeld\` = the places asked, as many
  pending orders as answers, none sold. Target: their rate within 20 % of the orders' (issue: holds must not cost the box
  office its throughput).`);
  }
  bullets.push(`- PostgreSQL statistics: right after seeding, the attendee page is timed 3 times one at a time on the
  statistics of the empty tables${stale ? ` (autovacuum is \`${stale.autovacuum}\` on this server)` : ''}; then \`ANALYZE\` runs, as autovacuum
  would about a minute after a bulk load, and everything after it is measured on fresh statistics; with autovacuum off,
  \`ANALYZE\` runs again before each check-in round (untimed), as auto-analyze would while the scan tables grow.${stale ? ` Before \`ANALYZE\`:
  ${ms(stale.pageMs)} ms per page (median of 3); \`ANALYZE\` ${ms(stale.analyzeMs)} ms; after it: ${ms(stale.afterMs)} ms.` : ''}`);
  if (has('attendees')) {
    bullets.push(`- Attendees: ${s.connections} connections, ${s.warmup} s warm-up then ${s.duration} s; each route checked once (100 rows,
  \`hasMore\`, the filter holds). A timed run ends with requests in flight: before and after each measured run the
  benchmark waits until the server and its database backends are idle again.`);
  }
  if (has('export')) {
    bullets.push(`- Export: ${s.exportRuns} runs per format, one at a time; time to the last byte as read by the benchmark
  process; the server's \`VmRSS\` from \`/proc/<pid>/status\` every 20 ms during the download, growth = peak minus
  the RSS just before the request. Every download is parsed (csv-parse / JSON per line): row count, distinct
  ticket ids and checked-in rows must match.`);
  }
  if (has('analytics')) {
    bullets.push(`- Analytics: 10 warm-up requests, then ${s.analyticsRequests} sequential requests per route (keep-alive); p99 is the
  nearest rank (of 50 requests: the slowest).`);
  }
  const sections = [`### Writes\n\n${t1.md}`];
  if (has('attendees')) sections.push(`### Attendee pages\n\n${t2.md}`);
  if (has('export')) sections.push(`### Export of ${int(s.tickets)} attendees\n\n${t3.md}`);
  if (has('analytics')) sections.push(`### Analytics\n\n${t4.md}`);
  const title = all
    ? '## Events: seeding, check-in, orders, attendees, export, analytics'
    : `## Events, in part: seeding, ${s.phases.map((p) => (p === 'checkin' ? variants.map((v) => v.label).join(' and ') : p)).join(', ')}`;
  const markdown = `${title}

What it measures: the event area's hot paths through the API of a real Montage server process
(\`node ${[...montageNodeFlags(), ...s.serverNodeArgs].join(' ')} bin/montage.js serve --no-worker\`), on SQLite (temp \`DATA_DIR\`) and on PostgreSQL (a fresh
database), each engine from empty: an event with ${int(s.tickets)} tickets is built through the order
API, then ${all ? 'checked in, read, exported and summarised; orders under contention run on another event' : `only these phases run (\`BENCH_EVENT_PHASES=${s.phases.join(',')}\`): ${s.phases.join(', ')}`}.

${bullets.join('\n')}

${sections.join('\n\n')}

### Targets

${verdicts.map((v) => `- ${v.pass ? 'PASS' : '**FAIL**'}: ${v.text}`).join('\n')}

Notes: the load generator, the server and PostgreSQL share the machine's ${m.nproc} CPUs; the
server is one Node process (one core at most for its JavaScript). With a closed loop of
${s.connections} connections the mean latency is about ${s.connections} / (rate).
${ceilings.map((c) => `${c}\n`).join('')}${cpuNote}`;
  // A run of some phases only has a section of its own, so that the full run's figures stay.
  const section = all ? undefined : `events-${s.phases.join('-')}`;
  return { text, markdown, section, pass: verdicts.every((v) => v.pass) };
}

export async function run() {
  const s = settings();
  s.loadAtStart = os.loadavg()[0];
  s.machine = machine();
  log(
    `Events benchmark: ${s.engines.join(' and ')}; ${int(s.tickets)} tickets seeded, ${int(s.checkins)} check-ins, ` +
      `${s.connections} connections, ${s.warmup} s warm-up + ${s.duration} s per timed run${s.profile ? ', CPU-profiling the server per phase' : ''}`,
  );
  await build();
  const runs = [];
  for (const engine of s.engines) runs.push(await engineRun(s, engine));
  const result = report(s, runs);
  return { ...result, writeDoc: !s.profile && !s.pgReads };
}

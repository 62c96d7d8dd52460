#!/usr/bin/env node
// Door offline data benchmark: what a scanner pays to get ready for a large event. Against a real
// Montage server process (dist/, built first), on SQLite and on PostgreSQL (a fresh database each):
// seeds one event with BENCH_DOOR_TICKETS tickets (100,000) through the order API and cancels
// BENCH_DOOR_REVOCATIONS of them (5,000), so the revocation list holds that many serials; then times
// GET /v1/events/:id/checkin/offline as a scanner uses it: download, JSON parse, and ready (the
// serials in a Set, the public keys imported and the list's signature verified with WebCrypto),
// BENCH_DOOR_RUNS times (20), one at a time, and the 304 answer to If-None-Match.
//
//   node bench/door-offline.mjs                       # both engines
//   BENCH_ENGINES=sqlite node bench/door-offline.mjs  # one
//
// Run on its own it prints its figures and writes nothing; `npm run bench -- door` (bench/door.mjs)
// runs it with the other door benchmarks and writes their section of docs/benchmarks.md.
import {
  build,
  checkedJson,
  createAccountAndKey,
  freePort,
  freshPostgres,
  makeTempDir,
  MONTAGE_BIN,
  montageEnv,
  montageNodeFlags,
  median,
  percentile,
  postgresAdminUrl,
  runAlone,
  seconds,
  startProcess,
  waitForHttp,
} from './lib.mjs';

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (value) => value.toFixed(1);

export function offlineSettings() {
  const engines = (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim()).filter(Boolean);
  for (const e of engines) if (e !== 'sqlite' && e !== 'postgres') throw new Error(`BENCH_ENGINES: unknown engine "${e}" (sqlite, postgres)`);
  const tickets = seconds('BENCH_DOOR_TICKETS', 100_000, 100);
  if (tickets % 100 !== 0) throw new Error('BENCH_DOOR_TICKETS must be a multiple of 100 (orders of 100 tickets)');
  const revocations = seconds('BENCH_DOOR_REVOCATIONS', 5000, 1);
  if (revocations > tickets) throw new Error('BENCH_DOOR_REVOCATIONS cannot exceed BENCH_DOOR_TICKETS');
  return { engines, tickets, revocations, runs: seconds('BENCH_DOOR_RUNS', 20, 1) };
}

/** Runs `work(i)` for i in 0..n-1, `width` at a time. */
async function pool(n, width, work) {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, n) }, async () => {
    while (next < n) await work(next++);
  }));
}

const b64 = (text) => Buffer.from(text, 'base64url');

/** What a scanner does with the answer before it can check its first code. */
async function ready(data) {
  const serials = new Set(data.revocations.serials);
  const keys = new Map();
  for (const key of data.keys) keys.set(key.kid, await crypto.subtle.importKey('raw', b64(key.publicKey), { name: 'Ed25519' }, false, ['verify']));
  const { eventId, issuedAt, kid, signature } = data.revocations;
  const text = `montage-revocations-v1\n${eventId}\n${issuedAt}\n${data.revocations.serials.join('\n')}`;
  const ok = await crypto.subtle.verify({ name: 'Ed25519' }, keys.get(kid), b64(signature), new TextEncoder().encode(text));
  if (!ok) throw new Error('the revocation list signature does not verify');
  return serials.size;
}

/**
 * One engine: seeds the event, then times the offline data. Resolves to the figures (ms):
 * { engine, tickets, revocations, runs, bytes, download, parse, total, notModified } (arrays of
 * the timed runs) and the printed `line`.
 */
export async function offlineRun(s, engine) {
  log(`\n[${engine}]`);
  const storage = { montageDir: makeTempDir(`montage-bench-door-${engine}-`).dir };
  if (engine === 'postgres') Object.assign(storage, await freshPostgres(postgresAdminUrl()));
  const port = await freePort();
  const env = montageEnv(engine, storage, port);
  const apiKey = await createAccountAndKey(env);
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${apiKey}` };
  const proc = startProcess(`montage serve (${engine})`, process.execPath, [...montageNodeFlags(), MONTAGE_BIN, 'serve', '--no-worker'], { env });
  await waitForHttp(proc, `${base}/healthz`);
  const api = async (method, route, body, status = method === 'POST' ? 201 : 200) => {
    const res = await fetch(`${base}/v1${route}`, { method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return checkedJson(res, `${method} ${route}`, status);
  };

  const startsAt = Date.now() + 30 * 86_400_000;
  const event = await api('POST', '/events', { name: 'Door benchmark', startsAt: new Date(startsAt).toISOString(), endsAt: new Date(startsAt + 5 * 3_600_000).toISOString(), timezone: 'Europe/Berlin', currency: 'EUR' });
  const types = [];
  for (const name of ['General', 'Reduced', 'VIP']) types.push(await api('POST', `/events/${event.id}/tickets`, { name, price: 0, quantity: s.tickets }));
  await api('POST', `/events/${event.id}/publish`, undefined, 200);

  let started = performance.now();
  const toCancel = [];
  await pool(s.tickets / 100, 4, async (i) => {
    const order = await api('POST', `/events/${event.id}/orders`, { buyer: { name: `Buyer ${i}`, email: `buyer${i}@example.com` }, items: [{ ticketTypeId: types[i % 3].id, quantity: 100 }] });
    if (toCancel.length < s.revocations) toCancel.push(...order.tickets.slice(0, s.revocations - toCancel.length).map((t) => t.id));
  });
  log(`    seeded ${s.tickets.toLocaleString('en')} tickets in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  started = performance.now();
  await pool(toCancel.length, 8, (i) => api('POST', `/tickets/${toCancel[i]}/cancel`, undefined, 200));
  log(`    cancelled ${toCancel.length.toLocaleString('en')} tickets in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const download = [];
  const parse = [];
  const total = [];
  let bytes = 0;
  let etag = null;
  for (let i = 0; i < s.runs + 1; i++) {
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/events/${event.id}/checkin/offline`, { headers });
    const text = await res.text();
    const t1 = performance.now();
    if (res.status !== 200) throw new Error(`offline data: ${res.status} ${text}`);
    const data = JSON.parse(text);
    const t2 = performance.now();
    const count = await ready(data);
    const t3 = performance.now();
    if (count !== s.revocations) throw new Error(`the list holds ${count} serials, expected ${s.revocations}`);
    if (i === 0) continue; // the first warms the server's caches and prepared statements
    download.push(t1 - t0);
    parse.push(t2 - t1);
    total.push(t3 - t0);
    bytes = Buffer.byteLength(text);
    etag = res.headers.get('etag');
  }
  const notModified = [];
  for (let i = 0; i < s.runs; i++) {
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/events/${event.id}/checkin/offline`, { headers: { ...headers, 'if-none-match': etag } });
    await res.arrayBuffer();
    if (res.status !== 304) throw new Error(`If-None-Match: expected 304, got ${res.status}`);
    notModified.push(performance.now() - t0);
  }
  await proc.stop();
  const line =
    `    offline data (${(bytes / 1024).toFixed(0)} KiB, ${s.revocations.toLocaleString('en')} serials, ${s.tickets.toLocaleString('en')} tickets), median of ${s.runs} (p95): ` +
    `download ${ms(median(download))} ms (${ms(percentile(download, 95))}), parse ${ms(median(parse))} ms, download+parse+ready ${ms(median(total))} ms (${ms(percentile(total, 95))}); ` +
    `304 ${ms(median(notModified))} ms`;
  log(line);
  return { engine, tickets: s.tickets, revocations: s.revocations, runs: s.runs, bytes, download, parse, total, notModified, line };
}

await runAlone(import.meta.url, async () => {
  const s = offlineSettings();
  await build();
  for (const engine of s.engines) await offlineRun(s, engine);
});

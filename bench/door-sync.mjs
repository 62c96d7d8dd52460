// Door sync benchmark: how long POST /v1/events/:id/checkin/sync takes for a scanner's full queue
// of 1000 offline scans (target: under 3 s), on SQLite and on PostgreSQL, against a real server
// process over loopback. Three batches per round, each on a fresh check-in list that admits once:
// 1000 new admissions, the same 1000 again (all duplicates: nothing changes), and 1000 later
// admissions of the same tickets from a second door (all conflicts: the first admissions are kept),
// then 1000 earlier admissions from a third door (each displaces the admission kept so far).
// Every batch must answer each of its scans exactly once, in order, with the expected outcome.
// `npm run bench -- door` (bench/door.mjs) runs it with the other door benchmarks and writes their
// section of docs/benchmarks.md; `node bench/door-sync.mjs` runs it alone and prints its figures.
// BENCH_ENGINES=sqlite|postgres picks one engine, BENCH_DOOR_ROUNDS the rounds (3).
import os from 'node:os';
import {
  build,
  checkedJson,
  createAccountAndKey,
  freePort,
  freshPostgres,
  machine,
  makeTempDir,
  median,
  MONTAGE_BIN,
  montageEnv,
  montageNodeFlags,
  postgresAdminUrl,
  runAlone,
  seconds,
  startProcess,
  tables,
  waitForHttp,
} from './lib.mjs';

export const SCANS = 1000;
export const TARGET_MS = 3000;
const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(0));

export function syncSettings() {
  return {
    engines: (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim()).filter(Boolean),
    rounds: seconds('BENCH_DOOR_ROUNDS', 3, 1),
  };
}

/** One engine: resolves to { engine, timings: { fresh, duplicate, conflict, displacing } } (ms per batch, one per round). */
export async function syncRun(s, engine) {
  const { dir } = makeTempDir(`montage-door-${engine}-`);
  const storage = { montageDir: dir };
  if (engine === 'postgres') storage.url = (await freshPostgres(postgresAdminUrl())).url;
  const port = await freePort();
  const env = montageEnv(engine, storage, port);
  const apiKey = await createAccountAndKey(env);
  const proc = startProcess(`montage serve (${engine})`, process.execPath, [...montageNodeFlags(), MONTAGE_BIN, 'serve', '--no-worker'], { env });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(proc, `${base}/healthz`);
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const api = async (method, route, body, status = method === 'POST' ? 201 : 200) =>
    checkedJson(await fetch(`${base}/v1${route}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }), `${method} ${route}`, status);

  const startsAt = Date.now() + 86_400_000;
  const event = await api('POST', '/events', { name: 'Door sync', startsAt: new Date(startsAt).toISOString(), endsAt: new Date(startsAt + 3_600_000).toISOString(), timezone: 'UTC', currency: 'EUR' });
  const type = await api('POST', `/events/${event.id}/tickets`, { name: 'General', price: 0, quantity: SCANS });
  await api('POST', `/events/${event.id}/publish`, undefined, 200);
  const codes = [];
  for (let i = 0; i < SCANS / 100; i++) {
    const order = await api('POST', `/events/${event.id}/orders`, { buyer: { name: 'Bench', email: 'bench@example.com' }, items: [{ ticketTypeId: type.id, quantity: 100 }] });
    codes.push(...order.tickets.map((t) => t.code));
  }

  const timings = { fresh: [], duplicate: [], conflict: [], displacing: [] };
  for (let round = 0; round < s.rounds; round++) {
    const list = await api('POST', `/events/${event.id}/checkin-lists`, { name: `Round ${round}` });
    // Scans of the last half hour: a code admits from an hour before it was issued (docs/events.md).
    const t0 = Date.now() - 1_800_000;
    const batch = (door, offset) => ({
      deviceId: door,
      scans: codes.map((code, i) => ({ scanId: `${door}-${round}-${i}`, code, listId: list.id, scannedAt: new Date(t0 + offset + i).toISOString(), localResult: 'admitted' })),
    });
    const timed = async (kind, body, expect) => {
      const started = performance.now();
      const answer = await api('POST', `/events/${event.id}/checkin/sync`, body, 200);
      timings[kind].push(performance.now() - started);
      // Exactly once: one result per scan, in the order sent, each with the expected outcome.
      if (answer.results.length !== body.scans.length) throw new Error(`${kind} batch: ${answer.results.length} results for ${body.scans.length} scans`);
      const wrong = answer.results.findIndex((r, i) => r.scanId !== body.scans[i].scanId || r.outcome !== expect);
      if (wrong >= 0) throw new Error(`${kind} batch: result ${wrong} is ${JSON.stringify(answer.results[wrong])}, expected scan ${body.scans[wrong].scanId} ${expect}`);
      return answer;
    };
    const first = batch('door-a', 0);
    const fresh = await timed('fresh', first, 'admitted');
    // Each ticket admitted once: as many distinct check-ins and admitted tickets as scans.
    if (new Set(fresh.results.map((r) => r.checkinId)).size !== SCANS || fresh.list.counts.entries !== SCANS || fresh.list.counts.admittedTickets !== SCANS) {
      throw new Error(`fresh batch, round ${round}: ${new Set(fresh.results.map((r) => r.checkinId)).size} distinct check-ins, counts ${JSON.stringify(fresh.list.counts)}`);
    }
    const again = await timed('duplicate', first, 'duplicate');
    if (JSON.stringify(again.list.counts) !== JSON.stringify(fresh.list.counts)) throw new Error(`the duplicate batch changed the counts: ${JSON.stringify(again.list.counts)}`);
    await timed('conflict', batch('door-b', 60_000), 'conflict');
    // A third door admitted every ticket earlier still: each of its scans displaces a kept admission.
    const last = await timed('displacing', batch('door-c', -60_000), 'admitted');
    if (last.list.counts.entries !== SCANS || last.list.counts.conflicts !== 2 * SCANS) throw new Error(`counts after round ${round}: ${JSON.stringify(last.list.counts)}`);
  }
  await proc.stop();
  return { engine, timings };
}

await runAlone(import.meta.url, async () => {
  const s = syncSettings();
  const loadAtStart = os.loadavg()[0];
    log(`Door sync benchmark: ${s.engines.join(' and ')}; ${SCANS} scans per batch, ${s.rounds} rounds`);
    await build();
    const rows = [];
    for (const engine of s.engines) {
      const { timings } = await syncRun(s, engine);
      for (const [kind, values] of Object.entries(timings)) rows.push([engine, kind, ms(median(values)), ms(Math.max(...values)), Math.max(...values) < TARGET_MS ? 'PASS' : 'FAIL']);
    }
    const m = machine();
    log(tables(['engine', `batch of ${SCANS}`, 'median ms', 'max ms', `< ${TARGET_MS} ms`], rows, ['left', 'left', 'right', 'right', 'left']).text);
  log(`Machine: ${m.nproc} x ${m.cpu}, ${m.memory}, node ${m.node}, commit ${m.commit}; load average at start ${loadAtStart.toFixed(2)}`);
});

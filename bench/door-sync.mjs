// Door sync benchmark: how long POST /v1/events/:id/checkin/sync takes for a scanner's full queue
// of 1000 offline scans (target: under 3 s), on SQLite and on PostgreSQL, against a real server
// process over loopback. Three batches per round, each on a fresh check-in list that admits once:
// 1000 new admissions, the same 1000 again (all duplicates: nothing changes), and 1000 later
// admissions of the same tickets from a second door (all conflicts: the first admissions are kept),
// then 1000 earlier admissions from a third door (each displaces the admission kept so far).
// Run it with `npm run bench -- door-sync`; BENCH_ENGINES=sqlite|postgres picks one engine,
// BENCH_DOOR_ROUNDS the rounds (3). It prints its figures and writes no document.
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
  seconds,
  startProcess,
  tables,
  waitForHttp,
} from './lib.mjs';

export const name = 'door-sync';
export const description = 'Door sync: 1000 offline scans in one POST /checkin/sync (new, duplicate, conflicting, displacing); SQLite and PostgreSQL';

const SCANS = 1000;
const TARGET_MS = 3000;
const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(0));

function settings() {
  return {
    engines: (process.env.BENCH_ENGINES || 'sqlite,postgres').split(',').map((e) => e.trim()).filter(Boolean),
    rounds: seconds('BENCH_DOOR_ROUNDS', 3, 1),
  };
}

async function engineRun(s, engine) {
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
    const t0 = Date.now() - 3_600_000;
    const batch = (door, offset) => ({
      deviceId: door,
      scans: codes.map((code, i) => ({ scanId: `${door}-${round}-${i}`, code, listId: list.id, scannedAt: new Date(t0 + offset + i).toISOString(), localResult: 'admitted' })),
    });
    const timed = async (kind, body, expect) => {
      const started = performance.now();
      const answer = await api('POST', `/events/${event.id}/checkin/sync`, body, 200);
      timings[kind].push(performance.now() - started);
      const outcomes = new Set(answer.results.map((r) => r.outcome));
      if (outcomes.size !== 1 || !outcomes.has(expect)) throw new Error(`${kind} batch: expected every outcome ${expect}, got ${[...outcomes].join(', ')}`);
      return answer;
    };
    const first = batch('door-a', 0);
    await timed('fresh', first, 'admitted');
    await timed('duplicate', first, 'duplicate');
    await timed('conflict', batch('door-b', 60_000), 'conflict');
    // A third door admitted every ticket earlier still: each of its scans displaces a kept admission.
    const last = await timed('displacing', batch('door-c', -60_000), 'admitted');
    if (last.list.counts.entries !== SCANS || last.list.counts.conflicts !== 2 * SCANS) throw new Error(`counts after round ${round}: ${JSON.stringify(last.list.counts)}`);
  }
  await proc.stop();
  return { engine, timings };
}

export async function run() {
  const s = settings();
  const loadAtStart = os.loadavg()[0];
  log(`Door sync benchmark: ${s.engines.join(' and ')}; ${SCANS} scans per batch, ${s.rounds} rounds`);
  await build();
  const runs = [];
  for (const engine of s.engines) runs.push(await engineRun(s, engine));
  const rows = [];
  let pass = true;
  for (const { engine, timings } of runs) {
    for (const [kind, values] of Object.entries(timings)) {
      const worst = Math.max(...values);
      pass &&= worst < TARGET_MS;
      rows.push([engine, kind, ms(median(values)), ms(worst), worst < TARGET_MS ? 'PASS' : 'FAIL']);
    }
  }
  const m = machine();
  const table = tables(['engine', 'batch of 1000', 'median ms', 'max ms', `< ${TARGET_MS} ms`], rows, ['left', 'left', 'right', 'right', 'left']);
  const text = `${table.text}\nMachine: ${m.nproc} x ${m.cpu}, ${m.memory}, node ${m.node}, commit ${m.commit}; load average at start ${loadAtStart.toFixed(2)}`;
  return { text, markdown: table.md, pass, writeDoc: false };
}

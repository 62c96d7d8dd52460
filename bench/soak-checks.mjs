// The checks of bench/soak.mjs once its traffic has stopped: the rate-limit probe, the queue's
// drain, the invariants (from the database and the webhook receiver's log, against what the
// clients were told), and which failed requests a fault explains.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The probe account's plan limits: low, so that one shared budget is visible (see probeRateLimits). */
const PROBE_PER_MINUTE = 30;
export const PROBE_LIMITS = `blendPerHour=10,eventsPerMinute=${PROBE_PER_MINUTE},eventsPerDay=100000`;
/** After the end of a fault, answers that the fault explains are still accepted this long. */
const API_GRACE_MS = 2000;
const DB_GRACE_MS = 5000;

const int = (n) => Math.round(n).toLocaleString('en-US');
const sec = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Rate limits are one budget across API processes: requests go alternately to each process
 * directly (not through the proxy), on an account whose plan allows PROBE_PER_MINUTE a minute.
 * X-RateLimit-Remaining must count down by one per request whichever process answers, and the
 * request after the last allowed one is refused (429) by both.
 */
export async function probeRateLimits(apiPorts, key) {
  const answers = [];
  for (let n = 0; n < PROBE_PER_MINUTE + 2; n++) {
    const port = apiPorts[n % apiPorts.length];
    const res = await fetch(`http://127.0.0.1:${port}/v1/events?limit=1`, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    answers.push({ port, status: res.status, remaining: res.headers.get('x-ratelimit-remaining') });
  }
  const wrong = answers.filter((a, n) =>
    n < PROBE_PER_MINUTE ? a.status !== 200 || Number(a.remaining) !== PROBE_PER_MINUTE - 1 - n : a.status !== 429,
  );
  return {
    pass: wrong.length === 0,
    detail:
      wrong.length === 0
        ? `${PROBE_PER_MINUTE} requests alternating between ${apiPorts.length} API processes counted down one budget (remaining ${answers[0].remaining} → ${answers[PROBE_PER_MINUTE - 1].remaining}); the next 2, one to each process, were 429`
        : `unexpected answers: ${JSON.stringify(wrong.slice(0, 5))}`,
  };
}

async function queueState(db) {
  const { rows } = await db.query(
    `select (select count(*)::int from jobs where status in ('queued', 'running')) as pending,
            (select count(*)::int from blend_jobs where status in ('queued', 'processing')) as blend_pending`,
  );
  return rows[0];
}

/** Waits (bounded) until no job is queued or running and no blend job is unfinished. */
export async function drain(db, timeoutMs) {
  const started = Date.now();
  let state = await queueState(db);
  while ((state.pending > 0 || state.blend_pending > 0) && Date.now() - started < timeoutMs) {
    await sleep(250);
    state = await queueState(db);
  }
  return { ms: Date.now() - started, ...state, drained: state.pending === 0 && state.blend_pending === 0 };
}

export const check = (name, pass, detail) => ({ name, pass, detail });
const some = (rows, n = 3) => JSON.stringify(rows.slice(0, n));

/** The invariants, from the database itself (and the receiver's log), against what clients were told. */
export async function checkInvariants(db, { accountId, traffic, receiver, drained, rateLimits, crashes, failures }) {
  const results = [];
  const q = async (text, params) => (await db.query(text, params)).rows;

  const oversold = await q(
    `select id, name, quantity, sold from ticket_types where sold > quantity
     union all select id, name, capacity, sold from events where capacity is not null and sold > capacity`,
  );
  const types = await q('select id, name, quantity, sold from ticket_types order by name');
  results.push(check('no oversold ticket type', oversold.length === 0, oversold.length ? some(oversold) : types.map((t) => `${t.name}: ${t.sold} of ${t.quantity}`).join(', ')));

  const mismatched = await q(
    `select tt.id, tt.sold, count(t.id) filter (where t.status = 'valid')::int as valid
       from ticket_types tt left join tickets t on t.ticket_type_id = tt.id group by tt.id, tt.sold
     having tt.sold <> count(t.id) filter (where t.status = 'valid')
     union all
     select e.id, e.sold, count(t.id) filter (where t.status = 'valid')::int from events e left join tickets t on t.event_id = e.id group by e.id, e.sold
     having e.sold <> count(t.id) filter (where t.status = 'valid') or e.tickets_issued <> count(t.id)`,
  );
  const [{ issued }] = await q(`select count(*)::int as issued from tickets where status = 'valid'`);
  results.push(check('sold equals issued', mismatched.length === 0, mismatched.length ? some(mismatched) : `${int(issued)} valid tickets = the sum of sold over ticket types and events`));

  const doubles = await q(`select ticket_id, count(*)::int as n from checkins where action = 'checkin' group by ticket_id having count(*) > 1`);
  const [{ inside, scans, dangling }] = await q(
    `select (select count(*)::int from tickets where checked_in_at is not null) as inside,
            (select count(distinct ticket_id)::int from checkins where action = 'checkin') as scans,
            (select count(*)::int from tickets t where t.checkin_id is not null and not exists (select 1 from checkins c where c.id = t.checkin_id)) as dangling`,
  );
  const clientDoubles = traffic.recorder.violations.filter((v) => v.text.includes('admitted twice'));
  results.push(
    check(
      'no double check-in',
      doubles.length === 0 && inside === scans && dangling === 0 && clientDoubles.length === 0,
      doubles.length || inside !== scans || dangling || clientDoubles.length
        ? `tickets with 2+ check-ins: ${some(doubles)}; checked in ${inside} vs scanned ${scans}; dangling ${dangling}; admitted twice at once: ${clientDoubles.length}`
        : `${int(scans)} tickets checked in, each once; ${traffic.doubleScans.pairs} simultaneous double scans admitted one each`,
    ),
  );

  const ackedTickets = traffic.orders.flatMap((o) => o.tickets.map((t) => ({ ...t, orderId: o.id })));
  const foundOrders = new Set((await q('select id from orders where id = any($1)', [traffic.orders.map((o) => o.id)])).map((r) => r.id));
  const foundTickets = new Map((await q('select id, order_id, ticket_type_id, status from tickets where id = any($1)', [ackedTickets.map((t) => t.id)])).map((r) => [r.id, r]));
  const lostOrders = traffic.orders.filter((o) => !foundOrders.has(o.id));
  const lostTickets = ackedTickets.filter((t) => {
    const row = foundTickets.get(t.id);
    return !row || row.order_id !== t.orderId || row.ticket_type_id !== t.ticketTypeId || row.status !== 'valid';
  });
  const ackedCheckins = traffic.checkins;
  const foundCheckins = new Map((await q('select c.id, c.ticket_id, t.checkin_id from checkins c join tickets t on t.id = c.ticket_id where c.id = any($1)', [ackedCheckins.map((c) => c.id)])).map((r) => [r.id, r]));
  const lostCheckins = ackedCheckins.filter((c) => {
    const row = foundCheckins.get(c.id);
    return !row || row.ticket_id !== c.ticketId || row.checkin_id !== c.id;
  });
  const readMisses = traffic.recorder.violations.filter((v) => v.text.includes('read back as 404'));
  results.push(
    check(
      'every acknowledged order and check-in present',
      lostOrders.length + lostTickets.length + lostCheckins.length + readMisses.length === 0,
      `${int(traffic.orders.length)} orders (${int(ackedTickets.length)} tickets) and ${int(ackedCheckins.length)} check-ins acknowledged; missing: ${lostOrders.length} orders, ${lostTickets.length} tickets, ${lostCheckins.length} check-ins${lostOrders.length + lostTickets.length + lostCheckins.length ? ` ${some([...lostOrders, ...lostTickets, ...lostCheckins])}` : ''}; acknowledged orders read back as 404 during the run: ${readMisses.length}`,
    ),
  );

  const blend = await q(`select status, error_code, count(*)::int as n from blend_jobs group by status, error_code order by status, error_code`);
  const blendIds = new Set((await q('select id from blend_jobs where id = any($1)', [traffic.blendJobs])).map((r) => r.id));
  const stuck = blend.filter((b) => b.status !== 'completed' && !(b.status === 'failed' && b.error_code));
  const lostJobs = traffic.blendJobs.filter((id) => !blendIds.has(id));
  results.push(
    check(
      'every blend job completed or failed with a code',
      stuck.length === 0 && lostJobs.length === 0 && traffic.blendJobs.length > 0,
      `${traffic.blendJobs.length} accepted: ${blend.map((b) => `${b.n} ${b.status}${b.error_code ? ` (${b.error_code})` : ''}`).join(', ') || 'none'}${lostJobs.length ? `; missing ${some(lostJobs)}` : ''}`,
    ),
  );

  const messages = (await q('select id from webhook_messages where account_id = $1', [accountId])).map((r) => r.id);
  const ids = await (await fetch(`${receiver.base}/__ids`)).json();
  const stats = await (await fetch(`${receiver.base}/__stats`)).json();
  const undelivered = messages.filter((id) => !(id in ids));
  const failedDeliveries = await q(`select count(*)::int as n from jobs where kind = 'webhook.deliver' and status = 'failed'`);
  results.push(
    check(
      'every webhook message delivered at least once',
      undelivered.length === 0 && messages.length > 0 && stats.bad === 0,
      `${int(messages.length)} messages, ${int(stats.deliveries)} deliveries (${int(stats.deliveries - stats.unique)} repeats), ${undelivered.length} never delivered${undelivered.length ? ` ${some(undelivered)}` : ''}; ${stats.bad} unsigned or malformed; delivery jobs given up: ${failedDeliveries[0].n}`,
    ),
  );

  results.push(check('the queue drained', drained.drained, `${drained.drained ? 'empty' : `still ${drained.pending} jobs and ${drained.blend_pending} blend jobs unfinished`} ${sec(drained.ms)} after the traffic stopped`));
  results.push(check('rate limits shared across the API processes', rateLimits.pass, rateLimits.detail));

  const unexplained = failures.filter((f) => !f.explained);
  results.push(
    check(
      'no 5xx or lost request outside its fault',
      unexplained.length === 0,
      unexplained.length
        ? `${unexplained.length} of ${failures.length} failed requests outside their fault: ${JSON.stringify(unexplained.slice(0, 5))}`
        : `${failures.length} failed requests, all during a fault (proxy 502 or lost connection while an API process was down; 503 unavailable while PostgreSQL was cut)`,
    ),
  );
  const otherViolations = traffic.recorder.violations.filter((v) => !v.text.includes('admitted twice') && !v.text.includes('read back as 404'));
  results.push(check('every other answer as expected', otherViolations.length === 0, otherViolations.length ? some(otherViolations, 5) : 'orders 201 or 409 sold_out, check-ins 201 or 409 already_checked_in, reads 200, inventory never above stock'));
  results.push(check('no process died on its own', crashes.length === 0, crashes.length ? crashes.map((c) => `${c.label}: code ${c.code}, signal ${c.signal}\n${c.output}`).join('\n') : 'only the two processes killed on purpose'));
  return results;
}

/**
 * With an object store, every completed job's result is in the bucket, the processes' own
 * DATA_DIRs hold nothing (no directory is shared, or needed), and a result's `resultUrl`, a
 * presigned GET of the store, serves the image. `sample` is a completed job's status, read through the proxy.
 */
export async function checkObjectStore(db, objects, dataDirs, sample) {
  const { rows } = await db.query(`select result_key from blend_jobs where status = 'completed' and result_key is not null`);
  const keys = await objects.keys();
  const missing = rows.filter((r) => !keys.has(r.result_key)).map((r) => r.result_key);
  const extra = [...keys].filter((k) => !rows.some((r) => r.result_key === k));
  const onDisk = [...new Set(dataDirs)].flatMap((dir) => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, String(f))) : []));
  let fetched = 'no completed job to fetch';
  let fetchedOk = false;
  if (sample?.resultUrl) {
    const res = await fetch(sample.resultUrl);
    const bytes = (await res.arrayBuffer()).byteLength;
    fetchedOk = res.status === 200 && bytes > 0 && sample.resultUrl.startsWith(objects.endpoint);
    fetched = `the resultUrl of ${sample.jobId} (${new URL(sample.resultUrl).origin}, presigned) answered ${res.status} with ${int(bytes)} bytes`;
  }
  return check(
    'blend results in the object store, nothing on the processes\' disks',
    missing.length === 0 && onDisk.length === 0 && fetchedOk,
    `${rows.length} completed jobs, ${keys.size} objects in the bucket (${missing.length} results missing${missing.length ? ` ${some(missing)}` : ''}; ${extra.length} without a completed job); ` +
      `files under the ${new Set(dataDirs).size} DATA_DIRs: ${onDisk.length}${onDisk.length ? ` ${some(onDisk)}` : ''}; ${fetched}`,
  );
}

/** Which failed requests a fault explains: lost or 502 while an API process was down, 503 `unavailable` while PostgreSQL was cut. */
export function classifyFailures(failures, faults) {
  const overlaps = (f, from, to) => f.at <= to && f.at + f.ms >= from;
  const api = faults.find((f) => f.kind === 'api');
  const cut = faults.find((f) => f.kind === 'postgres');
  return failures.map((f) => {
    let explained = null;
    if ((f.proxyError || f.error) && api && overlaps(f, api.at, api.endAt + API_GRACE_MS)) explained = 'api';
    else if (f.status === 503 && f.code === 'unavailable' && cut && overlaps(f, cut.at, cut.endAt + DB_GRACE_MS)) explained = 'postgres';
    return { ...f, explained };
  });
}

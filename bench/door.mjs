// The door kit's benchmarks as one group (`npm run bench -- door`), with the targets of the door:
// - offline data of a 100,000-ticket event with a revocation list of 5,000 serials, downloaded
//   and ready in the scanner in < 1 s (bench/door-offline.mjs; SQLite and PostgreSQL);
// - one signed code verified in the scanner page in < 1 ms, median of 1,000 (bench/scanner-verify.mjs;
//   Chromium, no server);
// - a scanner's queue of 1,000 offline scans synced in < 3 s, each scan answered exactly once
//   (bench/door-sync.mjs; SQLite and PostgreSQL).
// Each module also runs on its own (see their heads); this one runs them in turn and writes the
// "door" section of docs/benchmarks.md. The check-in through a list is part of the events benchmark.
import os from 'node:os';
import { backgroundLoad, build, commandLine, machine, median, packageVersion, percentile, tables } from './lib.mjs';
import { offlineRun, offlineSettings } from './door-offline.mjs';
import { SCANS, syncRun, syncSettings, TARGET_MS as SYNC_TARGET_MS } from './door-sync.mjs';
import { CODES, REVOKED, verifyInBrowser } from './scanner-verify.mjs';

export const name = 'door';
export const description = 'Door kit: offline data of 100,000 tickets, verifying a signed code in the page, syncing 1,000 offline scans; SQLite and PostgreSQL';

const OFFLINE_TARGET_MS = 1000;
const VERIFY_TARGET_MS = 1;

const log = (line) => process.stdout.write(`${line}\n`);
const ms = (n) => (n < 1 ? n.toFixed(3) : n < 10 ? n.toFixed(2) : n.toFixed(0));
const int = (n) => Math.round(n).toLocaleString('en-US');
const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' / ');

export async function run() {
  const offline = offlineSettings();
  const sync = syncSettings();
  const engines = offline.engines;
  const m = machine();
  const loads = { start: load() };
  const busy = await backgroundLoad();
  log(`Door benchmarks: ${engines.join(' and ')}; load average (1/5/15 min) ${loads.start}; ${busy ? `${busy.busyPct.toFixed(0)}% of the CPUs busy with other work` : ''}`);
  await build();

  const offlineRuns = [];
  const syncRuns = [];
  for (const engine of engines) {
    offlineRuns.push(await offlineRun(offline, engine));
    log(`\n[${engine}] sync of ${SCANS} offline scans, ${sync.rounds} rounds`);
    const r = await syncRun(sync, engine);
    for (const [kind, values] of Object.entries(r.timings)) log(`    ${kind.padEnd(11)} ${values.map((v) => `${ms(v)} ms`).join(', ')}`);
    syncRuns.push(r);
  }
  loads.verify = load();
  log(`\n[Chromium] verify ${CODES} signed codes against ${REVOKED} revoked serials`);
  const verify = await verifyInBrowser();
  log(`    median ${ms(verify.median)} ms, p95 ${ms(verify.p95)} ms, max ${ms(verify.max)} ms${verify.isolated ? '' : ' (not cross-origin isolated: coarse timer)'}`);
  loads.end = load();

  const verdicts = [];
  const offlineRows = offlineRuns.map((r) => {
    const p95 = percentile(r.total, 95);
    verdicts.push({ pass: p95 < OFFLINE_TARGET_MS, text: `${r.engine}: offline data of ${int(r.tickets)} tickets (${int(r.revocations)} revoked) downloaded and ready < ${int(OFFLINE_TARGET_MS)} ms: median ${ms(median(r.total))} ms, p95 ${ms(p95)} ms of ${r.runs} ${verdict(p95 < OFFLINE_TARGET_MS)}` });
    return [r.engine, `${int(r.bytes / 1024)} KiB`, ms(median(r.download)), ms(median(r.parse)), ms(median(r.total)), ms(p95), ms(Math.max(...r.total)), ms(median(r.notModified))];
  });
  const verifyOk = verify.median < VERIFY_TARGET_MS;
  verdicts.push({ pass: verifyOk, text: `Chromium ${verify.version}: one signed code verified in the page < ${VERIFY_TARGET_MS} ms: median ${ms(verify.median)} ms of ${int(CODES)} (p95 ${ms(verify.p95)} ms) ${verdict(verifyOk)}` });
  const syncRows = [];
  for (const { engine, timings } of syncRuns) {
    let worstAll = 0;
    for (const [kind, values] of Object.entries(timings)) {
      const worst = Math.max(...values);
      worstAll = Math.max(worstAll, worst);
      syncRows.push([engine, kind, ms(median(values)), ms(worst), verdict(worst < SYNC_TARGET_MS)]);
    }
    verdicts.push({ pass: worstAll < SYNC_TARGET_MS, text: `${engine}: sync of ${int(SCANS)} offline scans < ${int(SYNC_TARGET_MS)} ms, each answered exactly once: slowest batch ${ms(worstAll)} ms of ${Object.keys(timings).length * sync.rounds} ${verdict(worstAll < SYNC_TARGET_MS)}` });
  }

  const t1 = tables(['Engine', 'Size', 'download ms', 'parse ms', 'download + parse + ready ms', 'p95 ms', 'max ms', '304 ms'], offlineRows, ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right']);
  const t2 = tables(['Engine', `Batch of ${int(SCANS)} scans`, 'median ms', 'max ms', `< ${int(SYNC_TARGET_MS)} ms`], syncRows, ['left', 'left', 'right', 'right', 'left']);
  const t3 = tables(['Browser', 'Codes', 'median ms', 'p95 ms', 'max ms'], [[`Chromium ${verify.version}`, int(CODES), ms(verify.median), ms(verify.p95), ms(verify.max)]], ['left', 'right', 'right', 'right', 'right']);
  const loadNote =
    `Load average (1 / 5 / 15 min) at the start ${loads.start}, before the browser run ${loads.verify}, at the end ${loads.end}` +
    (busy ? `; ${busy.busyPct.toFixed(0)}% of the CPUs busy with other work (${busy.stealPct.toFixed(0)}% stolen) in the 2 s before the start.` : '.');
  const text = [t1.text, '', t2.text, '', t3.text, '', 'Targets:', ...verdicts.map((v) => `  ${v.pass ? 'PASS' : 'FAIL'}: ${v.text}`), '', loadNote].join('\n');

  const command = commandLine(['BENCH_ENGINES', 'BENCH_DOOR_TICKETS', 'BENCH_DOOR_REVOCATIONS', 'BENCH_DOOR_RUNS', 'BENCH_DOOR_ROUNDS']);
  const markdown = `## Door: offline data, verifying a signed code, syncing offline scans

What it measures: what a door scanner waits for, against a real Montage server process
(\`node bin/montage.js serve --no-worker\`, as the events benchmark runs it) on SQLite (temp \`DATA_DIR\`) and on
PostgreSQL (a fresh database), and the scanner page's verifier in Chromium.

- Command: \`${command}\` (from the repository root; builds \`dist/\` first)
- Date: ${m.date} (start of the run); built from commit ${m.commit}
- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memory} RAM, ${m.os}; Node ${m.node}, better-sqlite3 ${packageVersion('better-sqlite3')}, pg ${packageVersion('pg')}, playwright-core ${packageVersion('playwright-core')}.
  **The machine was shared and loaded** during the run (other builds and tests on its ${m.nproc} CPUs): ${loadNote}
- Offline data (\`bench/door-offline.mjs\`): one event of ${int(offline.tickets)} tickets (3 free ticket types, orders of 100
  through the API, 4 connections), ${int(offline.revocations)} of them cancelled (\`POST /v1/tickets/:id/cancel\`), so the revocation
  list holds ${int(offline.revocations)} serials. Then \`GET /v1/events/:id/checkin/offline\` as a scanner uses it, one at a time, ${offline.runs + 1} times
  (the first, which warms the server, not counted): download to the last byte, \`JSON.parse\`, and ready (the serials in a \`Set\`,
  the public keys imported and the list's Ed25519 signature verified with WebCrypto, in Node); the list must hold every
  serial. Then the same request with \`If-None-Match\` (${offline.runs} times), which must be a 304.
  Target: downloaded and ready < ${int(OFFLINE_TARGET_MS)} ms (judged on the p95 of the ${offline.runs}).
- Sync (\`bench/door-sync.mjs\`): an event of ${int(SCANS)} tickets; per round (${sync.rounds}) a fresh check-in list that admits once
  and four \`POST /v1/events/:id/checkin/sync\` of ${int(SCANS)} scans by \`code\` from one device each: *fresh* (every scan
  admitted), the same batch again (*duplicate*: every scan \`duplicate\`, the counts unchanged), a later admission of each
  ticket from a second door (*conflict*: the first admissions kept), an earlier one from a third (*displacing*: each
  displaces the admission kept so far). Exactly once: every answer holds one result per scan, in the order sent, with the
  expected outcome; the fresh batch makes ${int(SCANS)} distinct check-ins and the list counts ${int(SCANS)} entries and admitted
  tickets; after the round ${int(SCANS)} entries and ${int(2 * SCANS)} conflicts. Time: request to parsed answer, one at a time.
  Target: every batch < ${int(SYNC_TARGET_MS)} ms.
- Verify (\`bench/scanner-verify.mjs\`): the page's verifier (\`web/scanner/src/verify.ts\`, WebCrypto Ed25519) in headless
  Chromium on a cross-origin isolated loopback page (fine-grained \`performance.now()\`), one event key and ${int(REVOKED)} revoked
  serials; ${int(CODES)} codes signed in Node per the code format, 50 warm-up checks, then each of the ${int(CODES)} verified once and
  timed alone; every one must verify. Target: median < ${VERIFY_TARGET_MS} ms.
- The check-in through a list (\`POST /v1/events/:id/checkin\` with \`listId\`) is measured by the events benchmark,
  beside the check-in without a list, in the same run (the section "Events, in part: check-in" above, or the events section of a full run).

### Offline data (${int(offline.tickets)} tickets, ${int(offline.revocations)} revoked), median of ${offline.runs}

${t1.md}

### Sync of ${int(SCANS)} offline scans (${sync.rounds} rounds)

${t2.md}

### Verifying one signed code in the page

${t3.md}

### Targets

${verdicts.map((v) => `- ${v.pass ? 'PASS' : '**FAIL**'}: ${v.text}`).join('\n')}`;
  return { text, markdown, pass: verdicts.every((v) => v.pass), writeDoc: true };
}

#!/usr/bin/env node
// An open-loop load generator: requests start on a fixed schedule (`rate` per second, evenly
// spaced), whatever the server's answers do, over at most `connections` keep-alive connections.
// A closed loop (autocannon, bench/load-client.mjs) measures the latency of a saturated server,
// which is its queue (about connections / rate); this one measures the latency of a server
// serving a given rate. Each latency runs from the request's scheduled start to its last byte,
// so a request that waits for a free connection counts its wait (no coordinated omission).
//
// The connections are opened (and the client warmed) before the schedule starts: with GET
// `warmPath` (default /healthz) on each, so the first requests do not pay for connecting.
//
// Usage: node bench/rate-client.mjs SPEC.json; prints one JSON line with the result.
// SPEC: {
//   origin, method, path, headers,   the target
//   bodiesFile,                      a JSON array of bodies (strings), each sent once, in order
//   rate,                            requests per second
//   connections,                     the most connections open at once
//   timeoutSeconds, warmPath         a request's time limit (default 30), the warm-up route
// }
// Result: { requests (answered), elapsedMs, rate (answers per second over the schedule),
// offeredRate, statuses, codes, latency: { p50, p90, p99, max, mean } (ms, answered requests),
// errors (refused, reset or cut short), timeouts, lateStarts (requests that waited for a
// connection), samples }.
import fs from 'node:fs';
import http from 'node:http';
import { countAnswer, latencySummary } from './answers.mjs';

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const bodies = JSON.parse(fs.readFileSync(spec.bodiesFile, 'utf8'));
const total = bodies.length;
const interval = 1000 / spec.rate;
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections ?? 50 });
const origin = new URL(spec.origin);

const timeoutMs = (spec.timeoutSeconds ?? 30) * 1000;
const latencies = [];
const tally = { statuses: {}, codes: {}, samples: [] };
let done = 0;
let errors = 0;
let timeouts = 0;
let lateStarts = 0;
let inFlight = 0;
let sent = 0;
let lastAnswerAt = 0;

/** One request on the agent's connections; `answer(status, body)` or `fail(kind, message)`, once. */
function request(options, body, answer, fail) {
  let settled = false;
  const once = (f) => (...args) => {
    if (settled) return;
    settled = true;
    f(...args);
  };
  const onAnswer = once(answer);
  const onFail = once(fail);
  const req = http.request({ host: origin.hostname, port: origin.port, agent, ...options }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => onAnswer(res.statusCode, Buffer.concat(chunks).toString()));
    // a body cut short ends with 'aborted' / 'close' and no 'end'
    res.on('aborted', () => onFail('error', 'answer cut short'));
    res.on('close', () => (res.complete ? undefined : onFail('error', 'answer cut short')));
    res.on('error', (err) => onFail('error', err.message));
  });
  req.setTimeout(timeoutMs, () => {
    onFail('timeout', `no answer within ${timeoutMs} ms`);
    req.destroy();
  });
  req.on('error', (err) => onFail('error', err.message));
  req.end(body);
}

function send(index, scheduledAt) {
  const body = bodies[index];
  inFlight++;
  if (inFlight > (spec.connections ?? 50)) lateStarts++;
  const headers = { ...(spec.headers ?? {}), 'content-length': Buffer.byteLength(body) };
  request(
    { method: spec.method ?? 'POST', path: spec.path, headers },
    body,
    (status, text) => {
      const now = performance.now();
      lastAnswerAt = now;
      latencies.push(now - scheduledAt);
      countAnswer(tally, status, text);
      finish();
    },
    (kind, message) => {
      if (kind === 'timeout') timeouts++;
      else errors++;
      if (tally.samples.length < 5) tally.samples.push(`${kind}: ${message}`);
      finish();
    },
  );
}

function finish() {
  inFlight--;
  if (++done === total) report();
}

// Every connection opened and used once before the clock starts.
const warm = Array.from(
  { length: spec.connections ?? 50 },
  () =>
    new Promise((resolve, reject) =>
      request({ method: 'GET', path: spec.warmPath ?? '/healthz', headers: {} }, undefined, resolve, (kind, message) => reject(new Error(`warm-up ${kind}: ${message}`))),
    ),
);
try {
  await Promise.all(warm);
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
}

let started = 0;
// Starts every request whose time has come, then sleeps until the next one's (timers are ~1 ms
// coarse, so a tick may start a few at once; each still counts from its own scheduled time).
function tick() {
  const now = performance.now();
  while (sent < total && started + sent * interval <= now) {
    send(sent, started + sent * interval);
    sent++;
  }
  if (sent < total) setTimeout(tick, Math.max(0, started + sent * interval - performance.now()));
}
started = performance.now();
tick();

function report() {
  const answered = latencies.length;
  const elapsedMs = (answered ? lastAnswerAt : performance.now()) - started;
  process.stdout.write(
    `${JSON.stringify({
      requests: answered,
      elapsedMs,
      rate: (answered * 1000) / elapsedMs,
      offeredRate: spec.rate,
      statuses: tally.statuses,
      codes: tally.codes,
      latency: latencySummary(latencies),
      errors,
      timeouts,
      lateStarts,
      samples: tally.samples,
    })}\n`,
  );
  agent.destroy();
}

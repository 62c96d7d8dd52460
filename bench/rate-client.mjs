#!/usr/bin/env node
// An open-loop load generator: requests start on a fixed schedule (`rate` per second, evenly
// spaced), whatever the server's answers do, over at most `connections` keep-alive connections.
// A closed loop (autocannon, bench/load-client.mjs) measures the latency of a saturated server,
// which is its queue (about connections / rate); this one measures the latency of a server
// serving a given rate. Each latency runs from the request's scheduled start to its last byte,
// so a request that waits for a free connection counts its wait (no coordinated omission).
//
// Usage: node bench/rate-client.mjs SPEC.json; prints one JSON line with the result.
// SPEC: {
//   origin, method, path, headers,   the target
//   bodiesFile,                      a JSON array of bodies (strings), each sent once, in order
//   rate,                            requests per second
//   connections                      the most connections open at once
// }
// Result: { requests, elapsedMs, rate (answers per second over the schedule), offeredRate,
// statuses, codes, latency: { p50, p90, p99, max, mean } (ms), errors, lateStarts (requests that
// waited for a connection), samples }.
import fs from 'node:fs';
import http from 'node:http';

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const bodies = JSON.parse(fs.readFileSync(spec.bodiesFile, 'utf8'));
const total = bodies.length;
const interval = 1000 / spec.rate;
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections ?? 50 });
const origin = new URL(spec.origin);

const latencies = new Float64Array(total);
const statuses = {};
const codes = {};
const samples = [];
let done = 0;
let errors = 0;
let lateStarts = 0;
let inFlight = 0;
let sent = 0;
let lastAnswerAt = 0;

function send(index, scheduledAt) {
  const body = bodies[index];
  inFlight++;
  if (inFlight > (spec.connections ?? 50)) lateStarts++;
  const req = http.request(
    {
      host: origin.hostname,
      port: origin.port,
      method: spec.method ?? 'POST',
      path: spec.path,
      agent,
      headers: { ...(spec.headers ?? {}), 'content-length': Buffer.byteLength(body) },
    },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const now = performance.now();
        lastAnswerAt = now;
        latencies[index] = now - scheduledAt;
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (res.statusCode >= 400) {
          const text = Buffer.concat(chunks).toString();
          let code = '?';
          try {
            code = JSON.parse(text).code ?? '?';
          } catch {}
          codes[`${res.statusCode} ${code}`] = (codes[`${res.statusCode} ${code}`] ?? 0) + 1;
          if (samples.length < 5) samples.push(`${res.statusCode} ${text.slice(0, 300)}`);
        }
        finish();
      });
    },
  );
  req.on('error', (err) => {
    errors++;
    latencies[index] = performance.now() - scheduledAt;
    if (samples.length < 5) samples.push(String(err.message));
    finish();
  });
  req.end(body);
}

function finish() {
  inFlight--;
  if (++done === total) report();
}

const started = performance.now();
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
tick();

function report() {
  const sorted = Float64Array.from(latencies).sort();
  const pct = (p) => sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
  const elapsedMs = lastAnswerAt - started;
  process.stdout.write(
    `${JSON.stringify({
      requests: total - errors,
      elapsedMs,
      rate: ((total - errors) * 1000) / elapsedMs,
      offeredRate: spec.rate,
      statuses,
      codes,
      latency: { p50: pct(50), p90: pct(90), p99: pct(99), max: pct(100), mean: sorted.reduce((a, b) => a + b, 0) / total },
      errors,
      timeouts: 0,
      lateStarts,
      samples,
    })}\n`,
  );
  agent.destroy();
}

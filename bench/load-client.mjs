#!/usr/bin/env node
// A load generator for write routes, run as its own process by the benchmarks (never inside the
// server's event loop): autocannon's HTTP client, keep-alive, no pipelining, each request with
// its own body taken in order from a list, so that no two requests carry the same body.
//
// Usage: node bench/load-client.mjs SPEC.json; prints one JSON line with the result.
// SPEC: {
//   origin, method, path, headers,       the target
//   bodiesFile,                          a JSON array of bodies (strings, sent as they are)
//   connections,                         concurrent connections (each one request at a time)
//   amount | duration,                   requests in all (= bodies used once each), or seconds
//                                        (then the bodies are taken round and round)
//   expect: [201],                       the statuses that count as served
//   collect: 'tickets' | null,           for order responses: count the tickets of each answer
//                                        in `expect`, and with `ticketsFile` write their
//                                        `id code` lines to that file
//   ticketsFile
// }
// Result: { requests, elapsedMs (from the start to the last answer), rate, statuses, codes (`status code` of the problem bodies), latency: { p50, p90, p99, max, mean } (ms, all
// responses, measured per request from write to last byte), errors, timeouts, tickets, samples }.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { countAnswer, latencySummary } from './answers.mjs';

const require = createRequire(import.meta.url);
const autocannon = require('autocannon');

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const bodies = spec.bodiesFile ? JSON.parse(fs.readFileSync(spec.bodiesFile, 'utf8')) : [''];
const expect = new Set(spec.expect ?? [200]);
if (spec.amount && spec.amount > bodies.length) throw new Error(`amount ${spec.amount} > ${bodies.length} bodies`);

let next = 0;
const latencies = [];
const tally = { statuses: {}, codes: {}, samples: [] };
let tickets = 0;
const ticketLines = [];

const request = {
  method: spec.method ?? 'GET',
  path: spec.path,
  headers: spec.headers ?? {},
  setupRequest(req) {
    req.body = bodies[next++ % bodies.length];
    return req;
  },
  onResponse(status, body) {
    countAnswer(tally, status, body, !expect.has(status));
    if (!expect.has(status)) return;
    if (spec.collect === 'tickets') {
      const order = JSON.parse(body);
      tickets += order.tickets.length;
      if (spec.ticketsFile) for (const t of order.tickets) ticketLines.push(`${t.id} ${t.code}`);
    }
  },
};

const started = performance.now();
// The run ends at the last answer: autocannon itself reports only on its 1-second ticks, which
// would round every short run up to whole seconds.
let lastResponseAt = null;
const instance = autocannon(
  {
    url: spec.origin,
    connections: spec.connections ?? 50,
    ...(spec.amount ? { amount: spec.amount } : { duration: spec.duration ?? 10 }),
    timeout: spec.timeoutSeconds ?? 30,
    requests: [request],
    setupClient(client) {
      client.on('response', (status, bytes, duration) => {
        lastResponseAt = performance.now();
        latencies.push(duration);
      });
    },
  },
  (err, result) => {
    const elapsedMs = (lastResponseAt ?? performance.now()) - started;
    if (err) {
      process.stderr.write(`${err.stack ?? err}\n`);
      process.exit(1);
    }
    if (spec.ticketsFile) fs.writeFileSync(spec.ticketsFile, ticketLines.join('\n') + (ticketLines.length ? '\n' : ''));
    const requests = latencies.length;
    process.stdout.write(
      `${JSON.stringify({
        requests,
        bodiesUsed: next,
        elapsedMs,
        rate: (requests * 1000) / elapsedMs,
        statuses: tally.statuses,
        codes: tally.codes,
        latency: latencySummary(latencies),
        errors: result.errors,
        timeouts: result.timeouts,
        tickets,
        samples: tally.samples,
      })}\n`,
    );
  },
);
instance.on('error', (err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});

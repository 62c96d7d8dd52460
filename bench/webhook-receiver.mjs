#!/usr/bin/env node
// A fast loopback webhook receiver for bench/webhooks.mjs, run as its own process: a plain
// node:http server that answers 200 to every delivery at once, counts deliveries and records
// each `webhook-id` with the time it arrived (performance.timeOrigin + now(), in ms since the
// epoch, comparable with the benchmark process's clock).
//
// Control routes (GET unless said): /__stats, /__ids (every message id and how often it came),
// /__find?dataId=... (the first event.* delivery whose data.id is that), POST /__reset.
import http from 'node:http';

const port = Number(process.env.PORT);
const now = () => performance.timeOrigin + performance.now();

let seen = new Map(); // webhook-id -> { n, at, event }
let byDataId = new Map(); // data.id of event.* messages -> { at, id, event }
let deliveries = 0;
let firstAt = null;
let lastAt = null;
let bad = 0;

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const at = now();
  if (req.url.startsWith('/__')) {
    const url = new URL(req.url, 'http://x');
    req.resume();
    if (url.pathname === '/__stats') return json(res, 200, { deliveries, unique: seen.size, firstAt, lastAt, bad });
    if (url.pathname === '/__ids') return json(res, 200, Object.fromEntries([...seen].map(([id, v]) => [id, v.n])));
    if (url.pathname === '/__find') {
      const hit = byDataId.get(url.searchParams.get('dataId'));
      return hit ? json(res, 200, hit) : json(res, 404, {});
    }
    if (url.pathname === '/__reset' && req.method === 'POST') {
      seen = new Map();
      byDataId = new Map();
      deliveries = 0;
      firstAt = lastAt = null;
      bad = 0;
      return json(res, 200, {});
    }
    return json(res, 404, {});
  }
  const id = req.headers['webhook-id'];
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, { 'content-length': '0' });
    res.end();
    deliveries++;
    firstAt ??= at;
    lastAt = at;
    if (typeof id !== 'string' || !req.headers['webhook-signature']) {
      bad++;
      return;
    }
    const entry = seen.get(id);
    if (entry) {
      entry.n++;
      return;
    }
    let event = null;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      event = body.event;
      if (body.id !== id) bad++;
      if (typeof event === 'string' && event.startsWith('event.') && body.data?.id && !byDataId.has(body.data.id)) byDataId.set(body.data.id, { at, id, event });
    } catch {
      bad++;
    }
    seen.set(id, { n: 1, at, event });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => process.stdout.write(`receiver listening on ${port}\n`));
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)).closeAllConnections());

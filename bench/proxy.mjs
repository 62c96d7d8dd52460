#!/usr/bin/env node
// A small round-robin reverse proxy on loopback, in front of several `montage serve --no-worker`
// processes (bench/soak.mjs; docs/deploy.md shows the same shape with a real load balancer).
//
//   PORT=8080 BACKENDS=127.0.0.1:8081,127.0.0.1:8082 node bench/proxy.mjs
//
// Each request goes to the next backend in turn. A backend that refuses the connection (its
// process is down or restarting) is skipped for a second and the request goes to the next one:
// nothing reached the dead process, so trying elsewhere is safe for any method. A backend that
// drops a request it had accepted (killed mid-request) may have acted on it: a GET is tried
// elsewhere, anything else is answered 502 (`X-Proxy-Error`), and the client decides (a POST with
// an Idempotency-Key can be repeated safely). GET /__proxy reports counters as JSON.
import http from 'node:http';

const port = Number(process.env.PORT);
const backends = (process.env.BACKENDS ?? '')
  .split(',')
  .filter(Boolean)
  .map((address) => {
    const [host, p] = address.split(':');
    return { address, host, port: Number(p), downUntil: 0, forwarded: 0, refused: 0, dropped: 0 };
  });
if (!port || backends.length === 0) {
  console.error('usage: PORT=<port> BACKENDS=host:port[,host:port...] node bench/proxy.mjs');
  process.exit(2);
}

const DOWN_MS = 1000;
// A request body larger than this is refused here (Montage's own limit is 1 MiB by default).
const MAX_BODY = 2 * 1024 * 1024;
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'];
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
const stats = { requests: 0, badGateway: 0, retried: 0 };
let next = 0;

/** The next backend in turn that is not known to be down and not tried yet for this request. */
function pick(tried) {
  const now = Date.now();
  for (let i = 0; i < backends.length; i++) {
    const backend = backends[next++ % backends.length];
    if (!tried.has(backend) && backend.downUntil <= now) return backend;
  }
  // All marked down: try one anyway (it may be back), rather than fail without trying.
  return backends.find((b) => !tried.has(b)) ?? null;
}

function withoutHopByHop(headers) {
  const out = { ...headers };
  for (const name of HOP_BY_HOP) delete out[name];
  return out;
}

function badGateway(res, reason) {
  stats.badGateway++;
  if (res.headersSent) return res.destroy();
  const body = JSON.stringify({ status: 502, title: 'Bad gateway', detail: reason });
  res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-proxy-error': reason });
  res.end(body);
}

function forward(req, res, body, tried) {
  const backend = pick(tried);
  if (!backend) return badGateway(res, 'no backend answered');
  tried.add(backend);
  const headers = withoutHopByHop(req.headers);
  headers['x-forwarded-for'] = req.socket.remoteAddress;
  if (body.length > 0 || req.headers['content-length'] !== undefined) headers['content-length'] = String(body.length);
  let answered = false;
  const upstream = http.request({ host: backend.host, port: backend.port, method: req.method, path: req.url, headers, agent }, (response) => {
    answered = true;
    backend.forwarded++;
    res.writeHead(response.statusCode, withoutHopByHop(response.headers));
    response.pipe(res);
    response.on('error', () => res.destroy());
  });
  upstream.on('error', (err) => {
    if (answered) return res.destroy();
    if (err.code === 'ECONNREFUSED') {
      backend.refused++;
      backend.downUntil = Date.now() + DOWN_MS;
      stats.retried++;
      return forward(req, res, body, tried);
    }
    backend.dropped++;
    backend.downUntil = Date.now() + DOWN_MS;
    if (req.method === 'GET' || req.method === 'HEAD') {
      stats.retried++;
      return forward(req, res, body, tried);
    }
    badGateway(res, `${backend.address}: ${err.code ?? err.message}`);
  });
  upstream.end(body);
}

const server = http.createServer((req, res) => {
  if (req.url === '/__proxy') {
    req.resume();
    const body = JSON.stringify({ ...stats, backends: backends.map(({ address, forwarded, refused, dropped }) => ({ address, forwarded, refused, dropped })) });
    return res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  }
  stats.requests++;
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY) {
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => forward(req, res, Buffer.concat(chunks), new Set()));
  req.on('error', () => res.destroy());
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => process.stdout.write(`proxy listening on ${port}, backends ${backends.map((b) => b.address).join(', ')}\n`));
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)).closeAllConnections());

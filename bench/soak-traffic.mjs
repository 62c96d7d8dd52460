// The clients of the soak (bench/soak.mjs): concurrent loops of fetch through the proxy, doing
// what real clients do (event reads, orders on a few hot ticket types, door check-ins, blend jobs),
// recording every answer with its time, and every acknowledgement the server gave: an order
// answered 201 and a check-in answered 201 are promises the invariants hold the database to.
// Writes carry an Idempotency-Key and are repeated with it after a 5xx or a lost connection,
// as a careful client would.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { percentile, seeded } from './lib.mjs';

const REQUEST_TIMEOUT_MS = 15_000;
/** Attempts of one write (the first and its repeats after a 5xx or a lost connection). */
const WRITE_ATTEMPTS = 6;

/** Every answer, by operation: latencies, statuses, and the failures (5xx, no answer) with their time. */
export class Recorder {
  constructor(t0) {
    this.t0 = t0;
    this.ops = new Map();
    this.failures = [];
    this.violations = [];
  }

  add(op, entry) {
    let o = this.ops.get(op);
    if (!o) this.ops.set(op, (o = { count: 0, latencies: [], statuses: {} }));
    o.count++;
    const label = entry.status ? String(entry.status) : entry.error;
    o.statuses[label] = (o.statuses[label] ?? 0) + 1;
    if (entry.status) o.latencies.push(entry.ms);
    if (!entry.status || entry.status >= 500) this.failures.push({ op, ...entry });
  }

  /** Something a client saw that must never happen (a double check-in, an order that vanished). */
  violation(text) {
    this.violations.push({ at: Date.now() - this.t0, text });
  }

  summary(durationMs) {
    const all = [...this.ops.values()];
    const latencies = all.flatMap((o) => o.latencies);
    const ops = {};
    for (const [name, o] of [...this.ops].sort()) {
      ops[name] = { count: o.count, rps: o.count / (durationMs / 1000), p50: percentile(o.latencies, 50), p99: percentile(o.latencies, 99), statuses: o.statuses };
    }
    const requests = all.reduce((n, o) => n + o.count, 0);
    return { requests, rps: requests / (durationMs / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99), ops };
  }
}

/**
 * The traffic of one soak run. `base` is the proxy; `event` the published event with its hot
 * ticket types; `imageUrls` the frames blend jobs use.
 */
export class Traffic {
  constructor({ base, apiKey, event, imageUrls, t0, seed = 1 }) {
    Object.assign(this, { base, apiKey, event, imageUrls });
    this.random = seeded(seed);
    this.recorder = new Recorder(t0);
    this.t0 = t0;
    // What the server acknowledged.
    this.orders = []; // { id, tickets: [{ id, ticketTypeId }] }
    this.checkins = []; // { id, ticketId }
    this.blendJobs = []; // job ids answered 202
    // Unsettled: writes whose every attempt failed, or that another attempt of theirs still held.
    this.inDoubt = { orders: 0, checkins: 0, blendJobs: 0 };
    this.soldOut = 0;
    this.replayed = 0;
    this.doubleScans = { pairs: 0, admittedBoth: 0 };
    this.toScan = [];
  }

  pick(list) {
    return list[Math.floor(this.random() * list.length)];
  }

  /** One request; never throws. Records it under `op`. */
  async call(op, method, path, { body, idempotencyKey } = {}) {
    const headers = { authorization: `Bearer ${this.apiKey}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const at = Date.now() - this.t0;
    const started = performance.now();
    let status = 0;
    let json = null;
    let error = null;
    let proxyError = null;
    let replayed = false;
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      status = res.status;
      proxyError = res.headers.get('x-proxy-error');
      replayed = res.headers.get('idempotent-replayed') === 'true';
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
    } catch (err) {
      error = err.name === 'TimeoutError' ? 'timeout' : (err.cause?.code ?? err.cause?.message ?? err.message);
    }
    const ms = performance.now() - started;
    this.recorder.add(op, { at, ms, status, code: json?.code ?? null, error, proxyError, detail: status >= 500 ? (json?.detail ?? null) : null });
    return { status, json, error, replayed };
  }

  /** A write, repeated with the same Idempotency-Key after a 5xx or a lost answer. */
  async write(op, path, body) {
    const key = `soak-${randomUUID()}`;
    let last;
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      last = await this.call(op, 'POST', path, { body, idempotencyKey: key });
      if (last.status !== 0 && last.status < 500) return last;
      await sleep(150 * 2 ** attempt);
    }
    return last;
  }

  async read() {
    const res = await this.readOne();
    if (res.status !== 200 && res.status !== 0 && res.status < 500 && !res.reported) this.recorder.violation(`read answered ${res.status} ${res.json?.code}: ${res.json?.detail}`);
  }

  async readOne() {
    const { id, ticketTypes } = this.event;
    const r = this.random();
    if (r < 0.3) return this.call('read event', 'GET', `/v1/events/${id}`);
    if (r < 0.55) {
      const res = await this.call('read inventory', 'GET', `/v1/events/${id}/tickets`);
      for (const type of res.json?.data ?? []) {
        if (type.sold > type.quantity) this.recorder.violation(`inventory read: ${type.id} sold ${type.sold} of ${type.quantity}`);
      }
      return res;
    }
    if (r < 0.7) return this.call('read events page', 'GET', '/v1/events?limit=10');
    if (r < 0.85 && this.orders.length > 0) {
      const order = this.pick(this.orders);
      const res = await this.call('read order', 'GET', `/v1/orders/${order.id}`);
      if (res.status === 404) this.recorder.violation(`acknowledged order ${order.id} read back as 404`);
      return { ...res, reported: res.status === 404 };
    }
    if (this.blendJobs.length > 0) return this.call('read blend status', 'GET', `/v1/blend/status/${this.pick(this.blendJobs)}`);
    return this.call('read inventory', 'GET', `/v1/events/${id}/tickets/${this.pick(ticketTypes).id}`);
  }

  /** 1-4 tickets of one hot type, sometimes of two. */
  async order() {
    const types = this.event.ticketTypes;
    const first = this.pick(types);
    const items = [{ ticketTypeId: first.id, quantity: 1 + Math.floor(this.random() * 4) }];
    if (this.random() < 0.2) {
      const second = this.pick(types.filter((t) => t !== first));
      items.push({ ticketTypeId: second.id, quantity: 1 + Math.floor(this.random() * 2) });
    }
    const n = this.orders.length + this.inDoubt.orders;
    const body = { buyer: { name: `Soak buyer ${n}`, email: `buyer${n}@example.com` }, items };
    const res = await this.write('order', `/v1/events/${this.event.id}/orders`, body);
    if (res.status === 201) {
      if (res.replayed) this.replayed++;
      const tickets = res.json.tickets.map((t) => ({ id: t.id, code: t.code, ticketTypeId: t.ticketTypeId }));
      this.orders.push({ id: res.json.id, tickets });
      this.toScan.push(...tickets);
    } else if (res.status === 409 && res.json?.code === 'sold_out') {
      this.soldOut++;
    } else {
      this.inDoubt.orders++;
      if (res.status !== 0 && res.status < 500 && res.json?.code !== 'idempotency_request_in_progress') {
        this.recorder.violation(`order answered ${res.status} ${res.json?.code}: ${res.json?.detail}`);
      }
    }
  }

  /** A door scan of an issued ticket; one in ten is scanned at two gates at once (by id and by code). */
  async checkIn() {
    if (this.toScan.length === 0) return this.read();
    const ticket = this.toScan.splice(Math.floor(this.random() * this.toScan.length), 1)[0];
    const path = `/v1/events/${this.event.id}/checkin`;
    if (this.random() < 0.1) {
      this.doubleScans.pairs++;
      const answers = await Promise.all([
        this.write('check-in', path, { ticketId: ticket.id, gate: 'north' }),
        this.write('check-in', path, { code: ticket.code, gate: 'south' }),
      ]);
      const admitted = answers.filter((a) => a.status === 201);
      if (admitted.length > 1) {
        this.doubleScans.admittedBoth++;
        this.recorder.violation(`ticket ${ticket.id} admitted twice at once (${admitted.map((a) => a.json.id).join(', ')})`);
      }
      for (const a of answers) this.settleCheckIn(ticket, a, admitted.length > 0);
      return;
    }
    this.settleCheckIn(ticket, await this.write('check-in', path, { ticketId: ticket.id, gate: 'main' }), false);
  }

  settleCheckIn(ticket, res, otherAdmitted) {
    if (res.status === 201) this.checkins.push({ id: res.json.id, ticketId: ticket.id });
    else if (res.status === 409 && res.json?.code === 'already_checked_in') {
      // Expected for the losing scan of a pair; otherwise an earlier attempt of this scan got in.
      if (!otherAdmitted) this.checkins.push({ id: res.json.checkinId, ticketId: ticket.id, via: 'already_checked_in' });
    } else {
      this.inDoubt.checkins++;
      if (res.status !== 0 && res.status < 500 && res.json?.code !== 'idempotency_request_in_progress') {
        this.recorder.violation(`check-in of ${ticket.id} answered ${res.status} ${res.json?.code}: ${res.json?.detail}`);
      }
    }
  }

  async blend() {
    const blendType = this.random() < 0.5 ? 'median' : 'mean';
    const body = { projectId: 'soak', images: this.imageUrls, options: { blendType, outputFormat: 'png' } };
    const res = await this.write('blend start', '/v1/blend/start', body);
    if (res.status === 202) this.blendJobs.push(res.json.jobId);
    else this.inDoubt.blendJobs++;
  }

  /** One client: reads, orders and check-ins in a fixed mix, back to back, until `until`. */
  async client(until) {
    while (Date.now() < until) {
      const r = this.random();
      if (r < 0.5) await this.read();
      else if (r < 0.75) await this.order();
      else await this.checkIn();
    }
  }

  /** Blend jobs start at a steady pace beside the clients (they are work for the workers, not the API). */
  async blender(until, everyMs) {
    while (Date.now() < until) {
      const next = Date.now() + everyMs;
      await this.blend();
      await sleep(Math.max(0, next - Date.now()));
    }
  }

  async run(durationMs, { clients, blendEveryMs }) {
    const until = Date.now() + durationMs;
    await Promise.all([...Array.from({ length: clients }, () => this.client(until)), this.blender(until, blendEveryMs)]);
  }
}

/**
 * Four 64×48 PNG frames of one textured scene with a "passer-by" (a red square) in a different
 * place in each: they line up as they are, and a median removes the square. Served from loopback
 * by this process.
 */
export async function startImageServer() {
  const width = 64;
  const height = 48;
  const frames = [];
  for (let f = 0; f < 4; f++) {
    const pixels = Buffer.alloc(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 3;
        const inSquare = x >= 4 + f * 14 && x < 14 + f * 14 && y >= 18 && y < 28;
        // Texture (the alignment check measures shifts where there is some) with fixed noise.
        const grain = ((x * 7919 + y * 104729) % 41) - 20;
        const base = 120 + 60 * Math.sin(x * 0.7) * Math.cos(y * 0.5) + grain;
        pixels[i] = inSquare ? 220 : base;
        pixels[i + 1] = inSquare ? 30 : base * 0.8 + y;
        pixels[i + 2] = inSquare ? 30 : 255 - base;
      }
    }
    frames.push(await sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer());
  }
  const server = http.createServer((req, res) => {
    const match = /^\/frames\/(\d)\.png$/.exec(req.url ?? '');
    const frame = match ? frames[Number(match[1])] : undefined;
    if (!frame) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': frame.length }).end(frame);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address();
  return { server, urls: frames.map((_, i) => `http://127.0.0.1:${port}/frames/${i}.png`) };
}

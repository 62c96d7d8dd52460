// Sends a generated request exactly as generated (node:http: raw path, any method with any body),
// with a deadline: no answer in time is a hang.
import http from 'node:http';
import net from 'node:net';
import type { FuzzRequest } from './request.js';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  ms: number;
}

/** `more`: the answers after the first on one connection (pipelined requests). */
export type Outcome = { ok: true; answer: Answer; more?: Answer[] } | { ok: false; error: string; hang: boolean; ms: number };

const MAX_BODY = 4 * 1024 * 1024;

export class Client {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(baseUrl: string, private readonly timeoutMs: number, connections: number) {
    this.url = new URL(baseUrl);
    // Twice the connections: a request sent twice at once needs two.
    this.agent = new http.Agent({ keepAlive: true, maxSockets: connections * 2 });
  }

  close(): void {
    this.agent.destroy();
  }

  async send(request: FuzzRequest): Promise<Outcome> {
    if (request.raw !== undefined) return this.sendRaw(request.raw);
    const first = await this.once(request);
    // A keep-alive connection the server closed just as this request went out: send it again once.
    if (!first.ok && !first.hang && first.reusedSocket) return this.once(request);
    return first;
  }

  private once(request: FuzzRequest): Promise<Outcome & { reusedSocket?: boolean }> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: Outcome & { reusedSocket?: boolean }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const body = request.body === undefined ? undefined : Buffer.from(request.body, 'utf8');
      const req = http.request({
        host: this.url.hostname,
        port: this.url.port,
        method: request.method,
        path: request.path,
        headers: { ...request.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        agent: this.agent,
      });
      const timer = setTimeout(() => {
        settle({ ok: false, error: `no answer within ${this.timeoutMs} ms`, hang: true, ms: ms() });
        req.destroy();
      }, this.timeoutMs);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        // An event stream stays open by design (a job's progress until it ends): its first event is the answer.
        const streaming = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= MAX_BODY) chunks.push(c);
          if (streaming) {
            settle({ ok: true, answer: { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: ms() } });
            req.destroy();
          }
        });
        res.on('end', () => settle({ ok: true, answer: { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: ms() } }));
        res.on('error', (err) => settle({ ok: false, error: `answer broken off: ${err.message}`, hang: false, ms: ms() }));
        res.on('aborted', () => settle({ ok: false, error: 'answer broken off', hang: false, ms: ms() }));
      });
      req.on('error', (err: NodeJS.ErrnoException) => settle({ ok: false, error: `${err.code ?? ''} ${err.message}`.trim(), hang: false, ms: ms(), reusedSocket: req.reusedSocket }));
      req.end(body);
    });
  }

  /** Writes `raw` on a connection of its own and reads every answer until the server closes it. */
  private sendRaw(raw: string): Promise<Outcome> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      const socket = net.connect({ host: this.url.hostname, port: Number(this.url.port) });
      const timer = setTimeout(() => {
        socket.destroy();
        resolve({ ok: false, error: `no answer within ${this.timeoutMs} ms`, hang: true, ms: ms() });
      }, this.timeoutMs);
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', () => {}); // a reset after the answer is how some refusals end
      socket.on('close', () => {
        clearTimeout(timer);
        const answers = parseAnswers(Buffer.concat(chunks), ms());
        const [answer, ...more] = answers;
        resolve(answer ? { ok: true, answer, more } : { ok: false, error: 'connection closed without an answer', hang: false, ms: ms() });
      });
      // No half-close: Node drops the requests of a connection whose client has ended it.
      socket.write(Buffer.from(raw, 'latin1'));
    });
  }
}

/** The HTTP/1.1 answers in `data`, interim (1xx) answers left out. */
function parseAnswers(data: Buffer, ms: number): Answer[] {
  const answers: Answer[] = [];
  let at = 0;
  while (at < data.length) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const [statusLine = '', ...lines] = data.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
    const headers: http.IncomingHttpHeaders = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let bodyEnd = end + 4;
    let body: Buffer = Buffer.alloc(0);
    if (headers['content-length'] !== undefined) {
      bodyEnd += Number(headers['content-length']);
      body = data.subarray(end + 4, bodyEnd);
    } else if (/chunked/i.test(String(headers['transfer-encoding'] ?? ''))) {
      const parts: Buffer[] = [];
      for (let size = -1; size !== 0 && bodyEnd < data.length; ) {
        const lineEnd = data.indexOf('\r\n', bodyEnd);
        size = parseInt(data.subarray(bodyEnd, lineEnd).toString('latin1'), 16);
        if (!(size >= 0)) break;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyEnd = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    } else if (status >= 200 && status !== 204 && status !== 304) {
      bodyEnd = data.length;
      body = data.subarray(end + 4);
    }
    if (status >= 200 || status === 0) answers.push({ status, headers, body, ms });
    at = bodyEnd;
  }
  return answers;
}

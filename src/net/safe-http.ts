import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import { isPrivateAddress } from './addresses.js';

/**
 * The one HTTP client for URLs that clients give us (webhook endpoints, images to blend).
 * Loopback, private, link-local and metadata addresses are refused after DNS resolution, at
 * connect time (so a DNS answer cannot change between the check and the connection), and on
 * every redirect, however the address is spelled (`127.1`, `2130706433`, `0x7f000001`,
 * `[::ffff:127.0.0.1]`, `localhost.`): the WHATWG URL parser normalises the numeric forms and
 * names go through the resolver. Responses are bounded in time and size.
 */
export type SafeFetchErrorCode = 'invalid_url' | 'blocked_address' | 'timeout' | 'too_large' | 'too_many_redirects' | 'network';

export class SafeFetchError extends Error {
  /**
   * @param message what the client who gave the URL may read: never an address that a name of
   *   theirs resolved to, which could map an internal network for them.
   * @param internal the whole story (resolved addresses, socket errors) for the server log only.
   */
  constructor(
    readonly code: SafeFetchErrorCode,
    message: string,
    readonly internal: string = message,
  ) {
    super(message);
  }
}

export interface SafeRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole exchange, connect to last byte. */
  timeoutMs: number;
  /** Larger bodies: `too_large`, unless `truncate` keeps the first `maxBytes`. */
  maxBytes: number;
  truncate?: boolean;
  /** 0: a redirect is returned as the response, not followed. */
  maxRedirects: number;
  /** Which addresses are refused: `addressPolicy(config.allowPrivateNetwork)`. */
  policy: AddressPolicy;
}

/** True for an address that must not be reached. */
export type AddressPolicy = (address: string) => boolean;

const OPEN: AddressPolicy = () => false;
const PUBLIC_ONLY: AddressPolicy = isPrivateAddress;
export const addressPolicy = (allowPrivateNetwork: boolean): AddressPolicy => (allowPrivateNetwork ? OPEN : PUBLIC_ONLY);

export interface SafeResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
  url: string;
}

const MAX_URL_LENGTH = 2048;

/** Checks what can be checked without the network: scheme, credentials, length, literal addresses. */
export function checkOutboundUrl(raw: string, policy: AddressPolicy): URL {
  if (raw.length > MAX_URL_LENGTH) throw new SafeFetchError('invalid_url', `URL longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SafeFetchError('invalid_url', 'not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SafeFetchError('invalid_url', 'only http and https URLs are allowed');
  if (url.username || url.password) throw new SafeFetchError('invalid_url', 'credentials in the URL are not allowed');
  // new URL() takes port 0, which no server listens on: such a URL could never be reached.
  if (url.port === '0') throw new SafeFetchError('invalid_url', 'port 0 cannot be connected to');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && policy(host)) throw new SafeFetchError('blocked_address', `${host} is a private or reserved address`);
  if (policy !== OPEN && /(^|\.)localhost\.?$/i.test(host)) throw new SafeFetchError('blocked_address', `${host} is a loopback name`);
  return url;
}

/**
 * A resolver that refuses names whose addresses (any of them) are private. The error tells the
 * client only that the name resolves to a private or reserved address; which one is for the log.
 */
export function guardedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses as dns.LookupAddress[];
      const blocked = list.find((a) => policy(a.address));
      if (blocked) {
        const error = new SafeFetchError(
          'blocked_address',
          `${hostname} resolves to a private or reserved address`,
          `${hostname} resolves to ${blocked.address}, a private or reserved address`,
        );
        return callback(error as NodeJS.ErrnoException, '', 4);
      }
      if (list.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 4);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

const agents = new WeakMap<AddressPolicy, Map<string, http.Agent>>();
/** Keep-alive agents, one per (policy, protocol): a socket already vetted may be reused. */
function agentFor(protocol: string, policy: AddressPolicy): http.Agent {
  let byProtocol = agents.get(policy);
  if (!byProtocol) agents.set(policy, (byProtocol = new Map()));
  let agent = byProtocol.get(protocol);
  if (!agent) {
    const options = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: 30_000, lookup: guardedLookup(policy) };
    agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    byProtocol.set(protocol, agent);
  }
  return agent;
}

function once(url: URL, request: SafeRequest, deadline: number): Promise<SafeResponse> {
  return new Promise((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return reject(new SafeFetchError('timeout', `no answer within ${request.timeoutMs} ms`));
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(url, {
      method: request.method ?? 'GET',
      headers: request.body === undefined ? request.headers : { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      agent: agentFor(url.protocol, request.policy),
    });
    let settled = false;
    // Settle first, then tear the exchange down without an error, so no 'error' event goes unheard.
    const finish = (outcome: SafeResponse | SafeFetchError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (outcome instanceof SafeFetchError) {
        reject(outcome);
        req.destroy();
      } else {
        resolve(outcome);
      }
    };
    const timer = setTimeout(() => finish(new SafeFetchError('timeout', `no answer within ${request.timeoutMs} ms`)), remaining);
    // The connection itself is checked too, with the same policy: whatever path an address took
    // to the socket (a literal, a resolver answer), the peer it connected to must be allowed.
    req.on('socket', (socket) => {
      const check = () => {
        const peer = socket.remoteAddress;
        if (peer !== undefined && request.policy(peer)) {
          const error = new SafeFetchError('blocked_address', `${url.hostname} is a private or reserved address`, `${url.hostname} connected to ${peer}, a private or reserved address`);
          finish(error);
          socket.destroy();
        }
      };
      if (socket.connecting) socket.once('connect', check);
      else check();
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      finish(err instanceof SafeFetchError ? err : networkError(err));
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const response = (truncated: boolean) => ({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated, url: url.toString() });
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        if (size <= request.maxBytes) {
          chunks.push(chunk);
          return;
        }
        if (!request.truncate) return finish(new SafeFetchError('too_large', `response larger than ${request.maxBytes} bytes`));
        chunks.push(chunk.subarray(0, chunk.length - (size - request.maxBytes)));
        finish(response(true));
        req.destroy();
      });
      res.on('error', () => finish(new SafeFetchError('network', 'the response was cut off')));
      res.on('end', () => finish(response(false)));
    });
    if (request.body !== undefined) req.end(request.body);
    else req.end();
  });
}

/**
 * A socket error as the client may read it: its code and a plain reason. Node's own message names
 * the address and port it tried ("connect ECONNREFUSED 10.0.0.5:80"); that goes to the log only.
 */
function networkError(err: NodeJS.ErrnoException): SafeFetchError {
  const reasons: Record<string, string> = {
    ECONNREFUSED: 'the connection was refused',
    ECONNRESET: 'the connection was reset',
    EHOSTUNREACH: 'the host cannot be reached',
    ENETUNREACH: 'the network cannot be reached',
    ETIMEDOUT: 'the connection timed out',
    ENOTFOUND: 'the host name does not resolve',
    EAI_AGAIN: 'the host name could not be resolved',
    EPIPE: 'the connection was closed',
  };
  const reason = (err.code && reasons[err.code]) ?? (err.code?.startsWith('ERR_TLS') || err.code?.includes('CERT') ? 'the TLS handshake failed' : 'the connection failed');
  return new SafeFetchError('network', err.code ? `${reason} (${err.code})` : reason, err.code ? `${err.code}: ${err.message}` : err.message);
}

export async function safeFetch(raw: string, request: SafeRequest): Promise<SafeResponse> {
  const deadline = Date.now() + request.timeoutMs;
  let url = checkOutboundUrl(raw, request.policy);
  for (let redirects = 0; ; redirects++) {
    const response = await once(url, request, deadline);
    const location = response.headers.location;
    if (response.status < 300 || response.status >= 400 || !location || request.maxRedirects === 0) return response;
    if (redirects >= request.maxRedirects) throw new SafeFetchError('too_many_redirects', `more than ${request.maxRedirects} redirects`);
    url = checkOutboundUrl(new URL(location, url).toString(), request.policy);
  }
}

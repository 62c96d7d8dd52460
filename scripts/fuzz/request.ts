// One generated request for one operation. Each request picks what to get wrong (nothing, the path,
// the query, the credentials, the headers, the body, its encoding or the method) and gets the rest
// right: real ids of the account, valid values, the right key, so that the fault meets the code
// behind the checks instead of the first 404 or 401.
import fc from 'fast-check';
import type { Operation, Parameter, Schema } from './openapi.js';
import type { Pool } from './pool.js';
import { type Hint, invalidValue, mutate, validValue } from './schema-values.js';
import { nestedText, ODD_DATES, oddJson, oddString, typeIdSuffix } from './values.js';

export interface FuzzRequest {
  method: string;
  /** Path and query string, exactly as sent (already percent-encoded). */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Sent instead, byte for byte (latin1) on a connection of its own: HTTP that Node's parser may refuse. */
  raw?: string;
  /** Sent twice at the same moment, on two connections: races between identical requests. */
  twin?: boolean;
  /** What is odd about this request, for the report. */
  notes: string[];
}

export interface Credentials {
  key: string;
  revoked: string;
  restricted: string;
  expired?: string;
}

/** URLs on the fuzzer's loopback server: images a blend job can fetch, a webhook receiver. */
export interface FixtureUrls {
  images: string[];
  hook: string;
  refused: string;
}

export interface Context {
  pool: Pool;
  credentials: Credentials;
  urls: FixtureUrls;
}

type Fault = 'none' | 'path' | 'query' | 'auth' | 'headers' | 'body' | 'encoding' | 'method' | 'wire';
type Part = { text: string; note?: string };
type Headers = { headers: Record<string, string>; notes: string[] };
const part = (text: string, note?: string): Part => ({ text, note });
const noted = (...parts: Array<string | undefined>) => parts.filter((p): p is string => !!p);
const weighted = <T>(weight: number, arbitrary: fc.Arbitrary<T>): fc.WeightedArbitrary<T> => ({ weight, arbitrary });
/** `arbitrary` `present` times in `present + absent`, otherwise undefined. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, present: number, absent: number): fc.Arbitrary<T | undefined> =>
  fc.oneof(weighted(absent, fc.constant(undefined)), weighted(present, arbitrary));

/** Percent-encodes everything but RFC 3986 unreserved characters (lone surrogates become U+FFFD). */
export function percentEncode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const asText = (value: unknown): string => (typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value));

// ---------------------------------------------------------------------------------------------
// Path

/** Path segments sent as they are: encodings that routers and decoders get wrong. */
const RAW_SEGMENTS = [
  '', '.', '..', '%00', 'x%00', '%2F', 'a%2Fb', '..%2F..%2Fkeys', '%2e%2e', '%2E%2E%2F', '%', '%zz', '%E0%A4%A', '%C0%AF', '%FF%FE',
  '%E2%80%AE', '%F0%9F%98%80', '%ED%A0%80', '+', '%20', ';', ';a=b', '*', '~', "'", '%27%20OR%201%3D1', '%41', '%252F',
  'a'.repeat(499), 'a'.repeat(500), 'a'.repeat(501), 'b'.repeat(5000), '__proto__', 'constructor', 'null', '0', '-1', '1e308', 'NaN',
];

/** The id type a path parameter names: from its description (`evt_...`), else from its place. */
function idPrefix(op: Operation, param: Parameter): string {
  const described = /`([a-z]{1,8})_\.\.\.`/.exec(param.description ?? '')?.[1];
  if (described) return described;
  const byName: Record<string, string> = { ticketTypeId: 'tt', ticketId: 'tkt', jobId: 'job' };
  const segments = op.path.split('/');
  const before = segments[segments.indexOf(`{${param.name}}`) - 1] ?? '';
  const byCollection: Record<string, string> = { events: 'evt', keys: 'key', orders: 'ord', tickets: 'tkt', checkins: 'chk', payouts: 'pay', webhooks: 'wh' };
  return byName[param.name] ?? byCollection[before] ?? 'evt';
}

const MANGLED: Record<string, (id: string) => string> = { upper: (id) => id.toUpperCase(), short: (id) => id.slice(0, -1), long: (id) => `${id}0`, space: (id) => `${id}%20` };

function idValue(prefix: string, ctx: Context, broken: boolean, eventId?: string): fc.Arbitrary<Part> {
  const { pool } = ctx;
  const real = pool.of(prefix, eventId);
  const unknown = typeIdSuffix().map((s) => part(`${prefix}_${s}`, 'unknown id'));
  if (!broken) return real.length ? fc.oneof(weighted(12, fc.constantFrom(...real).map((id) => part(id))), weighted(1, unknown)) : unknown;
  const others = pool.prefixes().filter((p) => p !== prefix).flatMap((p) => pool.of(p).slice(-4));
  return fc.oneof(
    weighted(2, unknown),
    weighted(1, fc.constantFrom('7zzzzzzzzzzzzzzzzzzzzzzzzz', 'zzzzzzzzzzzzzzzzzzzzzzzzzz', '00000000000000000000000000', 'ilou0000000000000000000000').map((s) => part(`${prefix}_${s}`, 'edge id'))),
    weighted(2, oddString().map((s) => part(percentEncode(s), 'odd string'))),
    weighted(3, fc.constantFrom(...RAW_SEGMENTS).map((s) => part(s, 'raw segment'))),
    ...(real.length
      ? [
          weighted(
            1,
            fc.tuple(fc.constantFrom(...real), fc.constantFrom(...Object.keys(MANGLED))).map(([id, how]) => part(MANGLED[how]!(id), `mangled id (${how})`)),
          ),
        ]
      : []),
    ...(others.length ? [weighted(1, fc.constantFrom(...others).map((id) => part(id, 'id of another type')))] : []),
  );
}

function fileValue(ctx: Context, broken: boolean): fc.Arbitrary<Part> {
  const real = ctx.pool.results.map((r) => r.file);
  const unknown = fc.tuple(typeIdSuffix(), fc.constantFrom('jpg', 'png', 'webp', 'avif')).map(([s, ext]) => part(`job_${s}.${ext}`, 'unknown file'));
  if (!broken) return real.length ? fc.constantFrom(...real).map((f) => part(f)) : unknown;
  return fc.oneof(
    unknown,
    fc.tuple(typeIdSuffix(), fc.constantFrom('gif', 'JPG', 'jpg.exe', '')).map(([s, ext]) => part(`job_${s}.${ext}`, 'odd file')),
    idValue('job', ctx, true),
  );
}

/** The path with its parameters filled in; an event id chosen first decides the children. */
function pathValue(op: Operation, ctx: Context, broken: boolean): fc.Arbitrary<{ path: string; eventId?: string; notes: string[] }> {
  const params = op.parameters.filter((p) => p.in === 'path');
  // When broken, one parameter is: the others stay real.
  const brokenAt = broken ? fc.nat({ max: Math.max(0, params.length - 1) }) : fc.constant(-1);
  const prefix = op.path.startsWith('/v1/') ? fc.oneof(weighted(5, fc.constant('/v1')), weighted(1, fc.constant('/api/v1'))) : fc.constant('');
  const step = (i: number, bad: number, values: Record<string, Part>, eventId?: string): fc.Arbitrary<{ values: Record<string, Part>; eventId?: string }> => {
    const param = params[i];
    if (!param) return fc.constant({ values, eventId });
    const kind = idPrefix(op, param);
    const value = param.name === 'file' ? fileValue(ctx, i === bad) : idValue(kind, ctx, i === bad, eventId);
    return value.chain((v) => step(i + 1, bad, { ...values, [param.name]: v }, eventId ?? (kind === 'evt' && v.text.startsWith('evt_') ? v.text : undefined)));
  };
  return fc.tuple(prefix, brokenAt.chain((bad) => step(0, bad, {}))).map(([pre, { values, eventId }]) => {
    const filled = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name]?.text ?? '');
    return {
      path: pre ? filled.replace(/^\/v1/, pre) : filled,
      eventId,
      notes: noted(pre === '/api/v1' ? 'under /api/v1' : undefined, ...Object.entries(values).map(([k, v]) => (v.note ? `${k}: ${v.note}` : undefined))),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Query

function cursorValue(op: Operation, ctx: Context): fc.Arbitrary<Part> {
  const { cursors } = ctx.pool;
  const own = ctx.pool.cursorsOf.get(op.key) ?? [];
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const options = [
    weighted(2, fc.jsonValue({ maxDepth: 2 }).map((v) => part(b64(v), 'random JSON cursor'))),
    weighted(1, fc.record({ t: fc.string(), k: oddJson(), i: fc.string() }).map((v) => part(b64(v), 'cursor-shaped')),),
    weighted(1, oddString().map((s) => part(percentEncode(s), 'odd cursor'))),
  ];
  if (cursors.length) {
    const ids = ctx.pool.prefixes().flatMap((p) => ctx.pool.of(p).slice(-2));
    options.push(weighted(3, fc.constantFrom(...cursors).map((c) => part(c, 'a real cursor, maybe of another list'))));
    // A real cursor with its position replaced: the list tag still matches, the position is the fuzzer's.
    options.push(
      weighted(
        5,
        fc.tuple(fc.constantFrom(...(own.length ? own : cursors)), fc.oneof(oddJson(), fc.constantFrom(...ODD_DATES)), sometimes(fc.constantFrom(...ids, 'evt_7zzzzzzzzzzzzzzzzzzzzzzzzz'), 1, 1)).map(([c, k, i]) => {
          const decoded = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as Record<string, unknown>;
          return part(b64({ ...decoded, k, ...(i === undefined ? {} : { i }) }), 'real cursor, position replaced');
        }),
      ),
    );
  }
  return fc.oneof(...options);
}

function queryValue(op: Operation, param: Parameter, ctx: Context, broken: boolean): fc.Arbitrary<Part[]> {
  const name = percentEncode(param.name);
  const one = (v: fc.Arbitrary<Part>) => v.map((p) => [part(`${name}=${p.text}`, p.note)]);
  // Small pages, so that lists of a few items hand out cursors.
  const schema = param.name === 'limit' ? { ...param.schema, enum: [1, 2, 3, param.schema.default ?? 20, param.schema.maximum ?? 100] } : param.schema;
  const valid = validValue(schema, () => null, param.name).map((v) => part(percentEncode(asText(v))));
  const absent = fc.constant<Part[]>([]);
  if (!broken && param.name === 'cursor') {
    // A valid cursor is one this list handed out; without one, the first page.
    const own = ctx.pool.cursorsOf.get(op.key) ?? [];
    return own.length ? fc.oneof(weighted(3, absent), weighted(2, one(fc.constantFrom(...own).map((c) => part(c))))) : absent;
  }
  if (!broken) return fc.oneof(weighted(param.required ? 0 : 3, absent), weighted(2, one(valid)));
  return fc.oneof(
    weighted(4, one(invalidValue(param.schema).map((v) => part(percentEncode(asText(v)), `${param.name} invalid`)))),
    weighted(1, fc.tuple(valid, valid).map(([a, b]) => [part(`${name}=${a.text}`), part(`${name}=${b.text}`, `${param.name} twice`)])),
    weighted(1, fc.constantFrom(name, `${name}=`, `${name}[]=1`, `${name}[a]=1`, `${name}=%00`, `${name}=%`, `${name}=%zz`).map((t) => [part(t, `${param.name} malformed`)])),
    ...(param.required ? [weighted(1, fc.constant<Part[]>([part('', `${param.name} missing`)]))] : []),
    ...(param.name === 'cursor' ? [weighted(6, one(cursorValue(op, ctx)))] : []),
  );
}

const EXTRA_QUERY = fc.oneof(
  weighted(3, fc.tuple(fc.oneof(fc.string({ minLength: 1, maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'limit ', 'LIMIT')), oddJson()).map(([k, v]) => part(`${percentEncode(k)}=${percentEncode(asText(v))}`, 'unknown parameter'))),
  weighted(2, fc.constantFrom('&&', '=x', '%00=1', '__proto__[x]=1', 'constructor[prototype][x]=1', '&', '%', 'a=%E0%A4%A').map((t) => part(t, 'malformed query'))),
  weighted(1, fc.constantFrom(4_000, 9_000, 20_000).map((n) => part(`pad=${'q'.repeat(n)}`, `${n}-character parameter`))),
);

/** The query string; when broken, one declared parameter is wrong, or there is one that is not declared. */
function queryString(op: Operation, ctx: Context, broken: boolean, file?: string): fc.Arbitrary<{ text: string; notes: string[] }> {
  const params = op.parameters.filter((p) => p.in === 'query');
  const signed = ctx.pool.results.find((r) => file && r.file === file);
  let parts: fc.Arbitrary<Part[]>;
  if (signed && !broken) {
    parts = fc.constant([part(`expires=${signed.expires}`), part(`signature=${signed.signature}`)]);
  } else if (signed) {
    parts = fc.constantFrom<Part[]>(
      [part(`expires=${Number(signed.expires) + 1}`, 'expires changed'), part(`signature=${signed.signature}`)],
      [part(`expires=${signed.expires}`), part(`signature=${signed.signature.slice(0, -1)}${signed.signature.endsWith('A') ? 'B' : 'A'}`, 'signature changed')],
      [part('expires=1'), part(`signature=${signed.signature}`, 'expired')],
    );
  } else {
    const brokenAt = broken ? fc.integer({ min: 0, max: params.length }) : fc.constant(-1);
    parts = brokenAt.chain((bad) =>
      fc.tuple(...params.map((p, i) => queryValue(op, p, ctx, i === bad)), bad === params.length ? EXTRA_QUERY.map((p) => [p]) : fc.constant([])).map((lists) => lists.flat()),
    );
  }
  return parts.map((list) => {
    const present = list.filter((p) => p.text !== '');
    return { text: present.length ? `?${present.map((p) => p.text).join('&')}` : '', notes: noted(...list.map((p) => p.note)) };
  });
}

// ---------------------------------------------------------------------------------------------
// Headers

function authHeaders(op: Operation, ctx: Context, broken: boolean): fc.Arbitrary<Headers> {
  const { credentials: c, pool } = ctx;
  const bearer = (key: string, note?: string): Headers => ({ headers: { authorization: `Bearer ${key}` }, notes: noted(note) });
  if (!broken) return fc.constant(op.public ? { headers: {}, notes: [] } : bearer(c.key));
  const wrong = [
    weighted(op.public ? 2 : 1, fc.constant<Headers>(op.public ? bearer(c.key, 'a key where none is needed') : { headers: {}, notes: ['no credentials'] })),
    weighted(2, fc.constantFrom('Bearer', 'Bearer ', 'bearer  ', `Basic ${Buffer.from('a:b').toString('base64')}`, `Token ${c.key}`, `Bearer ${c.key} extra`, `Bearer ${c.key.slice(0, -1)}`, `Bearer ${c.key.toLowerCase()}`, `Bearer mtg_${'é'.repeat(40)}`, `Bearer ${'x'.repeat(8000)}`).map((h) => ({ headers: { authorization: h }, notes: ['malformed credentials'] }))),
    weighted(1, fc.stringMatching(/^[0-9A-Za-z]{40}$/).map((s) => bearer(`mtg_${s}`, 'unknown key'))),
    weighted(1, fc.constant(bearer(c.revoked, 'revoked key'))),
    weighted(1, fc.constant(bearer(c.restricted, 'check-in-only key'))),
    weighted(1, fc.constantFrom('montage_session=', 'montage_session=x', `montage_session=${'a'.repeat(4000)}`, 'montage_session=%00; other=1', 'a=b;;;montage_session').map((cookie) => ({ headers: { cookie }, notes: ['odd session cookie'] }))),
  ];
  if (c.expired) wrong.push(weighted(1, fc.constant(bearer(c.expired, 'expired key'))));
  if (pool.sessions.length) {
    wrong.push(
      weighted(
        2,
        fc.tuple(fc.constantFrom(...pool.sessions), fc.boolean()).map(([s, csrf]) => ({ headers: { cookie: s.cookie, ...(csrf ? { 'x-csrf-token': s.csrfToken } : {}) }, notes: [`dashboard session${csrf ? '' : ' without CSRF token'}`] })),
      ),
    );
  }
  return fc.oneof(...wrong);
}

function otherHeaders(op: Operation, ctx: Context, broken: boolean): fc.Arbitrary<Headers> {
  const { method } = op;
  const option = (valid: fc.Arbitrary<string>, odd: fc.Arbitrary<string>) => (broken ? sometimes(fc.oneof(valid, odd), 1, 1) : sometimes(valid, 1, 4));
  const requestId = option(fc.stringMatching(/^[\w.:-]{1,128}$/), fc.constantFrom('', ' ', 'a b', 'é', 'x'.repeat(129), '../x', 'req_\t1'));
  const idempotency =
    method === 'POST'
      ? option(fc.oneof(fc.uuid(), fc.constantFrom('fuzz-reused-1', 'fuzz-reused-2')), fc.constantFrom('', ' ', 'k'.repeat(256), 'k'.repeat(255), 'é', 'a\tb', 'a b'))
      : fc.constant(undefined);
  const accept = broken ? sometimes(fc.constantFrom('text/html', 'application/xml', '*/*', 'application/problem+json', 'image/*', ';;;'), 1, 1) : fc.constant(undefined);
  const known = ctx.pool.etags.get(op.key);
  const etag = broken
    ? sometimes(fc.constantFrom('*', '"x"', 'W/"x"', '""', ...(known ? [`W/${known}`, `${known}, "x"`] : [])), 1, 1)
    : known
      ? sometimes(fc.constant(known), 1, 1)
      : fc.constant(undefined);
  return fc.tuple(requestId, idempotency, accept, etag).map(([rid, idem, acc, inm]) => {
    const headers: Record<string, string> = {};
    const notes: string[] = [];
    if (rid !== undefined) (headers['x-request-id'] = rid), notes.push('own X-Request-Id');
    if (idem !== undefined) (headers['idempotency-key'] = idem), notes.push('Idempotency-Key');
    if (acc !== undefined) (headers.accept = acc), notes.push(`Accept ${acc}`);
    if (inm !== undefined) (headers['if-none-match'] = inm), notes.push('If-None-Match');
    return { headers, notes };
  });
}

// ---------------------------------------------------------------------------------------------
// Body

interface Encoded {
  body?: string;
  contentType?: string;
  note?: string;
}
const JSON_TYPE = 'application/json';

/** How a body goes over the wire; when broken: under another media type, malformed, empty, too big. */
function encodedBody(value: unknown, hasSchema: boolean, broken: boolean): fc.Arbitrary<Encoded> {
  const text = value === undefined ? '' : JSON.stringify(value);
  if (!broken) return fc.constant(hasSchema ? { body: text, contentType: JSON_TYPE } : {});
  const firstKey = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value)[0] : undefined;
  const malformed = [
    text.slice(0, Math.max(0, text.length - 1)), `${text}x`, `\uFEFF${text}`, `${text}${text}`, "{'a':1}", '{"a":1,}', 'NaN', '{"a":01}', '{"a":1e400}', '{"a":-0}',
    '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '{"a":"\\ud800"}', '{"a":"\\u0000"}', '{"a":"\u0000"}',
    nestedText(65), nestedText(100_000), ' ', 'null', '[]', '"x"', '1', 'true', '{}',
    ...(firstKey ? [`{"${firstKey}":1,${text.slice(1)}`] : []),
  ];
  return fc.oneof(
    weighted(4, fc.constantFrom(...malformed).map((body) => ({ body, contentType: JSON_TYPE, note: 'malformed or odd JSON' }))),
    weighted(2, fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/problem+json', 'application/merge-patch+json', '*/*', 'application/', 'json', 'application/json-x').map((contentType) => ({ body: text || 'x=1', contentType, note: `Content-Type ${contentType}` }))),
    weighted(2, fc.constantFrom('application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=utf-16', 'application/json ; x=y', 'application/json, text/plain').map((contentType) => ({ body: text || '{}', contentType, note: `Content-Type ${contentType}` }))),
    weighted(1, fc.constant({ body: text || '{}', note: 'no Content-Type' })),
    weighted(1, fc.constant({ body: '', contentType: JSON_TYPE, note: 'empty body' })),
    weighted(1, fc.constantFrom(600_000, 1_100_000).map((n) => ({ body: JSON.stringify({ pad: 'x'.repeat(n) }), contentType: JSON_TYPE, note: `${n}-byte body` }))),
    ...(hasSchema ? [] : [weighted(4, fc.constantFrom('{}', '{"x":1}', '[]', 'null').map((body) => ({ body, contentType: JSON_TYPE, note: 'a body where none is taken' })))]),
  );
}

/**
 * Montage's cross-field rules, which a schema cannot state: without them nearly every generated
 * body fails the same first check, and the code after it is never reached. Mutates `value`.
 */
function repair(value: unknown, op: Operation, ctx: Context, choice: number, eventId?: string): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const body = value as Record<string, any>;
  const ordered = (start: string, end: string) => {
    if (typeof body[start] === 'string' && typeof body[end] === 'string' && !(Date.parse(body[end]) > Date.parse(body[start]))) {
      body[end] = new Date(Date.parse(body[start]) + 7_200_000).toISOString();
    }
  };
  ordered('startsAt', 'endsAt');
  ordered('salesStartAt', 'salesEndAt');
  if (Array.isArray(body.items)) {
    const seen = new Set<unknown>();
    body.items = body.items.filter((item: any) => !seen.has(item?.ticketTypeId) && seen.add(item?.ticketTypeId));
    for (const item of body.items) {
      item.quantity = Math.min(item.quantity, 5);
      if (Array.isArray(item.attendees)) item.attendees = item.attendees.slice(0, item.quantity);
    }
  }
  if (Array.isArray(body.events) && body.events.includes('*')) body.events = ['*'];
  if (typeof body.ticketId === 'string' && typeof body.code === 'string') delete body[choice % 2 ? 'code' : 'ticketId'];
  const codes = ctx.pool.codes(eventId);
  if (op.path.endsWith('/checkin') && body.ticketId === undefined && body.code === undefined && codes.length) body.code = codes[choice % codes.length];
  if (typeof body.checkedInAt === 'string') body.checkedInAt = new Date(Date.now() - 60_000).toISOString();
  return body;
}

function bodyHint(ctx: Context, eventId?: string): Hint {
  const { pool, urls } = ctx;
  const some = (list: string[]) => (list.length ? fc.constantFrom(...list) : null);
  return (name) => {
    switch (name) {
      case 'ticketTypeId':
        return some(pool.of('tt', eventId));
      case 'ticketId':
        return some(pool.of('tkt', eventId));
      case 'code':
        return some(pool.codes(eventId));
      case 'url':
      case 'webhookUrl':
        return fc.constantFrom(urls.hook, urls.hook, urls.refused);
      case 'images[]':
        return fc.constantFrom(...urls.images, urls.refused);
      case 'timezone':
        return fc.constantFrom('Europe/Berlin', 'UTC', 'America/New_York', 'Asia/Kathmandu', 'Pacific/Chatham', 'Etc/GMT+12');
      case 'currency':
        return fc.constantFrom('EUR', 'USD', 'JPY', 'BHD');
      case 'events[]':
        return fc.constantFrom('*', 'ticket.purchased', 'checkin.completed', 'event.created', 'blend.completed');
      default:
        return null;
    }
  };
}

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Wire: the request as bytes, broken where a well-behaved client library never would break it.

type Wire = (r: { method: string; path: string; headers: string; body: string }) => string;
const crlf = (...lines: string[]) => lines.join('\r\n');
const length = (body: string) => `Content-Length: ${Buffer.byteLength(body, 'latin1')}`;
const chunked = (body: string) => `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

const WIRE: Record<string, Wire> = {
  'header without a colon': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'X-Broken header', length(r.body), '', r.body),
  'header name with a space': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Bad Name: x', length(r.body), '', r.body),
  'NUL in a header': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'X-Nul: a\u0000b', length(r.body), '', r.body),
  'folded header': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'X-Fold: a', ' b', length(r.body), '', r.body),
  'Content-Length not a number': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Content-Length: abc', '', r.body),
  'negative Content-Length': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Content-Length: -1', '', r.body),
  'two Content-Lengths': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, length(r.body), `Content-Length: ${r.body.length + 1}`, '', r.body),
  'chunked and Content-Length': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Transfer-Encoding: chunked', length(r.body), '', chunked(r.body)),
  'bad chunk size': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Transfer-Encoding: chunked', '', `zz\r\n${r.body}\r\n0\r\n\r\n`),
  'chunked body': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Transfer-Encoding: chunked', '', chunked(r.body)),
  'unknown Transfer-Encoding': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Transfer-Encoding: gzip, chunked', '', chunked(r.body)),
  'Expect: 100-continue': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Expect: 100-continue', length(r.body), '', r.body),
  'unknown Expect': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, 'Expect: teapot', length(r.body), '', r.body),
  'HTTP/1.0 without Host': (r) => crlf(`${r.method} ${r.path} HTTP/1.0`, r.headers, length(r.body), '', r.body),
  'HTTP/1.1 without Host': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, r.headers, length(r.body), '', r.body),
  'two Hosts': (r) => crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', 'Host: y', r.headers, length(r.body), '', r.body),
  'HTTP/2.0 request line': (r) => crlf(`${r.method} ${r.path} HTTP/2.0`, 'Host: x', r.headers, length(r.body), '', r.body),
  'HTTP/1.9 request line': (r) => crlf(`${r.method} ${r.path} HTTP/1.9`, 'Host: x', r.headers, length(r.body), '', r.body),
  'invalid method token': (r) => crlf(`G@T ${r.path} HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'lower-case method': (r) => crlf(`${r.method.toLowerCase()} ${r.path} HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'raw space in the path': (r) => crlf(`${r.method} ${r.path.replace(/\/(?=[^/]*$)/, '/a b')} HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'raw UTF-8 in the path': (r) => crlf(`${r.method} ${r.path}\u00c3\u00a9 HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'absolute-form target': (r) => crlf(`${r.method} http://127.0.0.1${r.path} HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'asterisk target': (r) => crlf(`${r.method} * HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'no path': (r) => crlf(`${r.method}  HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body),
  'bare LF line ends': (r) => [`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body].join('\n'),
  'pipelined twice': (r) => {
    const one = crlf(`${r.method} ${r.path} HTTP/1.1`, 'Host: x', r.headers, length(r.body), '', r.body);
    return one.replace('\r\nConnection: close', '') + one;
  },
};

function wireValue(method: string, path: string, headers: Record<string, string>, body: string | undefined): fc.Arbitrary<{ raw: string; note: string }> {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${Buffer.from(v, 'utf8').toString('latin1')}`);
  // Connection: close, so that the answer ends where the connection does.
  const request = { method, path, headers: [...lines, 'Connection: close'].join('\r\n'), body: Buffer.from(body ?? '', 'utf8').toString('latin1') };
  return fc.constantFrom(...Object.keys(WIRE)).map((name) => ({ raw: WIRE[name]!(request), note: `wire: ${name}` }));
}

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

function faultFor(op: Operation): fc.Arbitrary<Fault> {
  const hasPath = op.parameters.some((p) => p.in === 'path');
  return fc.oneof(
    weighted(5, fc.constant<Fault>('none')),
    weighted(hasPath ? 4 : 0, fc.constant<Fault>('path')),
    weighted(3, fc.constant<Fault>('query')),
    weighted(2, fc.constant<Fault>('auth')),
    weighted(1, fc.constant<Fault>('headers')),
    weighted(op.body ? 6 : 0, fc.constant<Fault>('body')),
    weighted(op.body ? 2 : 1, fc.constant<Fault>('encoding')),
    weighted(1, fc.constant<Fault>('method')),
    weighted(1, fc.constant<Fault>('wire')),
  );
}

/** Requests for `op`, drawing on what the pool knows right now. One fault each, sometimes two. */
export function requestFor(op: Operation, ctx: Context): fc.Arbitrary<FuzzRequest> {
  const twin = fc.nat(op.method === 'GET' ? 29 : 7).map((n) => n === 0);
  return fc.tuple(faultFor(op), sometimes(faultFor(op), 1, 5), twin).chain(([first, second = 'none', twice]) => {
    const broken = (f: Fault) => first === f || second === f;
    const method = broken('method') ? fc.constantFrom(...OTHER_METHODS.filter((m) => m !== op.method)) : fc.constant(op.method);
    return fc.tuple(pathValue(op, ctx, broken('path')), method, authHeaders(op, ctx, broken('auth')), otherHeaders(op, ctx, broken('headers'))).chain(([path, verb, auth, other]) => {
      const file = /\/blend\/results\/([^/?]+)$/.exec(path.path)?.[1];
      const schema = op.body as Schema | null;
      const value = schema ? fc.tuple(validValue(schema, bodyHint(ctx, path.eventId)), fc.nat(), fc.nat(3)).map(([v, choice, n]) => (n ? repair(v, op, ctx, choice, path.eventId) : v)) : fc.constant(undefined);
      const body = value.chain((v) => (schema && broken('body') ? mutate(v, schema) : fc.constant({ value: v, notes: [] as string[] })));
      const parts = fc.tuple(queryString(op, ctx, broken('query'), file), body.chain((b) => encodedBody(b.value, !!schema, broken('encoding')).map((e) => ({ ...e, mutations: b.notes }))));
      return parts.chain(([query, encoded]) => {
        const request: FuzzRequest = {
          method: verb,
          path: `${path.path}${query.text}`,
          headers: { ...auth.headers, ...other.headers, ...(encoded.contentType ? { 'content-type': encoded.contentType } : {}) },
          ...(encoded.body !== undefined ? { body: encoded.body } : {}),
          notes: noted(verb !== op.method ? `method ${verb}` : undefined, ...path.notes, ...query.notes, ...auth.notes, ...other.notes, encoded.note, ...encoded.mutations),
        };
        if (twice) Object.assign(request, { twin: true, notes: ['sent twice at once', ...request.notes] });
        if (!broken('wire')) return fc.constant(request);
        return wireValue(request.method, request.path, request.headers, request.body).map(({ raw, note }) => ({ ...request, raw, notes: [note, ...request.notes] }));
      });
    });
  });
}

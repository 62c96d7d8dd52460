// What must hold for every answer, whatever was asked (docs/api.md, "Errors"): no 5xx, an
// X-Request-Id, every 4xx an RFC 9457 problem that names its own status and request id, and no
// stack, SQL or server path in any error body.
import type { Answer } from './client.js';

/** Traces of internals. The generated inputs never contain these, so an echo cannot trip them. */
const LEAKS: Array<[RegExp, string]> = [
  [/\bat (?:async )?[\w.<>$]+ \(|\n\s+at /, 'a stack trace'],
  [/node_modules|file:\/\/|\.(?:ts|js|mjs|cjs):\d+/, 'a source file'],
  [/(?:^|[\s"'(=])\/(?:home|root|work|usr|opt|srv|app|var|tmp)\/\S/, 'a server path'],
  [/\bselect\b[^"]{0,200}\bfrom\b|\binsert into\b|\bdelete from\b|\bupdate \S+ set\b/i, 'SQL'],
  [/SQLITE_[A-Z]+|syntax error at or near|violates [\w ]*constraint|duplicate key value|invalid input syntax for|relation "[^"]*" does not exist|no such (?:table|column)/i, 'a database error'],
  [/\b(?:TypeError|RangeError|ReferenceError|SyntaxError): /, 'a JavaScript error'],
];

/** Everything wrong with `answer` to a `method` request; empty when it is fine. */
export function violations(method: string, answer: Answer): string[] {
  const problems: string[] = [];
  const { status, headers } = answer;
  if (status >= 500) problems.push(`status ${status}`);
  const requestId = headers['x-request-id'];
  if (typeof requestId !== 'string' || requestId === '') problems.push('no X-Request-Id');
  const text = answer.body.toString('utf8');
  if (status < 400) {
    if (/^application\/json/.test(headers['content-type'] ?? '') && method !== 'HEAD' && status !== 204 && status !== 304 && !parses(text)) {
      problems.push('a JSON answer that is not JSON');
    }
    return problems;
  }
  for (const [pattern, what] of LEAKS) if (pattern.test(text)) problems.push(`the body shows ${what}`);
  if (method === 'HEAD') return problems;
  if (!/^application\/problem\+json(;|$)/.test(headers['content-type'] ?? '')) problems.push(`Content-Type ${headers['content-type'] ?? '(none)'}, not application/problem+json`);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    problems.push('the error body is not JSON');
    return problems;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return [...problems, 'the error body is not an object'];
  if (body.status !== status) problems.push(`body status ${JSON.stringify(body.status)} is not the HTTP status ${status}`);
  if (typeof body.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(body.code)) problems.push(`code ${JSON.stringify(body.code)} is not a snake_case code`);
  else if (body.type !== `/docs/errors#${body.code}`) problems.push(`type ${JSON.stringify(body.type)} does not name the code`);
  if (typeof body.title !== 'string' || body.title === '') problems.push('no title');
  if (typeof body.detail !== 'string' || body.detail === '') problems.push('no detail');
  // An idempotent replay is the stored answer, byte for byte (docs/api.md, "Idempotency"): its
  // requestId names the request that first produced it, whose log lines tell what went wrong.
  const replayed = headers['idempotent-replayed'] === 'true';
  if (replayed ? typeof body.requestId !== 'string' || body.requestId === '' : body.requestId !== requestId) {
    problems.push(`requestId ${JSON.stringify(body.requestId)} is not the X-Request-Id ${JSON.stringify(requestId)}`);
  }
  if (body.errors !== undefined && !(Array.isArray(body.errors) && body.errors.every((e) => e && typeof e.path === 'string' && typeof e.message === 'string'))) {
    problems.push('errors[] is not a list of { path, message }');
  }
  return problems;
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A request URL as the log may hold it. The path is kept; a query parameter whose name looks like
 * it holds a secret (`api_key`, `token`, `signature`, `password`, ...) keeps its name and loses its
 * value; and any value or path segment that holds an API key (`mtg_...`) or a webhook secret
 * (`whsec_...`) loses it too, however it is percent-encoded. Used by the request log and by the
 * logger's `req` serializer, so that no log line carries a key a client sent in the wrong place or
 * the signature of a result URL.
 */
const SENSITIVE_NAME = /key|token|secret|sig|pass|auth|session|cookie|credential|code|jwt|bearer/i;
const SECRET_VALUE = /mtg_|whsec_/i;
export const REDACTED = '[redacted]';

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

export function loggableUrl(raw: string): string {
  const mark = raw.indexOf('?');
  const path = (mark === -1 ? raw : raw.slice(0, mark))
    .split('/')
    .map((segment) => (SECRET_VALUE.test(decoded(segment)) ? REDACTED : segment))
    .join('/');
  if (mark === -1) return path;
  const query = raw
    .slice(mark + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      const value = eq === -1 ? '' : pair.slice(eq + 1);
      if (SECRET_VALUE.test(decoded(name))) return REDACTED;
      if (SENSITIVE_NAME.test(decoded(name)) || SECRET_VALUE.test(decoded(value))) return `${name}=${REDACTED}`;
      return pair;
    })
    .join('&');
  return `${path}?${query}`;
}

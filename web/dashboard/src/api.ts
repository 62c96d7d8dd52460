/** Calls the same /v1 API as every client; the session cookie authenticates, the CSRF header guards writes. */

export interface Session {
  accountId: string;
  email: string;
  plan: string;
  accountCreatedAt: string;
  csrfToken: string;
  expiresAt: string;
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** A problem+json answer, kept whole so pages can branch on `code`. */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: Record<string, unknown>,
  ) {
    super(detail);
  }
}

let csrfToken = '';
export const setCsrfToken = (token: string) => {
  csrfToken = token;
};

export async function request<T>(path: string, init: { method?: string; json?: unknown } = {}): Promise<T> {
  const method = init.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const res = await fetch(path, { method, headers, credentials: 'same-origin', body: init.json === undefined ? undefined : JSON.stringify(init.json) });
  if (res.status === 204) return undefined as T;
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) throw new Problem(res.status, String(body.code ?? 'error'), String(body.detail ?? res.statusText), body);
  return body as T;
}

export const api = <T>(path: string, init?: { method?: string; json?: unknown }) => request<T>(`/v1${path}`, init);

/** A result URL made absolute with PUBLIC_URL, as a path on this origin (the page's CSP allows only 'self'). */
export const sameOrigin = (url: string) => {
  const u = new URL(url, location.origin);
  return `${u.pathname}${u.search}`;
};

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** An amount in minor units (cents), as the API keeps money, in the reader's notation. */
export const money = (minor: number, currency: string) => new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(minor / 100);

/** What a person types as money ("15", "15.5", "15,50") in minor units; null when it is not an amount. */
export const minorUnits = (typed: string): number | null => {
  const value = Number(typed.trim().replace(',', '.'));
  return typed.trim() !== '' && Number.isFinite(value) && value >= 0 ? Math.round(value * 100) : null;
};

/** A problem's detail, or the sentence for a server that could not be reached. */
export const failure = (err: unknown) => (err instanceof Problem ? err.detail : 'The server could not be reached.');

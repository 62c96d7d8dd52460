import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, type Page, Problem } from './api.js';

export interface Loaded<T> {
  data: T | null;
  error: Problem | null;
  reload: () => void;
}

/** Loads `path` with `load` and re-renders with its data or its problem; `reload` loads it again. */
function useLoaded<T>(path: string | null, load: (path: string) => Promise<T>): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    load(path).then(
      (value) => live && (setData(value), setError(null)),
      (err: unknown) => live && setError(err instanceof Problem ? err : new Problem(0, 'network', 'The server could not be reached.', {})),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);
  return { data, error, reload: useCallback(() => setTick((t) => t + 1), []) };
}

/** GETs a /v1 path and re-renders with its data or its problem. */
export function useApi<T>(path: string | null): Loaded<T> {
  return useLoaded(path, api<T>);
}

/** Every page of a /v1 list (100 items a request, following nextCursor), as one `data` array. */
export async function allPages<T>(path: string): Promise<{ data: T[] }> {
  const data: T[] = [];
  const separator = path.includes('?') ? '&' : '?';
  for (let cursor: string | null = null; ; ) {
    const page: Page<T> = await api<Page<T>>(`${path}${separator}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    data.push(...page.data);
    if (!page.hasMore || !page.nextCursor) return { data };
    cursor = page.nextCursor;
  }
}

/** As useApi, for a whole list: every page of it. */
export function useAllPages<T>(path: string | null): Loaded<{ data: T[] }> {
  return useLoaded(path, allPages<T>);
}

export function ErrorNote({ error }: { error: Problem }) {
  return (
    <p class="error" role="alert">
      {error.detail} <code>{error.code}</code>
    </p>
  );
}

/**
 * A /v1 list one page at a time: `next` follows `nextCursor`, `previous` goes back the way it came.
 * Another `path` (a filter changed) starts again at its first page: a cursor only continues its own list.
 */
export function usePaged<T>(path: string, limit: number) {
  const [at, setAt] = useState<{ path: string; cursors: string[] }>({ path, cursors: [] });
  const cursors = at.path === path ? at.cursors : [];
  const cursor = cursors[cursors.length - 1];
  const separator = path.includes('?') ? '&' : '?';
  const page = useApi<Page<T>>(`${path}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
  const nextCursor = page.data?.hasMore ? page.data.nextCursor : null;
  return {
    ...page,
    number: cursors.length + 1,
    next: nextCursor ? () => setAt({ path, cursors: [...cursors, nextCursor] }) : null,
    previous: cursors.length > 0 ? () => setAt({ path, cursors: cursors.slice(0, -1) }) : null,
  };
}

/** Previous and next page of a usePaged list. */
export function Pager({ label, paged }: { label: string; paged: { number: number; next: (() => void) | null; previous: (() => void) | null } }) {
  if (!paged.next && !paged.previous) return null;
  return (
    <nav class="actions" aria-label={`${label} pages`}>
      <button type="button" class="secondary" disabled={!paged.previous} onClick={() => paged.previous?.()}>
        Previous page
      </button>
      <span>Page {paged.number}</span>
      <button type="button" class="secondary" disabled={!paged.next} onClick={() => paged.next?.()}>
        Next page
      </button>
    </nav>
  );
}

/** The time now, again every `everyMs`: for countdowns. */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** What is left of a span until `iso` ("4 min 12 s"), or null once it has passed. */
export function timeLeft(iso: string, now: number): string | null {
  const seconds = Math.ceil((Date.parse(iso) - now) / 1000);
  if (seconds <= 0) return null;
  const [d, h, m, s] = [Math.floor(seconds / 86_400), Math.floor((seconds % 86_400) / 3600), Math.floor((seconds % 3600) / 60), seconds % 60];
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return m > 0 ? `${m} min ${s} s` : `${s} s`;
}

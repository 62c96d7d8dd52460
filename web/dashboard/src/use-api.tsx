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

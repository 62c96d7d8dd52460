import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, Problem } from './api.js';

export interface Loaded<T> {
  data: T | null;
  error: Problem | null;
  reload: () => void;
}

/** GETs a /v1 path and re-renders with its data or its problem. */
export function useApi<T>(path: string | null): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    api<T>(path).then(
      (value) => live && (setData(value), setError(null)),
      (err: unknown) => live && setError(err instanceof Problem ? err : new Problem(0, 'network', 'The server could not be reached.', {})),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);
  return { data, error, reload: useCallback(() => setTick((t) => t + 1), []) };
}

export function ErrorNote({ error }: { error: Problem }) {
  return (
    <p class="error" role="alert">
      {error.detail} <code>{error.code}</code>
    </p>
  );
}

/** Load something when a page opens (and again on demand), with its error as text. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api/client.js';

export interface Loaded<T> {
  readonly data: T | null;
  readonly error: string | null;
  readonly loading: boolean;
  /** Load again; the data shown stays until the new data arrives. */
  readonly reload: () => Promise<void>;
}

export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const current = useRef<AbortController | null>(null);

  const reload = useCallback(async () => {
    current.current?.abort();
    const controller = new AbortController();
    current.current = controller;
    setLoading(true);
    try {
      const value = await load(controller.signal);
      if (controller.signal.aborted) return;
      setData(value);
      setError(null);
    } catch (failure) {
      if (controller.signal.aborted) return;
      setError(describeError(failure));
    } finally {
      if (!controller.signal.aborted) setLoading(false);
    }
    // `deps` names what `load` reads, as with useCallback.
  }, deps);

  useEffect(() => {
    setData(null);
    void reload();
    return () => current.current?.abort();
  }, [reload]);

  return { data, error, loading, reload };
}

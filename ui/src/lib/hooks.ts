// hooks.ts — data loading for pages: useApi (GET an operation with reload, keeping the
// last good data on screen while reloading so live refreshes never blank a table),
// usePaged (every page of a list operation with "load more"), useLive (refresh when
// events arrive, throttled), useNow (a clock for relative times).
import {useCallback, useEffect, useRef, useState} from 'preact/hooks';
import {ApiError, request, url, type Args, type OpId, type Reply} from './api';
import {onLive, type LiveEvent} from './events';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  reload: () => Promise<void>;
}

/** GETs operation id with args (null: nothing yet) and keeps the answer; reload()
 * fetches it again. */
export function useApi<I extends OpId>(id: I, args: Args<I> | null): Loaded<Reply<I>> {
  return useGet<Reply<I>>(args === null ? null : url(id, args));
}

function useGet<T>(path: string | null): Loaded<T> {
  const [state, setState] = useState<{data?: T; error?: ApiError | Error; loading: boolean; path: string | null}>({
    loading: path !== null,
    path,
  });
  const current = useRef<AbortController | null>(null);
  const pathRef = useRef(path);
  pathRef.current = path;

  const load = useCallback(async () => {
    const p = pathRef.current;
    if (p === null) return;
    current.current?.abort();
    const ac = new AbortController();
    current.current = ac;
    setState((s) => ({...s, loading: true}));
    try {
      const {data} = await request<T>('GET', p, {signal: ac.signal});
      if (ac.signal.aborted || pathRef.current !== p) return;
      setState({data, error: undefined, loading: false, path: p});
    } catch (e) {
      if ((e as Error).name === 'AbortError' || pathRef.current !== p) return;
      setState((s) => ({data: s.path === p ? s.data : undefined, error: e as Error, loading: false, path: p}));
    }
  }, []);

  useEffect(() => {
    if (path === null) {
      setState({loading: false, path});
      return;
    }
    setState((s) => (s.path === path ? s : {loading: true, path}));
    void load();
    return () => current.current?.abort();
  }, [path, load]);

  const same = state.path === path;
  return {data: same ? state.data : undefined, error: same ? state.error : undefined, loading: state.loading, reload: load};
}

/**
 * Calls refresh when a live event arrives that matters (matches(e); every event when
 * omitted), and on every polling tick and resync; at most once per minMs, the last
 * call trailing so the final state is always loaded.
 */
export function useLive(refresh: () => unknown, matches?: (e: LiveEvent) => boolean, minMs = 1000) {
  const fn = useRef(refresh);
  fn.current = refresh;
  const pred = useRef(matches);
  pred.current = matches;
  useEffect(() => {
    let last = 0;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const fire = () => {
      timer = null;
      last = Date.now();
      void fn.current();
    };
    const off = onLive((e) => {
      const always = e.type === 'poll' || e.type === 'resync';
      if (!always && pred.current && !pred.current(e)) return;
      if (timer) return;
      const wait = Math.max(0, last + minMs - Date.now());
      timer = setTimeout(fire, wait);
    });
    return () => {
      off();
      if (timer) clearTimeout(timer);
    };
  }, [minMs]);
}

/** Every proxy group (the first 1,000), for filters and pickers. */
export const useGroups = () => useApi('listGroups', {query: {limit: 1000}});

/**
 * A button's action: run(fn) marks it busy and clears the last error, runs fn, and
 * keeps what it threw (error, null when none) for the page to show.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  /** Forgets the last error (a dialog opened again). */
  const reset = () => setError(null);
  return {busy, error, run, reset};
}

/** The current time, updated every periodMs (relative times stay true). */
export function useNow(periodMs = 10000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), periodMs);
    return () => clearInterval(t);
  }, [periodMs]);
  return now;
}

export function useTitle(title: string) {
  useEffect(() => {
    document.title = title ? `${title} · Sextant` : 'Sextant';
  }, [title]);
}

/** The list operations: those answering {items, next_cursor}. */
type ListOp = {[I in OpId]: Reply<I> extends {items: unknown[]; next_cursor: string | null} ? I : never}[OpId];
type Item<I extends ListOp> = Reply<I> extends {items: (infer T)[]} ? T : never;

/** Loads every page of list operation id with args (null: nothing yet), pageSize at a
 * time, with "load more". */
export function usePaged<I extends ListOp>(id: I, args: Args<I> | null, pageSize = 100) {
  type T = Item<I>;
  const path = args === null ? null : url(id, args);
  const argsRef = useRef(args);
  argsRef.current = args;
  const [state, setState] = useState<{items: T[]; next: string | null; error?: Error; loading: boolean; path: string | null}>({
    items: [],
    next: null,
    loading: path !== null,
    path,
  });
  const pathRef = useRef(path);
  pathRef.current = path;
  const fetchPage = useCallback(
    async (cursor: string | null, replace: boolean) => {
      const p = pathRef.current;
      const a = argsRef.current as {query?: object} | null;
      if (p === null || a === null) return;
      const q = {...a.query, limit: pageSize, cursor: cursor ?? undefined};
      setState((s) => ({...s, loading: true}));
      try {
        const {data: page} = await request<{items: T[]; next_cursor: string | null}>('GET', url(id, {...a, query: q} as Args<I>));
        if (pathRef.current !== p) return;
        setState((s) => ({
          items: replace ? page.items : [...s.items, ...page.items],
          next: page.next_cursor,
          loading: false,
          path: p,
        }));
      } catch (e) {
        if (pathRef.current !== p) return;
        setState((s) => ({...s, error: e as Error, loading: false, path: p, items: s.path === p ? s.items : []}));
      }
    },
    [id, pageSize],
  );
  useEffect(() => {
    setState((s) => (s.path === path ? s : {items: [], next: null, loading: path !== null, path}));
    void fetchPage(null, true);
  }, [path, fetchPage]);
  const same = state.path === path;
  return {
    items: same ? state.items : [],
    next: same ? state.next : null,
    error: same ? state.error : undefined,
    loading: state.loading,
    /** Reloads the first page (what a live refresh does). */
    reload: () => fetchPage(null, true),
    more: () => fetchPage(state.next, false),
  };
}

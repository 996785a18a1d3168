// store.ts — the smallest observable value: get, set, subscribe, and a hook that
// re-renders a component when the value changes. Session, routing, live-event status,
// API health and toasts are each one store; pages keep their own data in hooks.
import {useEffect, useState} from 'preact/hooks';

export interface Store<T> {
  get(): T;
  set(v: T): void;
  update(fn: (v: T) => T): void;
  subscribe(fn: (v: T) => void): () => void;
}

export function createStore<T>(initial: T): Store<T> {
  let value = initial;
  const subs = new Set<(v: T) => void>();
  return {
    get: () => value,
    set(v: T) {
      if (Object.is(v, value)) return;
      value = v;
      for (const fn of [...subs]) fn(value);
    },
    update(fn) {
      this.set(fn(value));
    },
    subscribe(fn) {
      subs.add(fn);
      return () => subs.delete(fn);
    },
  };
}

/** The store's current value; the component re-renders when it changes. */
export function useStore<T>(s: Store<T>): T {
  const [v, setV] = useState(s.get());
  useEffect(() => {
    setV(s.get());
    return s.subscribe(setV);
  }, [s]);
  return v;
}

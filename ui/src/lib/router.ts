// router.ts — client-side navigation with the History API: the current location as a
// store, navigate(), a click handler that turns same-origin <a href> clicks into
// navigations, a leave guard for unsaved edits, and pattern matching for the routes.
//
// Sextant serves index.html for every non-API path (api/static.c), so any address the
// app shows can be reloaded or shared.
import {createStore, useStore} from './store';

export interface Loc {
  path: string;
  search: string;
}

const current = (): Loc => ({path: window.location.pathname, search: window.location.search});
export const loc = createStore<Loc>(current());

let guard: (() => string | null) | null = null;

/** While set, leaving the page asks first; fn returns the question, or null to leave. */
export function setLeaveGuard(fn: (() => string | null) | null) {
  guard = fn;
}

function mayLeave(): boolean {
  const q = guard?.();
  if (!q) return true;
  if (!window.confirm(q)) return false;
  guard = null;
  return true;
}

export function navigate(to: string, opts: {replace?: boolean; force?: boolean} = {}) {
  if (!opts.force && !mayLeave()) return;
  const url = new URL(to, window.location.href);
  const target = url.pathname + url.search + url.hash;
  if (opts.replace) window.history.replaceState(null, '', target);
  else if (target !== window.location.pathname + window.location.search + window.location.hash)
    window.history.pushState(null, '', target);
  loc.set(current());
  if (!opts.replace) window.scrollTo(0, 0);
}

/** Changes query parameters of the current page (replacing the history entry). */
export function setQuery(patch: Record<string, string | null | undefined>) {
  const sp = new URLSearchParams(window.location.search);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined || v === '') sp.delete(k);
    else sp.set(k, v);
  }
  const s = sp.toString();
  window.history.replaceState(null, '', window.location.pathname + (s ? `?${s}` : ''));
  loc.set(current());
}

let installed = false;
export function installRouter() {
  if (installed) return;
  installed = true;
  let shown = window.location.pathname + window.location.search;
  loc.subscribe((l) => (shown = l.path + l.search));
  window.addEventListener('popstate', () => {
    if (!mayLeave()) {
      window.history.pushState(null, '', shown);
      return;
    }
    loc.set(current());
  });
  window.addEventListener('beforeunload', (e) => {
    if (guard?.()) {
      e.preventDefault();
      e.returnValue = '';
    }
  });
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || !a.href || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href);
    if (url.origin !== window.location.origin || url.pathname.startsWith('/api/')) return;
    // A link within the page (the skip link's #main): the browser scrolls and moves focus.
    if (url.hash && url.pathname === window.location.pathname && url.search === window.location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}

export function useLocation(): Loc & {query: URLSearchParams} {
  const l = useStore(loc);
  return {...l, query: new URLSearchParams(l.search)};
}

/** Matches "/configs/:id/history" against a path; the parameters (decoded) or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split('/').filter(Boolean);
  const xs = path.split('/').filter(Boolean);
  if (ps.length !== xs.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    if (ps[i].startsWith(':')) {
      try {
        out[ps[i].slice(1)] = decodeURIComponent(xs[i]);
      } catch {
        return null;
      }
    } else if (ps[i] !== xs[i]) return null;
  }
  return out;
}

/** A path segment, encoded. */
export const seg = (s: string | number) => encodeURIComponent(String(s));

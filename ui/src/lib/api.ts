// api.ts — every call to /api/v1: the bearer token, JSON in and out, the error shape
// {"error": {"code", "message", "details"}} turned into an ApiError, and two app-wide
// reactions: a 401 ends the session (the app goes back to sign-in) and a 503 marks the
// database as down until a call succeeds again (the layout shows a banner).
import {createStore} from './store';

export interface ErrorDetail {
  path?: string;
  message?: string;
  stage?: string;
  conflict_with?: string;
  detail?: string;
  hint?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly requestId = '',
  ) {
    super(message);
  }
  /** The server has no such route at all (an endpoint this server does not offer yet),
   * as opposed to a 404 for an id that does not exist. */
  get routeMissing(): boolean {
    return this.status === 404 && /^no route for /.test(this.message);
  }
}

/** What the app knows about the API's health, from the answers it gets. */
export const apiHealth = createStore<{unavailable: string | null; unreachable: string | null}>({
  unavailable: null,
  unreachable: null,
});

let tokenSource: () => string | null = () => null;
let onUnauthorized: (e: ApiError) => void = () => {};

/** Wires the session in (lib/session.ts): where the token comes from, what a 401 does. */
export function configureApi(getToken: () => string | null, unauthorized: (e: ApiError) => void) {
  tokenSource = getToken;
  onUnauthorized = unauthorized;
}

export function authHeader(): Record<string, string> {
  const t = tokenSource();
  return t ? {Authorization: `Bearer ${t}`} : {};
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** false: a 401 is just an error (sign-in itself), not the end of the session. */
  session?: boolean;
}

export interface Answer<T> {
  data: T;
  status: number;
  headers: Headers;
}

function setHealth(patch: Partial<ReturnType<typeof apiHealth.get>>) {
  const cur = apiHealth.get();
  const next = {...cur, ...patch};
  if (next.unavailable !== cur.unavailable || next.unreachable !== cur.unreachable) apiHealth.set(next);
}

export async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = {Accept: 'application/json', ...authHeader(), ...opts.headers};
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(path, {method, headers, body, signal: opts.signal, cache: 'no-store'});
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    const msg = `could not reach Sextant: ${(e as Error).message}`;
    setHealth({unreachable: msg});
    throw new ApiError(0, 'unreachable', msg);
  }
  setHealth({unreachable: null});
  const text = await res.text();
  let data: unknown = undefined;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (res.ok) {
    if (res.status !== 304) setHealth({unavailable: null});
    return {data: data as T, status: res.status, headers: res.headers};
  }
  const err = (data && typeof data === 'object' && (data as {error?: unknown}).error) as
    | {code?: string; message?: string; details?: ErrorDetail[]}
    | undefined;
  const e = new ApiError(
    res.status,
    err?.code ?? `http_${res.status}`,
    err?.message ?? (typeof data === 'string' && data ? data.slice(0, 200) : `HTTP ${res.status} ${res.statusText}`),
    Array.isArray(err?.details) ? err!.details : [],
    res.headers.get('X-Request-Id') ?? '',
  );
  if (res.status === 503) setHealth({unavailable: e.message});
  if (res.status === 401 && opts.session !== false) onUnauthorized(e);
  throw e;
}

export const get = <T>(path: string, opts?: RequestOptions) => request<T>('GET', path, opts).then((a) => a.data);
export const post = <T>(path: string, body?: unknown, opts?: RequestOptions) =>
  request<T>('POST', path, {...opts, body}).then((a) => a.data);

/** A path with its query string; empty and undefined values are left out. */
export function withQuery(path: string, q: Record<string, string | number | boolean | undefined | null>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') sp.set(k, String(v));
  const s = sp.toString();
  return s ? `${path}?${s}` : path;
}

/** One line for an error, with its details (field paths) when there are few. */
export function describeError(e: unknown): string {
  if (e instanceof ApiError) {
    const ds = e.details
      .map((d) => [d.path, d.message ?? d.detail ?? d.hint].filter(Boolean).join(': '))
      .filter(Boolean);
    return ds.length && ds.length <= 3 ? `${e.message} (${ds.join('; ')})` : e.message;
  }
  return e instanceof Error ? e.message : String(e);
}

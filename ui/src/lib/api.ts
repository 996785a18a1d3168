// api.ts — every call to /api/v1, made by operationId through the typed client: the
// path table, parameters, bodies and answers all come from the OpenAPI document
// (api/openapi.json -> src/gen/openapi.ts at build time), so no page writes a path and
// a renamed field fails the build. Around each call: the bearer token, JSON in and out,
// the error shape {"error": {"code", "message", "details"}} turned into an ApiError,
// and two app-wide reactions: a 401 ends the session (the app goes back to sign-in)
// and a 503 marks the database as down until a call succeeds again (the layout shows a
// banner). Every change (POST, PUT, PATCH, DELETE) carries a fresh Idempotency-Key; when
// its answer is lost (the network failed, or 503 while the database fails over) it is
// sent again a few times with the same key, so it is made at most once and the retry
// gets the answer of the change that was made.
import {routes, type operations} from '../gen/openapi';
import {createStore} from './store';
import type {ErrorDetail} from './types';

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

/** The header that makes a change safe to send again (see api/openapi.json). */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Times a change whose answer was lost is sent again (with the same key). */
const CHANGE_RETRIES = 3;
const RETRY_DELAY_MS = 1000;

/** A fresh key for one change: a random UUID (crypto.randomUUID needs a secure context,
 * so plain-HTTP pages build the same version-4 form from crypto.getRandomValues). */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const isChange = (method: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method.toUpperCase());

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new DOMException('aborted', 'AbortError'));
    });
  });
}

/** The bare call under the typed client, for the one route outside the document (the local
 * demo's sign-in, lib/session.ts). */
export async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = {Accept: 'application/json', ...authHeader(), ...opts.headers};
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const change = isChange(method);
  if (change && !headers[IDEMPOTENCY_HEADER]) headers[IDEMPOTENCY_HEADER] = newIdempotencyKey();
  let res: Response;
  for (let attempt = 0; ; attempt++) {
    const again = change && attempt < CHANGE_RETRIES;
    try {
      res = await fetch(path, {method, headers, body, signal: opts.signal, cache: 'no-store'});
    } catch (e) {
      if ((e as Error).name === 'AbortError') throw e;
      if (again) {
        await pause(RETRY_DELAY_MS, opts.signal);
        continue;
      }
      const msg = `could not reach Sextant: ${(e as Error).message}`;
      setHealth({unreachable: msg});
      throw new ApiError(0, 'unreachable', msg);
    }
    if (res.status !== 503 || !again) break;
    await res.text().catch(() => '');
    const after = Number(res.headers.get('Retry-After'));
    await pause(after > 0 && after <= 10 ? after * 1000 : RETRY_DELAY_MS, opts.signal);
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

/** A path with its query string; empty and undefined values are left out. */
function withQuery(path: string, q: Record<string, unknown> | undefined): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(q ?? {})) if (v !== undefined && v !== null && v !== '') sp.set(k, String(v));
  const s = sp.toString();
  return s ? `${path}?${s}` : path;
}

// ------------------------------------------------------------------ the typed client

/** An operation of the document, by its operationId. */
export type OpId = keyof operations;
type Op<I extends OpId> = operations[I];
type Params<I extends OpId> = Op<I> extends {parameters: infer P} ? P : {};
type PathParams<I extends OpId> = Params<I> extends {path: infer X} ? X : never;
type QueryParams<I extends OpId> = Params<I> extends {query?: infer Q} ? Q : never;
/** The JSON body an operation takes. */
export type Body<I extends OpId> = Op<I> extends {requestBody: {content: {'application/json': infer B}}} ? B : never;
type Responses<I extends OpId> = Op<I>['responses'];
/** The success statuses of an operation (200, 201). */
export type Success<I extends OpId> = Extract<keyof Responses<I>, 200 | 201>;
type Json<R> = R extends {content: {'application/json': infer J}} ? J : never;
/** What an operation answers with status S (by default: any of its successes). */
export type Reply<I extends OpId, S extends Success<I> = Success<I>> = Json<Responses<I>[S]>;

/** The parameters and body of a call: path parameters and body when the operation has
 * them, query parameters always optional. */
export type Args<I extends OpId> = ([PathParams<I>] extends [never] ? {} : {path: PathParams<I>}) & {
  query?: [QueryParams<I>] extends [never] ? never : QueryParams<I>;
} & ([Body<I>] extends [never] ? {} : {body: Body<I>});

/** The URL of a call: the path template of id with its path parameters filled in
 * (each one encoded as a segment), then its query string. */
export function url<I extends OpId>(id: I, args?: Args<I>): string {
  const a = (args ?? {}) as {path?: Record<string, string | number>; query?: Record<string, unknown>};
  const path = routes[id].path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = a.path?.[name];
    if (v === undefined) throw new Error(`${id}: missing path parameter ${name}`);
    return encodeURIComponent(String(v));
  });
  return withQuery(path, a.query);
}

/** Calls an operation; the answer (data, status, headers) is typed by the document. */
export function call<I extends OpId, S extends Success<I> = Success<I>>(
  id: I,
  ...[args, opts]: {} extends Args<I> ? [Args<I>?, RequestOptions?] : [Args<I>, RequestOptions?]
): Promise<Answer<Reply<I, S>>> {
  const body = (args as {body?: unknown} | undefined)?.body;
  return request<Reply<I, S>>(routes[id].method, url(id, args), {...opts, body});
}

/** call() for the data alone. */
export const fetchOp = <I extends OpId, S extends Success<I> = Success<I>>(
  id: I,
  ...rest: {} extends Args<I> ? [Args<I>?, RequestOptions?] : [Args<I>, RequestOptions?]
): Promise<Reply<I, S>> => call<I, S>(id, ...rest).then((a) => a.data);

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

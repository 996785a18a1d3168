// events.ts — live updates from GET /api/v1/events (server-sent events), with polling
// as the fallback.
//
// EventSource cannot send an Authorization header, so the stream is read with fetch()
// and a streaming body reader, parsed line by line as text/event-stream (id:, event:,
// data:, retry:, comments), and reopened after a drop with Last-Event-ID so the server
// can replay what was missed. Subscribers get every event; pages refresh what an event
// touches. While the stream is not there (a server without the endpoint answers 404,
// or the connection is down), subscribers get a {type: "poll"} tick every 5 s instead,
// and the endpoint is tried again now and then. After every (re)connection a
// {type: "resync"} tells pages to reload once, since events may have been missed.
import {authHeader, url} from './api';
import {createStore} from './store';

export interface LiveEvent {
  /** The event type (config_applied, wave_started, ...), or "poll" / "resync". */
  type: string;
  id: string | null;
  data: Record<string, unknown> | null;
  /** When the browser received it (ms since the epoch). */
  received: number;
}

export type LiveMode = 'off' | 'connecting' | 'live' | 'polling';

export const liveStatus = createStore<{mode: LiveMode; detail: string}>({mode: 'off', detail: ''});
/** The newest events first, at most RECENT_MAX (the dashboard's activity feed). */
export const recentEvents = createStore<LiveEvent[]>([]);

const POLL_MS = 5000;
const RESYNC_MS = 30000; // a slow safety reload while live (counts that no event moves)
const RETRY_ABSENT_MS = 60000; // how often to look for the endpoint on a server without it
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15000;
const RECENT_MAX = 50;

const subscribers = new Set<(e: LiveEvent) => void>();
let running = false;
let abort: AbortController | null = null;
let lastId: string | null = null;
let retryMs = RETRY_MIN_MS;
let serverRetryMs: number | null = null;
let pollTimer: ReturnType<typeof setInterval> | null = null;
let resyncTimer: ReturnType<typeof setInterval> | null = null;
let reconnectTimer: ReturnType<typeof setTimeout> | null = null;
let onUnauthorized: () => void = () => {};

function emit(e: LiveEvent) {
  if (e.type !== 'poll' && e.type !== 'resync') recentEvents.set([e, ...recentEvents.get()].slice(0, RECENT_MAX));
  for (const fn of [...subscribers]) {
    try {
      fn(e);
    } catch (err) {
      console.error('live event subscriber failed', err);
    }
  }
}

const tick = (type: 'poll' | 'resync') => emit({type, id: null, data: null, received: Date.now()});

function startPolling(detail: string) {
  liveStatus.set({mode: 'polling', detail});
  if (!pollTimer) pollTimer = setInterval(() => tick('poll'), POLL_MS);
}

function stopPolling() {
  if (pollTimer) clearInterval(pollTimer);
  pollTimer = null;
}

function schedule(ms: number) {
  if (reconnectTimer) clearTimeout(reconnectTimer);
  reconnectTimer = setTimeout(() => {
    reconnectTimer = null;
    void connect();
  }, ms);
}

/** Parses a text/event-stream body and emits its events; resolves when it ends. */
async function readStream(body: ReadableStream<Uint8Array>, signal: AbortSignal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let type = '';
  let data: string[] = [];
  let id: string | null = null;
  const dispatch = () => {
    if (id !== null) lastId = id;
    if (data.length) {
      const text = data.join('\n');
      let parsed: Record<string, unknown> | null = null;
      try {
        const v = JSON.parse(text);
        parsed = v && typeof v === 'object' ? v : {value: v};
      } catch {
        parsed = {text};
      }
      const t = type || (typeof parsed?.type === 'string' ? (parsed.type as string) : 'message');
      emit({type: t, id: id ?? lastId, data: parsed, received: Date.now()});
    }
    type = '';
    data = [];
    id = null;
  };
  const line = (l: string) => {
    if (l === '') return dispatch();
    if (l.startsWith(':')) return; // comment / keep-alive
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) serverRetryMs = Number(value);
  };
  while (!signal.aborted) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true});
    let nl: number;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const eol = buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1;
      if (buf[nl] === '\r' && nl + 1 === buf.length) break; // a \r\n may be split
      line(buf.slice(0, nl));
      buf = buf.slice(nl + eol);
    }
  }
}

async function connect() {
  if (!running) return;
  if (liveStatus.get().mode !== 'polling') liveStatus.set({mode: 'connecting', detail: ''});
  abort = new AbortController();
  const signal = abort.signal;
  try {
    const headers: Record<string, string> = {Accept: 'text/event-stream', ...authHeader()};
    if (lastId) headers['Last-Event-ID'] = lastId;
    const res = await fetch(url('streamEvents'), {headers, signal, cache: 'no-store'});
    if (res.status === 401) {
      onUnauthorized();
      return;
    }
    if (res.status === 404 || res.status === 405 || res.status === 501) {
      void res.body?.cancel();
      startPolling(`this server has no event stream yet (GET ${url('streamEvents')}: ${res.status}); refreshing every ${POLL_MS / 1000} s`);
      schedule(RETRY_ABSENT_MS);
      return;
    }
    const ct = res.headers.get('Content-Type') ?? '';
    if (!res.ok || !res.body || !ct.includes('text/event-stream')) {
      void res.body?.cancel();
      throw new Error(`GET ${url('streamEvents')} answered ${res.status} ${ct}`);
    }
    stopPolling();
    retryMs = RETRY_MIN_MS;
    liveStatus.set({mode: 'live', detail: 'live updates'});
    tick('resync');
    await readStream(res.body, signal);
    if (!running) return;
    startPolling('the event stream ended; reconnecting');
  } catch (e) {
    if (!running || signal.aborted) return;
    startPolling(`event stream unavailable (${(e as Error).message}); refreshing every ${POLL_MS / 1000} s`);
  }
  const wait = serverRetryMs ?? retryMs;
  retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
  schedule(wait);
}

/** Starts the stream (idempotent); unauthorized is called on a 401. */
export function startLive(unauthorized: () => void) {
  onUnauthorized = unauthorized;
  if (running) return;
  running = true;
  retryMs = RETRY_MIN_MS;
  resyncTimer = setInterval(() => {
    if (liveStatus.get().mode === 'live') tick('resync');
  }, RESYNC_MS);
  void connect();
}

export function stopLive() {
  running = false;
  abort?.abort();
  abort = null;
  stopPolling();
  if (resyncTimer) clearInterval(resyncTimer);
  if (reconnectTimer) clearTimeout(reconnectTimer);
  resyncTimer = reconnectTimer = null;
  lastId = null;
  recentEvents.set([]);
  liveStatus.set({mode: 'off', detail: ''});
}

export function onLive(fn: (e: LiveEvent) => void): () => void {
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

/** A one-line description of an event for the activity feed. */
export function describeEvent(e: LiveEvent): string {
  const d = e.data ?? {};
  const s = (k: string) => (d[k] === undefined || d[k] === null ? '' : String(d[k]));
  const node = s('node_id');
  const version = s('version') || s('snapshot_version') || s('config_version');
  const group = s('group');
  const dep = s('deployment_id') || (e.type.startsWith('wave') || e.type.startsWith('roll') ? s('id') : '');
  const wave = s('wave') || s('wave_index') || s('index');
  const err = s('error') || s('reason');
  const parts: string[] = [];
  switch (e.type) {
    case 'config_applied':
      parts.push(`${node || 'a proxy'} applied ${version ? `v${version}` : 'a new version'}`);
      break;
    case 'config_rejected':
      parts.push(`${node || 'a proxy'} rejected ${version ? `v${version}` : 'a version'}`);
      break;
    case 'proxy_connected':
    case 'proxy_disconnected':
    case 'proxy_stale':
      parts.push(`${node || 'a proxy'} ${e.type.slice(6)}`);
      break;
    case 'config_created':
    case 'config_updated':
    case 'config_deleted':
      parts.push(`config ${s('namespace')}/${s('name')}${version && e.type !== 'config_deleted' ? ` v${version}` : ''} ${e.type.slice(7)}${s('by') ? ` by ${s('by')}` : ''}`);
      break;
    case 'snapshot_generated':
      parts.push(`snapshot ${version ? `v${version}` : ''} generated${s('staged_for') ? ' (staged)' : ''}`);
      break;
    case 'deployment_started':
      parts.push(`deployment started${s('by') ? ` by ${s('by')}` : ''}`);
      break;
    case 'alert_firing':
    case 'alert_resolved':
      parts.push(`alert ${s('rule').replace(/_/g, ' ')} ${e.type.slice(6)}${s('subject') ? ` for ${s('subject')}` : ''}${s('message') ? `: ${s('message')}` : ''}`);
      break;
    case 'wave_started':
    case 'wave_completed': {
      // The server counts waves from 0 (`wave`, out of `waves`); pages show them from 1.
      const k = typeof d.wave === 'number' ? d.wave + 1 : wave || '?';
      parts.push(`wave ${k}${typeof d.waves === 'number' ? `/${d.waves}` : ''} ${e.type.slice(5)}`);
      break;
    }
    default:
      parts.push(e.type.replace(/_/g, ' '));
  }
  if (group) parts.push(`(${group})`);
  if (dep && !e.type.startsWith('proxy')) parts.push(`deployment ${dep.slice(0, 8)}`);
  if (err) parts.push(`— ${err}`);
  return parts.join(' ');
}

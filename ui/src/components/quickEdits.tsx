// quickEdits.tsx — forms for the common edits of a spec, beside the raw editor: add a
// route to a backend, move a backend to other endpoints, change a backend's timeout.
// Each reads the editor's current document (JSON or YAML), changes the value and
// writes it back into the same editor, where it is validated and saved like typing.
import {useEffect, useState} from 'preact/hooks';
import {Field, val} from './ui';

type Obj = Record<string, unknown>;
interface Backend {
  name: string;
  namespace?: string;
  endpoints?: {address?: string; port?: number}[];
}

export interface QuickEditsProps {
  /** The editor's document as a value; throws when the text does not parse. */
  read: () => Promise<Obj>;
  /** Replaces the editor's document with value, in the editor's format. */
  write: (value: Obj) => Promise<void>;
  /** Changes whenever the document does (the forms re-read it). */
  revision: number;
}

const list = <T,>(o: Obj, k: string): T[] => {
  if (!Array.isArray(o[k])) o[k] = [];
  return o[k] as T[];
};
const refOf = (b: Backend) => `${b.namespace ? `${b.namespace}/` : ''}${b.name}`;
const DURATION = /^\d+(\.\d{1,9})?s$/;

/** "10.0.0.7:8080" lines (or separated by commas) as endpoints; an error names the bad one. */
export function parseEndpoints(text: string): {address: string; port: number; healthy: boolean}[] | string {
  const out = [];
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(item);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) return `“${item}” is not address:port (port 1 to 65535)`;
    out.push({address: m[1].replace(/^\[|\]$/g, ''), port, healthy: true});
  }
  return out.length ? out : 'Give at least one address:port';
}

export function QuickEdits({read, write, revision}: QuickEditsProps) {
  const [doc, setDoc] = useState<Obj | null>(null);
  const [broken, setBroken] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const [err, setErr] = useState<{form: string; msg: string} | null>(null);
  // add a route
  const [rName, setRName] = useState('');
  const [rHost, setRHost] = useState('');
  const [rPath, setRPath] = useState('/');
  const [rBackend, setRBackend] = useState('');
  const [rListener, setRListener] = useState('');
  // move endpoints
  const [eBackend, setEBackend] = useState('');
  const [eList, setEList] = useState('');
  // timeout
  const [tBackend, setTBackend] = useState('');
  const [tField, setTField] = useState('request_timeout');
  const [tValue, setTValue] = useState('');

  useEffect(() => {
    const t = setTimeout(() => {
      read()
        .then((d) => {
          setDoc(d);
          setBroken(false);
        })
        .catch(() => setBroken(true));
    }, 250);
    return () => clearTimeout(t);
  }, [revision]);

  // The endpoints box starts with the chosen backend's endpoints, until it is edited.
  const [eTouched, setETouched] = useState(false);
  useEffect(() => {
    if (eTouched || !doc || !Array.isArray(doc.backends)) return;
    const all = (doc.backends as Backend[]).filter((b) => b && b.name);
    const b = all.find((x) => refOf(x) === eBackend) ?? all[0];
    setEList((b?.endpoints ?? []).map((p) => `${p.address}:${p.port}`).join('\n'));
  }, [doc, eBackend, eTouched]);

  const backends = (doc && Array.isArray(doc.backends) ? (doc.backends as Backend[]) : []).filter((b) => b && b.name);
  const listeners = (doc && Array.isArray(doc.listeners) ? (doc.listeners as {name?: string}[]) : []).filter((l) => l && l.name);
  const backendRefs = backends.map(refOf);

  const apply = async (form: string, change: (d: Obj) => string | null) => {
    setDone(null);
    setErr(null);
    let d: Obj;
    try {
      d = await read();
    } catch (e) {
      setErr({form, msg: `The spec does not parse: ${(e as Error).message}`});
      return;
    }
    const problem = change(d);
    if (problem) {
      setErr({form, msg: problem});
      return;
    }
    await write(d);
    setDone(form);
    if (form === 'endpoints') setETouched(false);
  };
  const findBackend = (d: Obj, ref: string) => list<Backend>(d, 'backends').find((b) => refOf(b) === ref);

  const addRoute = (e: Event) => {
    e.preventDefault();
    void apply('route', (d) => {
      const b = findBackend(d, rBackend || backendRefs[0]);
      if (!rName.trim()) return 'Name the route';
      if (!b) return 'Pick the backend the route sends to';
      if (!rPath.startsWith('/')) return 'The path prefix starts with /';
      const routes = list<Obj>(d, 'http_routes');
      if (routes.some((r) => r.name === rName.trim())) return `A route named ${rName.trim()} exists already`;
      const ref: Obj = {name: b.name};
      if (b.namespace) ref.namespace = b.namespace;
      const port = b.endpoints?.[0]?.port;
      if (port) ref.port = port;
      const route: Obj = {name: rName.trim()};
      if (b.namespace) route.namespace = b.namespace;
      if (rHost.trim()) route.hostnames = [rHost.trim()];
      route.rules = [{name: 'all', matches: [{path: rPath, path_type: 'PathPrefix'}], backend_refs: [ref]}];
      routes.push(route);
      if (rListener) {
        const l = list<Obj>(d, 'listeners').find((x) => x.name === rListener);
        if (l) list<string>(l, 'attached_routes').push(rName.trim());
      }
      return null;
    });
  };

  const moveEndpoints = (e: Event) => {
    e.preventDefault();
    void apply('endpoints', (d) => {
      const b = findBackend(d, eBackend || backendRefs[0]);
      if (!b) return 'Pick a backend';
      const eps = parseEndpoints(eList);
      if (typeof eps === 'string') return eps;
      b.endpoints = eps;
      return null;
    });
  };

  const setTimeoutOf = (e: Event) => {
    e.preventDefault();
    void apply('timeout', (d) => {
      const b = findBackend(d, tBackend || backendRefs[0]) as (Backend & Obj) | undefined;
      if (!b) return 'Pick a backend';
      if (!DURATION.test(tValue.trim())) return 'A timeout is seconds with an s, such as 2s or 0.5s';
      b[tField] = tValue.trim();
      return null;
    });
  };

  const errorOf = (form: string) =>
    err?.form === form ? (
      <p class="form-error" role="alert" data-testid={`quick-${form}-error`}>
        {err.msg}
      </p>
    ) : done === form ? (
      <p class="muted small" role="status">
        Written into the spec: check it and save.
      </p>
    ) : null;

  const backendSelect = (label: string, value: string, set: (v: string) => void) => (
    <Field label={label}>
      <select value={value || backendRefs[0] || ''} onChange={(e) => set(val(e))} disabled={!backendRefs.length}>
        {backendRefs.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
    </Field>
  );

  return (
    <section class="quick-edits" aria-labelledby="h-quick" data-testid="quick-edits">
      <h2 id="h-quick">Quick edits</h2>
      {broken && <p class="muted small">The spec does not parse now: fix it in the editor to use these forms.</p>}
      {!broken && doc && !backendRefs.length && <p class="muted small">Add a backend in the editor first.</p>}
      <details>
        <summary>Add a route</summary>
        <form onSubmit={addRoute} aria-label="Add a route">
          <Field label="Route name">
            <input value={rName} onInput={(e) => setRName(val(e))} placeholder="r-api" />
          </Field>
          <Field label="Hostname" hint="Leave empty for the listener's hostnames.">
            <input value={rHost} onInput={(e) => setRHost(val(e))} placeholder="api.example.com" />
          </Field>
          <Field label="Path prefix">
            <input value={rPath} onInput={(e) => setRPath(val(e))} />
          </Field>
          {backendSelect('Send to backend', rBackend, setRBackend)}
          <Field label="Attach to listener">
            <select value={rListener} onChange={(e) => setRListener(val(e))}>
              <option value="">none</option>
              {listeners.map((l) => (
                <option key={l.name} value={l.name}>
                  {l.name}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit" class="btn" disabled={broken || !backendRefs.length}>
            Add the route
          </button>
          {errorOf('route')}
        </form>
      </details>
      <details>
        <summary>Move a backend's endpoints</summary>
        <form onSubmit={moveEndpoints} aria-label="Move a backend's endpoints">
          {backendSelect('Backend', eBackend, (v) => {
            setEBackend(v);
            setETouched(false);
          })}
          <Field label="New endpoints" hint="address:port, one per line; they replace the backend's endpoints.">
            <textarea
              rows={3}
              value={eList}
              onInput={(e) => {
                setEList(val(e));
                setETouched(true);
              }}
              placeholder="10.0.0.7:8080"
            />
          </Field>
          <button type="submit" class="btn" disabled={broken || !backendRefs.length}>
            Move the endpoints
          </button>
          {errorOf('endpoints')}
        </form>
      </details>
      <details>
        <summary>Change a timeout</summary>
        <form onSubmit={setTimeoutOf} aria-label="Change a timeout">
          {backendSelect('Backend', tBackend, setTBackend)}
          <Field label="Timeout">
            <select value={tField} onChange={(e) => setTField(val(e))}>
              <option value="request_timeout">request timeout</option>
              <option value="connect_timeout">connect timeout</option>
            </select>
          </Field>
          <Field label="Value" hint="Seconds, such as 2s or 0.5s.">
            <input value={tValue} onInput={(e) => setTValue(val(e))} placeholder="2s" />
          </Field>
          <button type="submit" class="btn" disabled={broken || !backendRefs.length}>
            Set the timeout
          </button>
          {errorOf('timeout')}
        </form>
      </details>
    </section>
  );
}

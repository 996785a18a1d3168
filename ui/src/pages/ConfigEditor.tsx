// ConfigEditor.tsx — create a config or edit one: the spec in CodeMirror with
// completion from the schema and the whole validation pipeline's errors inline as you
// type, then save as a new version with a message. Saving sends If-Match with the
// version the edit started from, so a change someone else saved meanwhile is not
// overwritten: the page says so and keeps the text. A config the Kubernetes source
// manages is shown read-only with the Gateway it comes from (the server refuses its
// edits); its history (rollback) and rollouts stay one click away.
//
// The spec is written as JSON or YAML (?format=yaml; the server stores JSON, so a YAML
// text's comments are not kept), and the quick-edit forms beside the editor write the
// common changes into the same document.
import {useEffect, useRef, useState} from 'preact/hooks';
import {ApiError, call, describeError, fetchOp, type Body} from '../lib/api';
import {useApi, useTitle} from '../lib/hooks';
import {navigate, seg, setLeaveGuard, setQuery, useLocation} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {Config, Spec} from '../lib/types';
import type {EditorStatus, Problem, SpecFormat, Validation} from '../editor/jsonEditor';
import {KubernetesStatus} from '../components/k8sStatus';
import {QuickEdits} from '../components/quickEdits';
import {EditorStatusLine, SpecEditor, type SpecEditorHandle} from '../components/editors';
import {Badge, Empty, ErrorBox, Field, PageHead, SourceBadge, Time, toast, val} from '../components/ui';

const TEMPLATE = `{
  "listeners": [],
  "http_routes": [],
  "backends": []
}
`;

const loadYaml = () => import('../editor/yamlpos');

/** A spec as the editor's text in format f. */
async function specText(spec: unknown, f: SpecFormat): Promise<string> {
  if (f === 'yaml') return (await loadYaml()).toYaml(spec ?? {});
  return `${JSON.stringify(spec ?? {}, null, 2)}\n`;
}

/** The editor's text in format f as a value; throws with what is wrong. */
async function specValue(text: string, f: SpecFormat): Promise<Record<string, unknown>> {
  const v: unknown = f === 'yaml' ? (await loadYaml()).parseYaml(text).value : JSON.parse(text);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`the spec must be ${f === 'yaml' ? 'a YAML mapping' : 'a JSON object'}`);
  return v as Record<string, unknown>;
}

const splitList = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

function problemsOf(e: ApiError): Problem[] {
  return e.details
    .filter((d) => d.message)
    .map((d) => ({path: d.path ?? '', message: d.message!, stage: d.stage, conflict_with: d.conflict_with}));
}

export function ConfigEditorPage({id}: {id: string | null}) {
  const me = useStore(session).me;
  const {query} = useLocation();
  const format: SpecFormat = query.get('format') === 'yaml' ? 'yaml' : 'json';
  const creating = id === null;
  const loaded = useApi('getConfig', id ? {path: {id}} : null);
  useTitle(creating ? 'New config' : loaded.data ? `${loaded.data.namespace}/${loaded.data.name}` : 'Config');

  // A managed config is changed where it comes from, never here.
  const managed = !creating && loaded.data?.source === 'kubernetes';
  const mayEdit = creating ? can(me, 'configs', 'create') : can(me, 'configs', 'update') && !managed;
  const mayValidate = mayEdit && can(me, 'configs', 'validate');

  // What the edit started from: the version its If-Match names.
  const [base, setBase] = useState<Config | null>(null);
  const [namespace, setNamespace] = useState('default');
  const [name, setName] = useState('');
  const [groups, setGroups] = useState('');
  const [message, setMessage] = useState('');
  const [draft, setDraft] = useState(false);
  const [dirty, setDirty] = useState(false);
  const [status, setStatus] = useState<EditorStatus>({kind: 'idle'});
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<ApiError | Error | null>(null);
  const [stale, setStale] = useState<number | null>(null); // a newer version exists (412)
  const [editorKey, setEditorKey] = useState(0);
  const [revision, setRevision] = useState(0);
  const [formatError, setFormatError] = useState<string | null>(null);
  const editor = useRef<SpecEditorHandle | null>(null);
  const initial = useRef(TEMPLATE);
  const meta = useRef({namespace, name, groups, base});
  meta.current = {namespace, name, groups, base};

  useEffect(() => {
    const c = loaded.data;
    if (!c || base) return;
    setBase(c);
    setNamespace(c.namespace);
    setName(c.name);
    setGroups(c.groups.join(', '));
    if (format === 'json') {
      initial.current = `${JSON.stringify(c.spec ?? {}, null, 2)}\n`;
      setEditorKey((k) => k + 1);
    } else
      void specText(c.spec, format).then((t) => {
        initial.current = t;
        setEditorKey((k) => k + 1);
      });
  }, [loaded.data]);

  // A new config opened as YAML starts from the template in YAML.
  useEffect(() => {
    if (creating && format === 'yaml')
      void specText(JSON.parse(TEMPLATE), 'yaml').then((t) => {
        initial.current = t;
        setEditorKey((k) => k + 1);
      });
  }, []);

  /** Rewrites the editor's text in the other format (its edits are kept). */
  const switchFormat = async (to: SpecFormat) => {
    if (to === format) return;
    setFormatError(null);
    const text = editor.current?.text() ?? initial.current;
    let value: unknown;
    try {
      value = await specValue(text, format);
    } catch (e) {
      setFormatError(`Fix the ${format.toUpperCase()} first: ${(e as Error).message}`);
      return;
    }
    initial.current = await specText(value, to);
    setQuery({format: to === 'yaml' ? 'yaml' : null});
    setEditorKey((k) => k + 1);
  };

  const readDoc = () => specValue(editor.current?.text() ?? initial.current, format);
  const writeDoc = async (value: Record<string, unknown>) => {
    editor.current?.setText(await specText(value, format));
  };

  useEffect(() => {
    setLeaveGuard(() => (dirty ? 'Leave this page? Your changes to the spec are not saved.' : null));
    return () => setLeaveGuard(null);
  }, [dirty]);

  const validate = async (spec: Record<string, unknown>): Promise<Validation> => {
    const m = meta.current;
    const body: Body<'validateConfig'> = {spec: spec as Spec};
    if (m.base) body.id = m.base.id;
    if (m.namespace) body.namespace = m.namespace;
    if (m.name) body.name = m.name;
    const gs = splitList(m.groups);
    if (gs.length) body.groups = gs;
    try {
      await call('validateConfig', {body});
      return {ok: true};
    } catch (e) {
      if (e instanceof ApiError && (e.status === 422 || e.status === 409 || e.status === 400))
        return {ok: false, problems: problemsOf(e), message: e.message};
      if (e instanceof ApiError && e.status === 429) return {error: 'too many requests; it will check again after your next change'};
      return {error: describeError(e)};
    }
  };

  const save = async () => {
    const text = editor.current?.text() ?? '';
    let spec: unknown;
    try {
      spec = await specValue(text, format);
    } catch (e) {
      setSaveError(new Error(`The spec is not valid ${format.toUpperCase()}: ${(e as Error).message}`));
      return;
    }
    const gs = splitList(groups);
    setSaving(true);
    setSaveError(null);
    try {
      if (creating) {
        const res = await call('createConfig', {
          body: {namespace, name, groups: gs, spec: spec as Spec, message: message || undefined, draft: draft || undefined},
        });
        setDirty(false);
        setLeaveGuard(null);
        toast(`Created ${res.data.namespace}/${res.data.name} (version ${res.data.version})`);
        navigate(`/configs/${seg(res.data.id)}`, {force: true});
        return;
      }
      const b = base!;
      const body: Body<'updateConfig'> = {spec: spec as Spec, message: message || undefined, draft: draft || undefined};
      if (gs.join(',') !== b.groups.join(',')) body.groups = gs;
      if (name && name !== b.name) body.name = name;
      const res = await call('updateConfig', {path: {id: b.id}, body}, {headers: {'If-Match': `"${b.version}"`}});
      const c = res.data;
      setBase(c);
      setGroups(c.groups.join(', '));
      setDirty(false);
      setMessage('');
      setStale(null);
      toast(c.changed ? `Saved version ${c.version}` : `Nothing to save: the spec is the same as version ${c.version}`, c.changed ? 'ok' : 'info');
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) {
        const latest = await fetchOp('getConfig', {path: {id: base!.id}}).catch(() => null);
        setStale(latest?.version ?? null);
      }
      setSaveError(e as Error);
    } finally {
      setSaving(false);
    }
  };

  const reloadLatest = async () => {
    if (!base) return;
    const c = await fetchOp('getConfig', {path: {id: base.id}});
    setBase(c);
    setGroups(c.groups.join(', '));
    initial.current = await specText(c.spec, format);
    setEditorKey((k) => k + 1);
    setDirty(false);
    setStale(null);
    setSaveError(null);
  };

  // Ctrl/Cmd-S saves.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key === 's' && mayEdit) {
        e.preventDefault();
        if (!saving) void save();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  if (!creating && loaded.error instanceof ApiError && loaded.error.status === 404)
    return (
      <Empty title="No such config">
        It may have been deleted. <a href="/configs">All configs</a>
      </Empty>
    );
  if (!creating && loaded.error && !loaded.data) return <ErrorBox error={loaded.error} retry={loaded.reload} what="the config" />;
  if (!creating && !base) return <p class="muted">Loading…</p>;
  if (creating && !mayEdit)
    return (
      <Empty title="You may not create configs">
        Your role ({me?.role}) may read configs but not create them.
      </Empty>
    );

  // "Gateway default/web" of a managed config: where its status is read.
  const gm = managed ? /^Gateway ([^/\s]+)\/(\S+)$/.exec(base?.source_ref ?? '') : null;
  const gateway = gm ? {ns: gm[1], name: gm[2]} : null;
  const problems = status.kind === 'invalid' ? status.problems : [];
  // The server refuses invalid specs, drafts included: no point in sending one.
  const blocked = status.kind === 'syntax' || status.kind === 'invalid';
  return (
    <>
      <PageHead
        title={creating ? 'New config' : `${base!.namespace}/${base!.name}`}
        sub={
          creating ? (
            'Listeners, routes and backends for one or more proxy groups.'
          ) : (
            <>
              Version <strong data-testid="config-version">{base!.version}</strong>
              {base!.draft && <Badge tone="warn">draft</Badge>} by {base!.author} <Time iso={base!.updated_at} />
              {base!.message && <> — “{base!.message}”</>} <SourceBadge source={base!.source} sourceRef={base!.source_ref} />
            </>
          )
        }
      >
        {!creating && (
          <>
            <a class="btn" href={`/configs/${seg(base!.id)}/history`}>
              History
            </a>
            {can(me, 'configs', 'apply') && (
              <a class="btn" href={`/configs/${seg(base!.id)}/apply`}>
                Apply…
              </a>
            )}
          </>
        )}
      </PageHead>
      {managed ? (
        <p class="notice" data-testid="read-only">
          Managed by Kubernetes: this config is translated from <strong>{base!.source_ref}</strong> and the routes attached to it.
          Change them in the cluster; an edit here would be replaced by the next translation. You can still roll back to an earlier
          version from the history, or roll one out with Apply: it stays live until the Gateway's translation changes.{' '}
          {base!.groups.length > 0 && (
            <>
              What the translation produced, as the proxies get it:{' '}
              {base!.groups.map((g, i) => (
                <span key={g}>
                  {i > 0 && ', '}
                  <a href={`/snapshots/${seg(g)}?config=${seg(base!.id)}`} data-testid="translated-link">
                    its resources in the current snapshot of group {g}
                  </a>
                </span>
              ))}
              .
            </>
          )}
        </p>
      ) : (
        !mayEdit && (
          <p class="notice" data-testid="read-only">
            Read-only: your role ({me?.role}) may read configs but not change them.
          </p>
        )
      )}
      {gateway && <KubernetesStatus id={base!.id} ns={gateway.ns} name={gateway.name} />}
      <div class="editor-layout">
        <div class="editor-main">
          <div class="format-bar">
            <div class="segmented" role="group" aria-label="Spec format">
              {(['json', 'yaml'] as const).map((f) => (
                <button
                  key={f}
                  type="button"
                  class="seg-btn"
                  aria-pressed={format === f}
                  onClick={() => void switchFormat(f)}
                  data-testid={`format-${f}`}
                >
                  {f.toUpperCase()}
                </button>
              ))}
            </div>
            {format === 'yaml' && (
              <span class="muted small" data-testid="yaml-note">
                The server stores the spec as JSON: comments and anchors in the YAML are not kept.
              </span>
            )}
          </div>
          {formatError && (
            <p class="form-error" role="alert" data-testid="format-error">
              {formatError}
            </p>
          )}
          {(editorKey > 0 || (creating && format === 'json')) && <SpecEditor
            key={`${editorKey}-${format}`}
            label={`Config spec (${format.toUpperCase()})`}
            format={format}
            initial={initial.current}
            readOnly={!mayEdit}
            handle={editor}
            validate={mayValidate ? validate : undefined}
            onStatus={setStatus}
            onChange={() => {
              setDirty(true);
              setSaveError(null);
              setRevision((r) => r + 1);
            }}
          />}
          <div class="editor-foot">
            <EditorStatusLine status={status} />
            {mayEdit && <span class="muted small">Ctrl-Space completes · Esc then Tab leaves the editor · Ctrl-S saves</span>}
          </div>
          {problems.length > 0 && (
            <ul class="problems" data-testid="problems" aria-label="Problems">
              {problems.map((p, i) => (
                <li key={i}>
                  <button type="button" class="problem" onClick={() => editor.current?.reveal(p.path)}>
                    <span class="problem-where">
                      {p.line ? `line ${p.line}` : ''} <code class="mono">{p.path || 'spec'}</code>
                    </span>
                    <span class="problem-msg">
                      {p.stage && <Badge tone="neutral">{p.stage}</Badge>} {p.message}
                      {p.conflict_with && <> (conflicts with {p.conflict_with})</>}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
        <aside class="editor-side" aria-label="Config details">
          {creating && (
            <>
              <Field label="Namespace">
                <input value={namespace} onInput={(e) => setNamespace(val(e))} required />
              </Field>
              <Field label="Name">
                <input value={name} onInput={(e) => setName(val(e))} required placeholder="web" />
              </Field>
            </>
          )}
          <Field label="Groups" hint="Proxy groups whose snapshot includes this config, separated by commas.">
            <input value={groups} readOnly={!mayEdit} onInput={(e) => (setGroups(val(e)), setDirty(true))} placeholder="edge, canary" />
          </Field>
          {mayEdit && (
            <>
              <Field label="Message" hint="Why this change: it is kept with the version.">
                <textarea
                  rows={3}
                  value={message}
                  onInput={(e) => setMessage(val(e))}
                  placeholder="e.g. raise the request timeout for /api"
                  data-testid="save-message"
                />
              </Field>
              <label class="check">
                <input type="checkbox" checked={draft} onChange={(e) => setDraft(e.currentTarget.checked)} /> Save as a draft (stored
                and validated, not published)
              </label>
              <button
                type="button"
                class="btn btn-primary"
                disabled={saving || blocked || (creating ? !name || !splitList(groups).length : false)}
                onClick={save}
                data-testid="save"
              >
                {saving ? 'Saving…' : creating ? 'Create config' : `Save version ${base!.version + 1}`}
              </button>
              {blocked && (
                <p class="muted small">
                  {status.kind === 'syntax' ? 'Fix the JSON syntax error first.' : 'Fix the problems first: even a draft must be valid.'}
                </p>
              )}
            </>
          )}
          {saveError && (
            <div class="error-box" role="alert" data-testid="save-error">
              <strong>{stale !== null ? `Version ${stale} was saved meanwhile` : 'Not saved'}</strong>
              <p>
                {stale !== null
                  ? `Someone saved a newer version while you were editing version ${base?.version}. Your text is still here; compare it with the history, or load the latest version (this discards your edits).`
                  : describeError(saveError)}
              </p>
              {saveError instanceof ApiError && saveError.details.length > 0 && stale === null && (
                <ul class="small">
                  {saveError.details.map((d, i) => (
                    <li key={i}>
                      <code>{d.path}</code> {d.message}
                    </li>
                  ))}
                </ul>
              )}
              {stale !== null && (
                <div class="btn-row">
                  <a class="btn" href={`/configs/${seg(base!.id)}/history`} target="_blank" rel="noopener">
                    Open history
                  </a>
                  <button type="button" class="btn" onClick={reloadLatest}>
                    Load version {stale}
                  </button>
                </div>
              )}
            </div>
          )}
          {mayEdit && <QuickEdits read={readDoc} write={writeDoc} revision={revision + editorKey * 100000} />}
        </aside>
      </div>
    </>
  );
}

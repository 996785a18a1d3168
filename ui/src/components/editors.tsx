// editors.tsx — Preact wrappers around the CodeMirror views: the spec editor, a
// read-only JSON view, the side-by-side diff, and the API's structured diff as a list.
//
// CodeMirror is most of the app's weight, so it is loaded on first use (a separate
// chunk): the dashboard and tables never wait for it. Each wrapper creates its view
// once the chunk is there and destroys it on unmount, even when the unmount comes first.
import {useEffect, useRef} from 'preact/hooks';
import type {EditorStatus, JsonEditor, SpecFormat, Validation} from '../editor/jsonEditor';

const loadEditor = () => import('../editor/jsonEditor');
const loadDiff = () => import('../editor/diffView');

/** Runs create once the module is loaded, unless the effect was cleaned up by then. */
function useLazyView<M, V extends {destroy(): void}>(load: () => Promise<M>, create: (m: M) => V, deps: unknown[]) {
  useEffect(() => {
    let view: V | null = null;
    let gone = false;
    load()
      .then((m) => {
        if (!gone) view = create(m);
      })
      .catch((e) => console.error('could not load the editor', e));
    return () => {
      gone = true;
      view?.destroy();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
}
import {showJson} from '../lib/format';
import type {Diff, DiffEntry} from '../lib/types';
import {Empty} from './ui';

export interface SpecEditorHandle {
  reveal(path: string): void;
  text(): string;
  setText(text: string): void;
  focus(): void;
}

/** The editable spec. initial is read once (remount with a key to load another). */
export function SpecEditor({
  initial,
  readOnly,
  onChange,
  validate,
  onStatus,
  handle,
  label,
  format,
}: {
  initial: string;
  format?: SpecFormat;
  readOnly?: boolean;
  onChange?: (t: string) => void;
  validate?: (spec: Record<string, unknown>) => Promise<Validation>;
  onStatus?: (s: EditorStatus) => void;
  handle?: {current: SpecEditorHandle | null};
  label: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const cbs = useRef({onChange, validate, onStatus});
  cbs.current = {onChange, validate, onStatus};
  useLazyView(
    loadEditor,
    (m) => {
      const ed: JsonEditor = m.createJsonEditor(host.current!, {
        doc: initial,
        readOnly,
        format,
        label,
        onChange: (t) => cbs.current.onChange?.(t),
        validate: validate ? (s) => cbs.current.validate!(s) : undefined,
        onStatus: (s) => cbs.current.onStatus?.(s),
      });
      if (handle)
        handle.current = {
          reveal: (p) => ed.reveal(p),
          text: () => ed.text(),
          setText: (t) => ed.setText(t),
          focus: () => ed.view.focus(),
        };
      return {
        destroy() {
          if (handle) handle.current = null;
          ed.destroy();
        },
      };
    },
    // The editor owns its text from here on; props changing later do not reset it.
    [readOnly, format],
  );
  return <div class="editor-host" ref={host} data-testid="spec-editor" />;
}

/** A JSON value, read-only, highlighted, foldable. */
export function JsonView({value, label}: {value: unknown; label: string}) {
  const host = useRef<HTMLDivElement>(null);
  // Rebuilt only when the content changes, not when a reload returns an equal copy.
  const text = JSON.stringify(value ?? null);
  useLazyView(loadEditor, (m) => m.createJsonViewer(host.current!, JSON.parse(text), label), [text, label]);
  return <div class="editor-host editor-readonly" ref={host} />;
}

/** Two JSON values side by side with their differences marked. */
export function SideBySide({a, b, labels}: {a: unknown; b: unknown; labels: [string, string]}) {
  const host = useRef<HTMLDivElement>(null);
  const ta = JSON.stringify(a ?? null);
  const tb = JSON.stringify(b ?? null);
  useLazyView(loadDiff, (m) => m.createDiffView(host.current!, JSON.parse(ta), JSON.parse(tb), labels), [ta, tb, labels[0], labels[1]]);
  return (
    <div class="merge">
      <div class="merge-labels" aria-hidden="true">
        <span>{labels[0]}</span>
        <span>{labels[1]}</span>
      </div>
      <div class="merge-host" ref={host} data-testid="side-by-side" />
    </div>
  );
}

function Value({v}: {v: unknown}) {
  const s = showJson(v);
  return s.includes('\n') ? (
    <details>
      <summary class="mono">{s.split('\n')[0]} …</summary>
      <pre class="value-pre">{s}</pre>
    </details>
  ) : (
    <code class="mono">{s}</code>
  );
}

/** The structured diff (added, removed, changed paths) as the API returns it. */
export function DiffList({diff}: {diff: Diff | DiffEntry[] | undefined}) {
  if (!diff) return null;
  const entries: {kind: 'added' | 'removed' | 'changed'; e: DiffEntry}[] = Array.isArray(diff)
    ? diff.map((e) => ({kind: (e as {op?: string}).op === 'add' ? 'added' : (e as {op?: string}).op === 'remove' ? 'removed' : 'changed', e}))
    : [
        ...diff.removed.map((e) => ({kind: 'removed' as const, e})),
        ...diff.added.map((e) => ({kind: 'added' as const, e})),
        ...diff.changed.map((e) => ({kind: 'changed' as const, e})),
      ];
  if (!entries.length) return <Empty title="No differences">The two versions have the same spec.</Empty>;
  return (
    <ul class="diff-list" data-testid="diff-list">
      {entries.map(({kind, e}, i) => (
        <li key={i} class={`diff-${kind}`}>
          <span class="diff-kind">{kind}</span>
          <code class="mono diff-path">{e.path}</code>
          <span class="diff-values">
            {kind === 'changed' ? (
              <>
                <Value v={e.old} /> <span aria-label="becomes">→</span> <Value v={e.new} />
              </>
            ) : (
              <Value v={e.value} />
            )}
          </span>
        </li>
      ))}
    </ul>
  );
}

/** One line saying how the editor's last check went. */
export function EditorStatusLine({status}: {status: EditorStatus}) {
  switch (status.kind) {
    case 'idle':
      return <span class="status muted">Read-only</span>;
    case 'syntax':
      return (
        <span class="status status-bad" role="status">
          {status.format === 'yaml' ? 'YAML' : 'JSON'} syntax error at line {status.line}, column {status.col}: {status.message}
        </span>
      );
    case 'validating':
      return (
        <span class="status muted" role="status">
          Validating…
        </span>
      );
    case 'valid':
      return (
        <span class="status status-ok" role="status">
          ✓ Valid: the whole pipeline accepts this spec
        </span>
      );
    case 'invalid':
      return (
        <span class="status status-bad" role="status">
          {status.problems.length
            ? `${status.problems.length} problem${status.problems.length === 1 ? '' : 's'}`
            : status.message}
        </span>
      );
    case 'unchecked':
      return (
        <span class="status status-warn" role="status">
          Not validated: {status.message}
        </span>
      );
  }
}

// ui.tsx — the small building blocks every page uses: badges, times, empty and error
// states, dialogs, toasts, sortable table headers, label chips.
import type {ComponentChildren, TargetedEvent} from 'preact';
import {useEffect, useRef, useState} from 'preact/hooks';
import {ApiError, describeError} from '../lib/api';
import {ago, when} from '../lib/format';
import {useNow} from '../lib/hooks';
import {createStore, useStore} from '../lib/store';

export function Badge({tone = 'neutral', children, title}: {tone?: string; children: ComponentChildren; title?: string}) {
  return (
    <span class={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

/** Where a config comes from, when it is not the REST API: a config translated from a
 * Gateway says which one ("Kubernetes · Gateway default/web"); its edits belong there. */
export function SourceBadge({source, sourceRef}: {source: string; sourceRef?: string | null}) {
  if (source !== 'kubernetes') return null;
  return (
    <span data-testid="source-badge">
      <Badge tone="info" title="Translated from the Kubernetes Gateway API: change it in the cluster">
        Kubernetes · {sourceRef}
      </Badge>
    </span>
  );
}

const STATE_TONES: Record<string, string> = {
  connected: 'ok',
  stale: 'warn',
  disconnected: 'off',
  nacking: 'bad',
  success: 'ok',
  denied: 'bad',
  failed: 'bad',
  pending: 'neutral',
  in_progress: 'info',
  paused: 'warn',
  completed: 'ok',
  canceling: 'warn',
  canceled: 'off',
  rolling_back: 'warn',
  rolled_back: 'off',
  rollback_failed: 'bad',
};

/** A state as a coloured word (connected, stale, in_progress, ...). */
export function StateBadge({state, title}: {state: string; title?: string}) {
  return (
    <Badge tone={STATE_TONES[state] ?? 'neutral'} title={title}>
      {state.replace(/_/g, ' ')}
    </Badge>
  );
}

/** A relative time ("3 min ago") with the exact local time as its tooltip. */
export function Time({iso}: {iso: string | null | undefined}) {
  const now = useNow();
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} title={when(iso)} class="nowrap">
      {ago(iso, now)}
    </time>
  );
}

export function Empty({title, children}: {title: string; children?: ComponentChildren}) {
  return (
    <div class="empty" role="status">
      <p class="empty-title">{title}</p>
      {children && <div class="empty-body">{children}</div>}
    </div>
  );
}

/** An error as the user should read it; database-down (503) and unreachable are said
 * plainly, with a retry button when one is given. */
export function ErrorBox({error, retry, what}: {error: unknown; retry?: () => void; what?: string}) {
  // The banner at the top already says the database is down: each box says it briefly.
  if (error instanceof ApiError && error.status === 503)
    return (
      <div class="error-box error-compact" role="status">
        {what ? `Cannot load ${what}` : 'Not available'} while Sextant cannot reach its database; retrying.
        {retry && (
          <button type="button" class="btn btn-small" onClick={retry}>
            Try again
          </button>
        )}
      </div>
    );
  let title = what ? `Could not load ${what}` : 'Something went wrong';
  let body = describeError(error);
  if (error instanceof ApiError) {
    if (error.status === 0) {
      title = 'Sextant is not reachable';
    } else if (error.status === 403) {
      title = 'Not allowed';
    }
  }
  return (
    <div class="error-box" role="alert">
      <strong>{title}</strong>
      <p>{body}</p>
      {error instanceof ApiError && error.requestId && <p class="muted small">request id {error.requestId}</p>}
      {retry && (
        <button type="button" class="btn" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** Placeholder rows of a table still loading, so the page does not jump. */
export function SkeletonRows({cols, rows = 3}: {cols: number; rows?: number}) {
  return (
    <>
      {Array.from({length: rows}, (_, i) => (
        <tr key={`sk${i}`} class="skeleton" aria-hidden="true">
          {Array.from({length: cols}, (_, j) => (
            <td key={j}>
              <span class="skeleton-bar" />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}

/** key=value chips of a label map. */
export function Labels({labels}: {labels: Record<string, string> | undefined}) {
  const entries = Object.entries(labels ?? {});
  if (!entries.length) return <span class="muted">—</span>;
  return (
    <span class="chips">
      {entries.map(([k, v]) => (
        <span class="chip" key={k}>
          {k}={v}
        </span>
      ))}
    </span>
  );
}

/** A modal dialog (the native <dialog>: focus kept inside, Escape closes). */
export function Dialog({
  title,
  open,
  onClose,
  children,
  wide,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      class={wide ? 'dialog dialog-wide' : 'dialog'}
      aria-labelledby="dialog-title"
      onClose={onClose}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      {open && (
        <div class="dialog-inner">
          <header class="dialog-head">
            <h2 id="dialog-title">{title}</h2>
            <button type="button" class="btn btn-ghost" aria-label="Close" onClick={onClose}>
              ×
            </button>
          </header>
          {children}
        </div>
      )}
    </dialog>
  );
}

// ------------------------------------------------------------------ toasts

export interface Toast {
  id: number;
  tone: 'ok' | 'bad' | 'info';
  text: string;
}
const toasts = createStore<Toast[]>([]);
let toastSeq = 0;

/** Shows a short message in the corner for a few seconds (errors stay longer). */
export function toast(text: string, tone: Toast['tone'] = 'ok') {
  const t = {id: ++toastSeq, tone, text};
  toasts.set([...toasts.get(), t]);
  setTimeout(() => toasts.set(toasts.get().filter((x) => x.id !== t.id)), tone === 'bad' ? 10000 : 5000);
}

export function Toasts() {
  const list = useStore(toasts);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast toast-${t.tone}`}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

// ------------------------------------------------------------------ tables

export type SortDir = 'asc' | 'desc';

/** A column header that sorts on click (and says so to screen readers). */
export function SortHeader({
  label,
  col,
  sort,
  onSort,
}: {
  label: string;
  col: string;
  sort: {col: string; dir: SortDir};
  onSort: (col: string) => void;
}) {
  const active = sort.col === col;
  return (
    <th aria-sort={active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none'} scope="col">
      <button type="button" class="sort" onClick={() => onSort(col)}>
        {label}
        <span class="sort-mark" aria-hidden="true">
          {active ? (sort.dir === 'asc' ? '▲' : '▼') : ''}
        </span>
      </button>
    </th>
  );
}

export function useSort(initial: string, dir: SortDir = 'asc') {
  const [sort, setSort] = useState<{col: string; dir: SortDir}>({col: initial, dir});
  const onSort = (col: string) =>
    setSort((s) => (s.col === col ? {col, dir: s.dir === 'asc' ? 'desc' : 'asc'} : {col, dir: 'asc'}));
  return {sort, onSort};
}

export function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined || a === '') return 1;
  if (b === null || b === undefined || b === '') return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, {numeric: true});
}

export function Field({label, children, hint}: {label: string; children: ComponentChildren; hint?: string}) {
  return (
    <label class="field">
      <span class="field-label">{label}</span>
      {children}
      {hint && <span class="field-hint">{hint}</span>}
    </label>
  );
}

export function PageHead({title, children, sub}: {title: ComponentChildren; children?: ComponentChildren; sub?: ComponentChildren}) {
  return (
    <div class="page-head">
      <div>
        <h1>{title}</h1>
        {sub && <p class="page-sub">{sub}</p>}
      </div>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}

export function Section({title, children, actions, id}: {title: string; children: ComponentChildren; actions?: ComponentChildren; id?: string}) {
  return (
    <section class="section" aria-labelledby={id}>
      <div class="section-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

export function Mono({children}: {children: ComponentChildren}) {
  return <code class="mono">{children}</code>;
}

export type InputEvent = TargetedEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, Event>;
export const val = (e: InputEvent) => e.currentTarget.value;

// Audit.tsx — the audit log, newest first, filtered by user, action, resource, result
// and time window (the filters of the audit list, kept in the address).
import {useState} from 'preact/hooks';
import {isoToLocalInput, localInputToIso, when} from '../lib/format';
import {usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import type {AuditEntry} from '../lib/types';
import {ListTable} from '../components/list';
import {Empty, Field, PageHead, StateBadge, Time, val} from '../components/ui';

const FILTERS = ['user', 'action', 'resource_type', 'resource_id', 'result', 'since', 'until'] as const;

function resourceLink(e: AuditEntry) {
  if (!e.resource_id) return <span class="muted">{e.resource_type}</span>;
  const label = `${e.resource_type} ${e.resource_id.length > 20 ? `${e.resource_id.slice(0, 8)}…` : e.resource_id}`;
  switch (e.resource_type) {
    case 'config':
      return <a href={`/configs/${seg(e.resource_id)}/history`}>{label}</a>;
    case 'group':
      return <a href={`/snapshots/${seg(e.resource_id)}`}>{label}</a>;
    case 'proxy':
      return <a href={`/proxies/${seg(e.resource_id)}`}>{label}</a>;
    case 'deployment':
      return <a href={`/deployments/${seg(e.resource_id)}`}>{label}</a>;
    default:
      return <span title={e.resource_id}>{label}</span>;
  }
}

function Details({d}: {d: Record<string, unknown>}) {
  const keys = Object.keys(d);
  if (!keys.length) return <span class="muted">—</span>;
  const brief = ['before_version', 'after_version', 'source_version', 'snapshot_version', 'reason', 'message']
    .filter((k) => d[k] !== undefined && d[k] !== null)
    .map((k) => `${k.replace(/_/g, ' ')}: ${typeof d[k] === 'object' ? JSON.stringify(d[k]) : String(d[k])}`)
    .join(' · ');
  return (
    <details>
      <summary class="small">{brief || `${keys.length} field${keys.length === 1 ? '' : 's'}`}</summary>
      <pre class="value-pre">{JSON.stringify(d, null, 2)}</pre>
    </details>
  );
}

/** One end of the time window, edited in local time and kept as RFC 3339. */
function TimeField({label, iso, onPick}: {label: string; iso: string; onPick: (iso: string) => void}) {
  return (
    <Field label={label}>
      <input type="datetime-local" value={isoToLocalInput(iso || null)} onInput={(e) => onPick(localInputToIso(val(e)))} />
    </Field>
  );
}

export function AuditPage() {
  useTitle('Audit log');
  const {query} = useLocation();
  const f = Object.fromEntries(FILTERS.map((k) => [k, query.get(k) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const list = usePaged('listAudit', {query: f}, 100);
  const [draft, setDraft] = useState(f);
  const apply = (e: Event) => {
    e.preventDefault();
    setQuery(draft);
  };
  const any = FILTERS.some((k) => f[k]);
  return (
    <>
      <PageHead title="Audit log" sub="Every change and every refused request: who, what, on which resource, from where." />
      <form class="filters" role="search" onSubmit={apply} data-testid="audit-filters">
        <Field label="User">
          <input value={draft.user} onInput={(e) => setDraft({...draft, user: val(e)})} />
        </Field>
        <Field label="Action">
          <input
            value={draft.action}
            onInput={(e) => setDraft({...draft, action: val(e)})}
            placeholder="config.update"
            list="audit-actions"
          />
          <datalist id="audit-actions">
            {['config.create', 'config.update', 'config.delete', 'config.rollback', 'group.rollback', 'auth.dev_sign_in'].map((a) => (
              <option key={a} value={a} />
            ))}
          </datalist>
        </Field>
        <Field label="Resource type">
          <select value={draft.resource_type} onChange={(e) => setDraft({...draft, resource_type: val(e)})}>
            <option value="">any</option>
            {['config', 'group', 'snapshot', 'proxy', 'deployment', 'auth', 'audit'].map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Resource id">
          <input value={draft.resource_id} onInput={(e) => setDraft({...draft, resource_id: val(e)})} />
        </Field>
        <Field label="Result">
          <select value={draft.result} onChange={(e) => setDraft({...draft, result: val(e)})}>
            <option value="">any</option>
            <option value="success">success</option>
            <option value="failed">failed</option>
            <option value="denied">denied</option>
          </select>
        </Field>
        <TimeField label="Since" iso={draft.since} onPick={(since) => setDraft({...draft, since})} />
        <TimeField label="Until" iso={draft.until} onPick={(until) => setDraft({...draft, until})} />
        <div class="btn-row">
          <button type="submit" class="btn btn-primary">
            Filter
          </button>
          {any && (
            <button
              type="button"
              class="btn btn-ghost"
              onClick={() => {
                const empty = Object.fromEntries(FILTERS.map((k) => [k, ''])) as typeof f;
                setDraft(empty);
                setQuery(empty);
              }}
            >
              Clear
            </button>
          )}
        </div>
      </form>
      <ListTable
        list={list}
        what="the audit log"
        testid="audit-table"
        more="Older entries"
        head={['When', 'User', 'Action', 'Resource', 'Result', 'Details', 'From']}
        empty={<Empty title={any ? 'No entry matches these filters' : 'The audit log is empty'} />}
      >
        {list.items.map((e) => (
          <tr key={e.id} data-action={e.action}>
            <td title={when(e.at)}>
              <Time iso={e.at} />
            </td>
            <td>
              {e.user} {e.role && <span class="muted small">({e.role})</span>}
            </td>
            <td>
              <code class="mono">{e.action}</code>
            </td>
            <td>{resourceLink(e)}</td>
            <td class="nowrap">
              <StateBadge state={e.result} /> {e.status_code && <span class="muted small">{e.status_code}</span>}
            </td>
            <td class="details-cell">
              <Details d={e.details} />
            </td>
            <td class="mono small" title={e.request_id ?? ''}>
              {e.source_ip ?? '—'}
            </td>
          </tr>
        ))}
      </ListTable>
    </>
  );
}

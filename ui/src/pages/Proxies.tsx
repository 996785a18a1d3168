// Proxies.tsx — every proxy Sextant has seen, filterable by group, state and text
// (node id, label, replica), sortable by any column. Filters live in the address so a
// dashboard card or a colleague's link opens the same view.
import {useMemo} from 'preact/hooks';
import {useGroups, useLive, usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import type {Proxy} from '../lib/types';
import {GroupFilter, ListTable} from '../components/list';
import {compare, Empty, Field, Labels, PageHead, StateBadge, Time, useSort, val} from '../components/ui';

const STATE_FILTERS = ['', 'connected', 'stale', 'disconnected', 'nacking'];

function matchesText(p: Proxy, q: string): boolean {
  if (!q) return true;
  const hay = [p.node_id, p.group, p.replica_id ?? '', p.client, ...Object.entries(p.labels ?? {}).map(([k, v]) => `${k}=${v}`)]
    .join(' ')
    .toLowerCase();
  return q
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((w) => hay.includes(w));
}

function sortValue(p: Proxy, col: string): unknown {
  switch (col) {
    case 'node':
      return p.node_id;
    case 'group':
      return p.group;
    case 'state':
      return p.nacking ? 'nacking' : p.state;
    case 'replica':
      return p.replica_id;
    case 'acked':
      return p.acked_version;
    case 'seen':
      return p.last_seen ? -Date.parse(p.last_seen) : null;
    case 'nack':
      return p.last_nack?.at ? -Date.parse(p.last_nack.at) : null;
    default:
      return null;
  }
}

export function ProxiesPage() {
  useTitle('Proxies');
  const {query} = useLocation();
  const group = query.get('group') ?? '';
  const state = query.get('state') ?? '';
  const q = query.get('q') ?? '';
  const groups = useGroups();
  const list = usePaged('listProxies', {query: {group, state: state === 'nacking' ? '' : state}}, 500);
  useLive(
    () => {
      void list.reload();
      void groups.reload();
    },
    (e) => /^(proxy_|config_|rollout|rollback)/.test(e.type),
    1000,
  );
  const {sort, onSort} = useSort('node');

  const rows = useMemo(() => {
    const filtered = list.items.filter((p) => (state === 'nacking' ? p.nacking : true) && matchesText(p, q));
    const dir = sort.dir === 'asc' ? 1 : -1;
    return filtered.sort((a, b) => dir * compare(sortValue(a, sort.col), sortValue(b, sort.col)) || compare(a.node_id, b.node_id));
  }, [list.items, state, q, sort]);

  const latest = new Map((groups.data?.items ?? []).map((g) => [g.name, g.latest_version]));
  const filtering = Boolean(group || state || q);

  return (
    <>
      <PageHead title="Proxies" sub="Every proxy and proxyless client that has connected, with what it runs." />
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <Field label="Search">
          <input
            type="search"
            placeholder="node id, label, replica"
            value={q}
            onInput={(e) => setQuery({q: val(e)})}
            aria-label="Search proxies by node id, label or replica"
          />
        </Field>
        <GroupFilter groups={groups.data?.items} value={group} onChange={(g) => setQuery({group: g})} keep />
        <Field label="State">
          <select value={state} onChange={(e) => setQuery({state: val(e)})}>
            {STATE_FILTERS.map((s) => (
              <option key={s} value={s}>
                {s ? (s === 'nacking' ? 'NACKing' : s) : 'any state'}
              </option>
            ))}
          </select>
        </Field>
        {filtering && (
          <button type="button" class="btn btn-ghost" onClick={() => setQuery({q: '', group: '', state: ''})}>
            Clear filters
          </button>
        )}
        <span class="filters-count muted" aria-live="polite">
          {list.items.length ? `${rows.length} of ${list.items.length}${list.next ? '+' : ''} shown` : ''}
        </span>
      </form>
      <ListTable
        list={list}
        what="proxies"
        testid="proxies-table"
        head={[
          ['Node ID', 'node'],
          ['Group', 'group'],
          ['State', 'state'],
          'Labels',
          ['Replica', 'replica'],
          ['Acked', 'acked'],
          ['Last seen', 'seen'],
          ['Last NACK', 'nack'],
        ]}
        sorting={{sort, onSort}}
        empty={
          filtering ? (
            <Empty title="No proxy matches these filters" />
          ) : (
            <Empty title="No proxies yet">
              Proxies appear once they connect to Sextant's xDS port with a node id; their node <code>cluster</code> names their group.
            </Empty>
          )
        }
      >
        {rows.map((p) => {
          const want = p.desired_version ?? latest.get(p.group) ?? null;
          const behind = p.acked_version !== null && want !== null && p.acked_version !== want;
          return (
            <tr key={p.node_id} data-node={p.node_id}>
              <td>
                <a href={`/proxies/${seg(p.node_id)}`} class="mono">
                  {p.node_id}
                </a>
              </td>
              <td>{p.group}</td>
              <td class="nowrap">
                <StateBadge state={p.state} title={p.disconnect_reason ?? undefined} /> {p.nacking && <StateBadge state="nacking" />}
              </td>
              <td>
                <Labels labels={p.labels} />
              </td>
              <td class="mono small">{p.replica_id ?? '—'}</td>
              <td class="num nowrap">
                <span data-testid="acked">{p.acked_version !== null ? `v${p.acked_version}` : 'none'}</span>
                {behind && (
                  <span class="muted small" data-testid="behind" title={`should have v${want}`}>
                    {' '}
                    → v{want}
                  </span>
                )}
              </td>
              <td>
                <Time iso={p.last_seen} />
              </td>
              <td class="nack-cell">
                {p.last_nack ? (
                  <span title={p.last_nack.error ?? ''}>
                    <span class="text-bad">v{p.last_nack.version ?? '?'}</span> <Time iso={p.last_nack.at} />
                    <span class="small muted ellipsis">{p.last_nack.error}</span>
                  </span>
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
            </tr>
          );
        })}
      </ListTable>
    </>
  );
}

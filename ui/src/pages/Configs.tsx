// Configs.tsx — the live configs, filterable by namespace and group; each opens in the
// editor, with its history one click away. A config the Kubernetes source manages
// carries a badge naming its Gateway.
import {useMemo} from 'preact/hooks';
import {useGroups, usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {Config} from '../lib/types';
import {GroupFilter, ListTable} from '../components/list';
import {Badge, compare, Empty, Field, PageHead, SourceBadge, Time, useSort, val} from '../components/ui';

export function ConfigsPage() {
  useTitle('Configs');
  const me = useStore(session).me;
  const {query} = useLocation();
  const ns = query.get('namespace') ?? '';
  const group = query.get('group') ?? '';
  const groups = useGroups();
  const list = usePaged('listConfigs', {query: {namespace: ns, group}}, 200);
  const {sort, onSort} = useSort('name');
  const rows = useMemo(() => {
    const dir = sort.dir === 'asc' ? 1 : -1;
    const key = (c: Config) =>
      sort.col === 'name'
        ? `${c.namespace}/${c.name}`
        : sort.col === 'version'
          ? c.version
          : sort.col === 'updated'
            ? -Date.parse(c.updated_at)
            : c.groups.join(',');
    return [...list.items].sort((a, b) => dir * compare(key(a), key(b)));
  }, [list.items, sort]);

  return (
    <>
      <PageHead title="Configs" sub="Each config is versioned; a group's snapshot merges the live version of every config naming it.">
        {can(me, 'configs', 'create') && (
          <a class="btn btn-primary" href="/configs/new">
            New config
          </a>
        )}
      </PageHead>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <Field label="Namespace">
          <input type="search" value={ns} placeholder="any" onChange={(e) => setQuery({namespace: val(e)})} />
        </Field>
        <GroupFilter groups={groups.data?.items} value={group} onChange={(g) => setQuery({group: g})} />
      </form>
      <ListTable
        list={list}
        what="configs"
        testid="configs-table"
        head={[
          ['Config', 'name'],
          ['Groups', 'groups'],
          ['Version', 'version'],
          'Live',
          ['Updated', 'updated'],
          <th key="history" scope="col">
            <span class="sr-only">History</span>
          </th>,
        ]}
        sorting={{sort, onSort}}
        empty={
          <Empty title={ns || group ? 'No config matches these filters' : 'No configs yet'}>
            {can(me, 'configs', 'create') && !ns && !group && (
              <>
                <a href="/configs/new">Create the first one</a>: listeners, routes and backends for one or more proxy groups.
              </>
            )}
          </Empty>
        }
      >
        {rows.map((c) => (
          <tr key={c.id}>
            <td data-source={c.source}>
              <a href={`/configs/${seg(c.id)}`}>
                <span class="muted">{c.namespace}/</span>
                {c.name}
              </a>{' '}
              <SourceBadge source={c.source} sourceRef={c.source_ref} />
            </td>
            <td>{c.groups.join(', ')}</td>
            <td class="num">v{c.version}</td>
            <td>
              {c.live_version === null ? (
                <Badge tone="warn">draft only</Badge>
              ) : c.live_version !== c.version ? (
                <span title="the latest version is a draft">v{c.live_version}</span>
              ) : (
                <Badge tone="ok">latest</Badge>
              )}
            </td>
            <td>
              <Time iso={c.updated_at} />
            </td>
            <td>
              <a href={`/configs/${seg(c.id)}/history`}>History</a>
            </td>
          </tr>
        ))}
      </ListTable>
    </>
  );
}

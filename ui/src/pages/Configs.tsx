// Configs.tsx — the live configs, filterable by namespace and group; each opens in the
// editor, with its history one click away.
import {useMemo} from 'preact/hooks';
import {withQuery} from '../lib/api';
import {useApi, usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {Config, Group, Page} from '../lib/types';
import {Badge, compare, Empty, ErrorBox, Field, PageHead, SkeletonRows, SortHeader, Time, useSort, val} from '../components/ui';

export function ConfigsPage() {
  useTitle('Configs');
  const me = useStore(session).me;
  const {query} = useLocation();
  const ns = query.get('namespace') ?? '';
  const group = query.get('group') ?? '';
  const groups = useApi<Page<Group>>('/api/v1/groups?limit=1000');
  const list = usePaged<Config>(withQuery('/api/v1/configs', {namespace: ns, group}), 200);
  const {sort, onSort} = useSort('name');
  const rows = useMemo(() => {
    const dir = sort.dir === 'asc' ? 1 : -1;
    const key = (c: Config) =>
      sort.col === 'name' ? `${c.namespace}/${c.name}` : sort.col === 'version' ? c.version : sort.col === 'updated' ? -Date.parse(c.updated_at) : c.groups.join(',');
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
        <Field label="Group">
          <select value={group} onChange={(e) => setQuery({group: val(e)})}>
            <option value="">all groups</option>
            {(groups.data?.items ?? []).map((g) => (
              <option key={g.name} value={g.name}>
                {g.name}
              </option>
            ))}
          </select>
        </Field>
      </form>
      {list.error && <ErrorBox error={list.error} retry={list.reload} what="configs" />}
      {!list.loading && !list.error && !list.items.length ? (
        <Empty title={ns || group ? 'No config matches these filters' : 'No configs yet'}>
          {can(me, 'configs', 'create') && !ns && !group && (
            <>
              <a href="/configs/new">Create the first one</a>: listeners, routes and backends for one or more proxy groups.
            </>
          )}
        </Empty>
      ) : (
        <div class="table-wrap">
          <table class="table" data-testid="configs-table">
            <thead>
              <tr>
                <SortHeader label="Config" col="name" sort={sort} onSort={onSort} />
                <SortHeader label="Groups" col="groups" sort={sort} onSort={onSort} />
                <SortHeader label="Version" col="version" sort={sort} onSort={onSort} />
                <th scope="col">Live</th>
                <SortHeader label="Updated" col="updated" sort={sort} onSort={onSort} />
                <th scope="col">
                  <span class="sr-only">History</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.loading && !list.items.length && <SkeletonRows cols={6} />}
              {rows.map((c) => (
                <tr key={c.id}>
                  <td>
                    <a href={`/configs/${seg(c.id)}`}>
                      <span class="muted">{c.namespace}/</span>
                      {c.name}
                    </a>
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
            </tbody>
          </table>
        </div>
      )}
      {list.next && (
        <button type="button" class="btn" onClick={list.more} disabled={list.loading}>
          Load more
        </button>
      )}
    </>
  );
}

// Dashboard.tsx — the fleet at a glance: proxies by state, the groups with their
// current snapshot, rollouts in progress, the latest changes from the audit log, what
// the event stream just said, and the control plane's own replicas with their leader. Everything refreshes on live events (or every 5 s
// while the server has no event stream).
import {routes} from '../gen/openapi';
import {ApiError} from '../lib/api';
import {describeEvent, recentEvents} from '../lib/events';
import {percent} from '../lib/format';
import {useApi, useGroups, useLive, useTitle} from '../lib/hooks';
import {seg} from '../lib/router';
import {useStore} from '../lib/store';
import {ACTIVE_DEPLOYMENT_STATES, type Group} from '../lib/types';
import {DeploymentProgressLine} from '../components/progress';
import {Replicas} from '../components/replicas';
import {Empty, ErrorBox, PageHead, Section, SkeletonRows, StateBadge, Time} from '../components/ui';
import {num, Table} from '../components/list';

const STATES: {key: 'connected' | 'stale' | 'disconnected' | 'nacking'; label: string; href: string; hint: string}[] = [
  {key: 'connected', label: 'Connected', href: '/proxies?state=connected', hint: 'stream up and active'},
  {key: 'stale', label: 'Stale', href: '/proxies?state=stale', hint: 'stream up, silent too long'},
  {key: 'disconnected', label: 'Disconnected', href: '/proxies?state=disconnected', hint: 'stream gone'},
  {key: 'nacking', label: 'NACKing', href: '/proxies?state=nacking', hint: 'last answer was a NACK'},
];

function FleetCards({groups, loading}: {groups: Group[] | undefined; loading: boolean}) {
  const total = {connected: 0, stale: 0, disconnected: 0, nacking: 0};
  for (const g of groups ?? []) for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += g.proxies[k];
  return (
    <div class="cards" data-testid="fleet-cards">
      {STATES.map((s) => (
        <a key={s.key} class={`card card-${s.key}`} href={s.href}>
          <span class="card-label">{s.label}</span>
          <span class="card-value" data-testid={`count-${s.key}`}>
            {groups ? total[s.key] : loading ? '…' : '—'}
          </span>
          <span class="card-hint">{s.hint}</span>
        </a>
      ))}
    </div>
  );
}

function GroupsTable({groups, loading}: {groups: Group[] | undefined; loading: boolean}) {
  if (groups && groups.length === 0)
    return (
      <Empty title="No proxy groups yet">
        A group appears with its first snapshot: create a config naming it on the <a href="/configs">Configs</a> page. Proxies
        join a group through their node's <code>cluster</code>.
      </Empty>
    );
  return (
    <Table head={['Group', num('Snapshot'), 'Published', num('Connected'), num('Stale'), num('Disconnected'), num('NACKing'), num('NACK rate')]} testid="groups-table">
      {!groups && loading && <SkeletonRows cols={8} rows={2} />}
      {groups?.map((g) => (
        <tr key={g.name}>
          <td>
            <a href={`/proxies?group=${seg(g.name)}`}>{g.name}</a>
          </td>
          <td class="num">
            <a href={`/snapshots/${seg(g.name)}`} title="Snapshots of this group">
              v{g.latest_version}
            </a>
          </td>
          <td>
            <Time iso={g.updated_at} />
          </td>
          <td class="num">{g.proxies.connected}</td>
          <td class="num">{g.proxies.stale || <span class="muted">0</span>}</td>
          <td class="num">{g.proxies.disconnected || <span class="muted">0</span>}</td>
          <td class="num">{g.proxies.nacking ? <span class="text-bad">{g.proxies.nacking}</span> : <span class="muted">0</span>}</td>
          <td class="num">{percent(g.nack_rate)}</td>
        </tr>
      ))}
    </Table>
  );
}

function ActiveDeployments() {
  const d = useApi('listDeployments', {query: {limit: 50}});
  useLive(d.reload, (e) => /^(wave|rollout|rollback|config_)/.test(e.type), 1500);
  if (d.error instanceof ApiError && d.error.status === 404)
    return <p class="muted">This server does not run rollouts yet (no <code>GET {routes.listDeployments.path}</code>).</p>;
  if (d.error && !d.data) return <ErrorBox error={d.error} retry={d.reload} what="deployments" />;
  const active = (d.data?.items ?? []).filter((x) => ACTIVE_DEPLOYMENT_STATES.includes(x.state));
  if (!d.data) return <p class="muted">Loading…</p>;
  if (!active.length)
    return (
      <p class="muted">
        No rollout in progress. <a href="/deployments">All deployments</a>
      </p>
    );
  return (
    <ul class="list" data-testid="active-deployments">
      {active.map((x) => (
        <li key={x.id} class="dep-item" data-testid={`active-deployment-${x.id}`}>
          <span class="dep-item-head">
            <a href={`/deployments/${seg(x.id)}`}>
              {x.strategy?.type?.replace(/_/g, ' ')} of v{x.config_version}
              {x.groups?.length ? ` to ${x.groups.join(', ')}` : ''}
            </a>{' '}
            <StateBadge state={x.state} />{' '}
            <span class="muted small">
              <Time iso={x.started_at ?? x.created_at} />
            </span>
          </span>
          <DeploymentProgressLine d={x} />
        </li>
      ))}
    </ul>
  );
}

function RecentChanges() {
  const a = useApi('listAudit', {query: {limit: 30, result: 'success'}});
  useLive(a.reload, undefined, 3000);
  if (a.error && !a.data) return <ErrorBox error={a.error} retry={a.reload} what="the audit log" />;
  if (!a.data) return <p class="muted">Loading…</p>;
  // Sign-ins are audited too, but they are not changes.
  const changes = a.data.items.filter((e) => e.resource_type !== 'auth').slice(0, 8);
  if (!changes.length)
    return (
      <p class="muted">
        No changes yet. <a href="/audit">The audit log</a>
      </p>
    );
  return (
    <ul class="list" data-testid="recent-changes">
      {changes.map((e) => (
        <li key={e.id}>
          <code class="mono">{e.action}</code> <span class="muted">by</span> {e.user}{' '}
          {e.resource_type === 'config' && e.resource_id ? (
            <a href={`/configs/${seg(e.resource_id)}/history`}>config {e.resource_id.slice(0, 8)}</a>
          ) : e.resource_type === 'group' ? (
            <a href={`/snapshots/${seg(e.resource_id)}`}>group {e.resource_id}</a>
          ) : e.resource_type === 'deployment' && e.resource_id ? (
            <a href={`/deployments/${seg(e.resource_id)}`}>deployment {e.resource_id.slice(0, 8)}</a>
          ) : (
            <span>
              {e.resource_type} {e.resource_id}
            </span>
          )}{' '}
          <span class="muted">
            <Time iso={e.at} />
          </span>
        </li>
      ))}
      <li>
        <a href="/audit">The whole audit log</a>
      </li>
    </ul>
  );
}

function Activity() {
  const events = useStore(recentEvents);
  if (!events.length) return <p class="muted">Nothing yet; events appear here as proxies connect, apply and reject configs.</p>;
  return (
    <ul class="list activity" data-testid="activity">
      {events.slice(0, 12).map((e, i) => (
        <li key={`${e.id ?? ''}-${i}`} class={/rejected|failed|disconnected/.test(e.type) ? 'text-bad' : undefined}>
          <span class="mono small muted">{new Date(e.received).toLocaleTimeString()}</span> {describeEvent(e)}
        </li>
      ))}
    </ul>
  );
}

export function Dashboard() {
  useTitle('Dashboard');
  const groups = useGroups();
  useLive(groups.reload, (e) => /^(proxy_|config_|rollout|rollback)/.test(e.type), 1000);
  return (
    <>
      <PageHead title="Dashboard" sub="Proxies by state, groups and their snapshots, rollouts, recent changes and the control plane's replicas." />
      <FleetCards groups={groups.data?.items} loading={groups.loading} />
      <div class="grid-2">
        <div>
          <Section title="Groups" id="h-groups">
            {groups.error && !groups.data ? (
              <ErrorBox error={groups.error} retry={groups.reload} what="the fleet" />
            ) : (
              <GroupsTable groups={groups.data?.items} loading={groups.loading} />
            )}
          </Section>
          <Section title="Rollouts in progress" id="h-rollouts">
            <ActiveDeployments />
          </Section>
        </div>
        <div>
          <Section title="Recent changes" id="h-changes">
            <RecentChanges />
          </Section>
          <Section title="Live activity" id="h-activity">
            <Activity />
          </Section>
          <Section title="Control plane replicas" id="h-replicas">
            <Replicas />
          </Section>
        </div>
      </div>
    </>
  );
}

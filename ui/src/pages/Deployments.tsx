// Deployments.tsx — every rollout, newest first, with its state and progress.
import {routes} from '../gen/openapi';
import {ApiError} from '../lib/api';
import {usePaged, useLive, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import type {DeploymentState} from '../lib/types';
import {ListTable} from '../components/list';
import {DeploymentProgressLine} from '../components/progress';
import {Empty, Field, PageHead, StateBadge, Time, val} from '../components/ui';

const STATES: DeploymentState[] = [
  'pending',
  'in_progress',
  'paused',
  'completed',
  'failed',
  'canceling',
  'rolling_back',
  'rolled_back',
  'rollback_failed',
];

export function DeploymentsPage() {
  useTitle('Deployments');
  const {query} = useLocation();
  const state = query.get('state') ?? '';
  const list = usePaged('listDeployments', {}, 100);
  // ACKs and NACKs (config_*) move the progress of the waves under way.
  useLive(list.reload, (e) => /^(wave|rollout|rollback|config_)/.test(e.type), 1500);
  if (list.error instanceof ApiError && list.error.status === 404)
    return (
      <>
        <PageHead title="Deployments" />
        <Empty title="This server does not run rollouts yet">
          <code>GET {routes.listDeployments.path}</code> is not there. Saving a config publishes it to its groups at once.
        </Empty>
      </>
    );
  const rows = list.items.filter((d) => !state || d.state === state);
  return (
    <>
      <PageHead title="Deployments" sub="Rollouts of config versions to proxies, wave by wave." />
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <Field label="State">
          <select value={state} onChange={(e) => setQuery({state: val(e)})}>
            <option value="">any state</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s.replace(/_/g, ' ')}
              </option>
            ))}
          </select>
        </Field>
      </form>
      <ListTable
        list={list}
        what="deployments"
        testid="deployments-table"
        shown={rows.length}
        head={['Deployment', 'Config', 'State', 'Progress', 'By', 'Started']}
        empty={
          <Empty title={state ? 'No deployment in this state' : 'No deployments yet'}>
            Start one from a config's <em>Apply</em> button.
          </Empty>
        }
      >
        {rows.map((d) => {
          return (
            <tr key={d.id} data-testid={`deployment-row-${d.id}`}>
              <td>
                <a class="mono" href={`/deployments/${seg(d.id)}`}>
                  {d.id.slice(0, 8)}
                </a>{' '}
                <span class="muted small">{d.strategy?.type?.replace(/_/g, ' ')}</span>
              </td>
              <td>
                <a href={`/configs/${seg(d.config_id)}/history`}>v{d.config_version}</a>
                {d.groups?.length ? <span class="muted small"> · {d.groups.join(', ')}</span> : null}
              </td>
              <td>
                <StateBadge state={d.state} title={d.state_reason ?? undefined} />
              </td>
              <td class="progress-cell">
                <DeploymentProgressLine d={d} />
              </td>
              <td>{d.created_by}</td>
              <td>
                <Time iso={d.started_at ?? d.created_at} />
              </td>
            </tr>
          );
        })}
      </ListTable>
    </>
  );
}

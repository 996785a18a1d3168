// Deployments.tsx — every rollout, newest first, with its state and progress.
import {ApiError} from '../lib/api';
import {usePaged, useLive, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import type {Deployment, DeploymentState} from '../lib/types';
import {DeploymentProgressLine} from '../components/progress';
import {Empty, ErrorBox, Field, PageHead, SkeletonRows, StateBadge, Time, val} from '../components/ui';

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
  const list = usePaged<Deployment>('/api/v1/deployments', 100);
  // ACKs and NACKs (config_*) move the progress of the waves under way.
  useLive(list.reload, (e) => /^(wave|rollout|rollback|config_)/.test(e.type), 1500);
  if (list.error instanceof ApiError && list.error.status === 404)
    return (
      <>
        <PageHead title="Deployments" />
        <Empty title="This server does not run rollouts yet">
          <code>GET /api/v1/deployments</code> is not there. Saving a config publishes it to its groups at once.
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
      {list.error && <ErrorBox error={list.error} retry={list.reload} what="deployments" />}
      {!list.loading && !list.error && !rows.length ? (
        <Empty title={state ? 'No deployment in this state' : 'No deployments yet'}>
          Start one from a config's <em>Apply</em> button.
        </Empty>
      ) : (
        <div class="table-wrap">
          <table class="table" data-testid="deployments-table">
            <thead>
              <tr>
                <th scope="col">Deployment</th>
                <th scope="col">Config</th>
                <th scope="col">State</th>
                <th scope="col">Progress</th>
                <th scope="col">By</th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {list.loading && !list.items.length && <SkeletonRows cols={6} />}
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
            </tbody>
          </table>
        </div>
      )}
      {list.next && (
        <button type="button" class="btn" onClick={list.more}>
          Load more
        </button>
      )}
    </>
  );
}

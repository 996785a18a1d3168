// Deployment.tsx — one rollout as it happens: its waves filling up with ACKs and
// NACKs, the NACK errors, and the controls (pause, resume, cancel, roll back; promote
// when a blue-green rollout waits for it) its state allows, each asking for a reason
// first.
import {useState} from 'preact/hooks';
import {ApiError, call} from '../lib/api';
import {actionsFor, awaitsPromotion, waveNumber, type DeploymentAction} from '../lib/deploy';
import {when} from '../lib/format';
import {useAction, useApi, useLive, useTitle} from '../lib/hooks';
import {seg} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import {ACTIVE_DEPLOYMENT_STATES, type Deployment, type Wave} from '../lib/types';
import {ConfirmButtons, Refusal} from '../components/list';
import {DeploymentProgressLine} from '../components/progress';
import {DeploymentTimelineSection} from '../components/timeline';
import {Dialog, Empty, ErrorBox, Field, PageHead, Section, StateBadge, Time, toast, val} from '../components/ui';

const OPERATION = {
  pause: 'pauseDeployment',
  resume: 'resumeDeployment',
  cancel: 'cancelDeployment',
  rollback: 'rollbackDeployment',
  promote: 'promoteDeployment',
} as const;

const LABEL: Record<DeploymentAction, string> = {pause: 'Pause', resume: 'Resume', cancel: 'Cancel', rollback: 'Roll back', promote: 'Promote'};
const EXPLAIN: Record<DeploymentAction, string> = {
  pause: 'No new wave starts until you resume; proxies that already have the version keep it.',
  resume: 'The rollout goes on with the next wave.',
  cancel: 'No further wave starts, and every proxy this rollout reached goes back to the version it had before.',
  rollback: 'Every proxy this rollout reached goes back to the version it had before.',
  promote: 'Every blue proxy switches to the new version at once; rolling back afterwards puts every proxy back on the old one.',
};

const PHASE: Record<string, string> = {
  staging_green: 'green proxies are taking the new version',
  awaiting_promotion: 'green ACKed; waiting for a promotion',
  switching: 'promoted; blue proxies are switching',
  switched: 'every proxy switched',
  rolled_back: 'rolled back',
};

function WaveCard({d, w}: {d: Deployment; w: Wave}) {
  const n = w.node_ids.length || 1;
  const ackPct = (100 * w.acks) / n;
  const nackPct = (100 * w.nacks) / n;
  const current = d.current_wave === w.index && ACTIVE_DEPLOYMENT_STATES.includes(d.state);
  return (
    <li
      class={`wave${current ? ' wave-current' : ''}${w.state === 'rolled_back' ? ' wave-undone' : ''}`}
      data-testid={`wave-${waveNumber(d, w.index)}`}
    >
      <div class="wave-head">
        <strong>Wave {waveNumber(d, w.index)}</strong> <StateBadge state={w.state} />
        <span class="muted small">
          {w.acks}/{w.node_ids.length} ACKed{w.nacks ? `, ${w.nacks} NACKed` : ''}
          {w.started_at && (
            <>
              {' '}
              · started <Time iso={w.started_at} />
            </>
          )}
          {w.completed_at && (
            <>
              {' '}
              · done <Time iso={w.completed_at} />
            </>
          )}
        </span>
      </div>
      <div
        class="bar"
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={w.node_ids.length}
        aria-valuenow={w.acks}
        aria-label={`wave ${waveNumber(d, w.index)}: ${w.acks} of ${w.node_ids.length} acknowledged`}
      >
        <span class="bar-ack" style={{width: `${ackPct}%`}} />
        <span class="bar-nack" style={{width: `${nackPct}%`}} />
      </div>
      <details>
        <summary class="small">
          {w.node_ids.length} prox{w.node_ids.length === 1 ? 'y' : 'ies'}
        </summary>
        <p class="mono small">
          {w.node_ids.map((id, i) => (
            <span key={id}>
              {i > 0 && ', '}
              <a href={`/proxies/${seg(id)}`}>{id}</a>
            </span>
          ))}
        </p>
      </details>
      {w.errors.length > 0 && (
        <ul class="nack-list" data-testid="wave-errors">
          {w.errors.map((e, i) => (
            <li key={i}>
              <a class="mono" href={`/proxies/${seg(e.node_id)}`}>
                {e.node_id}
              </a>{' '}
              rejected v{e.version ?? '?'} <Time iso={e.at} />: <span class="text-bad">{e.error}</span>
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}

export function DeploymentPage({id}: {id: string}) {
  useTitle(`Deployment ${id.slice(0, 8)}`);
  const me = useStore(session).me;
  const d = useApi('getDeployment', {path: {id}});
  const cfg = useApi('getConfig', d.data ? {path: {id: d.data.config_id}} : null);
  useLive(d.reload, (e) => !e.data?.deployment_id || e.data.deployment_id === id || /^config_/.test(e.type), 500);
  const [asking, setAsking] = useState<DeploymentAction | null>(null);
  const [reason, setReason] = useState('');
  const action = useAction();
  const {busy, error} = action;

  if (d.error instanceof ApiError && d.error.status === 404)
    return (
      <Empty title={d.error.routeMissing ? 'This server does not run rollouts yet' : 'No such deployment'}>
        <a href="/deployments">All deployments</a>
      </Empty>
    );
  if (d.error && !d.data) return <ErrorBox error={d.error} retry={d.reload} what="the deployment" />;
  const x = d.data;
  if (!x) return <p class="muted">Loading…</p>;
  const mayControl = (a: DeploymentAction) => can(me, 'deployments', a) || can(me, 'deployments', 'update') || can(me, 'deployments', '*');
  const actions = [...(awaitsPromotion(x) ? (['promote'] as DeploymentAction[]) : []), ...actionsFor(x.state)].filter(mayControl);
  const bg = x.blue_green;

  const run = () =>
    action.run(async () => {
      if (!asking) return;
      await call(OPERATION[asking], {path: {id}, body: {reason: reason || undefined}});
      toast(`${LABEL[asking]}: requested`);
      setAsking(null);
      setReason('');
      void d.reload();
    });

  const sel = x.selector ?? {};
  const st = x.strategy ?? {type: 'all_at_once'};
  return (
    <>
      <PageHead
        title={
          <>
            Deployment <span class="mono">{x.id.slice(0, 8)}</span>
          </>
        }
        sub={
          <>
            <StateBadge state={x.state} /> v{x.config_version} of{' '}
            <a href={`/configs/${seg(x.config_id)}/history`}>{cfg.data ? `${cfg.data.namespace}/${cfg.data.name}` : 'the config'}</a> ·{' '}
            <DeploymentProgressLine d={x} />
          </>
        }
      >
        {actions.map((a) => (
          <button
            key={a}
            type="button"
            class={a === 'rollback' || a === 'cancel' ? 'btn btn-danger-outline' : a === 'promote' ? 'btn btn-primary' : 'btn'}
            onClick={() => (setAsking(a), action.reset())}
            data-testid={`action-${a}`}
          >
            {LABEL[a]}
          </button>
        ))}
      </PageHead>
      {x.state_reason && (
        <p
          class={
            x.state === 'failed' || x.state === 'rollback_failed'
              ? 'notice notice-bad'
              : x.state === 'rolled_back' || x.state === 'rolling_back'
                ? 'notice notice-warn'
                : 'notice'
          }
          data-testid="state-reason"
        >
          {x.state_reason}
        </p>
      )}
      <div class="grid-2">
        <Section title="Waves" id="h-waves">
          {x.waves?.length ? (
            <ol class="waves" data-testid="waves">
              {x.waves.map((w) => (
                <WaveCard key={w.index} d={x} w={w} />
              ))}
            </ol>
          ) : (
            <p class="muted">No waves planned yet.</p>
          )}
        </Section>
        <Section title="Details" id="h-details">
          <dl class="facts">
            <dt>Strategy</dt>
            <dd>
              {st.type.replace(/_/g, ' ')}
              {st.type === 'rolling' && (
                <>
                  {' '}
                  ({st.wave_size ? `${st.wave_size} per wave` : `${st.wave_percent ?? '?'} % per wave`}, pause {st.pause ?? '—'})
                </>
              )}
              {st.type === 'canary' && (
                <>
                  {' '}
                  ({st.initial_percent} %, then +{st.increment_percent} % every {st.interval})
                </>
              )}
            </dd>
            {bg && (
              <>
                <dt>Blue-green</dt>
                <dd data-testid="blue-green">
                  <span data-testid="blue-green-phase" data-phase={bg.phase}>
                    {PHASE[bg.phase] ?? bg.phase}
                  </span>
                  <div class="small">
                    green: {bg.green_node_ids.join(', ') || '—'}
                    <br />
                    blue: {bg.blue_node_ids.join(', ') || '—'}
                  </div>
                  <div class="muted small">
                    {bg.promoted_at ? (
                      <>
                        promoted <Time iso={bg.promoted_at} />
                      </>
                    ) : bg.promote_timeout_left_seconds !== null ? (
                      `without a promotion within ${Math.ceil(bg.promote_timeout_left_seconds)} s: ${bg.on_timeout === 'promote' ? 'promoted' : 'rolled back'}`
                    ) : (
                      `on timeout: ${bg.on_timeout === 'promote' ? 'promote' : 'roll back'} (${st.promote_timeout ?? '1h'})`
                    )}
                  </div>
                </dd>
              </>
            )}
            <dt>Selector</dt>
            <dd class="small">
              {sel.groups?.length ? <div>groups: {sel.groups.join(', ')}</div> : null}
              {sel.node_ids?.length ? <div>nodes: {sel.node_ids.join(', ')}</div> : null}
              {sel.labels && Object.keys(sel.labels).length ? (
                <div>
                  labels:{' '}
                  {Object.entries(sel.labels)
                    .map(([k, v]) => `${k}=${v}`)
                    .join(', ')}
                </div>
              ) : null}
              {sel.namespaces?.length ? <div>namespaces: {sel.namespaces.join(', ')}</div> : null}
            </dd>
            <dt>Groups</dt>
            <dd>
              {(x.groups ?? Object.keys(x.target_snapshots ?? {})).map((g) => (
                <div key={g}>
                  <a href={`/snapshots/${seg(g)}`}>{g}</a>:{' '}
                  <span class="mono">
                    v{x.baseline_snapshots?.[g] ?? '—'} → v{x.target_snapshots?.[g] ?? '—'}
                  </span>
                </div>
              ))}
            </dd>
            {x.policy && (
              <>
                <dt>Stops when</dt>
                <dd class="small">
                  NACKs exceed {Math.round(x.policy.nack_threshold * 1000) / 10} % (from {x.policy.nack_min_sample} answers), a wave takes
                  over {x.policy.wave_timeout}, or {x.policy.health_failures} proxies report not ready
                </dd>
              </>
            )}
            <dt>Promote</dt>
            <dd>
              {x.promote === false
                ? 'no: proxies go back to following their group when it ends'
                : x.promoted
                  ? "done: the version is now the groups' current one"
                  : "when every wave has ACKed, the version becomes the groups' current one"}
            </dd>
            {x.reason && (
              <>
                <dt>Reason</dt>
                <dd>{x.reason}</dd>
              </>
            )}
            {x.skipped && x.skipped.length > 0 && (
              <>
                <dt>Left out</dt>
                <dd class="small">
                  {x.skipped.map((k) => (
                    <div key={k.node_id}>
                      <a class="mono" href={`/proxies/${seg(k.node_id)}`}>
                        {k.node_id}
                      </a>
                      : {k.reason}
                    </div>
                  ))}
                </dd>
              </>
            )}
            <dt>Started by</dt>
            <dd>{x.created_by}</dd>
            <dt>Created</dt>
            <dd>{when(x.created_at)}</dd>
            <dt>Started</dt>
            <dd>{when(x.started_at)}</dd>
            <dt>Finished</dt>
            <dd>{when(x.finished_at)}</dd>
          </dl>
        </Section>
      </div>
      <DeploymentTimelineSection d={x} />
      {asking && (
        <Dialog title={`${LABEL[asking]} this rollout?`} open onClose={() => setAsking(null)}>
          <p>{EXPLAIN[asking]}</p>
          <Field label="Reason">
            <input value={reason} onInput={(e) => setReason(val(e))} placeholder="why (kept in the audit log)" />
          </Field>
          {error !== null && <Refusal title="Refused" error={error} />}
          <ConfirmButtons onCancel={() => setAsking(null)} cancel="Back">
            <button
              type="button"
              class={asking === 'resume' ? 'btn btn-primary' : 'btn btn-danger'}
              onClick={run}
              disabled={busy}
              data-testid="confirm-action"
            >
              {LABEL[asking]}
            </button>
          </ConfirmButtons>
        </Dialog>
      )}
    </>
  );
}

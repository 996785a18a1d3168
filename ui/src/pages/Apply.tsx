// Apply.tsx — roll a config version out to chosen proxies: the selector (node ids,
// groups, labels, namespaces), the strategy (all at once, rolling waves, canary,
// blue-green with its green proxies and promotion timeout), a dry
// run that shows the plan (waves and their nodes, each group's change, the nodes left
// out and why), then the real apply, which starts a deployment and opens its page.
import {useReducer} from 'preact/hooks';
import {routes} from '../gen/openapi';
import {ApiError, call, fetchOp, type Body} from '../lib/api';
import {useApi, useGroups, usePaged, useTitle} from '../lib/hooks';
import {navigate, seg} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {ApplyValidation, Plan, Strategy, StrategyType} from '../lib/types';
import {DiffList} from '../components/editors';
import {Refusal} from '../components/list';
import {Badge, Empty, ErrorBox, Field, PageHead, Section, val} from '../components/ui';

const list = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

/** "zone=a, tier=edge" or one per line -> {zone: "a", tier: "edge"}; bad items named. */
function parseLabels(s: string): {labels: Record<string, string>; bad: string[]} {
  const labels: Record<string, string> = {};
  const bad: string[] = [];
  for (const item of s.split(/[\n,]+/).map((x) => x.trim()).filter(Boolean)) {
    const eq = item.indexOf('=');
    if (eq <= 0) bad.push(item);
    else labels[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return {labels, bad};
}

const DURATION = /^(\d+(ms|s|m|h))+$/;

/** What the operator typed, as typed (numbers stay text until the request is built). */
interface Form {
  /** null: the config's newest version. */
  version: number | null;
  nodeIds: string;
  /** null: the config's own groups. */
  groups: string[] | null;
  labels: string;
  namespaces: string;
  type: StrategyType;
  waveMode: 'size' | 'percent';
  waveSize: string;
  wavePercent: string;
  pause: string;
  initialPercent: string;
  incrementPercent: string;
  interval: string;
  greenNodeIds: string;
  greenLabels: string;
  promoteTimeout: string;
  onTimeout: 'rollback' | 'promote';
  reason: string;
  nackPercent: string;
  minSample: string;
  waveTimeout: string;
  promote: boolean;
}

/** The fields of the form typed as free text. */
type TextField = 'labels' | 'namespaces' | 'pause' | 'interval' | 'greenNodeIds' | 'greenLabels' | 'promoteTimeout' | 'reason';

const INITIAL_FORM: Form = {
  version: null,
  nodeIds: '',
  groups: null,
  labels: '',
  namespaces: '',
  type: 'rolling',
  waveMode: 'percent',
  waveSize: '1',
  wavePercent: '25',
  pause: '30s',
  initialPercent: '10',
  incrementPercent: '30',
  interval: '1m',
  greenNodeIds: '',
  greenLabels: '',
  promoteTimeout: '1h',
  onTimeout: 'rollback',
  reason: '',
  nackPercent: '',
  minSample: '',
  waveTimeout: '',
  promote: true,
};

/** The fields whose change makes the plan on screen stale: which nodes, which
 * version, and the gates. */
const VOIDS_PLAN = new Set<keyof Form>(['version', 'nodeIds', 'groups', 'labels', 'namespaces', 'type', 'nackPercent', 'minSample', 'waveTimeout', 'promote', 'greenNodeIds', 'greenLabels']);

interface State {
  form: Form;
  /** The last dry run's plan, null before one (or once the form changed). */
  plan: Plan | null;
  validation: ApplyValidation | null;
  busy: boolean;
  error: unknown;
}

type Action =
  | {[K in keyof Form]: {type: 'set'; field: K; value: Form[K]}}[keyof Form]
  | {type: 'planning'}
  | {type: 'planned'; plan: Plan; validation: ApplyValidation | null}
  | {type: 'applying'}
  | {type: 'failed'; error: unknown}
  | {type: 'settled'};

function reduce(s: State, a: Action): State {
  switch (a.type) {
    case 'set':
      return {...s, form: {...s.form, [a.field]: a.value}, plan: VOIDS_PLAN.has(a.field) ? null : s.plan};
    case 'planning':
      return {...s, busy: true, error: null, plan: null, validation: null};
    case 'planned':
      return {...s, busy: false, plan: a.plan, validation: a.validation};
    case 'applying':
      return {...s, busy: true, error: null};
    case 'failed':
      return {...s, busy: false, error: a.error};
    case 'settled':
      return {...s, busy: false};
  }
}

export function ApplyPage({id}: {id: string}) {
  const me = useStore(session).me;
  const cfg = useApi('getConfig', {path: {id}});
  const versions = usePaged('listConfigVersions', {path: {id}}, 200);
  const groups = useGroups();
  useTitle(cfg.data ? `Apply ${cfg.data.namespace}/${cfg.data.name}` : 'Apply');
  const [{form: f, plan, validation, busy, error}, dispatch] = useReducer(reduce, {
    form: INITIAL_FORM,
    plan: null,
    validation: null,
    busy: false,
    error: null,
  });
  const set = <K extends keyof Form>(field: K, value: Form[K]) => dispatch({type: 'set', field, value} as Action);

  const c = cfg.data;
  if (cfg.error && !c) return <ErrorBox error={cfg.error} retry={cfg.reload} what="the config" />;
  if (!c) return <p class="muted">Loading…</p>;
  if (!can(me, 'configs', 'apply'))
    return (
      <Empty title="You may not apply configs">
        Your role ({me?.role}) may not start rollouts. <a href={`/configs/${seg(id)}`}>Back to the config</a>
      </Empty>
    );
  // The newest version by default: typically a draft saved to be rolled out.
  const chosenVersion = f.version ?? c.version;
  const chosenGroups = f.groups ?? c.groups;
  const lab = parseLabels(f.labels);
  const greenLab = parseLabels(f.greenLabels);

  const build = (dryRun: boolean): Body<'applyConfig'> => {
    const strategy: Strategy = {type: f.type};
    if (f.type === 'rolling') {
      if (f.waveMode === 'size') strategy.wave_size = Number(f.waveSize);
      else strategy.wave_percent = Number(f.wavePercent);
      strategy.pause = f.pause;
    } else if (f.type === 'canary') {
      strategy.initial_percent = Number(f.initialPercent);
      strategy.increment_percent = Number(f.incrementPercent);
      strategy.interval = f.interval;
    } else if (f.type === 'blue_green') {
      strategy.green = {};
      if (list(f.greenNodeIds).length) strategy.green.node_ids = list(f.greenNodeIds);
      if (Object.keys(greenLab.labels).length) strategy.green.labels = greenLab.labels;
      strategy.promote_timeout = f.promoteTimeout;
      strategy.on_timeout = f.onTimeout;
    }
    const body: Body<'applyConfig'> = {
      version: chosenVersion,
      selector: {node_ids: list(f.nodeIds), groups: chosenGroups, labels: lab.labels, namespaces: list(f.namespaces)},
      strategy,
      dry_run: dryRun,
      reason: f.reason || undefined,
    };
    if (f.nackPercent !== '') body.nack_threshold = Number(f.nackPercent) / 100;
    if (f.minSample !== '') body.nack_min_sample = Number(f.minSample);
    if (f.waveTimeout !== '') body.wave_timeout = f.waveTimeout;
    if (!f.promote) body.promote = false;
    return body;
  };

  const problems: string[] = [];
  if (lab.bad.length) problems.push(`labels must be key=value: ${lab.bad.join(', ')}`);
  if (!chosenGroups.length && !list(f.nodeIds).length && !Object.keys(lab.labels).length && !list(f.namespaces).length)
    problems.push('choose at least one group, node, label or namespace');
  if (f.type === 'rolling' && f.waveMode === 'size' && !(Number(f.waveSize) >= 1)) problems.push('the wave size must be at least 1');
  if (f.type === 'rolling' && f.waveMode === 'percent' && !(Number(f.wavePercent) > 0 && Number(f.wavePercent) <= 100))
    problems.push('the wave percentage must be between 1 and 100');
  if (f.type === 'rolling' && !DURATION.test(f.pause)) problems.push('the pause is a duration such as 30s or 2m');
  if (f.type === 'canary' && !DURATION.test(f.interval)) problems.push('the interval is a duration such as 1m');
  if (f.type === 'blue_green' && greenLab.bad.length) problems.push(`green labels must be key=value: ${greenLab.bad.join(', ')}`);
  if (f.type === 'blue_green' && !list(f.greenNodeIds).length && !Object.keys(greenLab.labels).length)
    problems.push('choose the green proxies: node ids or labels');
  if (f.type === 'blue_green' && !DURATION.test(f.promoteTimeout)) problems.push('the promotion timeout is a duration such as 30m');
  if (f.nackPercent !== '' && !(Number(f.nackPercent) >= 0 && Number(f.nackPercent) <= 100)) problems.push('the NACK threshold is a percentage from 0 to 100');
  if (f.minSample !== '' && !(Number.isInteger(Number(f.minSample)) && Number(f.minSample) >= 0)) problems.push('the minimum sample is a whole number');
  if (f.waveTimeout !== '' && !DURATION.test(f.waveTimeout)) problems.push('the wave timeout is a duration such as 10m');

  const dryRun = async () => {
    dispatch({type: 'planning'});
    try {
      const r = await fetchOp<'applyConfig', 200>('applyConfig', {path: {id}, body: build(true)});
      dispatch({type: 'planned', plan: r.plan, validation: r.validation ?? null});
    } catch (e) {
      dispatch({type: 'failed', error: e});
    }
  };
  const apply = async () => {
    dispatch({type: 'applying'});
    try {
      const r = await call<'applyConfig', 201>('applyConfig', {path: {id}, body: build(false)});
      navigate(`/deployments/${seg(r.data.id)}`);
      dispatch({type: 'settled'});
    } catch (e) {
      dispatch({type: 'failed', error: e});
    }
  };

  /** A whole-number input of the strategy (percentages: 1 to 100). */
  const count = (label: string, field: 'waveSize' | 'wavePercent' | 'initialPercent' | 'incrementPercent', percent = true) => (
    <Field label={label}>
      <input type="number" min={1} max={percent ? 100 : undefined} value={f[field]} onInput={(e) => set(field, val(e))} />
    </Field>
  );

  /** A free-text input of the form, with an optional hint, placeholder and test id. */
  const text = (label: string, field: TextField, o: {hint?: string; placeholder?: string; testid?: string} = {}) => (
    <Field label={label} hint={o.hint}>
      <input value={f[field]} onInput={(e) => set(field, val(e))} placeholder={o.placeholder} data-testid={o.testid} />
    </Field>
  );

  const missing = error instanceof ApiError && error.routeMissing;
  const planNodes = plan ? (plan.nodes ?? plan.waves.reduce((n, w) => n + w.node_ids.length, 0)) : 0;
  const invalid = validation !== null && !validation.valid;

  return (
    <>
      <PageHead title={`Apply ${c.namespace}/${c.name}`} sub="Choose the proxies and how fast, look at the plan, then start the rollout.">
        <a class="btn" href={`/configs/${seg(id)}`}>
          Back to the config
        </a>
      </PageHead>
      <div class="grid-2">
        <Section title="What and where" id="h-target">
          <Field label="Version">
            <select value={chosenVersion} onChange={(e) => set('version', Number(val(e)))} data-testid="apply-version">
              {versions.items.map((v) => (
                <option key={v.version} value={v.version}>
                  v{v.version}
                  {v.draft ? ' (draft)' : v.version === c.live_version ? ' (live)' : ''} — {v.message || 'no message'}
                </option>
              ))}
            </select>
          </Field>
          <fieldset class="fieldset">
            <legend>Groups</legend>
            {(groups.data?.items ?? []).map((g) => (
              <label key={g.name} class="check">
                <input
                  type="checkbox"
                  checked={chosenGroups.includes(g.name)}
                  onChange={(e) => {
                    const on = e.currentTarget.checked;
                    set('groups', on ? [...chosenGroups, g.name] : chosenGroups.filter((x) => x !== g.name));
                  }}
                />{' '}
                {g.name} <span class="muted small">(v{g.latest_version}, {g.proxies.connected} connected)</span>
              </label>
            ))}
          </fieldset>
          <Field label="Node ids" hint="Only these proxies (separated by spaces, commas or lines); empty: every proxy of the groups.">
            <textarea rows={2} value={f.nodeIds} onInput={(e) => set('nodeIds', val(e))} />
          </Field>
          {text('Labels', 'labels', {hint: 'key=value pairs every chosen proxy must carry, e.g. zone=a.'})}
          {text('Namespaces', 'namespaces', {hint: 'Only proxies of these node namespaces.'})}
        </Section>
        <Section title="How" id="h-strategy">
          <fieldset class="fieldset">
            <legend>Strategy</legend>
            <label class="check">
              <input type="radio" name="strategy" checked={f.type === 'all_at_once'} onChange={() => set('type', 'all_at_once')} /> All at once
            </label>
            <label class="check">
              <input type="radio" name="strategy" checked={f.type === 'rolling'} onChange={() => set('type', 'rolling')} /> Rolling, in waves
            </label>
            <label class="check">
              <input type="radio" name="strategy" checked={f.type === 'canary'} onChange={() => set('type', 'canary')} /> Canary, growing
              share
            </label>
            <label class="check">
              <input type="radio" name="strategy" checked={f.type === 'blue_green'} onChange={() => set('type', 'blue_green')} data-testid="strategy-blue-green" />{' '}
              Blue-green, promoted by hand
            </label>
          </fieldset>
          {f.type === 'rolling' && (
            <div class="row-fields">
              <Field label="Wave by">
                <select value={f.waveMode} onChange={(e) => set('waveMode', val(e) as Form['waveMode'])}>
                  <option value="percent">percent of the proxies</option>
                  <option value="size">number of proxies</option>
                </select>
              </Field>
              {f.waveMode === 'size' ? count('Proxies per wave', 'waveSize', false) : count('Percent per wave', 'wavePercent')}
              {text('Pause between waves', 'pause', {placeholder: '30s'})}
            </div>
          )}
          {f.type === 'canary' && (
            <div class="row-fields">
              {count('First wave, percent', 'initialPercent')}
              {count('Then add, percent', 'incrementPercent')}
              {text('Every', 'interval', {placeholder: '1m'})}
            </div>
          )}
          {f.type === 'blue_green' && (
            <div class="row-fields">
              {text('Green node ids', 'greenNodeIds', {hint: 'The proxies that take the new version first; the others (blue) wait for the promotion.', testid: 'green-node-ids'})}
              {text('Green labels', 'greenLabels', {hint: 'key=value pairs, e.g. slot=green.', testid: 'green-labels'})}
              {text('Wait for a promotion', 'promoteTimeout', {placeholder: '1h'})}
              <Field label="Then">
                <select value={f.onTimeout} onChange={(e) => set('onTimeout', val(e) as Form['onTimeout'])}>
                  <option value="rollback">roll back</option>
                  <option value="promote">promote</option>
                </select>
              </Field>
            </div>
          )}
          <details class="fieldset">
            <summary>When to stop and roll back</summary>
            <p class="muted small">Empty fields keep the server's defaults (rollouts.* settings); the dry run shows them.</p>
            <div class="row-fields">
              <Field label="NACK threshold, percent">
                <input type="number" min={0} max={100} step="any" value={f.nackPercent} placeholder={plan?.policy ? String(plan.policy.nack_threshold * 100) : ''} onInput={(e) => set('nackPercent', val(e))} />
              </Field>
              <Field label="Minimum answers">
                <input type="number" min={0} value={f.minSample} placeholder={plan?.policy ? String(plan.policy.nack_min_sample) : ''} onInput={(e) => set('minSample', val(e))} />
              </Field>
              <Field label="Wave timeout">
                <input value={f.waveTimeout} placeholder={plan?.policy?.wave_timeout ?? '10m'} onInput={(e) => set('waveTimeout', val(e))} />
              </Field>
            </div>
            <label class="check">
              <input type="checkbox" checked={f.promote} onChange={(e) => set('promote', e.currentTarget.checked)} /> Make it the
              groups' current version once every wave has ACKed
            </label>
          </details>
          {text('Reason', 'reason', {hint: 'Kept with the deployment and in the audit log.', placeholder: 'e.g. ship the new timeouts'})}
          {problems.length > 0 && (
            <ul class="small text-bad">
              {problems.map((p) => (
                <li key={p}>{p}</li>
              ))}
            </ul>
          )}
          <div class="btn-row">
            <button type="button" class="btn" onClick={dryRun} disabled={busy || problems.length > 0} data-testid="dry-run">
              {busy && !plan ? 'Planning…' : 'Dry run'}
            </button>
            <button type="button" class="btn btn-primary" onClick={apply} disabled={busy || !plan || invalid || problems.length > 0} data-testid="apply">
              Apply to {planNodes} prox{planNodes === 1 ? 'y' : 'ies'}
            </button>
          </div>
          {!plan && <p class="muted small">The apply button unlocks once a dry run has shown the plan.</p>}
        </Section>
      </div>
      {error !== null &&
        (missing ? (
          <Empty title="This server cannot apply configs yet">
            <code>POST {routes.applyConfig.path}</code> is not there. Saving a config still publishes it to its groups at once.
          </Empty>
        ) : (
          <Refusal title="The server refused" error={error} />
        ))}
      {plan && (
        <Section title="Plan" id="h-plan">
          <p>
            {planNodes} prox{planNodes === 1 ? 'y' : 'ies'} in {plan.waves.length} wave{plan.waves.length === 1 ? '' : 's'}
            {plan.skipped.length > 0 && <>, {plan.skipped.length} left out</>}.
          </p>
          <ol class="waves-plan" data-testid="plan-waves">
            {plan.waves.map((w, i) => (
              <li key={w.index}>
                <strong>Wave {i + 1}</strong> <span class="muted">({w.node_ids.length})</span>:{' '}
                <span class="mono small">{w.node_ids.join(', ')}</span>
              </li>
            ))}
          </ol>
          {validation && !validation.valid && (
            <div class="error-box" role="alert">
              <strong>Version {chosenVersion} does not pass validation</strong>
              <ul class="small">
                {validation.problems.map((p, i) => (
                  <li key={i}>
                    {p.stage && <Badge tone="neutral">{p.stage}</Badge>} <code>{p.path}</code> {p.message}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {plan.policy && (
            <p class="small muted">
              Stops and rolls back when NACKs exceed {Math.round(plan.policy.nack_threshold * 1000) / 10} % (counted from{' '}
              {plan.policy.nack_min_sample} answers), a wave takes over {plan.policy.wave_timeout}, or {plan.policy.health_failures}{' '}
              proxies report not ready.{plan.policy.promote === false ? ' The version is not promoted at the end.' : ''}
            </p>
          )}
          {plan.groups.map((g) => (
            <div key={g.group} class="plan-group" data-testid="plan-group">
              <h3>
                {g.group}: v{g.from_version ?? '—'} → {g.changed === false ? 'no change' : g.to_version ? `v${g.to_version}` : 'a new version'}
              </h3>
              <DiffList diff={g.diff ?? undefined} />
            </div>
          ))}
          {plan.skipped.length > 0 && (
            <>
              <h3>Left out</h3>
              <ul class="small" data-testid="plan-skipped">
                {plan.skipped.map((s) => (
                  <li key={s.node_id}>
                    <span class="mono">{s.node_id}</span>: {s.reason}
                  </li>
                ))}
              </ul>
            </>
          )}
          <Badge tone="info">dry run: nothing was changed</Badge>
        </Section>
      )}
    </>
  );
}

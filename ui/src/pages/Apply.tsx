// Apply.tsx — roll a config version out to chosen proxies: the selector (node ids,
// groups, labels, namespaces), the strategy (all at once, rolling waves, canary), a dry
// run that shows the plan (waves and their nodes, each group's change, the nodes left
// out and why), then the real apply, which starts a deployment and opens its page.
import {useState} from 'preact/hooks';
import {ApiError, describeError, post, request} from '../lib/api';
import {useApi, usePaged, useTitle} from '../lib/hooks';
import {navigate, seg} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {ApplyValidation, Config, ConfigVersion, Deployment, Group, Page, Plan, Selector, Strategy} from '../lib/types';
import {DiffList} from '../components/editors';
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

export function ApplyPage({id}: {id: string}) {
  const me = useStore(session).me;
  const cfg = useApi<Config>(`/api/v1/configs/${seg(id)}`);
  const versions = usePaged<ConfigVersion>(`/api/v1/configs/${seg(id)}/versions`, 200);
  const groups = useApi<Page<Group>>('/api/v1/groups?limit=1000');
  useTitle(cfg.data ? `Apply ${cfg.data.namespace}/${cfg.data.name}` : 'Apply');

  const [version, setVersion] = useState<number | null>(null);
  const [nodeIds, setNodeIds] = useState('');
  const [selGroups, setSelGroups] = useState<string[] | null>(null);
  const [labels, setLabels] = useState('');
  const [namespaces, setNamespaces] = useState('');
  const [type, setType] = useState<Strategy['type']>('rolling');
  const [waveMode, setWaveMode] = useState<'size' | 'percent'>('percent');
  const [waveSize, setWaveSize] = useState('1');
  const [wavePercent, setWavePercent] = useState('25');
  const [pause, setPause] = useState('30s');
  const [initialPercent, setInitialPercent] = useState('10');
  const [incrementPercent, setIncrementPercent] = useState('30');
  const [interval, setIntervalText] = useState('1m');
  const [reason, setReason] = useState('');
  const [nackPercent, setNackPercent] = useState('');
  const [minSample, setMinSample] = useState('');
  const [waveTimeout, setWaveTimeout] = useState('');
  const [promote, setPromote] = useState(true);
  const [plan, setPlan] = useState<Plan | null>(null);
  const [validation, setValidation] = useState<ApplyValidation | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

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
  const chosenVersion = version ?? c.version;
  const chosenGroups = selGroups ?? c.groups;
  const lab = parseLabels(labels);

  const build = (dryRun: boolean) => {
    const selector: Selector = {
      node_ids: list(nodeIds),
      groups: chosenGroups,
      labels: lab.labels,
      namespaces: list(namespaces),
    };
    const strategy: Strategy = {type};
    if (type === 'rolling') {
      if (waveMode === 'size') strategy.wave_size = Number(waveSize);
      else strategy.wave_percent = Number(wavePercent);
      strategy.pause = pause;
    } else if (type === 'canary') {
      strategy.initial_percent = Number(initialPercent);
      strategy.increment_percent = Number(incrementPercent);
      strategy.interval = interval;
    }
    const body: Record<string, unknown> = {version: chosenVersion, selector, strategy, dry_run: dryRun, reason: reason || undefined};
    if (nackPercent !== '') body.nack_threshold = Number(nackPercent) / 100;
    if (minSample !== '') body.nack_min_sample = Number(minSample);
    if (waveTimeout !== '') body.wave_timeout = waveTimeout;
    if (!promote) body.promote = false;
    return body;
  };

  const problems: string[] = [];
  if (lab.bad.length) problems.push(`labels must be key=value: ${lab.bad.join(', ')}`);
  if (!chosenGroups.length && !list(nodeIds).length && !Object.keys(lab.labels).length && !list(namespaces).length)
    problems.push('choose at least one group, node, label or namespace');
  if (type === 'rolling' && waveMode === 'size' && !(Number(waveSize) >= 1)) problems.push('the wave size must be at least 1');
  if (type === 'rolling' && waveMode === 'percent' && !(Number(wavePercent) > 0 && Number(wavePercent) <= 100))
    problems.push('the wave percentage must be between 1 and 100');
  if (type === 'rolling' && !DURATION.test(pause)) problems.push('the pause is a duration such as 30s or 2m');
  if (type === 'canary' && !DURATION.test(interval)) problems.push('the interval is a duration such as 1m');
  if (nackPercent !== '' && !(Number(nackPercent) >= 0 && Number(nackPercent) <= 100)) problems.push('the NACK threshold is a percentage from 0 to 100');
  if (minSample !== '' && !(Number.isInteger(Number(minSample)) && Number(minSample) >= 0)) problems.push('the minimum sample is a whole number');
  if (waveTimeout !== '' && !DURATION.test(waveTimeout)) problems.push('the wave timeout is a duration such as 10m');

  const dryRun = async () => {
    setBusy(true);
    setError(null);
    setPlan(null);
    setValidation(null);
    try {
      const r = await post<{plan: Plan; validation?: ApplyValidation}>(`/api/v1/configs/${seg(id)}/apply`, build(true));
      setPlan(r.plan);
      setValidation(r.validation ?? null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const apply = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await request<Deployment>('POST', `/api/v1/configs/${seg(id)}/apply`, {body: build(false)});
      navigate(`/deployments/${seg(r.data.id)}`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

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
            <select value={chosenVersion} onChange={(e) => (setVersion(Number(val(e))), setPlan(null))} data-testid="apply-version">
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
                    setSelGroups(on ? [...chosenGroups, g.name] : chosenGroups.filter((x) => x !== g.name));
                    setPlan(null);
                  }}
                />{' '}
                {g.name} <span class="muted small">(v{g.latest_version}, {g.proxies.connected} connected)</span>
              </label>
            ))}
          </fieldset>
          <Field label="Node ids" hint="Only these proxies (separated by spaces, commas or lines); empty: every proxy of the groups.">
            <textarea rows={2} value={nodeIds} onInput={(e) => (setNodeIds(val(e)), setPlan(null))} />
          </Field>
          <Field label="Labels" hint="key=value pairs every chosen proxy must carry, e.g. zone=a.">
            <input value={labels} onInput={(e) => (setLabels(val(e)), setPlan(null))} />
          </Field>
          <Field label="Namespaces" hint="Only proxies of these node namespaces.">
            <input value={namespaces} onInput={(e) => (setNamespaces(val(e)), setPlan(null))} />
          </Field>
        </Section>
        <Section title="How" id="h-strategy">
          <fieldset class="fieldset" onChange={() => setPlan(null)}>
            <legend>Strategy</legend>
            <label class="check">
              <input type="radio" name="strategy" checked={type === 'all_at_once'} onChange={() => setType('all_at_once')} /> All at once
            </label>
            <label class="check">
              <input type="radio" name="strategy" checked={type === 'rolling'} onChange={() => setType('rolling')} /> Rolling, in waves
            </label>
            <label class="check">
              <input type="radio" name="strategy" checked={type === 'canary'} onChange={() => setType('canary')} /> Canary, growing
              share
            </label>
          </fieldset>
          {type === 'rolling' && (
            <div class="row-fields">
              <Field label="Wave by">
                <select value={waveMode} onChange={(e) => setWaveMode(val(e) as 'size' | 'percent')}>
                  <option value="percent">percent of the proxies</option>
                  <option value="size">number of proxies</option>
                </select>
              </Field>
              {waveMode === 'size' ? (
                <Field label="Proxies per wave">
                  <input type="number" min={1} value={waveSize} onInput={(e) => setWaveSize(val(e))} />
                </Field>
              ) : (
                <Field label="Percent per wave">
                  <input type="number" min={1} max={100} value={wavePercent} onInput={(e) => setWavePercent(val(e))} />
                </Field>
              )}
              <Field label="Pause between waves">
                <input value={pause} onInput={(e) => setPause(val(e))} placeholder="30s" />
              </Field>
            </div>
          )}
          {type === 'canary' && (
            <div class="row-fields">
              <Field label="First wave, percent">
                <input type="number" min={1} max={100} value={initialPercent} onInput={(e) => setInitialPercent(val(e))} />
              </Field>
              <Field label="Then add, percent">
                <input type="number" min={1} max={100} value={incrementPercent} onInput={(e) => setIncrementPercent(val(e))} />
              </Field>
              <Field label="Every">
                <input value={interval} onInput={(e) => setIntervalText(val(e))} placeholder="1m" />
              </Field>
            </div>
          )}
          <details class="fieldset">
            <summary>When to stop and roll back</summary>
            <p class="muted small">Empty fields keep the server's defaults (rollouts.* settings); the dry run shows them.</p>
            <div class="row-fields">
              <Field label="NACK threshold, percent">
                <input type="number" min={0} max={100} step="any" value={nackPercent} placeholder={plan?.policy ? String(plan.policy.nack_threshold * 100) : ''} onInput={(e) => (setNackPercent(val(e)), setPlan(null))} />
              </Field>
              <Field label="Minimum answers">
                <input type="number" min={0} value={minSample} placeholder={plan?.policy ? String(plan.policy.nack_min_sample) : ''} onInput={(e) => (setMinSample(val(e)), setPlan(null))} />
              </Field>
              <Field label="Wave timeout">
                <input value={waveTimeout} placeholder={plan?.policy?.wave_timeout ?? '10m'} onInput={(e) => (setWaveTimeout(val(e)), setPlan(null))} />
              </Field>
            </div>
            <label class="check">
              <input type="checkbox" checked={promote} onChange={(e) => (setPromote(e.currentTarget.checked), setPlan(null))} /> Make it the
              groups' current version once every wave has ACKed
            </label>
          </details>
          <Field label="Reason" hint="Kept with the deployment and in the audit log.">
            <input value={reason} onInput={(e) => setReason(val(e))} placeholder="e.g. ship the new timeouts" />
          </Field>
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
            <code>POST /api/v1/configs/{'{id}'}/apply</code> is not there. Saving a config still publishes it to its groups at once.
          </Empty>
        ) : (
          <div class="error-box" role="alert">
            <strong>The server refused</strong>
            <p>{describeError(error)}</p>
          </div>
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
              <DiffList diff={g.diff} />
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

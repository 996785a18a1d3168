// Snapshots.tsx — per proxy group, the composed snapshots (newest first), the content of
// one with the config versions it was built from, and the republishing of an older
// one as the group's newest version (after a confirmation showing what changes); above
// them, the data planes the group serves (components/dataPlanes.tsx). With ?config=ID the
// content shows only the resources that config put in the snapshot (its listeners, routes,
// backends and secrets, found by name), the link a managed config's page gives.
import {useEffect, useState} from 'preact/hooks';
import {ApiError, fetchOp} from '../lib/api';
import {bytes} from '../lib/format';
import {useAction, useApi, useGroups, useLive, usePaged, useTitle} from '../lib/hooks';
import {navigate, seg, setQuery, useLocation} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {Group, Snapshot} from '../lib/types';
import {DataPlanes} from '../components/dataPlanes';
import {JsonView, SideBySide} from '../components/editors';
import {ConfirmButtons, Refusal} from '../components/list';
import {Badge, Dialog, Empty, ErrorBox, Field, PageHead, Section, Time, toast, val} from '../components/ui';

function RepublishDialog({
  group,
  snap,
  latest,
  mayForce,
  onClose,
  onDone,
}: {
  group: string;
  snap: Snapshot;
  latest: Snapshot | undefined;
  mayForce: boolean;
  onClose: () => void;
  onDone: () => void;
}) {
  const [message, setMessage] = useState(`republish snapshot v${snap.version}`);
  const {busy, error, run} = useAction();
  const cur = useApi('getSnapshot', latest ? {path: {id: latest.id}} : null);
  // A refusal by validation (the content no longer passes what is checked today): its
  // problems, and the force a role with force_rollback may use.
  const refused = error instanceof ApiError && error.code === 'validation_failed' ? error : null;
  const problems = refused ? refused.details.filter((d) => d.path !== 'force') : [];
  const go = (force: boolean) =>
    run(async () => {
      const r = await fetchOp('rollbackGroup', {path: {group}, body: {snapshot_version: snap.version, message, ...(force ? {force} : {})}});
      toast(
        r.changed
          ? `Group ${group} now serves v${snap.version}'s content as v${r.version}${r.forced ? ' (forced past validation)' : ''}`
          : `Group ${group} already serves this content`,
      );
      onDone();
    });
  return (
    <Dialog title={`Republish snapshot v${snap.version} of ${group}?`} open onClose={onClose} wide>
      <p>
        Its content and sources become the group's newest version, pushed to every proxy of <strong>{group}</strong> at once. The configs
        are not touched: the next config change composes the group from its configs again. The content is validated as any change is.
      </p>
      {cur.data && (
        <div class="dialog-scroll">
          <SideBySide a={cur.data.ir} b={snap.ir} labels={[`now: v${cur.data.version}`, `republished: v${snap.version}`]} />
        </div>
      )}
      <Field label="Message">
        <input value={message} onInput={(e) => setMessage(val(e))} />
      </Field>
      {refused ? (
        <div class="error-box" role="alert" data-testid="republish-refused">
          <strong>Validation refuses this snapshot now</strong>
          <p>{refused.message}</p>
          <ul class="problems" aria-label="Problems">
            {problems.map((p, i) => (
              <li key={i}>
                <span class="problem-where">
                  <code class="mono">{p.path || 'snapshot'}</code>
                </span>{' '}
                <span class="problem-msg">
                  {p.stage && <Badge tone="neutral">{p.stage}</Badge>} {p.message}
                </span>
              </li>
            ))}
          </ul>
          <p class="muted small">
            {mayForce
              ? 'You may republish it anyway: the audit log records that it was forced and what validation said.'
              : 'Your role may not force a rollback past validation; fix the configs and publish a new version instead.'}
          </p>
        </div>
      ) : (
        error !== null && <Refusal title="Not republished" error={error} />
      )}
      <ConfirmButtons onCancel={onClose}>
        {refused && mayForce ? (
          <button type="button" class="btn btn-danger" onClick={() => go(true)} disabled={busy} data-testid="confirm-force-republish">
            Force republish v{snap.version}
          </button>
        ) : (
          <button type="button" class="btn btn-danger" onClick={() => go(false)} disabled={busy || refused !== null} data-testid="confirm-republish">
            Republish v{snap.version}
          </button>
        )}
      </ConfirmButtons>
    </Dialog>
  );
}

/** The kinds of resources a snapshot holds, as its JSON names them. */
const KINDS = [
  ['listeners', 'Listeners'],
  ['http_routes', 'HTTP routes'],
  ['grpc_routes', 'gRPC routes'],
  ['stream_routes', 'TCP, UDP and TLS routes'],
  ['backends', 'Backends (clusters)'],
  ['secrets', 'Secrets'],
] as const;

type Resource = Record<string, unknown>;
const items = (v: unknown): Resource[] => (Array.isArray(v) ? (v as Resource[]) : []);
/** How a resource is named within its kind (secrets are namespaced). */
const keyOf = (kind: string, r: Resource) => (kind === 'secrets' ? `${String(r.namespace ?? '')}/${String(r.name ?? '')}` : String(r.name ?? ''));

/** The resources of snapshot ir that config spec put there: per kind, those named as one of the spec's. */
function producedBy(ir: unknown, spec: unknown): Record<string, Resource[]> {
  const out: Record<string, Resource[]> = {};
  for (const [kind] of KINDS) {
    const mine = new Set(items((spec as Resource | null)?.[kind]).map((r) => keyOf(kind, r)));
    const found = items((ir as Resource | null)?.[kind]).filter((r) => mine.has(keyOf(kind, r)));
    if (found.length) out[kind] = found;
  }
  return out;
}

/** The part of snapshot snap that config configId produced (?config= on the snapshots page). */
function ConfigResources({snap, configId, group}: {snap: Snapshot; configId: string; group: string}) {
  const cfg = useApi('getConfig', {path: {id: configId}});
  if (cfg.error) return <ErrorBox error={cfg.error} retry={cfg.reload} what="the config" />;
  if (!cfg.data) return <p class="muted">Loading…</p>;
  const c = cfg.data;
  const src = snap.sources.find((x) => x.config_id === c.id);
  const mine = producedBy(snap.ir, c.spec);
  const count = Object.values(mine).reduce((n, l) => n + l.length, 0);
  return (
    <div data-testid="config-resources">
      <p class="notice">
        Showing the {count} resource{count === 1 ? '' : 's'} of config{' '}
        <a href={`/configs/${seg(c.id)}`}>
          {c.namespace}/{c.name}
        </a>{' '}
        {src ? <>(built from its v{src.version})</> : <strong>(this snapshot was not built from it)</strong>} in snapshot v{snap.version} of {group}.{' '}
        <a href={`/snapshots/${seg(group)}?v=${snap.version}`} data-testid="whole-snapshot">
          Show the whole snapshot
        </a>
      </p>
      {KINDS.filter(([k]) => mine[k]).map(([k, label]) => (
        <div key={k}>
          <h4>
            {label} ({mine[k].length})
          </h4>
          <ul class="chips" aria-label={label}>
            {mine[k].map((r) => (
              <li key={keyOf(k, r)} class="chip" data-testid="produced-resource" data-kind={k} data-name={keyOf(k, r)}>
                {keyOf(k, r)}
              </li>
            ))}
          </ul>
        </div>
      ))}
      <JsonView value={mine} label={`Resources of config ${c.namespace}/${c.name} in snapshot v${snap.version} of ${group}`} />
    </div>
  );
}

export function SnapshotsPage({group}: {group: string | null}) {
  useTitle(group ? `Snapshots of ${group}` : 'Snapshots');
  const me = useStore(session).me;
  const {query} = useLocation();
  const groups = useGroups();
  const versions = usePaged('listSnapshots', group ? {query: {group}} : null, 100);
  useLive(versions.reload, (e) => /^(config_|rollout|rollback)/.test(e.type), 2000);
  const selectedVersion = Number(query.get('v')) || versions.items[0]?.version;
  const configFilter = query.get('config');
  const selected = versions.items.find((s) => s.version === selectedVersion);
  const detail = useApi('getSnapshot', selected ? {path: {id: selected.id}} : null);
  const [republish, setRepublish] = useState(false);
  const only = !group && groups.data?.items.length === 1 ? groups.data.items[0].name : null;
  useEffect(() => {
    if (only) navigate(`/snapshots/${seg(only)}`, {replace: true});
  }, [only]);

  if (!group) {
    if (groups.error && !groups.data) return <ErrorBox error={groups.error} retry={groups.reload} what="groups" />;
    const list = groups.data?.items ?? [];
    return (
      <>
        <PageHead title="Snapshots" sub="What each proxy group is served, version by version." />
        {groups.data && !list.length ? (
          <Empty title="No snapshots yet">A group's first snapshot is composed when a config naming it is saved.</Empty>
        ) : (
          <ul class="list">
            {list.map((g) => (
              <li key={g.name}>
                <a href={`/snapshots/${seg(g.name)}`}>{g.name}</a> <span class="muted">v{g.latest_version}</span>{' '}
                <span class="muted small">{g.data_planes.join(', ')}</span>
              </li>
            ))}
          </ul>
        )}
      </>
    );
  }
  const latest = versions.items[0];
  const mayRepublish = can(me, 'groups', 'rollback');
  return (
    <>
      <PageHead
        title={`Snapshots of ${group}`}
        sub="Snapshots are immutable; republishing an old one writes a new version with its content."
      >
        <label class="inline-field">
          Group{' '}
          <select value={group} onChange={(e) => navigate(`/snapshots/${seg(val(e))}`)}>
            {(groups.data?.items ?? [{name: group} as Group]).map((g) => (
              <option key={g.name} value={g.name}>
                {g.name}
              </option>
            ))}
          </select>
        </label>
      </PageHead>
      <DataPlanes group={group} />
      {versions.error && <ErrorBox error={versions.error} retry={versions.reload} what="snapshots" />}
      {!versions.loading && !versions.error && !versions.items.length && <Empty title={`No snapshots for ${group}`} />}
      <div class="history-layout">
        <Section title="Versions" id="h-snaps">
          <ol class="timeline" data-testid="snapshot-versions">
            {versions.items.map((s) => (
              <li key={s.id} class={s.version === selectedVersion ? 'tl-item tl-selected' : 'tl-item'}>
                <button
                  type="button"
                  class="tl-button"
                  onClick={() => setQuery({v: String(s.version)})}
                  aria-pressed={s.version === selectedVersion}
                >
                  <span class="tl-head">
                    <strong>v{s.version}</strong> {s === latest && <Badge tone="info">serving</Badge>}
                  </span>
                  <span class="tl-msg">{s.reason || <span class="muted">(no reason)</span>}</span>
                  <span class="tl-meta muted small">
                    {s.created_by} · <Time iso={s.created_at} /> · {bytes(s.size_bytes)}
                  </span>
                </button>
              </li>
            ))}
          </ol>
          {versions.next && (
            <button type="button" class="btn" onClick={versions.more}>
              Older snapshots
            </button>
          )}
        </Section>
        <Section
          title={selected ? `v${selected.version}` : 'Content'}
          id="h-snap"
          actions={
            selected &&
            mayRepublish &&
            selected !== latest && (
              <button type="button" class="btn btn-danger-outline" onClick={() => setRepublish(true)} data-testid="republish">
                Republish v{selected.version}
              </button>
            )
          }
        >
          {detail.error && <ErrorBox error={detail.error} retry={detail.reload} what="the snapshot" />}
          {detail.data && (
            <>
              <p class="small">
                Built from{' '}
                {detail.data.sources.length
                  ? detail.data.sources.map((src, i) => (
                      <span key={src.config_id}>
                        {i > 0 && ', '}
                        <a href={`/configs/${seg(src.config_id)}/history?to=${src.version}`}>
                          {src.namespace ? `${src.namespace}/${src.name}` : src.config_id.slice(0, 8)} v{src.version}
                        </a>
                      </span>
                    ))
                  : 'no config (published directly)'}
                . Checksum <code class="mono">{detail.data.checksum.slice(0, 16)}</code>.
              </p>
              {configFilter ? (
                <ConfigResources snap={detail.data} configId={configFilter} group={group} />
              ) : (
                <JsonView value={detail.data.ir} label={`Snapshot v${detail.data.version} of ${group}`} />
              )}
            </>
          )}
        </Section>
      </div>
      {republish && selected && detail.data && (
        <RepublishDialog
          group={group}
          snap={detail.data}
          latest={latest}
          mayForce={can(me, 'groups', 'force_rollback')}
          onClose={() => setRepublish(false)}
          onDone={() => {
            setRepublish(false);
            setQuery({v: null});
            void versions.reload();
          }}
        />
      )}
    </>
  );
}

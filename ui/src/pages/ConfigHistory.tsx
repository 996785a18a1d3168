// ConfigHistory.tsx — a config's versions as a timeline, the difference between any
// two of them (the API's structured diff and the two specs side by side), and the
// rollback to a chosen version after a confirmation that shows what will change.
import {useEffect, useState} from 'preact/hooks';
import {ApiError, call} from '../lib/api';
import {when} from '../lib/format';
import {useAction, useApi, usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {Config} from '../lib/types';
import {DiffList, SideBySide} from '../components/editors';
import {ConfirmButtons, Refusal} from '../components/list';
import {Badge, Dialog, Empty, ErrorBox, Field, PageHead, Section, SourceBadge, Time, toast, val} from '../components/ui';

function RollbackDialog({
  config,
  target,
  onClose,
  onDone,
}: {
  config: Config;
  target: number;
  onClose: () => void;
  onDone: (c: Config) => void;
}) {
  const diff = useApi('diffConfigVersions', {path: {id: config.id}, query: {from: config.version, to: target}});
  const [message, setMessage] = useState(`rollback to version ${target}`);
  const {busy, error, run} = useAction();
  const confirm = () =>
    run(async () => {
      const r = await call(
        'rollbackConfig',
        {path: {id: config.id}, body: {version: target, message}},
        {headers: {'If-Match': `"${config.version}"`}},
      );
      toast(`Rolled back: version ${r.data.version} has version ${target}'s spec`);
      onDone(r.data);
    });
  const n = diff.data ? diff.data.added.length + diff.data.removed.length + diff.data.changed.length : 0;
  return (
    <Dialog title={`Roll back to version ${target}?`} open onClose={onClose} wide>
      <p>
        This writes version <strong>{config.version + 1}</strong> with the spec of version {target}, validated again, and publishes it to
        the groups <strong>{config.groups.join(', ')}</strong>. What changes from the current version {config.version}:
      </p>
      <div class="dialog-scroll" data-testid="rollback-diff">
        {diff.error && <ErrorBox error={diff.error} retry={diff.reload} what="the difference" />}
        {diff.data ? <DiffList diff={diff.data} /> : !diff.error && <p class="muted">Loading the difference…</p>}
      </div>
      <Field label="Message">
        <input value={message} onInput={(e) => setMessage(val(e))} />
      </Field>
      {error !== null && (
        <Refusal title="Not rolled back" error={error}>
          {error instanceof ApiError && error.status === 412
            ? 'Someone saved a new version meanwhile; close this dialog and look at the history again.'
            : undefined}
        </Refusal>
      )}
      <ConfirmButtons onCancel={onClose}>
        <button type="button" class="btn btn-danger" onClick={confirm} disabled={busy || !diff.data} data-testid="confirm-rollback">
          {busy ? 'Rolling back…' : n === 0 ? `Roll back (no change)` : `Roll back to version ${target}`}
        </button>
      </ConfirmButtons>
    </Dialog>
  );
}

/** One end of the compared pair: a version picked from the list. */
function VersionPick({
  label,
  aria,
  value,
  options,
  onPick,
}: {
  label: string;
  aria: string;
  value: number;
  options: number[];
  onPick: (v: string) => void;
}) {
  return (
    <label>
      {label}{' '}
      <select value={value} onChange={(e) => onPick(val(e))} aria-label={aria}>
        {options.map((v) => (
          <option key={v} value={v}>
            v{v}
          </option>
        ))}
      </select>
    </label>
  );
}

export function ConfigHistoryPage({id}: {id: string}) {
  const me = useStore(session).me;
  const {query} = useLocation();
  const cfg = useApi('getConfig', {path: {id}});
  const versions = usePaged('listConfigVersions', {path: {id}}, 200);
  useTitle(cfg.data ? `History of ${cfg.data.namespace}/${cfg.data.name}` : 'History');
  const latest = cfg.data?.version ?? 0;
  const to = Number(query.get('to')) || latest;
  const from = Number(query.get('from')) || (to > 1 ? to - 1 : 1);
  const [rollbackTo, setRollbackTo] = useState<number | null>(null);

  const ready = latest > 0;
  const diff = useApi('diffConfigVersions', ready ? {path: {id}, query: {from, to}} : null);
  const va = useApi('getConfigVersion', ready ? {path: {id, v: from}} : null);
  const vb = useApi('getConfigVersion', ready ? {path: {id, v: to}} : null);
  // The view is in the address (?view=side), so a link restores it.
  const view = query.get('view') === 'side' ? 'side' : 'list';
  const setView = (v: 'list' | 'side') => setQuery({view: v === 'side' ? v : null});

  useEffect(() => {
    setRollbackTo(null);
  }, [id]);

  if (cfg.error instanceof ApiError && cfg.error.status === 404)
    return (
      <Empty title="No such config">
        <a href="/configs">All configs</a>
      </Empty>
    );
  if (cfg.error && !cfg.data) return <ErrorBox error={cfg.error} retry={cfg.reload} what="the config" />;
  const c = cfg.data;
  const mayRollback = can(me, 'configs', 'rollback');
  const options = versions.items.map((v) => v.version);

  return (
    <>
      <PageHead
        title={c ? `${c.namespace}/${c.name}` : 'History'}
        sub={
          c ? (
            <>
              History: {c.version} version{c.version === 1 ? '' : 's'}, live v{c.live_version ?? '—'}{' '}
              <SourceBadge source={c.source} sourceRef={c.source_ref} />
            </>
          ) : (
            'Loading…'
          )
        }
      >
        {c && (
          <a class="btn" href={`/configs/${seg(c.id)}`}>
            {can(me, 'configs', 'update') && c.source !== 'kubernetes' ? 'Edit' : 'View spec'}
          </a>
        )}
      </PageHead>
      <div class="history-layout">
        <Section title="Versions" id="h-versions">
          {versions.error && <ErrorBox error={versions.error} retry={versions.reload} what="versions" />}
          <ol class="timeline" data-testid="timeline">
            {versions.items.map((v) => (
              <li
                key={v.version}
                class={v.version === to || v.version === from ? 'tl-item tl-selected' : 'tl-item'}
                data-version={v.version}
              >
                <div class="tl-head">
                  <strong>v{v.version}</strong>
                  {v.version === latest && <Badge tone="info">latest</Badge>}
                  {c?.live_version === v.version && <Badge tone="ok">live</Badge>}
                  {v.draft && <Badge tone="warn">draft</Badge>}
                  {v.source_version && <Badge tone="neutral">rollback of v{v.source_version}</Badge>}
                </div>
                <div class="tl-msg">{v.message || <span class="muted">(no message)</span>}</div>
                <div class="tl-meta muted small">
                  {v.author} · <Time iso={v.created_at} /> · <span title={when(v.created_at)}>{v.checksum.slice(0, 10)}</span>
                </div>
                <div class="tl-actions">
                  {v.version > 1 && (
                    <button
                      type="button"
                      class="btn btn-small"
                      onClick={() => setQuery({from: String(v.version - 1), to: String(v.version)})}
                    >
                      Changes in v{v.version}
                    </button>
                  )}
                  {v.version !== latest && (
                    <button type="button" class="btn btn-small" onClick={() => setQuery({from: String(v.version), to: String(latest)})}>
                      Compare with latest
                    </button>
                  )}
                  {mayRollback && v.version !== latest && c && (
                    <button type="button" class="btn btn-small btn-danger-outline" onClick={() => setRollbackTo(v.version)}>
                      Roll back to v{v.version}
                    </button>
                  )}
                </div>
              </li>
            ))}
          </ol>
          {versions.next && (
            <button type="button" class="btn" onClick={versions.more}>
              Older versions
            </button>
          )}
        </Section>
        <Section
          title="Difference"
          id="h-diff"
          actions={
            <div class="diff-controls">
              <VersionPick label="From" aria="From version" value={from} options={options} onPick={(v) => setQuery({from: v})} />
              <VersionPick label="to" aria="To version" value={to} options={options} onPick={(v) => setQuery({to: v})} />
              <div class="tabs" role="tablist" aria-label="Diff view">
                <button type="button" role="tab" class="tab" aria-selected={view === 'list'} onClick={() => setView('list')}>
                  Changes
                </button>
                <button type="button" role="tab" class="tab" aria-selected={view === 'side'} onClick={() => setView('side')}>
                  Side by side
                </button>
              </div>
            </div>
          }
        >
          <div class="diff-area">
            {diff.error && <ErrorBox error={diff.error} retry={diff.reload} what="the difference" />}
            {view === 'list' && diff.data && (
              <>
                <p class="muted small" data-testid="diff-summary">
                  v{diff.data.from} → v{diff.data.to}: {diff.data.changed.length} changed, {diff.data.added.length} added,{' '}
                  {diff.data.removed.length} removed
                </p>
                <DiffList diff={diff.data} />
              </>
            )}
            {view === 'side' && va.data && vb.data && (
              <SideBySide a={va.data.spec} b={vb.data.spec} labels={[`v${va.data.version}`, `v${vb.data.version}`]} />
            )}
            {!diff.data && !diff.error && <p class="muted">Loading…</p>}
          </div>
        </Section>
      </div>
      {rollbackTo !== null && c && (
        <RollbackDialog
          config={c}
          target={rollbackTo}
          onClose={() => setRollbackTo(null)}
          onDone={(nc) => {
            setRollbackTo(null);
            void cfg.reload();
            void versions.reload();
            setQuery({from: String(nc.version - 1), to: String(nc.version)});
          }}
        />
      )}
    </>
  );
}

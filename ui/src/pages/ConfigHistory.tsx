// ConfigHistory.tsx — a config's versions as a timeline, the difference between any
// two of them (the API's structured diff and the two specs side by side), and the
// rollback to a chosen version after a confirmation that shows what will change.
import {useEffect, useState} from 'preact/hooks';
import {ApiError, describeError, request} from '../lib/api';
import {when} from '../lib/format';
import {useApi, usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import {can, session} from '../lib/session';
import {useStore} from '../lib/store';
import type {Config, ConfigDiff, ConfigVersion} from '../lib/types';
import {DiffList, SideBySide} from '../components/editors';
import {Badge, Dialog, Empty, ErrorBox, Field, PageHead, Section, Time, toast, val} from '../components/ui';

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
  const diff = useApi<ConfigDiff>(`/api/v1/configs/${seg(config.id)}/diff?from=${config.version}&to=${target}`);
  const [message, setMessage] = useState(`rollback to version ${target}`);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await request<Config & {rollback: {after_version: number}}>('POST', `/api/v1/configs/${seg(config.id)}/rollback`, {
        body: {version: target, message},
        headers: {'If-Match': `"${config.version}"`},
      });
      toast(`Rolled back: version ${r.data.version} has version ${target}'s spec`);
      onDone(r.data);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const n = diff.data ? diff.data.added.length + diff.data.removed.length + diff.data.changed.length : 0;
  return (
    <Dialog title={`Roll back to version ${target}?`} open onClose={onClose} wide>
      <p>
        This writes version <strong>{config.version + 1}</strong> with the spec of version {target}, validated again, and publishes it
        to the groups <strong>{config.groups.join(', ')}</strong>. What changes from the current version {config.version}:
      </p>
      <div class="dialog-scroll" data-testid="rollback-diff">
        {diff.error && <ErrorBox error={diff.error} retry={diff.reload} what="the difference" />}
        {diff.data ? <DiffList diff={diff.data} /> : !diff.error && <p class="muted">Loading the difference…</p>}
      </div>
      <Field label="Message">
        <input value={message} onInput={(e) => setMessage(val(e))} />
      </Field>
      {error !== null && (
        <div class="error-box" role="alert">
          <strong>Not rolled back</strong>
          <p>
            {error instanceof ApiError && error.status === 412
              ? 'Someone saved a new version meanwhile; close this dialog and look at the history again.'
              : describeError(error)}
          </p>
        </div>
      )}
      <div class="btn-row dialog-actions">
        <button type="button" class="btn" onClick={onClose}>
          Cancel
        </button>
        <button type="button" class="btn btn-danger" onClick={confirm} disabled={busy || !diff.data} data-testid="confirm-rollback">
          {busy ? 'Rolling back…' : n === 0 ? `Roll back (no change)` : `Roll back to version ${target}`}
        </button>
      </div>
    </Dialog>
  );
}

export function ConfigHistoryPage({id}: {id: string}) {
  const me = useStore(session).me;
  const {query} = useLocation();
  const cfg = useApi<Config>(`/api/v1/configs/${seg(id)}`);
  const versions = usePaged<ConfigVersion>(`/api/v1/configs/${seg(id)}/versions`, 200);
  useTitle(cfg.data ? `History of ${cfg.data.namespace}/${cfg.data.name}` : 'History');
  const latest = cfg.data?.version ?? 0;
  const to = Number(query.get('to')) || latest;
  const from = Number(query.get('from')) || (to > 1 ? to - 1 : 1);
  const [rollbackTo, setRollbackTo] = useState<number | null>(null);

  const ready = latest > 0;
  const diff = useApi<ConfigDiff>(ready ? `/api/v1/configs/${seg(id)}/diff?from=${from}&to=${to}` : null);
  const va = useApi<ConfigVersion>(ready ? `/api/v1/configs/${seg(id)}/versions/${from}` : null);
  const vb = useApi<ConfigVersion>(ready ? `/api/v1/configs/${seg(id)}/versions/${to}` : null);
  const [view, setView] = useState<'list' | 'side'>('list');

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
        sub={c ? <>History: {c.version} version{c.version === 1 ? '' : 's'}, live v{c.live_version ?? '—'}</> : 'Loading…'}
      >
        {c && (
          <a class="btn" href={`/configs/${seg(c.id)}`}>
            {can(me, 'configs', 'update') ? 'Edit' : 'View spec'}
          </a>
        )}
      </PageHead>
      <div class="history-layout">
        <Section title="Versions" id="h-versions">
          {versions.error && <ErrorBox error={versions.error} retry={versions.reload} what="versions" />}
          <ol class="timeline" data-testid="timeline">
            {versions.items.map((v) => (
              <li key={v.version} class={v.version === to || v.version === from ? 'tl-item tl-selected' : 'tl-item'} data-version={v.version}>
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
                    <button type="button" class="btn btn-small" onClick={() => setQuery({from: String(v.version - 1), to: String(v.version)})}>
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
              <label>
                From{' '}
                <select value={from} onChange={(e) => setQuery({from: val(e)})} aria-label="From version">
                  {options.map((v) => (
                    <option key={v} value={v}>
                      v{v}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                to{' '}
                <select value={to} onChange={(e) => setQuery({to: val(e)})} aria-label="To version">
                  {options.map((v) => (
                    <option key={v} value={v}>
                      v{v}
                    </option>
                  ))}
                </select>
              </label>
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

// Proxy.tsx — one proxy: who it is, the snapshot it should have next to the one it
// acknowledged (with their difference when they differ), the content of that snapshot,
// and its NACK history (GET /proxies/{id}/nacks, kept for events.retention).
import type {ComponentChildren} from 'preact';
import {ApiError} from '../lib/api';
import {showJson, when} from '../lib/format';
import {useApi, useLive, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import {Badge, Empty, ErrorBox, Labels, PageHead, Section, StateBadge, Time} from '../components/ui';
import {JsonView, SideBySide} from '../components/editors';
import {Table} from '../components/list';

function Row({k, children}: {k: string; children: ComponentChildren}) {
  return (
    <>
      <dt>{k}</dt>
      <dd>{children}</dd>
    </>
  );
}

export function ProxyPage({id}: {id: string}) {
  useTitle(id);
  const node = {path: {node_id: id}};
  const p = useApi('getProxy', node);
  const c = useApi('getProxyConfig', node);
  const nacks = useApi('listProxyNacks', {...node, query: {limit: 20}});
  // The tab is in the address (?tab=acked), so a link restores it.
  const {query} = useLocation();
  const tab = (['desired', 'acked', 'diff'] as const).find((t) => t === query.get('tab')) ?? 'desired';
  const setTab = (t: 'desired' | 'acked' | 'diff') => setQuery({tab: t === 'desired' ? null : t});
  const mine = (e: {data: Record<string, unknown> | null}) => !e.data?.node_id || e.data.node_id === id;
  useLive(
    () => {
      void p.reload();
      void c.reload();
      void nacks.reload();
    },
    (e) => /^(proxy_|config_)/.test(e.type) && mine(e),
    1000,
  );

  if (p.error instanceof ApiError && p.error.status === 404)
    return (
      <Empty title={`No proxy ${id}`}>
        Sextant has never seen a node with this id. <a href="/proxies">All proxies</a>
      </Empty>
    );
  if (p.error && !p.data) return <ErrorBox error={p.error} retry={p.reload} what="the proxy" />;
  const x = p.data;
  const cfg = c.data;
  const differs = cfg && cfg.desired && cfg.acked && cfg.desired.version !== cfg.acked.version;

  return (
    <>
      <PageHead
        title={<span class="mono">{id}</span>}
        sub={
          x ? (
            <>
              <StateBadge state={x.state} /> {x.nacking && <StateBadge state="nacking" />} in group{' '}
              <a href={`/proxies?group=${seg(x.group)}`}>{x.group}</a>
            </>
          ) : (
            'Loading…'
          )
        }
      />
      {x && (
        <div class="grid-2">
          <Section title="Identity" id="h-identity">
            <dl class="facts">
              <Row k="Node ID">
                <span class="mono">{x.node_id}</span>
              </Row>
              <Row k="Group">{x.group}</Row>
              <Row k="Namespace">{x.namespace || <span class="muted">—</span>}</Row>
              <Row k="Client">
                {x.client || '—'} <span class="muted">({x.protocol || 'unknown protocol'})</span>
              </Row>
              <Row k="Labels">
                <Labels labels={x.labels} />
              </Row>
              <Row k="Locality">
                <span class="mono small">{Object.keys(x.locality).length ? showJson(x.locality) : '—'}</span>
              </Row>
              <Row k="Replica">{x.replica_id ?? '—'}</Row>
              <Row k="First seen">{when(x.first_seen)}</Row>
              <Row k="Last seen">
                <Time iso={x.last_seen} />
              </Row>
              {x.disconnect_reason && <Row k="Disconnected because">{x.disconnect_reason}</Row>}
            </dl>
          </Section>
          <Section title="Versions" id="h-versions">
            <dl class="facts">
              <Row k="Should have">
                {cfg?.desired ? (
                  <>
                    v{cfg.desired.version}{' '}
                    <Badge tone="neutral">{cfg.assignment === 'pinned' ? `pinned${x.deployment_id ? ' by a rollout' : ''}` : 'group latest'}</Badge>
                  </>
                ) : (
                  <span class="muted">no snapshot for the group</span>
                )}
              </Row>
              <Row k="Sent">
                {x.sent_version !== null ? `v${x.sent_version}` : '—'} <Time iso={x.sent_at} />
              </Row>
              <Row k="Acknowledged">
                <span data-testid="proxy-acked">{x.acked_version !== null ? `v${x.acked_version}` : 'nothing yet'}</span>{' '}
                <Time iso={x.acked_at} />{' '}
                {cfg && (cfg.in_sync ? <Badge tone="ok">in sync</Badge> : <Badge tone="warn">behind</Badge>)}
              </Row>
              {x.deployment_id && (
                <Row k="Rollout">
                  <a href={`/deployments/${seg(x.deployment_id)}`}>{x.deployment_id}</a>
                </Row>
              )}
              <Row k="NACKs">{x.nack_count}</Row>
              {x.status_report && (
                <Row k="Status report">
                  {x.status_report.ready ? <Badge tone="ok">ready</Badge> : <Badge tone="warn">not ready</Badge>}{' '}
                  {x.status_report.version && `v${x.status_report.version}`} {x.status_report.message}{' '}
                  <Time iso={x.status_report.at} />
                </Row>
              )}
            </dl>
          </Section>
        </div>
      )}
      {x && (
        <Section title="NACK history" id="h-nack">
          {x.last_nack ? (
            <div class="nack" data-testid="last-nack">
              <p>
                Last rejected <strong>v{x.last_nack.version ?? '?'}</strong> <Time iso={x.last_nack.at} /> ({when(x.last_nack.at)})
              </p>
              <pre class="value-pre">{x.last_nack.error ?? '(no error detail)'}</pre>
              <p class="muted small">
                {x.nack_count} NACK{x.nack_count === 1 ? '' : 's'} in all.
              </p>
              {nacks.data && nacks.data.items.length > 0 && (
                <Table head={['When', 'Version', 'Error', 'Replica']} testid="nack-history">
                  {nacks.data.items.map((n) => (
                    <tr key={`${n.at}-${n.version}`}>
                      <td>
                        <Time iso={n.at} />
                      </td>
                      <td class="mono">v{n.version ?? '?'}</td>
                      <td class="mono small">{n.error || '(no error detail)'}</td>
                      <td class="mono small">{n.replica || '—'}</td>
                    </tr>
                  ))}
                </Table>
              )}
            </div>
          ) : (
            <p class="muted">This proxy has never rejected a configuration.</p>
          )}
        </Section>
      )}
      <Section
        title="Snapshot"
        id="h-snapshot"
        actions={
          <div class="tabs" role="tablist" aria-label="Snapshot">
            <button type="button" role="tab" aria-selected={tab === 'desired'} class="tab" onClick={() => setTab('desired')}>
              Should have{cfg?.desired ? ` (v${cfg.desired.version})` : ''}
            </button>
            <button type="button" role="tab" aria-selected={tab === 'acked'} class="tab" onClick={() => setTab('acked')}>
              Acknowledged{cfg?.acked ? ` (v${cfg.acked.version})` : ''}
            </button>
            <button type="button" role="tab" aria-selected={tab === 'diff'} class="tab" disabled={!differs} onClick={() => setTab('diff')}>
              Difference
            </button>
          </div>
        }
      >
        {c.error && !cfg && <ErrorBox error={c.error} retry={c.reload} what="the snapshot" />}
        {cfg && tab === 'desired' && (cfg.desired ? <JsonView value={cfg.desired.ir} label="Snapshot the proxy should have" /> : <Empty title="No snapshot" />)}
        {cfg && tab === 'acked' && (cfg.acked ? <JsonView value={cfg.acked.ir} label="Snapshot the proxy acknowledged" /> : <Empty title="Nothing acknowledged yet" />)}
        {cfg && tab === 'diff' && differs && (
          <SideBySide a={cfg.acked!.ir} b={cfg.desired!.ir} labels={[`acknowledged v${cfg.acked!.version}`, `should have v${cfg.desired!.version}`]} />
        )}
      </Section>
    </>
  );
}

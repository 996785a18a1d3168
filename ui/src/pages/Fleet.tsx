// Fleet.tsx — the fleet at a glance: every proxy group with its proxies counted by state
// and by whether they hold the group's current snapshot version, the version
// distribution as a stacked bar that moves with a rollout, replicas and proxies shown
// on demand (so ten thousand proxies stay a few lines), and a heatmap of the proxies'
// health per group and minute over the last hour. Everything reloads on live events.
import {useEffect, useRef, useState} from 'preact/hooks';
import {useApi, useLive, usePaged, useTitle} from '../lib/hooks';
import {seg, setQuery, useLocation} from '../lib/router';
import type {FleetCounts, FleetGroup, FleetHealth, Proxy} from '../lib/types';
import {ChartDefs, StackedBar, Swatch, type Segment} from '../components/charts';
import {ErrorBox, PageHead, Section} from '../components/ui';

const FLEET_EVENTS = /^(config_applied|config_rejected|proxy_|wave_|rollout_|rollback_|snapshot_generated|deployment_started)/;

/** The fill and the word for a proxy's version relative to its group's current one. */
function versionLook(v: number | null, cur: number | null): {fill: string; word: string; mark: string} {
  if (v === null) return {fill: 'var(--off-bg)', word: 'none ACKed', mark: '∅'};
  if (cur !== null && v === cur) return {fill: 'var(--ok)', word: 'current', mark: '✓'};
  if (cur === null || v > cur) return {fill: 'var(--info)', word: 'newer (rolling out)', mark: '↑'};
  return {fill: 'url(#pat-hatch)', word: 'behind', mark: '↓'};
}

const STATE_MARK: Record<string, string> = {connected: '●', stale: '◐', disconnected: '○'};

/** "10 connected · 1 stale · ..." with a mark per state. */
function CountsLine({c}: {c: FleetCounts}) {
  const parts: [string, number, string][] = [
    ['connected', c.connected, 'state-connected'],
    ['stale', c.stale, 'state-stale'],
    ['disconnected', c.disconnected, 'state-disconnected'],
  ];
  return (
    <span class="counts-line">
      {parts.map(([k, n, cls]) => (
        <span key={k} class={`${cls}${n ? '' : ' zero'}`} data-testid={`count-${k}`}>
          <span aria-hidden="true">{STATE_MARK[k]}</span> {n} {k}
        </span>
      ))}
      <span class={c.nacking ? 'state-nacking' : 'zero'} data-testid="count-nacking">
        <span aria-hidden="true">✕</span> {c.nacking} NACKing
      </span>
      <span class="sep" aria-hidden="true">
        |
      </span>
      <span class="ver-current" data-testid="count-current">
        <span aria-hidden="true">✓</span> {c.current} current
      </span>
      {c.ahead > 0 && (
        <span class="ver-ahead" data-testid="count-ahead">
          <span aria-hidden="true">↑</span> {c.ahead} newer
        </span>
      )}
      <span class={c.behind ? 'ver-behind' : 'zero'} data-testid="count-behind">
        <span aria-hidden="true">↓</span> {c.behind} behind
      </span>
    </span>
  );
}

function VersionBar({g}: {g: FleetGroup}) {
  const segs: Segment[] = g.versions.map((v) => {
    const look = versionLook(v.version, g.current_version);
    return {
      key: String(v.version),
      value: v.count,
      fill: look.fill,
      label: `${v.version === null ? 'no version ACKed' : `v${v.version}`} (${look.word}): ${v.count} prox${v.count === 1 ? 'y' : 'ies'}`,
      attrs: {'data-testid': 'version-seg', 'data-version': v.version === null ? 'none' : v.version, 'data-count': v.count},
    };
  });
  const total = g.versions.reduce((n, v) => n + v.count, 0);
  return (
    <div class="version-dist">
      <StackedBar segments={segs} label={`Version distribution of ${g.group}`} testid={`version-bar-${g.group}`} />
      <ul class="version-legend" data-testid={`version-legend-${g.group}`}>
        {g.versions.length === 0 && <li class="muted">no proxy connected</li>}
        {g.versions.map((v) => {
          const look = versionLook(v.version, g.current_version);
          return (
            <li key={String(v.version)} data-version={v.version === null ? 'none' : v.version} data-count={v.count}>
              <Swatch fill={look.fill} mark={look.mark}>
                <span class="mono">{v.version === null ? '—' : `v${v.version}`}</span> {look.word}: <strong>{v.count}</strong>
                <span class="muted"> ({Math.round((100 * v.count) / (total || 1))} %)</span>
              </Swatch>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** The proxies of one replica in a group, loaded when the replica is opened. */
function ReplicaProxies({group, replica, current}: {group: string; replica: string; current: number | null}) {
  const list = usePaged('listProxies', {query: {group}}, 500);
  useLive(list.reload, (e) => FLEET_EVENTS.test(e.type), 1000);
  const mine = list.items.filter((p: Proxy) => (p.replica_id ?? '') === replica);
  if (list.error && !list.items.length) return <ErrorBox error={list.error} retry={list.reload} what="the proxies" />;
  return (
    <div>
      <ul class="proxy-chips" data-testid={`proxies-${group}-${replica || 'none'}`}>
        {mine.map((p) => {
          const v = p.acked_version ?? null;
          const look = versionLook(v, current);
          const st = p.nacking && p.state !== 'disconnected' ? 'nacking' : p.state;
          return (
            <li key={p.node_id}>
              <a
                href={`/proxies/${seg(p.node_id)}`}
                class={`pchip pchip-${st} pchip-${look.word.split(' ')[0]}`}
                data-testid="proxy-chip"
                data-state={p.state}
                data-version={v ?? 'none'}
                title={`${p.node_id}: ${p.state}${p.nacking ? ', NACKing' : ''}, ${v === null ? 'no version ACKed' : `v${v}`} (${look.word})`}
              >
                <span aria-hidden="true">{st === 'nacking' ? '✕' : STATE_MARK[p.state]}</span>
                <span class="mono">{p.node_id}</span>
                <span class="pchip-ver">
                  {v === null ? '—' : `v${v}`} <span aria-hidden="true">{look.mark}</span>
                  <span class="sr-only">{look.word}</span>
                </span>
              </a>
            </li>
          );
        })}
      </ul>
      {list.loading && <p class="muted small">Loading…</p>}
      {list.next && (
        <button type="button" class="btn btn-small" onClick={() => list.more()}>
          Load more proxies of {group}
        </button>
      )}
      {!list.loading && !list.next && mine.length === 0 && <p class="muted small">No proxy of this replica.</p>}
    </div>
  );
}

/** One group's card. chosen: the address names this group (?group=NAME, where the
 * search sends a group): its replicas are shown and the card is scrolled into view.
 * Opening or closing the replicas writes the address, so it can be shared. */
function GroupCard({g, chosen}: {g: FleetGroup; chosen: boolean}) {
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const [expanded, setExpanded] = useState(chosen);
  const card = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (!chosen) return;
    setExpanded(true);
    card.current?.scrollIntoView({block: 'start'});
  }, [chosen]);
  return (
    <li
      ref={card}
      class={chosen ? 'fleet-group chosen' : 'fleet-group'}
      data-testid={`fleet-group-${g.group}`}
      data-total={g.counts.total}
      aria-current={chosen ? 'true' : undefined}
    >
      <div class="fleet-group-head">
        <h3 id={`group-${g.group}`}>
          <a href={`/proxies?group=${encodeURIComponent(g.group)}`}>{g.group}</a>
        </h3>
        <span class="muted small">
          current <span class="mono">{g.current_version === null ? '—' : `v${g.current_version}`}</span>
          {g.latest_version !== null && g.latest_version !== g.current_version && (
            <>
              {' '}
              · staged <span class="mono">v{g.latest_version}</span>
            </>
          )}{' '}
          · {g.counts.total} prox{g.counts.total === 1 ? 'y' : 'ies'}
        </span>
      </div>
      <CountsLine c={g.counts} />
      <VersionBar g={g} />
      <details
        class="fleet-replicas"
        open={expanded}
        onToggle={(e) => {
          const now = e.currentTarget.open;
          if (now === expanded) return;
          setExpanded(now);
          if (now) setQuery({group: g.group});
          else if (chosen) setQuery({group: null});
        }}
      >
        <summary>
          {g.replicas.length} replica{g.replicas.length === 1 ? '' : 's'}
          <span class="sr-only"> of {g.group}</span>
        </summary>
        <ul class="replica-rows">
          {g.replicas.map((r) => {
            const key = r.replica_id;
            const c = r.counts;
            const segs: Segment[] = [
              {key: 'cur', value: c.current, fill: 'var(--ok)', label: `${c.current} current`},
              {key: 'ahead', value: c.ahead, fill: 'var(--info)', label: `${c.ahead} newer`},
              {key: 'behind', value: c.behind, fill: 'url(#pat-hatch)', label: `${c.behind} behind`},
              {key: 'disc', value: c.disconnected, fill: 'var(--off-bg)', label: `${c.disconnected} disconnected`},
            ];
            return (
              <li key={key} data-testid={`replica-${g.group}-${key || 'none'}`}>
                <div class="replica-row">
                  <span class="mono replica-name">{key || '(unknown replica)'}</span>
                  <span class="replica-bar">
                    <StackedBar segments={segs} label={`${key}: ${c.current} current, ${c.behind} behind`} height={12} />
                  </span>
                  <CountsLine c={c} />
                  <button
                    type="button"
                    class="btn btn-small"
                    aria-expanded={!!open[key]}
                    onClick={() => setOpen((o) => ({...o, [key]: !o[key]}))}
                    data-testid="show-proxies"
                  >
                    {open[key] ? 'Hide proxies' : `Show ${c.total} prox${c.total === 1 ? 'y' : 'ies'}`}
                    <span class="sr-only"> of {key || 'the unknown replica'}</span>
                  </button>
                </div>
                {open[key] && <ReplicaProxies group={g.group} replica={key} current={g.current_version} />}
              </li>
            );
          })}
        </ul>
      </details>
    </li>
  );
}

/** The colour, pattern and word of one heatmap cell. */
function cellLook(c: FleetHealth['groups'][number]['cells'][number]): {fill: string; word: string} {
  const live = c.connected + c.stale;
  if (live + c.disconnected === 0) return {fill: 'var(--surface-2)', word: 'no proxies'};
  if (c.nacking > 0) return {fill: 'url(#pat-cross)', word: 'NACKing'};
  if (c.stale > 0) return {fill: 'url(#pat-dots)', word: 'stale'};
  if (c.connected === 0) return {fill: 'var(--off)', word: 'all disconnected'};
  return {fill: c.disconnected > 0 ? 'url(#pat-gaps)' : 'var(--ok)', word: c.disconnected > 0 ? 'connected, some gone' : 'connected'};
}

function Heatmap({h}: {h: FleetHealth}) {
  const n = h.minutes;
  const cw = 12;
  const ch = 20;
  const left = 120;
  const start = Date.parse(h.start);
  const at = (i: number) => new Date(start + i * 60000).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
  return (
    <div class="heatmap-wrap">
      <svg
        class="heatmap"
        viewBox={`0 0 ${left + n * cw + 4} ${h.groups.length * (ch + 2) + 20}`}
        role="img"
        aria-label={`Proxy health per group and minute over the last ${n} minutes`}
        data-testid="heatmap"
      >
        {h.groups.map((g, r) => (
          <g key={g.group} data-testid={`heat-row-${g.group}`}>
            <text x={left - 6} y={r * (ch + 2) + ch / 2 + 4} text-anchor="end" class="heat-label">
              {g.group.length > 16 ? `${g.group.slice(0, 15)}…` : g.group}
            </text>
            {g.cells.map((c, i) => {
              const look = cellLook(c);
              return (
                <rect key={i} x={left + i * cw} y={r * (ch + 2)} width={cw - 1} height={ch} fill={look.fill} data-state={look.word}>
                  <title>
                    {g.group} at {at(i)}: {look.word} — {c.connected} connected, {c.stale} stale, {c.disconnected} disconnected, {c.nacking} NACKing
                  </title>
                </rect>
              );
            })}
          </g>
        ))}
        {[0, Math.floor(n / 2), n - 1].map((i) => (
          <text key={i} x={left + i * cw + cw / 2} y={h.groups.length * (ch + 2) + 14} class="chart-tick" text-anchor="middle">
            {i === n - 1 ? 'now' : at(i)}
          </text>
        ))}
      </svg>
      <ul class="sr-only" data-testid="heatmap-text">
        {h.groups.map((g) => {
          const minutes = new Map<string, number>();
          for (const c of g.cells) {
            const w = cellLook(c).word;
            minutes.set(w, (minutes.get(w) ?? 0) + 1);
          }
          return (
            <li key={g.group}>
              {g.group}, minutes over the last {n}: {[...minutes].map(([w, k]) => `${k} ${w}`).join(', ')}
            </li>
          );
        })}
      </ul>
      <div class="chart-legend">
        <Swatch fill="var(--ok)">all connected</Swatch>
        <Swatch fill="url(#pat-gaps)">connected, some disconnected</Swatch>
        <Swatch fill="url(#pat-dots)">some stale</Swatch>
        <Swatch fill="url(#pat-cross)">some NACKing</Swatch>
        <Swatch fill="var(--off)">all disconnected</Swatch>
        <Swatch fill="var(--surface-2)">no proxies</Swatch>
      </div>
    </div>
  );
}

export function FleetPage() {
  useTitle('Fleet');
  const chosen = useLocation().query.get('group');
  const topo = useApi('getFleetTopology', {});
  const health = useApi('getFleetHealth', {query: {window: 60}});
  useLive(topo.reload, (e) => FLEET_EVENTS.test(e.type), 1000);
  useLive(health.reload, (e) => FLEET_EVENTS.test(e.type), 5000);
  const groups = topo.data?.groups ?? [];
  const sum = groups.reduce(
    (a, g) => ({total: a.total + g.counts.total, current: a.current + g.counts.current, live: a.live + g.counts.total - g.counts.disconnected}),
    {total: 0, current: 0, live: 0},
  );
  return (
    <>
      <ChartDefs />
      <PageHead
        title="Fleet"
        sub={
          topo.data && (
            <span data-testid="fleet-summary">
              {sum.total} prox{sum.total === 1 ? 'y' : 'ies'} in {groups.length} group{groups.length === 1 ? '' : 's'} · {sum.current} of {sum.live} connected hold
              their group's current version
            </span>
          )
        }
      />
      <div class="chart-legend fleet-legend" aria-label="Legend">
        <Swatch fill="var(--ok)" mark="✓">
          current version
        </Swatch>
        <Swatch fill="var(--info)" mark="↑">
          newer (a rollout moved it)
        </Swatch>
        <Swatch fill="url(#pat-hatch)" mark="↓">
          behind
        </Swatch>
        <Swatch fill="var(--off-bg)" mark="∅">
          none ACKed
        </Swatch>
        <span class="legend-item">● connected · ◐ stale · ○ disconnected · ✕ NACKing</span>
      </div>
      <Section title="Topology and versions" id="h-topology">
        {topo.error && !topo.data && <ErrorBox error={topo.error} retry={topo.reload} what="the fleet" />}
        {topo.data && groups.length === 0 && <p class="muted">No proxy group yet: proxies appear here once they connect.</p>}
        <ul class="fleet-groups" data-testid="fleet-groups">
          {groups.map((g) => (
            <GroupCard key={g.group} g={g} chosen={g.group === chosen} />
          ))}
        </ul>
      </Section>
      <Section title="Health over the last hour" id="h-heatmap">
        {health.error && !health.data && <ErrorBox error={health.error} retry={health.reload} what="the health history" />}
        {health.data && (health.data.groups.length ? <Heatmap h={health.data} /> : <p class="muted">No proxy in the last hour.</p>)}
      </Section>
    </>
  );
}

// Metrics.tsx — how the control plane has been doing over the last hour, per minute:
// publish → ACK latency, pushes and answers per second, the NACK rate and the open xDS
// streams of each replica. Sextant computes them from what it already keeps (the live
// events, node status and each replica's pushes per minute reported with its heartbeat,
// GET /api/v1/fleet/metrics): no Prometheus needed to look.
// Its address is /stats: /metrics is the server's Prometheus endpoint, never the app.
import {useApi, useLive, useTitle} from '../lib/hooks';
import {LineChart, type Series} from '../components/charts';
import {ErrorBox, PageHead, Section} from '../components/ui';

const PALETTE = ['#1f5fa8', '#1d7a46', '#8a5a00', '#7a3fb4', '#b42318', '#0f7c8a', '#5d6878'];
const DASHES = [undefined, '6 3', '2 3', '8 3 2 3'];

export function MetricsPage() {
  useTitle('Metrics');
  const m = useApi('getFleetMetrics', {query: {window: 60}});
  useLive(m.reload, (e) => /^(config_applied|config_rejected|proxy_)/.test(e.type), 5000);
  if (m.error && !m.data) return <ErrorBox error={m.error} retry={m.reload} what="the metrics" />;
  const x = m.data;
  const s = x?.series ?? [];
  const latency: Series[] = [
    {key: 'p50', label: 'median', color: PALETTE[0], values: s.map((p) => p.latency_p50_ms ?? null)},
    {key: 'p95', label: '95th percentile', color: PALETTE[2], dash: '6 3', values: s.map((p) => p.latency_p95_ms ?? null)},
  ];
  const rate: Series[] = [
    {key: 'pushes', label: 'pushes', color: PALETTE[0], values: s.map((p) => p.pushes / 60)},
    {key: 'acks', label: 'ACKs', color: PALETTE[1], dash: '6 3', values: s.map((p) => p.acks / 60)},
    {key: 'nacks', label: 'NACKs', color: PALETTE[4], dash: '2 3', values: s.map((p) => p.nacks / 60)},
  ];
  const nackRate: Series[] = [
    {key: 'nack_rate', label: 'NACKs / answers', color: PALETTE[4], values: s.map((p) => (p.acks + p.nacks ? (100 * p.nacks) / (p.acks + p.nacks) : null))},
  ];
  const streams: Series[] = (x?.replicas ?? []).map((r, i) => ({
    key: r.replica_id || 'unknown',
    label: r.replica_id || '(unknown replica)',
    color: PALETTE[i % PALETTE.length],
    dash: DASHES[i % DASHES.length],
    values: r.streams,
  }));
  const ms = (v: number) => (v >= 10000 ? `${Math.round(v / 1000)} s` : v >= 1000 ? `${Math.round(v / 100) / 10} s` : `${Math.round(v)} ms`);
  return (
    <>
      <PageHead title="Metrics" sub="The last hour, per minute, from the live events, the proxies' status and the replicas' heartbeats" />
      {!x && <p class="muted">Loading…</p>}
      {x && (
        <div class="grid-2 metrics-grid">
          <Section title="Publish → ACK latency" id="h-latency">
            <LineChart series={latency} label="Publish to ACK latency per minute" unit="" format={ms} testid="chart-latency" />
            <p class="muted small">From a snapshot's creation to each proxy's ACK of it; a rollout's later waves include their wait.</p>
          </Section>
          <Section title="Pushes and answers per second" id="h-pushes">
            <LineChart series={rate} label="Pushes, ACKs and NACKs per second" unit="/s" format={(v) => `${Math.round(v * 100) / 100}`} testid="chart-pushes" />
            <p class="muted small">
              Pushes: responses every replica sent (one per resource type on xDS); a proxy answers the push of a new version with one ACK or NACK.
            </p>
          </Section>
          <Section title="NACK rate" id="h-nack-rate">
            <LineChart series={nackRate} label="Share of answers that were NACKs" unit="%" format={(v) => `${Math.round(v)}`} testid="chart-nack-rate" />
          </Section>
          <Section title="Open streams per replica" id="h-streams">
            {streams.length ? (
              <LineChart series={streams} label="Connected xDS streams per replica" unit="" format={(v) => `${Math.round(v)}`} testid="chart-streams" />
            ) : (
              <p class="muted">No proxy connected in the last hour.</p>
            )}
          </Section>
        </div>
      )}
    </>
  );
}

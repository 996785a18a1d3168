// timeline.tsx — a rollout you can watch: for each wave that started, a timeline (the
// start, each ACK as it arrives, the completion), the propagation curve (share of the
// wave's proxies that ACKed against seconds since the wave started) and the NACK errors
// of the rollout grouped by message. Reads GET /api/v1/deployments/{id}/timeline and
// reloads on the rollout's live events.
import {useApi, useLive, useNow} from '../lib/hooks';
import {seg} from '../lib/router';
import type {Deployment, DeploymentTimeline, Wave} from '../lib/types';
import {waveNumber} from '../lib/deploy';
import {ErrorBox, Section} from './ui';

const W = 600;
const PAD_L = 40;
const PAD_R = 12;

function span(w: Wave, acks: DeploymentTimeline['waves'][number]['acks'], now: number): number {
  const start = w.started_at ? Date.parse(w.started_at) : now;
  const end = w.completed_at ? Date.parse(w.completed_at) : now;
  const last = acks.length ? acks[acks.length - 1].offset_s : 0;
  return Math.max(1, (end - start) / 1000, last);
}

function secs(s: number): string {
  return s < 120 ? `${Math.round(s * 10) / 10} s` : `${Math.round(s / 6) / 10} min`;
}

function WaveLine({d, w, acks, now}: {d: Deployment; w: Wave; acks: DeploymentTimeline['waves'][number]['acks']; now: number}) {
  const total = Math.max(1, w.node_ids.length);
  const len = span(w, acks, now);
  const x = (s: number) => PAD_L + (s / len) * (W - PAD_L - PAD_R);
  const done = w.completed_at ? Math.max(0, (Date.parse(w.completed_at) - Date.parse(w.started_at ?? w.completed_at)) / 1000) : null;
  // The propagation curve: a step up at each ACK, from 0 % at the start.
  const H = 90;
  const y = (share: number) => 10 + (1 - share) * (H - 20);
  let path = `M${x(0)} ${y(0)}`;
  acks.forEach((a, i) => {
    path += `H${x(a.offset_s).toFixed(1)}V${y((i + 1) / total).toFixed(1)}`;
  });
  path += `H${x(done ?? len).toFixed(1)}`;
  const n = waveNumber(d, w.index);
  return (
    <li class="tl-wave" data-testid={`timeline-wave-${n}`} data-acks={acks.length}>
      <div class="tl-head">
        <strong>Wave {n}</strong>{' '}
        <span class="muted small">
          {acks.length}/{w.node_ids.length} ACKed
          {done !== null ? ` · done after ${secs(done)}` : w.state === 'in_progress' ? ' · running' : ` · ${w.state}`}
        </span>
      </div>
      <svg viewBox={`0 0 ${W} ${H + 34}`} class="tl-svg" role="img" aria-label={`Wave ${n}: ${acks.length} of ${w.node_ids.length} ACKed over time`}>
        {/* propagation curve */}
        <line x1={PAD_L} x2={W - PAD_R} y1={y(1)} y2={y(1)} class="chart-grid" />
        <line x1={PAD_L} x2={W - PAD_R} y1={y(0)} y2={y(0)} class="chart-grid" />
        <text x={PAD_L - 4} y={y(1) + 4} class="chart-tick" text-anchor="end">
          100 %
        </text>
        <text x={PAD_L - 4} y={y(0) + 4} class="chart-tick" text-anchor="end">
          0 %
        </text>
        <path d={path} fill="none" stroke="var(--ok)" stroke-width="2" data-testid="propagation-curve" />
        {/* the timeline: start, ACKs, completion */}
        <line x1={x(0)} x2={x(done ?? len)} y1={H + 8} y2={H + 8} stroke="var(--border)" stroke-width="2" />
        <g data-testid="timeline-start">
          <path d={`M${x(0)} ${H + 2}v12l8 -6z`} fill="var(--accent)">
            <title>wave started {w.started_at ? new Date(w.started_at).toLocaleTimeString() : ''}</title>
          </path>
        </g>
        {acks.map((a, i) => (
          <g key={a.node_id} data-testid="timeline-ack" data-node={a.node_id}>
            <circle cx={x(a.offset_s)} cy={H + 8} r="4" fill="var(--ok)" stroke="var(--surface)">
              <title>
                {a.node_id} ACKed v{a.version} after {secs(a.offset_s)} ({i + 1}/{w.node_ids.length})
              </title>
            </circle>
            <circle cx={x(a.offset_s)} cy={y((i + 1) / total)} r="2.5" fill="var(--ok)" />
          </g>
        ))}
        {done !== null && (
          <g data-testid="timeline-complete">
            <rect x={x(done) - 5} y={H + 3} width="10" height="10" fill={w.state === 'completed' ? 'var(--ok)' : 'var(--bad)'}>
              <title>
                wave {w.state} after {secs(done)}
              </title>
            </rect>
          </g>
        )}
        <text x={PAD_L} y={H + 30} class="chart-tick">
          0 s
        </text>
        <text x={W - PAD_R} y={H + 30} class="chart-tick" text-anchor="end">
          {secs(done ?? len)}
        </text>
      </svg>
      {acks.length > 0 && (
        <details class="small">
          <summary>ACKs in order</summary>
          <ol class="tl-acks">
            {acks.map((a) => (
              <li key={a.node_id}>
                <a class="mono" href={`/proxies/${seg(a.node_id)}`}>
                  {a.node_id}
                </a>{' '}
                v{a.version} after {secs(a.offset_s)}
              </li>
            ))}
          </ol>
        </details>
      )}
    </li>
  );
}

export function DeploymentTimelineSection({d}: {d: Deployment}) {
  const t = useApi('getDeploymentTimeline', {path: {id: d.id}});
  useLive(t.reload, (e) => !e.data?.deployment_id || e.data.deployment_id === d.id, 500);
  const now = useNow(2000);
  if (t.error && !t.data) return <ErrorBox error={t.error} retry={t.reload} what="the timeline" />;
  const x = t.data;
  if (!x) return null;
  const byIndex = new Map(x.waves.map((w) => [w.index, w.acks]));
  const started = (d.waves ?? []).filter((w) => w.started_at && byIndex.has(w.index));
  return (
    <div class="grid-2">
      <Section title="Timeline and propagation" id="h-timeline">
        {started.length === 0 ? (
          <p class="muted">No wave has started yet.</p>
        ) : (
          <ol class="tl-waves" data-testid="timeline">
            {started.map((w) => (
              <WaveLine key={w.index} d={d} w={w} acks={byIndex.get(w.index) ?? []} now={now} />
            ))}
          </ol>
        )}
        <p class="muted small">Curve: share of the wave's proxies that ACKed, against time since the wave started. Dots: each ACK as it arrived.</p>
      </Section>
      <Section title="NACK errors" id="h-nack-groups">
        {x.nack_errors.length === 0 ? (
          <p class="muted" data-testid="nack-groups-empty">
            No proxy rejected this rollout's version.
          </p>
        ) : (
          <table class="table" data-testid="nack-groups">
            <thead>
              <tr>
                <th scope="col">Error</th>
                <th scope="col" class="num">
                  NACKs
                </th>
                <th scope="col" class="num">
                  Proxies
                </th>
              </tr>
            </thead>
            <tbody>
              {x.nack_errors.map((e) => (
                <tr key={e.error}>
                  <td class="text-bad mono small">{e.error || '(no message)'}</td>
                  <td class="num">{e.count}</td>
                  <td class="num">{e.nodes}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </div>
  );
}

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
import {num, Table} from './list';

type Acks = DeploymentTimeline['waves'][number]['acks'];

const W = 600;
const PAD_L = 56;
const PAD_R = 14;
const COLORS = ['#1d7a46', '#1f5fa8', '#8a5a00', '#7a3fb4', '#0f7c8a', '#b42318'];
const DASHES = [undefined, '6 3', '2 3', '8 3 2 3'];

function secs(s: number): string {
  return s < 120 ? `${Math.round(s * 10) / 10} s` : `${Math.round(s / 6) / 10} min`;
}

interface Row {
  n: number;
  w: Wave;
  acks: Acks;
  /** ms since the epoch */
  start: number;
  /** seconds from start to completion, null while it runs */
  done: number | null;
  /** seconds from start to now or completion */
  len: number;
}

function rowsOf(d: Deployment, started: Wave[], byIndex: Map<number, Acks>, now: number): Row[] {
  return started.map((w) => {
    const acks = byIndex.get(w.index) ?? [];
    const start = Date.parse(w.started_at ?? '');
    const done = w.completed_at ? Math.max(0, (Date.parse(w.completed_at) - start) / 1000) : null;
    const last = acks.length ? acks[acks.length - 1].offset_s : 0;
    return {n: waveNumber(d, w.index), w, acks, start, done, len: Math.max(done ?? (now - start) / 1000, last, 0.001)};
  });
}

/** Every wave on one time axis: its start (a flag), each ACK as it arrived (a dot), its
 * completion (a square, green when completed, red otherwise). */
function Timeline({rows}: {rows: Row[]}) {
  const t0 = Math.min(...rows.map((r) => r.start));
  const t1 = Math.max(...rows.map((r) => r.start + r.len * 1000));
  const total = Math.max(0.001, (t1 - t0) / 1000);
  const x = (ms: number) => PAD_L + ((ms - t0) / 1000 / total) * (W - PAD_L - PAD_R);
  const RH = 22;
  const H = rows.length * RH + 22;
  return (
    <svg viewBox={`0 0 ${W} ${H}`} class="tl-svg" role="img" aria-label="Waves on a time axis: starts, ACKs and completions" data-testid="timeline">
      {rows.map((r, i) => {
        const y = i * RH + RH / 2;
        const end = r.start + r.len * 1000;
        return (
          <g key={r.n} data-testid={`timeline-wave-${r.n}`} data-acks={r.acks.length}>
            <text x={PAD_L - 8} y={y + 4} text-anchor="end" class="heat-label">
              Wave {r.n}
            </text>
            <line x1={x(r.start)} x2={x(end)} y1={y} y2={y} stroke="var(--border)" stroke-width="3" />
            <path d={`M${x(r.start)} ${y - 7}v14l8 -7z`} fill="var(--accent)" data-testid="timeline-start">
              <title>
                wave {r.n} started {new Date(r.start).toLocaleTimeString()}
              </title>
            </path>
            {r.done !== null &&
              (r.w.state === 'completed' ? (
                <rect x={x(r.start + r.done * 1000) - 5} y={y - 5} width="10" height="10" fill="var(--ok)" data-testid="timeline-complete">
                  <title>
                    wave {r.n} completed after {secs(r.done)}
                  </title>
                </rect>
              ) : (
                // Not completed (failed, rolled back): a cross, not only another colour.
                <path
                  d={`M${x(r.start + r.done * 1000) - 5} ${y - 5}l10 10m0 -10l-10 10`}
                  stroke="var(--bad)"
                  stroke-width="3"
                  data-testid="timeline-complete"
                >
                  <title>
                    wave {r.n} {r.w.state} after {secs(r.done)}
                  </title>
                </path>
              ))}
            {r.acks.map((a, k) => (
              <circle key={a.node_id} cx={x(r.start + a.offset_s * 1000)} cy={y} r="4" fill="var(--ok)" stroke="var(--surface)" data-testid="timeline-ack" data-node={a.node_id}>
                <title>
                  {a.node_id} ACKed v{a.version} {secs(a.offset_s)} after the wave started ({k + 1}/{r.w.node_ids.length})
                </title>
              </circle>
            ))}
          </g>
        );
      })}
      <text x={PAD_L} y={H - 4} class="chart-tick">
        {new Date(t0).toLocaleTimeString()}
      </text>
      <text x={W - PAD_R} y={H - 4} class="chart-tick" text-anchor="end">
        +{secs(total)}
      </text>
    </svg>
  );
}

/** The share of each wave's proxies that ACKed against seconds since the wave started,
 * one step line per wave. */
function Propagation({rows}: {rows: Row[]}) {
  const H = 150;
  const B = 22;
  const len = Math.max(...rows.map((r) => r.len));
  const x = (s: number) => PAD_L + (s / len) * (W - PAD_L - PAD_R);
  const y = (share: number) => 8 + (1 - share) * (H - B - 8);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} class="tl-svg" role="img" aria-label="Propagation: share of each wave's proxies ACKed against time since the wave started">
        {[0, 0.5, 1].map((t) => (
          <g key={t}>
            <line x1={PAD_L} x2={W - PAD_R} y1={y(t)} y2={y(t)} class="chart-grid" />
            <text x={PAD_L - 4} y={y(t) + 4} class="chart-tick" text-anchor="end">
              {t * 100} %
            </text>
          </g>
        ))}
        {rows.map((r, i) => {
          const total = Math.max(1, r.w.node_ids.length);
          let d = `M${x(0)} ${y(0)}`;
          r.acks.forEach((a, k) => {
            d += `H${x(a.offset_s).toFixed(1)}V${y((k + 1) / total).toFixed(1)}`;
          });
          d += `H${x(r.done ?? r.len).toFixed(1)}`;
          return (
            <path key={r.n} d={d} fill="none" stroke={COLORS[i % COLORS.length]} stroke-width="2" stroke-dasharray={DASHES[i % DASHES.length]} data-testid="propagation-curve">
              <title>
                wave {r.n}: {r.acks.length}/{r.w.node_ids.length} ACKed
              </title>
            </path>
          );
        })}
        <text x={PAD_L} y={H - 6} class="chart-tick">
          0 s
        </text>
        <text x={W - PAD_R} y={H - 6} class="chart-tick" text-anchor="end">
          {secs(len)} after the wave started
        </text>
      </svg>
      <figcaption class="chart-legend">
        {rows.map((r, i) => {
          const all = r.acks.length >= r.w.node_ids.length && r.acks.length > 0;
          return (
            <span key={r.n} class="legend-item">
              <svg width="18" height="8" aria-hidden="true">
                <line x1="0" y1="4" x2="18" y2="4" stroke={COLORS[i % COLORS.length]} stroke-width="2" stroke-dasharray={DASHES[i % DASHES.length]} />
              </svg>
              wave {r.n}: {r.acks.length}/{r.w.node_ids.length}
              {all ? ` in ${secs(r.acks[r.acks.length - 1].offset_s)}` : ''}
            </span>
          );
        })}
      </figcaption>
    </figure>
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
  const rows = rowsOf(d, started, byIndex, now);
  return (
    <div class="grid-2">
      <Section title="Timeline and propagation" id="h-timeline">
        {started.length === 0 ? (
          <p class="muted">No wave has started yet.</p>
        ) : (
          <>
            <Timeline rows={rows} />
            <h3>Propagation</h3>
            <Propagation rows={rows} />
            <details class="small">
              <summary>Every ACK in order</summary>
              <ol class="tl-acks">
                {rows.flatMap((r) =>
                  r.acks.map((a) => (
                    <li key={`${r.n}-${a.node_id}`}>
                      wave {r.n}:{' '}
                      <a class="mono" href={`/proxies/${seg(a.node_id)}`}>
                        {a.node_id}
                      </a>{' '}
                      v{a.version} after {secs(a.offset_s)}
                    </li>
                  )),
                )}
              </ol>
            </details>
          </>
        )}
        <p class="muted small">Flags: a wave starts; dots: each ACK as it arrived; squares: the wave completed; crosses: it ended otherwise. The curves: the share of each wave's proxies that ACKed, against time since it started.</p>
      </Section>
      <Section title="NACK errors" id="h-nack-groups">
        {x.nack_errors.length === 0 ? (
          <p class="muted" data-testid="nack-groups-empty">
            No proxy rejected this rollout's version.
          </p>
        ) : (
          <Table head={['Error', num('NACKs'), num('Proxies')]} testid="nack-groups">
            {x.nack_errors.map((e) => (
              <tr key={e.error}>
                <td class="text-bad mono small">{e.error || '(no message)'}</td>
                <td class="num">{e.count}</td>
                <td class="num">{e.nodes}</td>
              </tr>
            ))}
          </Table>
        )}
      </Section>
    </div>
  );
}

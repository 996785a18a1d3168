// charts.tsx — the few charts the fleet views draw, in plain SVG: a stacked bar (proxies
// per snapshot version), a heatmap (groups × minutes), a line chart (series over the
// window) and the fills they share. Colour is never the only signal: every segment and
// cell also carries a pattern or a mark, a <title> a screen reader and a pointer read,
// and the pages print the same numbers as text beside the chart.
import type {ComponentChildren} from 'preact';

/** Patterns the charts fill with besides colour: hatching (behind), dots (stale), a
 * cross (NACKing), gaps (connected, some gone). Rendered once per page. */
export function ChartDefs() {
  return (
    <svg width="0" height="0" class="chart-defs" aria-hidden="true" focusable="false">
      <defs>
        <pattern id="pat-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
          <rect width="6" height="6" fill="var(--warn-bg)" />
          <line x1="0" y1="0" x2="0" y2="6" stroke="var(--warn)" stroke-width="2" />
        </pattern>
        <pattern id="pat-dots" width="5" height="5" patternUnits="userSpaceOnUse">
          <rect width="5" height="5" fill="#f3c969" />
          <circle cx="2.5" cy="2.5" r="1.1" fill="var(--warn)" />
        </pattern>
        <pattern id="pat-gaps" width="6" height="6" patternUnits="userSpaceOnUse">
          <rect width="6" height="6" fill="var(--ok)" />
          <rect x="4" width="2" height="6" fill="var(--surface)" />
        </pattern>
        <pattern id="pat-cross" width="6" height="6" patternUnits="userSpaceOnUse">
          <rect width="6" height="6" fill="#e8837a" />
          <path d="M0 0L6 6M6 0L0 6" stroke="var(--bad)" stroke-width="1.2" />
        </pattern>
      </defs>
    </svg>
  );
}

export interface Segment {
  key: string;
  value: number;
  label: string;
  /** A CSS colour or url(#pattern). */
  fill: string;
  attrs?: Record<string, string | number>;
}

/** A horizontal stacked bar of segments, widths proportional to their values; each
 * segment wide enough shows its value. */
export function StackedBar({segments, label, testid, height = 22}: {segments: Segment[]; label: string; testid?: string; height?: number}) {
  const total = segments.reduce((n, s) => n + s.value, 0);
  let x = 0;
  return (
    <svg class="stacked" viewBox={`0 0 1000 ${height}`} preserveAspectRatio="none" role="img" aria-label={label} data-testid={testid} height={height}>
      {total === 0 && <rect x="0" y="0" width="1000" height={height} fill="var(--surface-2)" />}
      {segments
        .filter((s) => s.value > 0)
        .map((s) => {
          const w = (1000 * s.value) / total;
          const r = (
            <g key={s.key} {...s.attrs}>
              <rect x={x} y="0" width={w} height={height} fill={s.fill} stroke="var(--surface)" stroke-width="2" vector-effect="non-scaling-stroke">
                <title>{s.label}</title>
              </rect>
            </g>
          );
          x += w;
          return r;
        })}
    </svg>
  );
}

export interface Series {
  key: string;
  label: string;
  color: string;
  /** One value per x step; null leaves a gap. */
  values: (number | null)[];
  dash?: string;
}

const W = 600;
const H = 160;
const PAD = {l: 44, r: 10, t: 10, b: 22};

function nice(max: number): number {
  if (max <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

/** A line chart of series over n steps (minutes), the last being "now"; y from 0. */
export function LineChart({
  series,
  label,
  unit,
  testid,
  xLabel = (i: number, n: number) => (i === n - 1 ? 'now' : `−${n - 1 - i} min`),
  format = (v: number) => `${Math.round(v * 10) / 10}`,
}: {
  series: Series[];
  label: string;
  unit: string;
  testid?: string;
  xLabel?: (i: number, n: number) => string;
  format?: (v: number) => string;
}) {
  const n = Math.max(1, ...series.map((s) => s.values.length));
  const max = nice(Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
  const px = (i: number) => PAD.l + (n === 1 ? 0 : (i * (W - PAD.l - PAD.r)) / (n - 1));
  const py = (v: number) => H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
  // The middle line is left out when its label would read like an end's (0.5 rounded).
  const ticks = format(max / 2) === format(max) || format(max / 2) === format(0) ? [0, max] : [0, max / 2, max];
  return (
    <figure class="chart" data-testid={testid}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label} class="chart-svg">
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.l} x2={W - PAD.r} y1={py(t)} y2={py(t)} class="chart-grid" />
            <text x={PAD.l - 4} y={py(t) + 4} class="chart-tick" text-anchor="end">
              {format(t)}
            </text>
          </g>
        ))}
        {[0, Math.floor((n - 1) / 2), n - 1].map((i) => (
          <text key={i} x={px(i)} y={H - 6} class="chart-tick" text-anchor={i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle'}>
            {xLabel(i, n)}
          </text>
        ))}
        {series.map((s) => {
          let d = '';
          let pen = false;
          s.values.forEach((v, i) => {
            if (v === null) {
              pen = false;
              return;
            }
            d += `${pen ? 'L' : 'M'}${px(i).toFixed(1)} ${py(v).toFixed(1)}`;
            pen = true;
          });
          const dots = s.values.map((v, i) => (v === null ? null : {i, v})).filter((p): p is {i: number; v: number} => p !== null);
          return (
            <g key={s.key} data-series={s.key}>
              <path d={d} fill="none" stroke={s.color} stroke-width="2" stroke-dasharray={s.dash} />
              {dots.length <= 80 &&
                dots.map((p) => (
                  <circle key={p.i} cx={px(p.i)} cy={py(p.v)} r="2.2" fill={s.color}>
                    <title>
                      {s.label}, {xLabel(p.i, n)}: {format(p.v)} {unit}
                    </title>
                  </circle>
                ))}
            </g>
          );
        })}
      </svg>
      <figcaption class="chart-legend">
        {series.map((s) => {
          const last = [...s.values].reverse().find((v) => v !== null);
          return (
            <span key={s.key} class="legend-item">
              <svg width="18" height="8" aria-hidden="true">
                <line x1="0" y1="4" x2="18" y2="4" stroke={s.color} stroke-width="2" stroke-dasharray={s.dash} />
              </svg>
              {s.label}: <strong>{last === undefined || last === null ? '—' : `${format(last)} ${unit}`}</strong>
            </span>
          );
        })}
      </figcaption>
    </figure>
  );
}

/** One legend entry: a swatch (colour or pattern) and its text. */
export function Swatch({fill, children, mark}: {fill: string; children: ComponentChildren; mark?: string}) {
  return (
    <span class="legend-item">
      <svg width="14" height="14" aria-hidden="true">
        <rect width="14" height="14" rx="2" fill={fill} stroke="var(--border)" />
        {mark && (
          <text x="7" y="11" text-anchor="middle" class="swatch-mark">
            {mark}
          </text>
        )}
      </svg>
      {children}
    </span>
  );
}

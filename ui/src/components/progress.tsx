// progress.tsx — a deployment's progress in one line: a small bar (ACKed in green,
// NACKed in red) and "wave 2/4 · 7/20 ACKed · 1 NACK". The bar has a fixed width and
// the line never wraps, so live updates change numbers, not the layout. Once a rollout
// is undone its ACKs are history: the bar turns grey.
import {ackText, currentWaveLabel, progress, waveOfText} from '../lib/deploy';
import type {Deployment} from '../lib/types';

export function DeploymentProgressLine({d}: {d: Deployment}) {
  const p = progress(d);
  if (!p)
    return (
      <span class="dep-progress" data-testid="deployment-progress">
        <span class="dep-progress-text">{currentWaveLabel(d)}</span>
      </span>
    );
  const n = p.nodes || 1;
  const wave = waveOfText(d, p);
  // Once rolled back, the ACKs are history: the proxies run what they had before.
  const undone = d.state === 'canceling' || d.state === 'rolling_back' || d.state === 'rolled_back' || d.state === 'rollback_failed';
  const acked = `${p.acks}/${p.nodes} ACKed`;
  return (
    <span
      class={undone ? 'dep-progress dep-progress-undone' : 'dep-progress'}
      data-testid="deployment-progress"
      title={`${p.waves_completed} of ${p.waves} wave${p.waves === 1 ? '' : 's'} completed; ${ackText(p)}${undone ? ' (rolled back since)' : ''}`}
    >
      <span
        class="bar bar-small"
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={p.nodes}
        aria-valuenow={p.acks}
        aria-label={`${p.acks} of ${p.nodes} proxies acknowledged${p.nacks ? `, ${p.nacks} rejected` : ''}`}
      >
        <span class="bar-ack" style={{width: `${(100 * Math.min(p.acks, n)) / n}%`}} />
        <span class="bar-nack" style={{width: `${(100 * Math.min(p.nacks, n)) / n}%`}} />
      </span>
      <span class="dep-progress-text">
        {wave} · {acked}
        {p.nacks > 0 && (
          <>
            {' · '}
            <span class="text-bad">
              {p.nacks} NACK{p.nacks === 1 ? '' : 's'}
            </span>
          </>
        )}
      </span>
    </span>
  );
}

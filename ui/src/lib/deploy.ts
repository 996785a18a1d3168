// deploy.ts — what the deployment pages share: wave numbering, progress, and which
// controls a deployment's state allows.
import type {Deployment, DeploymentProgress, DeploymentState, Wave} from './types';

/** Waves shown 1-based whatever base the server counts from. */
export function waveNumber(d: Pick<Deployment, 'waves'>, index: number): number {
  const ws = d.waves ?? [];
  const base = ws.length ? Math.min(...ws.map((w) => w.index)) : 0;
  return index - base + 1;
}

/**
 * Waves, completed waves, nodes, ACKs and NACKs over every wave: the server's
 * `progress` (on list items too), else summed from the waves of a detail answer; null
 * when neither is there (a list item from an older server).
 */
export function progress(d: Pick<Deployment, 'waves' | 'progress'>): DeploymentProgress | null {
  if (d.progress && typeof d.progress.waves === 'number') return d.progress as DeploymentProgress;
  if (!d.waves) return null;
  const p: DeploymentProgress = {waves: d.waves.length, waves_completed: 0, nodes: 0, acks: 0, nacks: 0};
  for (const w of d.waves) {
    if (w.state === 'completed') p.waves_completed++;
    p.nodes += w.nodes ?? w.node_ids.length;
    p.acks += w.acks;
    p.nacks += w.nacks;
  }
  return p;
}

/** "wave 2/4": the wave under way (the last one once finished), 1-based. */
export function waveOfText(d: Pick<Deployment, 'current_wave' | 'state'>, p: DeploymentProgress): string {
  if (p.waves === 0) return 'no waves';
  const cur = d.current_wave ?? -1;
  if (cur < 0) return d.state === 'pending' ? `${p.waves} wave${p.waves === 1 ? '' : 's'}, not started` : `wave 0/${p.waves}`;
  const at = d.state === 'completed' ? p.waves : Math.min(cur + 1, p.waves);
  return `wave ${at}/${p.waves}`;
}

/** "7/20 ACKed · 1 NACK". */
export function ackText(p: DeploymentProgress): string {
  return `${p.acks}/${p.nodes} ACKed${p.nacks ? ` · ${p.nacks} NACK${p.nacks === 1 ? '' : 's'}` : ''}`;
}

/** "wave 2/4 · 7/20 ACKed · 1 NACK", or the wave alone without any progress. */
export function progressText(d: Deployment): string {
  const p = progress(d);
  return p ? `${waveOfText(d, p)} · ${ackText(p)}` : currentWaveLabel(d);
}

export function currentWaveLabel(d: Deployment): string {
  const ws = d.waves;
  const cur = d.current_wave ?? -1;
  if (cur < 0) return 'not started';
  if (!ws) return `wave ${cur + 1}`;
  if (!ws.length) return 'no waves';
  return `wave ${waveNumber(d, cur)} of ${ws.length}`;
}

export const waveDone = (w: Wave) => w.state === 'completed' || w.completed_at !== null;

export type DeploymentAction = 'pause' | 'resume' | 'cancel' | 'rollback' | 'promote';

/** A blue-green deployment whose green proxies ACKed and that waits for a promotion. */
export const awaitsPromotion = (d: Deployment) => d.state === 'in_progress' && d.blue_green?.phase === 'awaiting_promotion';

/** The controls that make sense in a state (the server decides; this hides nonsense). */
export function actionsFor(state: DeploymentState): DeploymentAction[] {
  switch (state) {
    case 'pending':
      return ['cancel'];
    case 'in_progress':
      return ['pause', 'cancel', 'rollback'];
    case 'paused':
      return ['resume', 'cancel', 'rollback'];
    case 'completed':
    case 'failed':
    case 'rollback_failed':
      return ['rollback'];
    default:
      return [];
  }
}

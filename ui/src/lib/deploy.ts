// deploy.ts — what the deployment pages share: wave numbering, progress, and which
// controls a deployment's state allows.
import type {Deployment, DeploymentState, Wave} from './types';

/** Waves shown 1-based whatever base the server counts from. */
export function waveNumber(d: Pick<Deployment, 'waves'>, index: number): number {
  const ws = d.waves ?? [];
  const base = ws.length ? Math.min(...ws.map((w) => w.index)) : 0;
  return index - base + 1;
}

/** Nodes, ACKs and NACKs over every wave (zeros for a list item, which has no waves). */
export function progress(d: Pick<Deployment, 'waves'>): {nodes: number; acks: number; nacks: number} {
  let nodes = 0;
  let acks = 0;
  let nacks = 0;
  for (const w of d.waves ?? []) {
    nodes += w.nodes ?? w.node_ids.length;
    acks += w.acks;
    nacks += w.nacks;
  }
  return {nodes, acks, nacks};
}

/** "3/4 ACKed, 1 NACKed", or "" for a list item without its waves. */
export function progressText(d: Deployment): string {
  if (!d.waves) return '';
  const p = progress(d);
  return `${p.acks}/${p.nodes} ACKed${p.nacks ? `, ${p.nacks} NACKed` : ''}`;
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

export type DeploymentAction = 'pause' | 'resume' | 'cancel' | 'rollback';

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

// types.ts — the shapes the REST API answers (README "REST API", api/openapi.c).

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface Whoami {
  user: string;
  role: string;
  /** resource type -> actions the role may do (GET /api/v1/whoami). */
  permissions?: Record<string, string[]>;
}

export interface Config {
  id: string;
  namespace: string;
  name: string;
  groups: string[];
  version: number;
  live_version: number | null;
  created_by: string;
  created_at: string;
  updated_at: string;
  deleted_at?: string;
  checksum?: string;
  author?: string;
  message?: string;
  draft?: boolean;
  source_version?: number | null;
  spec?: unknown;
}

export interface ConfigVersion {
  config_id: string;
  version: number;
  checksum: string;
  author: string;
  message: string;
  draft: boolean;
  source_version: number | null;
  created_at: string;
  spec?: unknown;
}

export interface DiffEntry {
  path: string;
  value?: unknown;
  old?: unknown;
  new?: unknown;
}

export interface Diff {
  added: DiffEntry[];
  removed: DiffEntry[];
  changed: DiffEntry[];
}

export interface ConfigDiff extends Diff {
  config_id: string;
  from: number;
  to: number;
  from_checksum: string;
  to_checksum: string;
}

export interface Group {
  name: string;
  latest_version: number;
  updated_at: string;
  proxies: {connected: number; stale: number; disconnected: number; nacking: number};
  nack_rate: number;
}

export interface Nack {
  version: number | null;
  error: string | null;
  at: string | null;
}

export interface Proxy {
  node_id: string;
  group: string;
  namespace: string;
  client: string;
  protocol: string;
  labels: Record<string, string>;
  metadata: Record<string, unknown>;
  locality: Record<string, unknown>;
  connected: boolean;
  state: 'connected' | 'stale' | 'disconnected';
  nacking: boolean;
  replica_id: string | null;
  disconnect_reason: string | null;
  first_seen: string | null;
  last_seen: string | null;
  desired_version: number | null;
  deployment_id: string | null;
  sent_version: number | null;
  sent_at: string | null;
  acked_version: number | null;
  acked_at: string | null;
  last_nack: Nack | null;
  nack_count: number;
  status_report: {ready: boolean; version: string | null; message: string | null; at: string | null} | null;
}

export interface Snapshot {
  id: number;
  group: string;
  version: number;
  checksum: string;
  size_bytes: number;
  sources: {config_id: string; version: number; namespace?: string; name?: string}[];
  reason: string;
  created_by: string;
  created_at: string;
  ir?: unknown;
}

export interface ProxyConfig {
  node_id: string;
  group: string;
  assignment: 'pinned' | 'group_latest';
  acked_version: number | null;
  desired: Snapshot | null;
  acked: Snapshot | null;
  in_sync: boolean;
}

export interface AuditEntry {
  id: number;
  at: string;
  user: string;
  role: string;
  action: string;
  resource_type: string;
  resource_id: string;
  result: 'success' | 'denied' | 'failed';
  status_code: number | null;
  request_id: string | null;
  source_ip: string | null;
  details: Record<string, unknown>;
}

export type DeploymentState =
  | 'pending'
  | 'in_progress'
  | 'paused'
  | 'completed'
  | 'failed'
  | 'canceling'
  | 'rolling_back'
  | 'rolled_back'
  | 'rollback_failed';

export const ACTIVE_DEPLOYMENT_STATES: DeploymentState[] = ['pending', 'in_progress', 'paused', 'canceling', 'rolling_back'];

export interface Selector {
  node_ids?: string[];
  groups?: string[];
  labels?: Record<string, string>;
  namespaces?: string[];
}

export interface Strategy {
  type: 'all_at_once' | 'rolling' | 'canary';
  wave_size?: number;
  wave_percent?: number;
  pause?: string;
  initial_percent?: number;
  increment_percent?: number;
  interval?: string;
}

export interface WaveError {
  node_id: string;
  version: number | string | null;
  error: string;
  at: string;
}

export interface Wave {
  index: number;
  state: string;
  node_ids: string[];
  nodes?: number;
  acks: number;
  nacks: number;
  errors: WaveError[];
  started_at: string | null;
  completed_at: string | null;
  duration_seconds?: number | null;
}

/** The gates that stop a rollout (defaults from the server's rollouts.* keys). */
export interface RolloutPolicy {
  nack_threshold: number; // 0..1
  nack_min_sample: number;
  wave_timeout: string;
  health_failures: number;
  promote?: boolean;
}

export interface Skipped {
  node_id: string;
  reason: string;
}

/** A deployment's waves summed up (on list items too). */
export interface DeploymentProgress {
  waves: number;
  waves_completed: number;
  nodes: number;
  acks: number;
  nacks: number;
}

export interface Deployment {
  id: string;
  config_id: string;
  config_version: number;
  state: DeploymentState;
  state_reason: string | null;
  /** The wave under way, from 0; -1 before the first starts. */
  current_wave: number | null;
  strategy: Strategy;
  selector: Selector;
  groups?: string[];
  target_snapshots?: Record<string, number>;
  baseline_snapshots?: Record<string, number>;
  policy?: RolloutPolicy;
  promote?: boolean;
  promoted?: boolean;
  skipped?: Skipped[];
  reason?: string | null;
  created_by: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Summed over the waves; absent from servers older than it. */
  progress?: DeploymentProgress;
  /** Only on GET /deployments/{id}; lists leave them out. */
  waves?: Wave[];
}

export interface Plan {
  version?: number;
  policy?: RolloutPolicy;
  nodes?: number;
  waves: {index: number; node_ids: string[]}[];
  groups: {group: string; from_version: number | null; to_version?: number | null; changed?: boolean; diff?: Diff}[];
  skipped: Skipped[];
}

export interface ApplyValidation {
  valid: boolean;
  problems: {stage?: string; path?: string; message: string}[];
}

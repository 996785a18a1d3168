// types.ts — the shapes the REST API answers, named for the pages. Every one comes from
// the OpenAPI document (api/openapi.json, generated into src/gen/openapi.ts at build
// time), so a field renamed there fails the build here.
import type {components} from '../gen/openapi';

type Schemas = components['schemas'];

/** One page of a list: the items and the cursor of the next page (null on the last). */
export type Page<T> = Omit<Schemas['ConfigPage'], 'items'> & {items: T[]};

export type Whoami = Schemas['Whoami'];
export type Config = Schemas['Config'];
/** A config's spec: a gateway.control.v1 ConfigSnapshot in its JSON mapping. */
export type Spec = Schemas['Spec'];
export type ConfigVersion = Schemas['ConfigVersion'];
export type DiffEntry = Schemas['DiffEntry'];
/** The added, removed and changed paths between two specs. */
export type Diff = Schemas['SpecDiff'];
export type ConfigDiff = Schemas['Diff'];
export type Group = Schemas['Group'];
export type Nack = Schemas['Nack'];
export type Proxy = Schemas['Proxy'];
export type Snapshot = Schemas['Snapshot'];
export type ProxyConfig = Schemas['ProxyConfig'];
export type AuditEntry = Schemas['AuditEntry'];
/** A Sextant replica as its last heartbeat described it. */
export type Replica = Schemas['Replica'];
export type DeploymentState = Schemas['Deployment']['state'];
export type Selector = Schemas['Selector'];
export type Strategy = Schemas['Strategy'];
export type StrategyType = NonNullable<Strategy['type']>;
export type WaveError = Schemas['WaveError'];
export type Wave = Schemas['Wave'];
/** The gates that stop a rollout (defaults from the server's rollouts.* settings). */
export type RolloutPolicy = Schemas['RolloutPolicy'];
export type Skipped = Schemas['Skipped'];
/** A deployment's waves summed up (on list items too). */
export type DeploymentProgress = Required<Schemas['DeploymentProgress']>;
export type Deployment = Schemas['Deployment'];
/** A dry run's plan. */
export type Plan = Schemas['DeploymentPlan'];
export type ApplyValidation = Schemas['ApplyValidation'];
export type ErrorDetail = Schemas['ErrorDetail'];
export type DevSignIn = Schemas['DevSignInOptions'];
export type DevSignInToken = Schemas['DevSignInToken'];

export const ACTIVE_DEPLOYMENT_STATES: DeploymentState[] = ['pending', 'in_progress', 'paused', 'canceling', 'rolling_back'];

/** The fleet views: topology per group, health per minute, metrics, a rollout's timeline. */
export type FleetCounts = Schemas['FleetCounts'];
export type FleetGroup = Schemas['FleetGroup'];
export type FleetHealth = Schemas['FleetHealth'];
export type FleetMetrics = Schemas['FleetMetrics'];
export type DeploymentTimeline = Schemas['DeploymentTimeline'];

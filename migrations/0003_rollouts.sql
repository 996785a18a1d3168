-- 0003_rollouts.sql — what rollouts need beyond the tables of 0001: a group's current
-- snapshot apart from its newest (a deployment stages a snapshot that only the nodes of
-- its waves receive), per-node pins that name their group, the deployment's plan and
-- policy, and the events stream.

-- A group's snapshot versions are still allocated from latest_snapshot_version; the
-- snapshot nodes that follow their group receive is current_snapshot_version. A
-- deployment's staged snapshot takes a version without becoming current; it becomes
-- current when the deployment completes (and promotes).
ALTER TABLE proxy_groups
    ADD COLUMN current_snapshot_version bigint NOT NULL DEFAULT 0
        CHECK (current_snapshot_version >= 0);
UPDATE proxy_groups SET current_snapshot_version = latest_snapshot_version;
ALTER TABLE proxy_groups
    ADD CONSTRAINT proxy_groups_current_le_latest
        CHECK (current_snapshot_version <= latest_snapshot_version);

COMMENT ON COLUMN proxy_groups.latest_snapshot_version IS
    'Highest snapshot version allocated in the group (staged ones included).';
COMMENT ON COLUMN proxy_groups.current_snapshot_version IS
    'Snapshot the group''s nodes receive unless a deployment pins them; 0 = none yet.';

ALTER TABLE snapshots ADD COLUMN deployment_id uuid;
COMMENT ON COLUMN snapshots.deployment_id IS
    'Deployment that staged this snapshot for its waves; NULL when it was published to '
    'the whole group directly.';

-- A pin names the group its version belongs to: a node that comes back under another
-- group (another xDS cluster) is not served a version of the wrong group.
ALTER TABLE node_status ADD COLUMN desired_group text;
COMMENT ON COLUMN node_status.desired_group IS
    'Group of desired_snapshot_version; the pin applies only while the node is in it.';
CREATE INDEX node_status_pinned ON node_status (node_id) WHERE desired_snapshot_version IS NOT NULL;

ALTER TABLE deployments
    ADD COLUMN groups               text[]  NOT NULL DEFAULT '{}',
    ADD COLUMN target_snapshots     jsonb   NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(target_snapshots) = 'object'),
    ADD COLUMN baseline_snapshots   jsonb   NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(baseline_snapshots) = 'object'),
    ADD COLUMN previous_live_version integer,
    ADD COLUMN promote              boolean NOT NULL DEFAULT true,
    ADD COLUMN promoted             boolean NOT NULL DEFAULT false,
    ADD COLUMN health_failure_limit integer NOT NULL DEFAULT 3 CHECK (health_failure_limit >= 1),
    ADD COLUMN skipped_nodes        jsonb   NOT NULL DEFAULT '[]'
        CHECK (jsonb_typeof(skipped_nodes) = 'array'),
    ADD COLUMN resumed_at           timestamptz,
    ADD COLUMN state_changed_at     timestamptz NOT NULL DEFAULT now();

COMMENT ON COLUMN deployments.groups IS 'Proxy groups the deployment changes (the config''s groups it selected).';
COMMENT ON COLUMN deployments.target_snapshots IS 'Group -> staged snapshot version the waves move nodes to.';
COMMENT ON COLUMN deployments.baseline_snapshots IS 'Group -> current snapshot version when the deployment was created.';
COMMENT ON COLUMN deployments.previous_live_version IS
    'The config''s live version before the deployment; a rollback after promotion restores it.';
COMMENT ON COLUMN deployments.promote IS
    'Whether completion makes the version live for the whole of each group.';
COMMENT ON COLUMN deployments.promoted IS 'Set when completion made the version live.';
COMMENT ON COLUMN deployments.skipped_nodes IS
    'Nodes the selector matched but the plan left out: [{"node_id", "reason"}].';
COMMENT ON COLUMN deployments.state_changed_at IS 'When the deployment entered its state.';
COMMENT ON COLUMN deployments.resumed_at IS 'Last resume; a wave''s timeout counts from its start or this, whichever is later.';

CREATE INDEX deployments_groups ON deployments USING gin (groups);

-- Fleet health: when a connected node was found stale (emitted once until it is seen
-- again).
ALTER TABLE proxy_nodes ADD COLUMN stale_since timestamptz;

-- ----------------------------------------------------------------------------------
-- Events: what GET /api/v1/events streams. Written in the transaction of what they
-- report, NOTIFYed on sextant_events, read back by id so every replica streams the
-- same sequence.

CREATE TABLE events (
    id            bigserial   PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    type          text        NOT NULL CHECK (type IN (
                      'config_applied', 'config_rejected', 'wave_started', 'wave_completed',
                      'rollout_completed', 'rollout_failed', 'rollback_started',
                      'rollback_completed', 'rollout_paused', 'rollout_resumed',
                      'rollout_canceled', 'proxy_connected', 'proxy_disconnected',
                      'proxy_stale')),
    replica_id    text        NOT NULL DEFAULT '',
    deployment_id uuid,
    node_id       text,
    group_name    text,
    data          jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object')
);

COMMENT ON TABLE events IS
    'Live events streamed by GET /api/v1/events (server-sent events, id = this id). '
    'Pruned after events.retention.';
COMMENT ON COLUMN events.data IS 'Type-specific fields, e.g. {"version": 4, "error": "..."}.';

CREATE INDEX events_at ON events (at);

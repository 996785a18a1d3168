-- 0001_init.sql — Sextant's core schema: configs and their immutable versions, proxy
-- groups and their immutable snapshots, the fleet (nodes and their ACK/NACK status),
-- rollouts (deployments and waves) and the append-only audit log.
--
-- Applied by `sextant migrate` (storage/migrate.c) inside one transaction, under an
-- advisory lock, and recorded in schema_migrations. Never edit this file once it has
-- shipped: add a new numbered file instead (migrate refuses a changed applied file).
--
-- Conventions:
--   * Names are lowercase snake_case; enumerated states are lowercase snake_case
--     text values guarded by CHECK constraints ('in_progress', 'rolled_back', ...),
--     the same spelling the REST API uses in JSON.
--   * Times are timestamptz; history tables are immutable (a trigger refuses UPDATE
--     and DELETE) so that an operator can trust what they read with plain SQL.
--   * gen_random_uuid() is built into PostgreSQL 13 and later: no extension needed.

-- ----------------------------------------------------------------------------------
-- Shared trigger function: refuses any change to a history table.

CREATE FUNCTION sextant_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on % is not allowed: rows of % are immutable',
        TG_OP, TG_TABLE_NAME, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation',
              HINT = 'History is append-only; record a new row instead.';
END;
$$;

COMMENT ON FUNCTION sextant_refuse_change() IS
    'Trigger function that refuses UPDATE, DELETE and TRUNCATE on immutable history tables.';

-- ----------------------------------------------------------------------------------
-- Configs: a named, namespaced piece of IR applied to proxy groups.

CREATE TABLE configs (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    namespace      text        NOT NULL CHECK (namespace <> '' AND length(namespace) <= 253),
    name           text        NOT NULL CHECK (name <> '' AND length(name) <= 253),
    groups         text[]      NOT NULL DEFAULT '{}',
    latest_version integer     NOT NULL DEFAULT 0 CHECK (latest_version >= 0),
    live_version   integer     CHECK (live_version >= 1 AND live_version <= latest_version),
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    deleted_at     timestamptz
);

COMMENT ON TABLE configs IS
    'A named, namespaced piece of configuration (listeners, routes, backends, secrets) '
    'applied to the proxy groups in "groups". Its content lives in config_versions. '
    'DELETE is a soft delete (deleted_at) so that the history survives.';
COMMENT ON COLUMN configs.groups IS 'Proxy groups (proxy_groups.name) this config applies to.';
COMMENT ON COLUMN configs.latest_version IS
    'Highest version number in config_versions, drafts included; the optimistic '
    'concurrency token (ETag / If-Match) of the REST API.';
COMMENT ON COLUMN configs.live_version IS
    'Version the group snapshots are composed from: the newest non-draft version; NULL '
    'while every version is a draft.';
COMMENT ON COLUMN configs.deleted_at IS 'Set by a soft delete; NULL while the config is live.';

-- Names are unique among live configs only, so a deleted name can be reused.
CREATE UNIQUE INDEX configs_namespace_name_live ON configs (namespace, name)
    WHERE deleted_at IS NULL;
CREATE INDEX configs_groups ON configs USING gin (groups) WHERE deleted_at IS NULL;

CREATE TABLE config_versions (
    config_id      uuid        NOT NULL REFERENCES configs (id),
    version        integer     NOT NULL CHECK (version >= 1),
    spec           jsonb       NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
    checksum       text        NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
    author         text        NOT NULL,
    message        text        NOT NULL DEFAULT '',
    draft          boolean     NOT NULL DEFAULT false,
    source_version integer     CHECK (source_version >= 1),
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (config_id, version)
);

COMMENT ON TABLE config_versions IS
    'Every change of a config is a new immutable row here; rollback writes a new version '
    'that copies an older spec. UPDATE and DELETE are refused by a trigger.';
COMMENT ON COLUMN config_versions.checksum IS
    'Lowercase hex SHA-256 of the canonical JSON of spec (keys sorted, compact), computed '
    'by the server.';
COMMENT ON COLUMN config_versions.draft IS
    'A draft is validated and stored but changes nothing until it is applied.';
COMMENT ON COLUMN config_versions.source_version IS
    'For a rollback, the version whose spec this version copies; NULL otherwise.';

CREATE INDEX config_versions_created_at ON config_versions (created_at);

CREATE TRIGGER config_versions_immutable
    BEFORE UPDATE OR DELETE ON config_versions
    FOR EACH ROW EXECUTE FUNCTION sextant_refuse_change();
CREATE TRIGGER config_versions_no_truncate
    BEFORE TRUNCATE ON config_versions
    FOR EACH STATEMENT EXECUTE FUNCTION sextant_refuse_change();

-- ----------------------------------------------------------------------------------
-- Proxy groups and their snapshots.

CREATE TABLE proxy_groups (
    name                    text        PRIMARY KEY CHECK (name <> '' AND length(name) <= 253),
    latest_snapshot_version bigint      NOT NULL DEFAULT 0 CHECK (latest_snapshot_version >= 0),
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE proxy_groups IS
    'One row per proxy group that has snapshots. Inserting a snapshot increments '
    'latest_snapshot_version under this row''s lock, which keeps the versions of a group '
    'monotonic and gap-free when replicas write concurrently.';

CREATE TABLE snapshots (
    id              bigserial   PRIMARY KEY,
    group_name      text        NOT NULL REFERENCES proxy_groups (name),
    version         bigint      NOT NULL CHECK (version >= 1),
    ir              jsonb       NOT NULL,
    encoded         bytea       NOT NULL,
    checksum        text        NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
    source_versions jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(source_versions) = 'array'),
    reason          text        NOT NULL DEFAULT '',
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (group_name, version)
);

COMMENT ON TABLE snapshots IS
    'Immutable composed configuration of one proxy group at one version: the IR as JSON, '
    'the encoded gateway.control.v1.ConfigSnapshot bytes served to proxies, and the config '
    'versions it was built from. UPDATE and DELETE are refused by a trigger.';
COMMENT ON COLUMN snapshots.source_versions IS
    'The config versions this snapshot was built from: [{"config_id": uuid, "version": n}].';
COMMENT ON COLUMN snapshots.reason IS
    'Why it was built: "config change", "rollback to 12", "gateway api sync", ...';

-- The UNIQUE (group_name, version) index serves "latest of a group" with a backward
-- scan and "versions of a group" in order; proxy_groups holds the latest directly.
CREATE INDEX snapshots_created_at ON snapshots (created_at);

CREATE TRIGGER snapshots_immutable
    BEFORE UPDATE OR DELETE ON snapshots
    FOR EACH ROW EXECUTE FUNCTION sextant_refuse_change();
CREATE TRIGGER snapshots_no_truncate
    BEFORE TRUNCATE ON snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION sextant_refuse_change();

-- ----------------------------------------------------------------------------------
-- The fleet.

CREATE TABLE proxy_nodes (
    node_id         text        PRIMARY KEY CHECK (node_id <> ''),
    group_name      text        NOT NULL,
    namespace       text        NOT NULL DEFAULT '',
    labels          jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
    metadata        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    client          text        NOT NULL DEFAULT '',
    replica_id      text,
    connected       boolean     NOT NULL DEFAULT false,
    first_seen      timestamptz NOT NULL DEFAULT now(),
    last_seen       timestamptz NOT NULL DEFAULT now(),
    connected_at    timestamptz,
    disconnected_at timestamptz
);

COMMENT ON TABLE proxy_nodes IS
    'Every proxy (Envoy or proxyless gRPC client) ever seen: identity, group, labels, the '
    'replica its stream is connected to, and when it was last seen.';
COMMENT ON COLUMN proxy_nodes.group_name IS 'Proxy group (the xDS node cluster) the node belongs to.';
COMMENT ON COLUMN proxy_nodes.client IS 'Client and version, e.g. "envoy/1.30.1" or "grpc-js/1.10.0".';
COMMENT ON COLUMN proxy_nodes.replica_id IS 'Sextant replica holding (or last holding) the node''s stream.';

CREATE INDEX proxy_nodes_group ON proxy_nodes (group_name, node_id);
CREATE INDEX proxy_nodes_last_seen ON proxy_nodes (last_seen);
CREATE INDEX proxy_nodes_replica ON proxy_nodes (replica_id) WHERE connected;
CREATE INDEX proxy_nodes_labels ON proxy_nodes USING gin (labels);

CREATE TABLE node_status (
    node_id                  text        PRIMARY KEY REFERENCES proxy_nodes (node_id) ON DELETE CASCADE,
    desired_snapshot_version bigint,
    deployment_id            uuid,
    acked_snapshot_version   bigint,
    acked_at                 timestamptz,
    last_nack_version        bigint,
    last_nack_error          text,
    last_nack_at             timestamptz,
    nack_count               integer     NOT NULL DEFAULT 0 CHECK (nack_count >= 0),
    updated_at               timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE node_status IS
    'What each node should have and what it reported: the assigned snapshot version, the '
    'last ACKed version and the last NACK. Every replica reads the same answer here.';
COMMENT ON COLUMN node_status.desired_snapshot_version IS
    'Snapshot version of the node''s group it is assigned; NULL means it follows the '
    'group''s newest snapshot.';
COMMENT ON COLUMN node_status.deployment_id IS 'Deployment that set the assignment, if any.';

CREATE INDEX node_status_deployment ON node_status (deployment_id) WHERE deployment_id IS NOT NULL;

-- ----------------------------------------------------------------------------------
-- Rollouts.

CREATE TABLE deployments (
    id              uuid             PRIMARY KEY DEFAULT gen_random_uuid(),
    config_id       uuid             NOT NULL,
    config_version  integer          NOT NULL,
    selector        jsonb            NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(selector) = 'object'),
    strategy        jsonb            NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(strategy) = 'object'),
    state           text             NOT NULL DEFAULT 'pending' CHECK (state IN (
                        'pending', 'in_progress', 'paused', 'completed', 'failed',
                        'canceling', 'rolling_back', 'rolled_back', 'rollback_failed')),
    state_reason    text             NOT NULL DEFAULT '',
    nack_threshold  double precision NOT NULL DEFAULT 0.05 CHECK (nack_threshold >= 0 AND nack_threshold <= 1),
    nack_min_sample integer          NOT NULL DEFAULT 10 CHECK (nack_min_sample >= 0),
    wave_timeout    interval         NOT NULL DEFAULT '10 minutes' CHECK (wave_timeout > '0'),
    current_wave    integer          NOT NULL DEFAULT -1 CHECK (current_wave >= -1),
    created_by      text             NOT NULL,
    reason          text             NOT NULL DEFAULT '',
    owner_replica   text,
    lease_until     timestamptz,
    created_at      timestamptz      NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz,
    updated_at      timestamptz      NOT NULL DEFAULT now(),
    FOREIGN KEY (config_id, config_version) REFERENCES config_versions (config_id, version)
);

COMMENT ON TABLE deployments IS
    'A rollout of one config version to the nodes a selector picks, in waves. All its state '
    'lives here so any replica can continue it. States (snake_case of the seed''s names): '
    'pending, in_progress, paused, completed, failed, canceling, rolling_back, rolled_back, '
    'rollback_failed.';
COMMENT ON COLUMN deployments.selector IS
    'Which nodes: {"node_ids": [...], "groups": [...], "labels": {...}, "namespaces": [...]}.';
COMMENT ON COLUMN deployments.strategy IS
    'How: {"type": "all_at_once" | "rolling" | "canary", ...parameters}.';
COMMENT ON COLUMN deployments.current_wave IS 'Index of the wave in progress; -1 before the first.';
COMMENT ON COLUMN deployments.owner_replica IS
    'Replica driving the deployment; another may take it over once lease_until has passed.';

CREATE INDEX deployments_state ON deployments (state, created_at);
CREATE INDEX deployments_config ON deployments (config_id, created_at);
CREATE INDEX deployments_active_lease ON deployments (lease_until)
    WHERE state IN ('pending', 'in_progress', 'canceling', 'rolling_back');

CREATE TABLE deployment_waves (
    deployment_id      uuid        NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    wave_index         integer     NOT NULL CHECK (wave_index >= 0),
    state              text        NOT NULL DEFAULT 'pending' CHECK (state IN (
                           'pending', 'in_progress', 'completed', 'failed', 'canceled',
                           'rolled_back')),
    node_ids           text[]      NOT NULL,
    target_snapshots   jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(target_snapshots) = 'object'),
    baseline_snapshots jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(baseline_snapshots) = 'object'),
    acks               integer     NOT NULL DEFAULT 0 CHECK (acks >= 0),
    nacks              integer     NOT NULL DEFAULT 0 CHECK (nacks >= 0),
    errors             jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(errors) = 'array'),
    started_at         timestamptz,
    completed_at       timestamptz,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (deployment_id, wave_index)
);

COMMENT ON TABLE deployment_waves IS
    'The waves of a deployment: which nodes, the snapshot each group moves to, the snapshot '
    'each node had before (for rollback), and the ACK/NACK tally. States: pending, '
    'in_progress, completed, failed, canceled, rolled_back.';
COMMENT ON COLUMN deployment_waves.target_snapshots IS 'Group name -> snapshot version the wave moves to.';
COMMENT ON COLUMN deployment_waves.baseline_snapshots IS
    'Node id -> snapshot version the node had before the wave; rollback restores it.';
COMMENT ON COLUMN deployment_waves.errors IS 'NACK details: [{"node_id", "version", "error", "at"}].';

CREATE INDEX deployment_waves_nodes ON deployment_waves USING gin (node_ids);

-- ----------------------------------------------------------------------------------
-- Audit.

CREATE TABLE audit_log (
    id            bigserial   PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    actor         text        NOT NULL,
    actor_role    text        NOT NULL DEFAULT '',
    action        text        NOT NULL,
    resource_type text        NOT NULL,
    resource_id   text        NOT NULL DEFAULT '',
    result        text        NOT NULL CHECK (result IN ('success', 'denied', 'failed')),
    status_code   integer,
    request_id    text,
    source_ip     inet,
    details       jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object')
);

COMMENT ON TABLE audit_log IS
    'Who did what to which resource, from where, with what result. Append-only: UPDATE, '
    'DELETE and TRUNCATE are refused by triggers.';
COMMENT ON COLUMN audit_log.actor IS 'User (JWT subject), or "system" / a replica id for automatic actions.';
COMMENT ON COLUMN audit_log.action IS 'What was done: "config.create", "config.rollback", "deployment.pause", ...';
COMMENT ON COLUMN audit_log.details IS
    'Anything else worth keeping, e.g. {"before_version": 3, "after_version": 4}.';

CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_resource ON audit_log (resource_type, resource_id, id);

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION sextant_refuse_change();
CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION sextant_refuse_change();

-- 0007_replicas.sql — the Sextant replicas that share this database, as each one last
-- said it was: its version and addresses, when it started and was last seen, and
-- whether it held the leader lock (server/leader.h) at that moment.
--
-- Every replica upserts its own row every leader.heartbeat; the leader deletes the rows
-- of replicas silent for leader.forget_after. GET /api/v1/replicas lists them, judging
-- a replica alive while its row is younger than three heartbeats.

CREATE TABLE replicas (
    replica_id   text        PRIMARY KEY CHECK (length(replica_id) BETWEEN 1 AND 253),
    version      text        NOT NULL,
    http_address text        NOT NULL,
    grpc_address text        NOT NULL,
    started_at   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL DEFAULT now(),
    leader       boolean     NOT NULL DEFAULT false,
    term         bigint      NOT NULL DEFAULT 0 CHECK (term >= 0)
);

CREATE INDEX replicas_last_seen ON replicas (last_seen);

COMMENT ON TABLE replicas IS
    'Sextant replicas sharing this database, one row each, refreshed by the replica itself.';
COMMENT ON COLUMN replicas.replica_id IS 'replica.id (SEXTANT_REPLICA_ID) of the replica.';
COMMENT ON COLUMN replicas.version IS 'The sextant version the replica runs.';
COMMENT ON COLUMN replicas.http_address IS 'http.listen of the replica (REST, UI, metrics).';
COMMENT ON COLUMN replicas.grpc_address IS 'grpc.listen of the replica (xDS).';
COMMENT ON COLUMN replicas.started_at IS 'When the replica''s process started.';
COMMENT ON COLUMN replicas.last_seen IS 'The replica''s last heartbeat (database clock).';
COMMENT ON COLUMN replicas.leader IS 'Whether the replica held the leader lock at its last heartbeat.';
COMMENT ON COLUMN replicas.term IS
    'The replica''s own count of times it gained the lead, while leading; 0 otherwise.';

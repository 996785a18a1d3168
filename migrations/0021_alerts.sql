-- 0021_alerts.sql — Sextant's own alerts: what the leader's evaluation (server/alerts.h)
-- found wrong with the fleet, the rollouts and the replicas, one row per episode.
--
-- A row is written when a rule's condition starts to hold for a subject (a group, a
-- node, a deployment, a replica) and resolved when it stops holding; a partial unique
-- index keeps one firing row per rule and subject, so an evaluation that runs twice
-- (two replicas briefly both leading) still fires an episode once. A condition that
-- holds again later starts a new row.

CREATE TABLE alerts (
    id          bigserial        PRIMARY KEY,
    rule        text             NOT NULL CHECK (rule IN (
                    'nack_rate', 'proxy_disconnected', 'deployment_failed', 'replica_lost')),
    subject     text             NOT NULL CHECK (length(subject) BETWEEN 1 AND 512),
    state       text             NOT NULL DEFAULT 'firing' CHECK (state IN ('firing', 'resolved')),
    started_at  timestamptz      NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    value       double precision NOT NULL DEFAULT 0,
    message     text             NOT NULL DEFAULT '',
    CHECK ((state = 'resolved') = (resolved_at IS NOT NULL))
);

CREATE UNIQUE INDEX alerts_one_firing ON alerts (rule, subject) WHERE state = 'firing';
CREATE INDEX alerts_state ON alerts (state, id);

COMMENT ON TABLE alerts IS
    'Alerts raised by the leader''s rules, one row per episode of a condition (firing, then '
    'resolved). GET /api/v1/alerts lists them.';
COMMENT ON COLUMN alerts.rule IS
    'nack_rate (subject: a group), proxy_disconnected (a node id), deployment_failed (a '
    'deployment id), replica_lost (a replica id).';
COMMENT ON COLUMN alerts.value IS
    'The rule''s last measured value: a NACK rate (0..1), seconds disconnected or silent, 1.';

INSERT INTO event_types (name) VALUES ('alert_firing'), ('alert_resolved')
ON CONFLICT DO NOTHING;

-- A replica that stops cleanly says so in its last heartbeat, so that rule replica_lost
-- tells a replica lost from one scaled down or replaced by an upgrade; the next
-- heartbeat of a replica of that id clears it.
ALTER TABLE replicas ADD COLUMN stopped_at timestamptz;
COMMENT ON COLUMN replicas.stopped_at IS
    'When the replica stopped cleanly (its last heartbeat); NULL while it runs or when it was lost.';

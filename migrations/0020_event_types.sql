-- 0020_event_types.sql — the kinds of live event as rows of their own, and five more:
-- a config created, updated or deleted, a snapshot generated, a deployment started.
--
-- The types were a CHECK list on events.type, which every migration adding one had to
-- restate whole; now a migration adding a type inserts a row. The writer checks the type
-- against its own list first (server/events.c), so an unknown type never reaches here.

CREATE TABLE event_types (
    name text PRIMARY KEY
);

COMMENT ON TABLE event_types IS
    'The kinds of event table events may hold (events.type references it).';

INSERT INTO event_types (name)
SELECT unnest(ARRAY[
    'config_applied', 'config_rejected', 'wave_started', 'wave_completed',
    'rollout_completed', 'rollout_failed', 'rollback_started', 'rollback_completed',
    'rollout_paused', 'rollout_resumed', 'rollout_canceled', 'proxy_connected',
    'proxy_disconnected', 'proxy_stale',
    'config_created', 'config_updated', 'config_deleted', 'snapshot_generated',
    'deployment_started'])
ON CONFLICT DO NOTHING;

ALTER TABLE events DROP CONSTRAINT IF EXISTS events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_known
    FOREIGN KEY (type) REFERENCES event_types (name);

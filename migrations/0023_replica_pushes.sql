-- 0023_replica_pushes.sql — each replica's pushes per minute over the last hour, carried
-- by its heartbeat, so that the metrics view (GET /api/v1/fleet/metrics) shows the
-- fleet's pushes per second from any replica without an external Prometheus.

ALTER TABLE replicas ADD COLUMN pushes_per_minute jsonb NOT NULL DEFAULT '{}'
    CONSTRAINT replicas_pushes_object CHECK (jsonb_typeof(pushes_per_minute) = 'object');

COMMENT ON COLUMN replicas.pushes_per_minute IS
    'xDS and gateway.control.v1 responses the replica sent (sextant_xds_pushes_total) per '
    'minute of the last hour: {"<minute start, epoch seconds>": count}; minutes with none '
    'are left out. Rewritten by every heartbeat.';

-- 0002_node_stream_details.sql — what the xDS streams learn about a node beyond its
-- identity: its locality and protocol, why its last stream ended, and the snapshot
-- version last sent to it (next to the one it ACKed, so "sent but not yet ACKed" is
-- visible), and the last health report of gateway.control.v1 data planes.

ALTER TABLE proxy_nodes
    ADD COLUMN locality          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(locality) = 'object'),
    ADD COLUMN protocol          text  NOT NULL DEFAULT '',
    ADD COLUMN disconnect_reason text;

COMMENT ON COLUMN proxy_nodes.locality IS 'The node''s locality as it reported it: region, zone, sub_zone.';
COMMENT ON COLUMN proxy_nodes.protocol IS 'Stream protocol: ads-sotw, ads-delta or control-v1.';
COMMENT ON COLUMN proxy_nodes.disconnect_reason IS
    'Why the node''s last stream ended (client_disconnect, superseded, shutdown, ...).';

ALTER TABLE node_status
    ADD COLUMN sent_snapshot_version bigint,
    ADD COLUMN sent_at               timestamptz,
    ADD COLUMN report_ready          boolean,
    ADD COLUMN report_version        text,
    ADD COLUMN report_message        text,
    ADD COLUMN reported_at           timestamptz;

COMMENT ON COLUMN node_status.report_ready IS
    'Readiness from the node''s last status report (gateway.control.v1); NULL when it never reported.';
COMMENT ON COLUMN node_status.reported_at IS 'When the node observed the status it last reported.';

COMMENT ON COLUMN node_status.sent_snapshot_version IS
    'Snapshot version of its group last sent to the node; compare with acked_snapshot_version.';

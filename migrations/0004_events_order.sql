-- 0004_events_order.sql — the order in which GET /api/v1/events streams events.
--
-- An event's id comes from a sequence when its row is inserted, but the transactions
-- that insert events commit in another order: a reader that has seen id 11 can still
-- be handed id 10 when the transaction holding it commits later, and a reader that
-- moved past 10 would lose it. So events are streamed in the order of the inserting
-- transaction's id (txid), then id, and only once every transaction older than the
-- reader's snapshot has ended (txid < pg_snapshot_xmin(pg_current_snapshot())): any
-- row that becomes visible later has a txid at or above that horizon, so it sorts
-- after everything already streamed. Nothing is lost and nothing is streamed twice; the
-- price is that a long write transaction anywhere in the cluster delays the events
-- committed after it began until it ends.

ALTER TABLE events ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();

COMMENT ON COLUMN events.txid IS
    'Transaction that inserted the event; (txid, id) is the order events are streamed in.';

CREATE INDEX events_stream_order ON events (txid, id);

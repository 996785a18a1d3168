-- 0008_stream_gen.sql — which stream of a node its row describes, so that the end of a
-- superseded stream never overwrites the state of the stream that replaced it.
--
-- Every xDS stream gets a generation when it becomes the node's stream: the replica's
-- wall clock in microseconds, strictly increasing on each replica and above the
-- generation of the stream it supersedes. A connect is written only when its
-- generation is not older than the row's, or the row's stream has ended; a disconnect
-- only when the row still holds the stream that ended. So whichever order the flushers
-- of one or several replicas write them in, the newest stream wins.

ALTER TABLE proxy_nodes ADD COLUMN stream_gen bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN proxy_nodes.stream_gen IS
    'Generation of the stream the row describes (microseconds since the epoch at its start, '
    'on its replica); 0 for rows written before generations existed.';

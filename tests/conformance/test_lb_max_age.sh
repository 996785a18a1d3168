#!/usr/bin/env bash
# test_lb_max_age.sh — xds.max_connection_age behind a real HAProxy: with an age of 2 s
# (and 1 s of grace) every connection is closed after a GOAWAY, and each client
# reconnects through HAProxy keeping its configuration:
#
#   - 60 protocol-level ADS streams (lib/ads_load.js) and a @grpc/grpc-js-xds client
#     are recycled over and over, yet no client receives another version than the one
#     it holds, no config_applied event is recorded (the ACKs of a reconnect change
#     nothing), and the real client makes no failed call;
#   - a replica added to the pool (HAProxy lists r3 from the start; it starts later)
#     gets its share: the streams spread within ±20% over the three replicas, with no
#     other help than the connections' age.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/lb.sh"

conf_init lb-max-age
lb_need_haproxy || exit 1
G=conf-lb-age
STREAMS=60
LOAD="$WORK/load.json"
CALLS="$WORK/calls.log"

# render.sh refuses what it cannot turn into server lines, and says why.
render_refuses() { # render_refuses MESSAGE ARGS...: exits 2 naming MESSAGE, writes nothing
    local want=$1 rc
    shift
    "$SRC/deploy/lb/render.sh" --grpc-bind 127.0.0.1:1 --http-bind 127.0.0.1:2 --stats-socket "$WORK/s" \
        "$@" >"$WORK/render.out" 2>"$WORK/render.err"
    rc=$?
    [ "$rc" = 2 ] && [ ! -s "$WORK/render.out" ] && grep -q -- "$want" "$WORK/render.err"
}
check "render.sh refuses a replica without its HTTP port" \
    render_refuses "want NAME=HOST:GRPC_PORT:HTTP_PORT" --replica r1=127.0.0.1:18000
check "render.sh refuses a replica named twice" \
    render_refuses "named twice" --replica r1=127.0.0.1:1:2 --replica r1=127.0.0.1:3:4
check "render.sh refuses no replica at all" render_refuses "at least one --replica"

conf_services || exit 1
export SEXTANT_XDS_MAX_CONNECTION_AGE=2s
export SEXTANT_XDS_MAX_CONNECTION_AGE_GRACE=1s
export SEXTANT_NODES_FLUSH_INTERVAL=100ms
echo_backend A || exit 1
conf_echo_snapshot "$WORK/a.json" "$ECHO_A"
V=$(conf_publish "$G" "$WORK/a.json") || exit 1

lb_replica r1 || exit 1
lb_replica r2 || exit 1
lb_ports r3
lb_start r1 r2 r3 || exit 1
check "HAProxy's xDS pool has r1 and r2 UP, r3 not yet" wait_for 10 lb_up xds_replicas 2

bg_run load node "$CONF/lib/ads_load.js" --server "127.0.0.1:$LB_GRPC" --group "$G" \
    --streams "$STREAMS" --out "$LOAD"
GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap age-js "$G" "$LB_GRPC") \
    bg_run js node "$CONF/lib/xds_client.js" --target xds:///echo.test --out "$CALLS" --interval-ms 50
load_is() { jtrue "$1" "$LOAD"; }
check "the $STREAMS ADS streams are up through HAProxy at version $V" \
    wait_for 30 load_is "j.up === $STREAMS && j.versions['$V'] === $STREAMS"
check "the grpc-js-xds client reaches backend A" wait_for 30 last_is "$CALLS" "ok A"
applied() { sql "SELECT count(*) FROM events WHERE type = 'config_applied'"; }
acked_all() { [ "$(sql "SELECT count(*) FROM node_status WHERE acked_snapshot_version = $V")" = $((STREAMS + 1)) ]; }
check "every node's ACK of version $V is recorded" wait_for 15 acked_all
APPLIED0=$(applied)
T_MARK=$(now_ms)

# Every stream is recycled at least twice (2 s ± 10% of age, then at most 1 s of grace).
check "GOAWAY at the connection's age: every stream is closed and reopened, twice" \
    wait_for 30 load_is "j.ends >= $((2 * STREAMS))"
check "no reconnect brought another version: every client holds $V, none saw a change" \
    load_is "j.changes === 0 && j.versions['$V'] === $STREAMS"
acked_again() { # every node ACKed version V again after T_MARK (on a new connection)
    [ "$(sql "SELECT count(*) FROM node_status WHERE acked_snapshot_version = $V AND acked_at > to_timestamp($T_MARK / 1000.0)")" = $((STREAMS + 1)) ]
}
check "every node ACKed version $V again on a new connection (node_status.acked_at)" wait_for 15 acked_again
check "the reconnects' ACKs recorded no config change (config_applied $APPLIED0 → $(applied))" \
    [ "$(applied)" = "$APPLIED0" ]
errs=$(awk '$2 == "ok" { started = 1 } started && $2 == "err"' "$CALLS" | wc -l)
check "no call of the grpc-js-xds client failed ($errs of $(wc -l <"$CALLS"))" [ "$errs" = 0 ]

# ---------------------------------------------------------------- a replica joins
lb_replica r3 || exit 1
check "r3 joins HAProxy's xDS pool" wait_for 10 lb_server_up xds_replicas r3
check "the streams spread over r1, r2 and r3 within ±20% as connections age" \
    wait_for 30 lb_spread $((STREAMS + 1)) r1 r2 r3
echo "streams per replica: $(tr '\n' ' ' <"$WORK/spread")"
check "still no change seen by any client" load_is "j.changes === 0 && j.versions['$V'] === $STREAMS"

bg_stop js
bg_stop load
for r in r1 r2 r3; do conf_stop_serve "$r"; done
finish

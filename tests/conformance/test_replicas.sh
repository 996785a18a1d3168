#!/usr/bin/env bash
# test_replicas.sh — two `sextant serve` replicas on one database.
#
#   - both load the group's snapshot at start and serve the same version_info and
#     byte-identical resources (lib/ads_fetch.js against each, compared with cmp);
#   - a protocol-level client connected to r2 receives a snapshot published while it
#     and r1 run (`sextant publish` writes the database; NOTIFY reaches both);
#   - a @grpc/grpc-js-xds client whose xDS server is a TCP forwarder in front of r1
#     follows the publish; r1 is then killed (SIGKILL) after the forwarder is switched
#     to r2: the client reconnects to r2, which records it and its ACK of the same
#     version, follows the next publish, and no call fails at any point.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init replicas
G=conf-replicas
NODE=replicas-js-client
CALLS="$WORK/calls.log"

conf_services || exit 1
echo_backend X || exit 1
echo_backend Y || exit 1

conf_echo_snapshot "$WORK/x.json" "$ECHO_X"
v1=$(conf_publish "$G" "$WORK/x.json") || exit 1
conf_serve r1 || exit 1
conf_serve r2 || exit 1

fetch() { # fetch REPLICA_GRPC_PORT OUT [extra args]: the group's state from one replica
    local port=$1 out=$2
    shift 2
    node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$port" --group "$G" --node "fetch-$RANDOM" "$@" >"$out"
}
same_state() { # same_state A B: version_info and resource bytes identical
    cmp -s "$1" "$2"
}
version_of() { # version_of FILE TYPE
    node -e 'const s = require(process.argv[1]); console.log((s[process.argv[2]] || {}).version || "")' "$1" "$2"
}
sql() { psql "$SEXTANT_DATABASE_URL" -qtAXc "$1"; }

# ---------------------------------------------------------------- both replicas agree at start
check "r1 serves the group's state" fetch "$R1_GRPC" "$WORK/r1-v1.json"
check "r2 serves the group's state" fetch "$R2_GRPC" "$WORK/r2-v1.json"
all_at() { # all_at FILE VERSION: every type of a fetched state carries VERSION
    local t
    for t in LDS RDS CDS EDS; do [ "$(version_of "$1" "$t")" = "$2" ] || return 1; done
}
check "both replicas answer version_info $v1 for every type" \
    bash -c "$(declare -f version_of all_at); all_at '$WORK/r1-v1.json' '$v1' && all_at '$WORK/r2-v1.json' '$v1'"
check "both replicas serve the same version_info and byte-identical resources" \
    same_state "$WORK/r1-v1.json" "$WORK/r2-v1.json"

# ---------------------------------------------------------------- a real client behind a forwarder
echo "127.0.0.1:$R1_GRPC" >"$WORK/target"
bg_run forward node "$CONF/lib/tcp_forward.js" --port-file "$WORK/forward.port" --target-file "$WORK/target"
wait_for 10 test -s "$WORK/forward.port" || { fail "the TCP forwarder started"; finish; }
FWD=$(cat "$WORK/forward.port")
GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "$NODE" "$G" "$FWD") \
    bg_run client node "$CONF/lib/xds_client.js" --target xds:///echo.test --out "$CALLS" --interval-ms 50
check "the client (through the forwarder to r1) reaches backend X" wait_for 20 last_is "$CALLS" "ok X"
check "Sextant records the client on r1" \
    wait_for 10 bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc \"SELECT replica_id FROM proxy_nodes WHERE node_id = '$NODE'\")\" = r1 ]"

# ---------------------------------------------------------------- publish while both run
bg_run watch_r2 node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$R2_GRPC" --group "$G" \
    --node watch-r2 --until-version 2 --timeout-ms 20000 --ready-file "$WORK/watch_r2.ready"
check "a protocol-level client on r2 holds version 1" wait_for 10 test -e "$WORK/watch_r2.ready"
conf_echo_snapshot "$WORK/y.json" "$ECHO_Y"
v2=$(conf_publish "$G" "$WORK/y.json")
check "sextant publish writes version 2 (got '$v2')" [ "$v2" = 2 ]
wait_for 15 bash -c "! kill -0 $PID_watch_r2 2>/dev/null"
wait "$PID_watch_r2"
check "a client connected to r2 receives the publish (ads_fetch --until-version 2 exits 0)" [ $? = 0 ]
check "the client on r2 got version 2 with the endpoints on backend Y" \
    bash -c "grep -q '\"127.0.0.1:$ECHO_Y\"' '$WORK/watch_r2.log' && grep -q '\"version\": \"2\"' '$WORK/watch_r2.log'"
check "the grpc-js client on r1 follows the publish to backend Y" wait_for 10 last_is "$CALLS" "ok Y"
check "r1 serves version 2" fetch "$R1_GRPC" "$WORK/r1-v2.json"
check "r2 serves version 2" fetch "$R2_GRPC" "$WORK/r2-v2.json"
check "after the publish both replicas serve identical version_info and bytes" \
    same_state "$WORK/r1-v2.json" "$WORK/r2-v2.json"
check "r1 and r2 say version 2 for every type" \
    bash -c "$(declare -f version_of all_at); all_at '$WORK/r1-v2.json' 2 && all_at '$WORK/r2-v2.json' 2"
check "the client ACKed version 2 (node_status)" \
    wait_for 10 bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc \"SELECT acked_snapshot_version FROM node_status WHERE node_id = '$NODE'\")\" = 2 ]"

# ---------------------------------------------------------------- r1 dies; the client fails over
echo "127.0.0.1:$R2_GRPC" >"$WORK/target"
kill -HUP "$PID_forward"
# The forwarder says when it has re-read its target; only then is r1 killed, so the
# client's reconnection goes to r2.
wait_for 20 grep -q "new connections go to 127.0.0.1:$R2_GRPC" "$WORK/forward.log" ||
    fail "the forwarder switched to r2"
t_kill=$(now_ms)
bg_stop r1 KILL
check "after r1 is killed the client reconnects to r2 (proxy_nodes.replica_id)" \
    wait_for 15 bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc \"SELECT replica_id FROM proxy_nodes WHERE node_id = '$NODE'\")\" = r2 ]"
q="SELECT acked_snapshot_version FROM node_status WHERE node_id = '$NODE' AND acked_at > to_timestamp($t_kill / 1000.0)"
check "after the failover the client ACKs version 2 again, now from r2 (node_status.acked_at)" \
    wait_for 10 bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc \"$q\")\" = 2 ]"
# A protocol-level client that fails over the same way, but held an older snapshot: it
# reconnects to r2 carrying the versions r1 gave it first, with empty nonces; r2 answers
# with the current version and the bytes r1 serves. (A client holding the current
# version is sent nothing: test_reconnect_versions.sh.)
check "a client resuming on r2 with r1's older versions gets the current version_info and bytes" \
    bash -c "node '$CONF/lib/ads_fetch.js' --server 127.0.0.1:$R2_GRPC --group $G --node resumed \
        --resume '$WORK/r1-v1.json' >'$WORK/r2-resumed.json' && cmp -s '$WORK/r1-v2.json' '$WORK/r2-resumed.json'"
check "calls keep landing on backend Y after the failover" last_is "$CALLS" "ok Y"

# The client now talks to r2 only: a new publish must reach it there.
node -e '
    const s = require(process.argv[1]).build([{host: "echo.test", name: "echo", ports: [Number(process.argv[2])], timeout: "7s"}]);
    process.stdout.write(JSON.stringify(s));' "$CONF/lib/snapshots.js" "$ECHO_X" >"$WORK/x2.json"
v3=$(conf_publish "$G" "$WORK/x2.json")
check "sextant publish writes version 3 (got '$v3')" [ "$v3" = 3 ]
check "the failed-over client follows a publish through r2 (back to backend X)" wait_for 10 last_is "$CALLS" "ok X"
sleep 0.5
# Count from the first success: calls made before the client had its first
# configuration are not part of "throughout".
errs=$(awk '$2 == "ok" { started = 1 } started && $2 == "err"' "$CALLS" | wc -l)
total=$(wc -l <"$CALLS")
check "no call failed at any point ($errs of $total failed; r1 killed at $t_kill)" [ "$errs" = 0 ]
[ "$errs" = 0 ] || awk '$2 == "err"' "$CALLS" | head -n 5 >&2

bg_stop client
conf_stop_serve r2
finish

#!/usr/bin/env bash
# test_lb_failover.sh — three replicas behind a real HAProxy (deploy/lb/haproxy.cfg,
# rendered by deploy/lb/render.sh), every client connected through it only: 300
# protocol-level ADS streams (lib/ads_load.js, one connection each), a
# @grpc/grpc-js-xds client and a gRPC C core client (python3-grpcio) calling a backend.
#
#   - the streams spread over the replicas within ±20% (each replica's
#     sextant_xds_streams);
#   - SIGKILL of one replica: its streams are back (through HAProxy, on the others)
#     within 5 s, the real clients make no failed call, and a change published right
#     after reaches every client;
#   - a rolling deployment runs while the three replicas are restarted one by one
#     under the same load: no failed call, the deployment completes once, each wave
#     started once;
#   - PostgreSQL stopped for 30 s: every replica stays in HAProxy's xDS pool and the
#     streams stay up,
#     REST writes answer 503 with Retry-After (on a replica, and through HAProxy once
#     its REST pool is empty), nothing is half-written, and everything recovers by
#     itself;
#   - Redis stopped: REST reads and writes and the clients go on without a failure.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/lb.sh"

conf_init lb-failover
conf_need_python_grpc || exit 1
lb_need_haproxy || exit 1
G=conf-lb
STREAMS=300
LOAD="$WORK/load.json"
JS_CALLS="$WORK/js_calls.log"
PY_CALLS="$WORK/py_calls.log"

conf_services || exit 1
conf_rest_auth "conformance-lb-secret-0123456789abcdef" lb-tester
export SEXTANT_ROLLOUTS_TICK=200ms
export SEXTANT_NODES_FLUSH_INTERVAL=100ms
export SEXTANT_ROLLOUTS_LEASE=2s
echo_backend A || exit 1
echo_backend B || exit 1
lb_replica r1 || exit 1
lb_replica r2 || exit 1
lb_replica r3 || exit 1
lb_start r1 r2 r3 || exit 1
check "HAProxy's xDS pool has the three replicas UP (/readyz/xds)" wait_for 10 lb_up xds_replicas 3
check "HAProxy's REST pool has the three replicas UP (/readyz)" wait_for 10 lb_up api_replicas 3
HTTP_PORT=$LB_HTTP # every REST call below goes through HAProxy unless it names a replica

conf_echo_snapshot "$WORK/a.json" "$ECHO_A"
conf_echo_snapshot "$WORK/b.json" "$ECHO_B"
st=$(conf_rest POST /api/v1/configs "$(printf '{"namespace":"conformance","name":"echo","groups":["%s"],"spec":%s}' "$G" "$(cat "$WORK/a.json")")")
check "the config is created through HAProxy (got $st)" [ "$st" = 201 ]
ID=$(jv .id)
V1=$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = '$G'")

# ---------------------------------------------------------------- load through HAProxy
bg_run load node "$CONF/lib/ads_load.js" --server "127.0.0.1:$LB_GRPC" --group "$G" \
    --streams "$STREAMS" --out "$LOAD"
GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap lb-js "$G" "$LB_GRPC") \
    bg_run js node "$CONF/lib/xds_client.js" --target xds:///echo.test --out "$JS_CALLS" --interval-ms 50
GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap lb-py "$G" "$LB_GRPC") \
    bg_run py "$PYTHON" "$CONF/lib/xds_client.py" --target xds:///echo.test --out "$PY_CALLS" --interval-ms 50

load_is() { # load_is EXPR: the load's summary satisfies EXPR (j is the summary)
    jtrue "$1" "$LOAD"
}
all_on() { # all_on VERSION: every load stream is up and holds VERSION
    load_is "j.up === $STREAMS && j.versions['$1'] === $STREAMS"
}
check "the $STREAMS ADS streams are up through HAProxy at version $V1" wait_for 60 all_on "$V1"
check "the grpc-js-xds client reaches backend A through HAProxy" wait_for 30 last_is "$JS_CALLS" "ok A"
check "the C core client reaches backend A through HAProxy" wait_for 30 last_is "$PY_CALLS" "ok A"
TOTAL=$((STREAMS + 2))
check "$TOTAL streams spread over the three replicas within ±20%" wait_for 10 lb_spread "$TOTAL" r1 r2 r3
echo "streams per replica: $(tr '\n' ' ' <"$WORK/spread")"

failed_calls() { # failed_calls LOG: calls failed since the client's first success
    awk '$2 == "ok" { started = 1 } started && $2 == "err"' "$1" | wc -l
}
no_failed_calls() { # no_failed_calls WHAT
    local js py
    js=$(failed_calls "$JS_CALLS")
    py=$(failed_calls "$PY_CALLS")
    check "$1: no call of the grpc-js-xds client failed ($js of $(wc -l <"$JS_CALLS"))" [ "$js" = 0 ]
    check "$1: no call of the C core client failed ($py of $(wc -l <"$PY_CALLS"))" [ "$py" = 0 ]
}
# publish SPEC: a change of the config through HAProxy; prints the group's new version.
publish() {
    local st
    st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$1")}")
    [ "$st" = 200 ] || { echo "PUT answered $st: $(head -c 400 "$WORK/body")" >&2; return 1; }
    sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = '$G'"
}

# ---------------------------------------------------------------- SIGKILL one replica
ENDS0=$(lb_load_field "$LOAD" .ends)
ON_R1=$(lb_replica_streams r1)
bg_stop r1 KILL
on_survivors() { # every stream is up again, held by r2 and r3
    [ "$(($(lb_replica_streams r2) + $(lb_replica_streams r3)))" = "$TOTAL" ] &&
        load_is "j.ends > $ENDS0 && j.up === $STREAMS"
}
check "r1's $ON_R1 streams are back through HAProxy within 5 s (r2 and r3 hold all $TOTAL)" \
    wait_for 5 on_survivors
echo "longest time from a stream's end to its next response: $(lb_load_field "$LOAD" .max_gap_ms) ms"
check "... every stream still holds version $V1" all_on "$V1"
check "HAProxy takes r1 out of the xDS pool" wait_for 10 lb_up xds_replicas 2
V2=$(publish "$WORK/b.json")
check "a change right after the kill is accepted (version ${V2:-none})" [ -n "$V2" ]
check "every ADS stream receives version $V2" wait_for 15 all_on "$V2"
check "the grpc-js-xds client follows it to backend B" wait_for 15 last_is "$JS_CALLS" "ok B"
check "the C core client follows it to backend B" wait_for 15 last_is "$PY_CALLS" "ok B"
no_failed_calls "SIGKILL of r1"
lb_replica r1 || exit 1
both_full() { lb_up xds_replicas 3 && lb_up api_replicas 3; }
check "r1 restarted on its ports is back in both pools" wait_for 10 both_full

# ---------------------------------------------------------------- rolling restart under a rollout
st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/a.json"),\"draft\":true,\"message\":\"back to A\"}")
check "a draft back to backend A is saved (got $st)" [ "$st" = 200 ]
VD=$(jv .version)
st=$(conf_rest POST "/api/v1/configs/$ID/apply" "{\"version\":$VD,\"strategy\":{\"type\":\"rolling\",\"wave_size\":80,\"pause\":\"4s\"}}")
check "a rolling deployment in waves of 80 is created (got $st)" [ "$st" = 201 ]
DEP=$(jv .id)
WAVES=$(jv '.waves.length')
check "it has $WAVES waves for $TOTAL nodes" [ "$WAVES" = $(((TOTAL + 79) / 80)) ]
dep_is() { [ "$(sql "SELECT state FROM deployments WHERE id = '$DEP'")" = "$1" ]; }
check "the deployment is under way" wait_for 10 dep_is in_progress
# The waves' pauses (4 s) keep the deployment going while the replicas restart.
for r in r1 r2 r3; do
    conf_stop_serve "$r"
    lb_replica "$r" || exit 1
    check "$r is back in HAProxy's xDS pool after its restart" wait_for 10 lb_server_up xds_replicas "$r"
done
check "the deployment completes" wait_for 60 dep_is completed
V3=$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = '$G'")
check "every ADS stream holds the deployed version $V3" wait_for 15 all_on "$V3"
check "the grpc-js-xds client is on backend A" wait_for 15 last_is "$JS_CALLS" "ok A"
check "the C core client is on backend A" wait_for 15 last_is "$PY_CALLS" "ok A"
check "one deployment, completed once (audit deployment.complete)" \
    [ "$(sql "SELECT count(*) FROM deployments"):$(sql "SELECT count(*) FROM audit_log WHERE action = 'deployment.complete'")" = 1:1 ]
check "each of the $WAVES waves started once and completed once (events)" \
    [ "$(sql "SELECT count(*) FILTER (WHERE type = 'wave_started') || ':' || count(*) FILTER (WHERE type = 'wave_completed') || ':' || count(*) FILTER (WHERE type = 'rollout_completed') FROM events WHERE deployment_id = '$DEP'")" = "$WAVES:$WAVES:1" ]
conf_rest GET "/api/v1/deployments/$DEP" >/dev/null
check "every wave is completed with every node's ACK" \
    jtrue 'j.waves.every(w => w.state === "completed" && w.acks === w.node_ids.length) && j.waves.reduce((n, w) => n + w.node_ids.length, 0) === '"$TOTAL"
no_failed_calls "rolling restart"

# ---------------------------------------------------------------- PostgreSQL away
chkdown() { lb_stat xds_replicas chkdown | awk '{ n += $2 } END { print n + 0 }'; }
DOWNS0=$(chkdown)
CONFIG_ROWS0=$(sql "SELECT (SELECT count(*) FROM config_versions) || ':' || (SELECT count(*) FROM snapshots) || ':' || (SELECT count(*) FROM audit_log WHERE result = 'success')")
ENDS0=$(lb_load_field "$LOAD" .ends)
svc_pg_stop "$WORK/pg"
T_DOWN=$(date +%s)
check "without PostgreSQL HAProxy's REST pool empties (/readyz is 503 on every replica)" wait_for 30 lb_up api_replicas 0
check "... while its xDS pool keeps the three replicas (/readyz/xds)" lb_up xds_replicas 3
for r in r1 r2 r3; do
    p="${r^^}_HTTP"
    check "$r answers /readyz/xds 200 without the database" \
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${!p}/readyz/xds")" = 200 ]
done
st=$(HTTP_PORT=$R2_HTTP conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/b.json")}")
check "a REST write on a replica without its database answers 503 (got $st)" [ "$st" = 503 ]
check "... with Retry-After ($(header Retry-After))" [ -n "$(header Retry-After)" ]
check "... as a problem: error.code unavailable" [ "$(jv .error.code)" = unavailable ]
st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/b.json")}")
check "a REST write through HAProxy answers 503 (got $st)" [ "$st" = 503 ]
check "... with Retry-After ($(header Retry-After))" [ -n "$(header Retry-After)" ]
check "... and a JSON error (error.code unavailable)" [ "$(jv .error.code)" = unavailable ]
# The outage lasts 30 s in all; the streams and the clients are watched throughout.
while [ $(($(date +%s) - T_DOWN)) -lt 30 ]; do
    lb_up xds_replicas 3 || break
    sleep 0.5
done
check "for 30 s without PostgreSQL no replica left HAProxy's xDS pool" \
    [ "$(lb_up xds_replicas 3 && chkdown)" = "$DOWNS0" ]
check "... no ADS stream ended and all $STREAMS are up" load_is "j.ends === $ENDS0 && j.up === $STREAMS"
svc_pg_start "$WORK/pg" "$PG_PORT"
check "PostgreSQL back: every replica is ready again, HAProxy's REST pool is full" wait_for 60 lb_up api_replicas 3
check "nothing was half-written while it was away (versions, snapshots, audit)" \
    [ "$(sql "SELECT (SELECT count(*) FROM config_versions) || ':' || (SELECT count(*) FROM snapshots) || ':' || (SELECT count(*) FROM audit_log WHERE result = 'success')")" = "$CONFIG_ROWS0" ]
V4=$(publish "$WORK/b.json")
check "a REST write through HAProxy succeeds again (version ${V4:-none})" [ -n "$V4" ]
check "every ADS stream receives it" wait_for 15 all_on "$V4"
check "the grpc-js-xds client follows it to backend B" wait_for 15 last_is "$JS_CALLS" "ok B"
check "the C core client follows it to backend B" wait_for 15 last_is "$PY_CALLS" "ok B"
no_failed_calls "PostgreSQL outage"

# ---------------------------------------------------------------- Redis away
# Live events through HAProxy as they happen (nothing buffers text/event-stream).
bg_run sse curl -sN --max-time 120 -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$LB_HTTP/api/v1/events"
check "the live events stream opens through HAProxy" wait_for 10 grep -q '^: connected' "$WORK/sse.log"
svc_redis_stop "$WORK/redis"
rest_fail=0
for _ in 1 2 3 4 5 6; do
    st=$(conf_rest GET "/api/v1/configs/$ID")
    [ "$st" = 200 ] || { rest_fail=$((rest_fail + 1)); echo "GET answered $st without Redis" >&2; }
done
V5=$(publish "$WORK/a.json") || rest_fail=$((rest_fail + 1))
check "without Redis every REST request through HAProxy succeeds ($rest_fail failed)" [ "$rest_fail" = 0 ]
check "every ADS stream receives the change made without Redis (version ${V5:-none})" wait_for 15 all_on "$V5"
check "the grpc-js-xds client follows it to backend A" wait_for 15 last_is "$JS_CALLS" "ok A"
check "the C core client follows it to backend A" wait_for 15 last_is "$PY_CALLS" "ok A"
applied_event() { grep -q "^data: {.*\"type\":\"config_applied\".*\"version\":$V5}" "$WORK/sse.log"; }
check "the clients' ACKs of version $V5 arrive on the open events stream through HAProxy" wait_for 15 applied_event
check "no replica left either pool without Redis" both_full
no_failed_calls "Redis outage"

bg_stop sse
bg_stop js
bg_stop py
bg_stop load
for r in r1 r2 r3; do conf_stop_serve "$r"; done
finish

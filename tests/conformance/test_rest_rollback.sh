#!/usr/bin/env bash
# test_rest_rollback.sh — a change made through the REST API, and its rollback, reach a
# real xDS client (@grpc/grpc-js-xds): a config created with POST /api/v1/configs routes
# xds:///echo.test to backend A; PUT moves it to backend B; POST .../rollback {"version":
# 1} writes version 3 with version 1's spec and the client is back on A; POST
# /api/v1/groups/{group}/rollback {"snapshot_version": 2} republishes snapshot 2 and the
# client is on B again. No call fails on the way, every step is in the audit log, and
# the proxy API reports the client's ACK of the last snapshot. JWT auth is on.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init rest-rollback
conf_services || exit 1
conf_rest_auth "conformance-rest-rollback-secret-0123456789" rollback-tester
check "sextant token mints a token" [ -n "$TOKEN" ]
echo_backend A || exit 1
echo_backend B || exit 1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP
GROUP=conf-rest
NODE=conformance-rest-client
errors_since() { results_since "$LOG" "$1" | grep -c '^err' || true; }

conf_echo_snapshot "$WORK/a.json" "$ECHO_A"
conf_echo_snapshot "$WORK/b.json" "$ECHO_B"
body() { printf '{"namespace":"conformance","name":"echo","groups":["%s"],"spec":%s%s}' "$GROUP" "$(cat "$1")" "${2:+,$2}"; }

# ---------------------------------------------------------------- v1: backend A
st=$(conf_rest POST /api/v1/configs "$(body "$WORK/a.json" '"message":"to A"')")
check "POST /api/v1/configs creates the config (got $st)" [ "$st" = 201 ]
ID=$(jv .id)
check "version 1 wrote snapshot $GROUP v1" [ "$(jv '.snapshots[0].version')" = 1 ]

LOG="$WORK/calls.log"
conf_client_on_a "$LOG" 50 "grpc-js: calls to xds:///echo.test reach backend A"

# ---------------------------------------------------------------- v2: backend B
t0=$(now_ms)
st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/b.json"),\"message\":\"to B\"}" -H 'If-Match: "1"')
check "PUT moves the config to backend B (got $st)" [ "$st" = 200 ]
check "version 2 wrote snapshot v2" [ "$(jv .version) $(jv '.snapshots[0].version')" = "2 2" ]
check "grpc-js: after the PUT, calls land on backend B" wait_for 10 last_is "$LOG" "ok B"
check "grpc-js: no call failed during the change ($(errors_since "$t0") failed)" [ "$(errors_since "$t0")" = 0 ]

# ---------------------------------------------------------------- v3 = v1: back to A
t0=$(now_ms)
st=$(conf_rest POST "/api/v1/configs/$ID/rollback" '{"version": 1, "message": "B misbehaves"}')
check "POST .../rollback to version 1 (got $st)" [ "$st" = 200 ]
check "the rollback is version 3 with version 1's spec" \
    [ "$(jv .version) $(jv .source_version) $(jv .rollback.before_version)" = "3 1 2" ]
check "grpc-js: after the config rollback, calls land on backend A again" wait_for 10 last_is "$LOG" "ok A"
check "grpc-js: no call failed during the rollback ($(errors_since "$t0") failed)" [ "$(errors_since "$t0")" = 0 ]
check "the audit log has the rollback with its versions" \
    [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT count(*) FROM audit_log WHERE action = 'config.rollback' AND actor = 'rollback-tester' AND resource_id = '$ID' AND (details->>'source_version')::int = 1 AND (details->>'before_version')::int = 2 AND (details->>'after_version')::int = 3")" = 1 ]

# ---------------------------------------------------------------- group rollback to snapshot 2: B
t0=$(now_ms)
st=$(conf_rest POST "/api/v1/groups/$GROUP/rollback" '{"snapshot_version": 2}')
check "POST /api/v1/groups/$GROUP/rollback to snapshot 2 (got $st)" [ "$st" = 200 ]
check "the group rollback is snapshot v4" [ "$(jv .version) $(jv .before_version)" = "4 3" ]
check "grpc-js: after the group rollback, calls land on backend B" wait_for 10 last_is "$LOG" "ok B"
check "grpc-js: no call failed during the group rollback ($(errors_since "$t0") failed)" [ "$(errors_since "$t0")" = 0 ]
check "the audit log has the group rollback" \
    [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT count(*) FROM audit_log WHERE action = 'group.rollback' AND resource_id = '$GROUP' AND (details->>'snapshot_version')::int = 2 AND (details->>'after_version')::int = 4")" = 1 ]

# ---------------------------------------------------------------- what the API says about the client
proxy_acked_4() {
    [ "$(conf_rest GET "/api/v1/proxies/$NODE/config")" = 200 ] &&
        [ "$(jv .acked_version) $(jv .desired.version) $(jv .in_sync)" = "4 4 true" ]
}
check "GET /api/v1/proxies/{node}/config: the client acked snapshot 4, the one it should have" \
    wait_for 10 proxy_acked_4
st=$(conf_rest GET "/api/v1/proxies/$NODE")
check "GET /api/v1/proxies/{node}: connected, group $GROUP, no NACK" \
    [ "$st $(jv .connected) $(jv .group) $(jv .nack_count)" = "200 true $GROUP 0" ]
st=$(conf_rest GET "/api/v1/snapshots?group=$GROUP")
check "GET /api/v1/snapshots lists the group's four snapshots" [ "$(jv '.items.map(s => s.version).join()')" = "4,3,2,1" ]

conf_end_client "$LOG"

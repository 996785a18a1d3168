#!/usr/bin/env bash
# test_ui_rollback.sh — rollbacks from the web UI reach real xDS clients.
#
# A config routes xds:///echo.test to echo backend A (v1), then B (v2). A proxyless gRPC
# client (@grpc/grpc-js-xds) calls through Sextant and lands on B; two
# gateway.control.v1 data planes ACK every snapshot. An operator (pasted token) rolls
# the config back to v1 from its history page: the confirmation shows the difference
# (B's port back to A's); the rollback's first answer is lost on its way back, and the
# app sends it again with the same Idempotency-Key; version 3 appears as "rollback of
# v1", the audit log has the rollback once, the proxies page shows
# every client acknowledging the new snapshot, and the gRPC client's calls land on A.
# Then the operator republishes snapshot v2 from the snapshots page: the clients follow
# to v4 and the calls land on B. The audit page lists both rollbacks by that operator,
# with the changes before them. The group is "e2e/rollback": a name with a slash, as the
# default group of a Kubernetes Gateway has, which the app's links and calls carry
# percent-encoded (/snapshots/e2e%2Frollback, POST /api/v1/groups/e2e%2Frollback/rollback).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init rollback
e2e_services || exit 1
e2e_serve || exit 1
echo_backend A || exit 1
echo_backend B || exit 1
ADMIN=$(e2e_token e2e-admin admin)
OPERATOR=$(e2e_token olga operator)
GROUP=e2e/rollback

CONFIG_ID=$(e2e_create_config "$ADMIN" echo "$GROUP" "$(e2e_echo_spec "$ECHO_A")" "echo on A") || exit 1
e2e_put_config "$ADMIN" "$CONFIG_ID" "$(e2e_echo_spec "$ECHO_B")" "echo on B" || exit 1
CALLS="$WORK/calls.log"
e2e_grpc_client e2e-grpc-client "$GROUP" "$CALLS"
e2e_dataplane dp-rb-1 "$GROUP"
e2e_dataplane dp-rb-2 "$GROUP"
on() { [ "$(last_result "$CALLS")" = "ok $1" ]; }
check "the gRPC client's calls land on backend B (v2)" wait_for 20 on B
for n in e2e-grpc-client dp-rb-1 dp-rb-2; do
    check "$n acked v2" e2e_wait_acked "$ADMIN" "$n" 2
done

export OPERATOR CONFIG_ID GROUP ECHO_A ECHO_B CALLS NODES="e2e-grpc-client dp-rb-1 dp-rb-2"
e2e_browser "$E2E/scenarios/rollback.mjs"

check "after the republish the gRPC client's calls land on backend B" wait_for 10 on B
st=$(e2e_rest "$ADMIN" GET "/api/v1/audit?action=config.rollback&result=success")
check "the config rollback whose first answer was lost was made once (one audit row)" \
    [ "$st $(jv '.items.length')" = "200 1" ]
st=$(e2e_rest "$ADMIN" GET "/api/v1/snapshots?group=$GROUP")
check "the group has four snapshots, the last two written by the browser's rollbacks" \
    [ "$st $(jv '.items.map((s) => s.version + ":" + s.created_by).join()')" = "200 4:olga,3:olga,2:e2e-admin,1:e2e-admin" ]
if [ "$FAILS" -gt 0 ]; then
    echo "--- gRPC client outcomes" >&2
    cut -d' ' -f2- "$CALLS" | uniq -c | tail -n 20 >&2
fi
finish

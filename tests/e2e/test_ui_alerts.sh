#!/usr/bin/env bash
# test_ui_alerts.sh — Sextant's own alerts in the web UI (scenarios/alerts.mjs), with a
# short alerts.interval and alerts.disconnected_after: a viewer sees no alert badge
# while a gateway.control.v1 data plane is connected; the data plane goes away, the
# header's badge says "1 firing" and leads to the Alerts page, which lists the
# proxy_disconnected alert of that node as firing; the data plane comes back, and the
# page moves the alert to the resolved ones and the badge goes away, without a reload.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init alerts
e2e_services || exit 1
export SEXTANT_ALERTS_INTERVAL=200ms SEXTANT_ALERTS_DISCONNECTED_AFTER=1s
e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
VIEWER=$(e2e_token vic viewer)
GROUP=e2e-alerts
NODE=dp-alerts

e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version" >/dev/null || exit 1
e2e_dataplane "$NODE" "$GROUP"
check "the data plane acks the group's snapshot" e2e_wait_acked "$ADMIN" "$NODE" "$(e2e_group_version "$ADMIN" "$GROUP")"

DP_PID=$PID_dp_alerts
export VIEWER NODE GROUP DP_PID GRPC_PORT
e2e_browser "$E2E/scenarios/alerts.mjs"

# What the page showed is what the server stored.
st=$(e2e_rest "$ADMIN" GET "/api/v1/alerts?state=all")
check "the server holds one resolved proxy_disconnected alert of $NODE (got $st)" \
    jtrue "j.items.length === 1 && j.items[0].rule === 'proxy_disconnected' && j.items[0].subject === '$NODE' && j.items[0].state === 'resolved'"
e2e_stop_serve
finish

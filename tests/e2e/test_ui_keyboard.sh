#!/usr/bin/env bash
# test_ui_keyboard.sh — a workflow through the web UI with the keyboard only, the focus
# visible at every step.
#
# A config rolled out (version 2, one wave) to two gateway.control.v1 data planes in
# group e2e-kbd. The scenario: "/" puts the focus in the search box; a fragment of the
# deployment's id lists it, ↓ makes it the active hit and Enter opens its page; Tab
# walks to the timeline's list of ACKs, Enter opens it and Tab reaches an ACK's link;
# Shift+Tab walks back to the navigation's Fleet link and Enter opens the fleet page;
# Tab reaches the group's replicas and Enter shows them (the address names the group),
# then a replica's proxies, then a proxy, whose page Enter opens. Every element the
# focus reaches on the way shows a focus ring (its computed outline or box shadow)
# inside the window.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init keyboard
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
GROUP=e2e-kbd
CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || exit 1
e2e_dataplane dp-kbd-1 "$GROUP"
e2e_dataplane dp-kbd-2 "$GROUP"
check "dp-kbd-1 acked v1" e2e_wait_acked "$ADMIN" dp-kbd-1 1
check "dp-kbd-2 acked v1" e2e_wait_acked "$ADMIN" dp-kbd-2 1
# A draft, so that the deployment is what brings version 2 to the proxies: its wave's
# timeline shows their ACKs.
st=$(e2e_rest "$ADMIN" PUT "/api/v1/configs/$CONFIG_ID" "{\"spec\":$(e2e_spec web.example 10080 8081),\"message\":\"second version\",\"draft\":true}")
check "version 2 is a draft (got $st)" test "$st" = 200
st=$(e2e_rest "$ADMIN" POST "/api/v1/configs/$CONFIG_ID/apply" '{"version":2,"strategy":{"type":"all_at_once"},"reason":"e2e"}')
check "a deployment of version 2 starts (got $st)" test "${st:0:2}" = 20
DEPLOYMENT_ID=$(jv .id)
check "dp-kbd-1 acked v2" e2e_wait_acked "$ADMIN" dp-kbd-1 2 30
check "dp-kbd-2 acked v2" e2e_wait_acked "$ADMIN" dp-kbd-2 2 30

export DEPLOYMENT_ID GROUP NODE=dp-kbd-1
e2e_browser "$E2E/scenarios/keyboard.mjs"
finish

#!/usr/bin/env bash
# test_ui_bluegreen.sh — a blue-green rollout from the web UI (scenarios/bluegreen.mjs).
#
# Three gateway.control.v1 data planes follow group G at v1. An operator (one-click dev
# sign-in) saves a change as a draft, opens Apply, chooses Blue-green with one green
# proxy and plans it: two waves, the green proxy then the two others. Applying opens the
# deployment page: the green proxy takes the new snapshot, the page says it waits for a
# promotion and offers Promote, the blue proxies stay on v1. Promote (after its
# confirmation) switches them; the deployment completes and every proxy runs the new
# snapshot. Roll back then puts every proxy back on the old content at once.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init bluegreen
e2e_services || exit 1
export SEXTANT_ROLLOUTS_TICK=200ms
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
GROUP=e2e-bluegreen
CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || exit 1
for n in dp-bg-1 dp-bg-2 dp-bg-3; do
    e2e_dataplane "$n" "$GROUP"
done
for n in dp-bg-1 dp-bg-2 dp-bg-3; do
    check "$n acked v1" e2e_wait_acked "$ADMIN" "$n" 1
done

export ADMIN CONFIG_ID GROUP NODES="dp-bg-1 dp-bg-2 dp-bg-3" GREEN=dp-bg-2
e2e_browser "$E2E/scenarios/bluegreen.mjs"

st=$(e2e_rest "$ADMIN" GET "/api/v1/audit?resource_type=deployment")
check "audit: the promotion, with the reason typed in the UI (got $st)" \
    jtrue 'j.items.some((a) => a.action === "deployment.promote" && a.details && a.details.reason === "e2e: green looks good" && a.details.trigger === "operator")'
finish

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
SEXTANT_ROLLOUTS_TICK=200ms SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
e2e_web_fleet e2e-bluegreen dp-bg-1 dp-bg-2 dp-bg-3 || exit 1

export GREEN=dp-bg-2
e2e_browser "$E2E/scenarios/bluegreen.mjs"

st=$(e2e_rest "$ADMIN" GET "/api/v1/audit?resource_type=deployment")
check "audit: the promotion, with the reason typed in the UI (got $st)" \
    jtrue 'j.items.some((a) => a.action === "deployment.promote" && a.details && a.details.reason === "e2e: green looks good" && a.details.trigger === "operator")'
finish

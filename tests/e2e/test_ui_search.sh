#!/usr/bin/env bash
# test_ui_search.sh — the header's search box finds things, and every view has an
# address that restores it.
#
# Two gateway.control.v1 data planes, edge-7c2f9e41-west and edge-7c2fab-east, are
# connected in group e2e-search and acknowledge config web. On the configs page "/"
# puts the focus in the search box; a fragment of one node id lists that proxy only,
# and Enter opens its page; an upper-case fragment both share lists both, ↓ chooses the
# second and Enter opens it; the config is found by name and opens its page; the group
# opens on the fleet page (/fleet?group=NAME) with its replicas shown, and opening or
# closing it there writes the address; version 2, rolled out, is found by a fragment of
# its deployment id and opens on its page with the wave timeline; a fragment matching
# nothing says so and Esc closes the list. Deep links: a
# proxy's snapshot tab, the history's side-by-side view and the proxies' filters are
# in the address and come back on reload.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init search
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
GROUP=e2e-search
CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || exit 1
e2e_dataplane edge-7c2f9e41-west "$GROUP"
e2e_dataplane edge-7c2fab-east "$GROUP"
check "edge-7c2f9e41-west acked v1" e2e_wait_acked "$ADMIN" edge-7c2f9e41-west 1
check "edge-7c2fab-east acked v1" e2e_wait_acked "$ADMIN" edge-7c2fab-east 1
# A draft, so that the deployment is what brings version 2 to the proxies: its wave's
# timeline shows their ACKs.
st=$(e2e_rest "$ADMIN" PUT "/api/v1/configs/$CONFIG_ID" "{\"spec\":$(e2e_spec web.example 10080 8081),\"message\":\"second version\",\"draft\":true}")
check "version 2 is a draft (got $st)" test "$st" = 200
st=$(e2e_rest "$ADMIN" POST "/api/v1/configs/$CONFIG_ID/apply" '{"version":2,"strategy":{"type":"all_at_once"},"reason":"e2e"}')
check "a deployment of version 2 starts (got $st)" test "${st:0:2}" = 20
DEPLOYMENT_ID=$(jv .id)
check "edge-7c2f9e41-west acked v2" e2e_wait_acked "$ADMIN" edge-7c2f9e41-west 2
check "edge-7c2fab-east acked v2" e2e_wait_acked "$ADMIN" edge-7c2fab-east 2

export ADMIN CONFIG_ID DEPLOYMENT_ID GROUP
e2e_browser "$E2E/scenarios/search.mjs"
finish

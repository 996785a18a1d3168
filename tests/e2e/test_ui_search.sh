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
e2e_rolled_fleet e2e-search edge-7c2f9e41-west edge-7c2fab-east || exit 1

export ADMIN CONFIG_ID DEPLOYMENT_ID GROUP
e2e_browser "$E2E/scenarios/search.mjs"
finish

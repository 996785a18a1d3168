#!/usr/bin/env bash
# test_ui_yaml_edit.sh — an operator edits a config as YAML in the web UI.
#
# The editor switches to YAML (the address keeps ?format=yaml, the page says comments
# are not kept); a port out of range typed in the YAML is underlined on its YAML line
# and named in the problems list; an edit typed in YAML (with a comment), and the
# quick-edit forms (a backend's request timeout, its endpoints moved, a route added and
# attached to the listener; a timeout without a unit refused with a message) write
# into the same document; saving stores version 2, whose spec (GET via REST) is the
# JSON equivalent of the edits made to version 1's spec; back in JSON the editor shows
# the same spec.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init yaml-edit
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
GROUP=e2e-yaml
CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || exit 1

export ADMIN CONFIG_ID GROUP
e2e_browser "$E2E/scenarios/yaml_edit.mjs"

st=$(e2e_rest "$ADMIN" GET "/api/v1/configs/$CONFIG_ID/versions/2")
check "version 2 exists (got $st)" [ "$st" = 200 ]
check "version 2 has the message typed in the browser" [ "$(jv .message)" = "e2e: edited as YAML" ]
check "version 2 has the timeout set by the form" [ "$(jv '.spec.backends[0].request_timeout')" = 2.5s ]
check "version 2 has the route added by the form" [ "$(jv '.spec.http_routes[1].name')" = r-api ]
finish

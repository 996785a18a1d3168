#!/usr/bin/env bash
# test_ui_config_edit.sh — an operator edits a config in the web UI.
#
# One click signs in as operator (auth.dev_sign_in is on, as deploy/local/up.sh has it).
# In the editor an endpoint port out of range is underlined as soon as typing stops,
# with the validation pipeline's message on the line and in the problems list, and the
# save button is held back; completion offers the backend's fields with their .proto
# comments; fixing the port turns the status to valid; saving with a message writes
# version 2, which the data planes then acknowledge. The history shows version 2 with
# its message and its difference (list and side by side). A change saved by someone
# else meanwhile is not overwritten (If-Match): the page says so and loads it on
# request. The audit page lists the sign-in and the update.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init config-edit
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
e2e_web_fleet e2e-edit dp-edit-1 dp-edit-2 || exit 1

e2e_browser "$E2E/scenarios/config_edit.mjs"

# What the browser did is what the server stored.
st=$(e2e_rest "$ADMIN" GET "/api/v1/configs/$CONFIG_ID/versions/2")
check "version 2 exists (got $st)" [ "$st" = 200 ]
check "version 2 has the port typed in the browser" [ "$(jv '.spec.backends[0].endpoints[0].port')" = 8081 ]
check "version 2 has the field added by completion" [ "$(jv '.spec.backends[0].request_timeout')" = 2s ]
check "version 2 has the message typed in the browser" [ "$(jv .message)" = "e2e: endpoint on 8081, 2s request timeout" ]
check "version 2 was written by the dev sign-in user" [ "$(jv .author)" = dev-operator ]
finish

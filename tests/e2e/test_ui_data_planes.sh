#!/usr/bin/env bash
# test_ui_data_planes.sh — a proxy group's data planes in the web UI: an operator
# narrows a group to gateway.control.v1 data planes on its page, a config with an AI
# service is then accepted there, and adding Envoy back is refused on the page with the
# config, the field and the data plane named (scenarios/data_planes.mjs).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init data-planes
e2e_services || exit 1
e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
OPERATOR=$(e2e_token olga operator)
GROUP=e2e-planes

e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version" >/dev/null || exit 1
AI_SPEC='{"backends":[{"name":"llm","namespace":"team","endpoints":[{"address":"192.0.2.10","port":443}],"ai_service":{"provider":"openai","model":"gpt-4o"}}]}'

export OPERATOR GROUP AI_SPEC
e2e_browser "$E2E/scenarios/data_planes.mjs"
finish

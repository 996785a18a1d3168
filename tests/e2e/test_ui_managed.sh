#!/usr/bin/env bash
# test_ui_managed.sh — a config the Kubernetes source manages, in the web UI.
#
# The source's writes come from tests/tools/managed_config (the write entry a controller
# calls): config default/web of Gateway default/web, versions 1 and 2; beside it a config
# written through the REST API. An operator (dev sign-in) sees the managed one in the
# config list with the badge "Kubernetes · Gateway default/web" and the other without
# it; its page shows the badge, says it is managed and where to change it, holds the
# spec read-only and offers no save, while History and Apply stay; the REST config's
# page still offers saving. From the history the operator rolls the managed config back
# to version 1: version 3 is written by that operator and the config stays managed.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

TOOL=${SEXTANT_TEST_TOOLS:?SEXTANT_TEST_TOOLS must name the test tools folder}/managed_config

e2e_init managed
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)

# k8s_put SPEC: the Kubernetes source writes config default/web in group e2e-managed.
k8s_put() {
    printf '%s' "$1" >"$WORK/k8s_spec.json"
    "${SX_ENV[@]}" "$TOOL" put default web e2e-managed "Gateway default/web" "$WORK/k8s_spec.json" >"$WORK/put.json"
}
check "the source writes version 1" k8s_put "$(e2e_spec web.example 10080 8080)"
MANAGED_ID=$(jv .config_id "$WORK/put.json")
check "the source writes version 2" k8s_put "$(e2e_spec web.example 10080 8081)"
REST_ID=$(e2e_create_config "$ADMIN" api e2e-rest "$(e2e_spec api.example 10081 8080)" "by hand") || exit 1

export MANAGED_ID REST_ID
e2e_browser "$E2E/scenarios/managed.mjs"

# What the browser did is what the server stored.
st=$(e2e_rest "$ADMIN" GET "/api/v1/configs/$MANAGED_ID")
check "the rollback from the browser is version 3, live, of version 1's spec, still managed (got $st)" \
    jtrue 'j.version === 3 && j.live_version === 3 && j.source_version === 1 && j.author === "dev-operator" && j.source === "kubernetes" && j.spec.backends[0].endpoints[0].port === 8080'
finish

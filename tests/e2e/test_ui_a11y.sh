#!/usr/bin/env bash
# test_ui_a11y.sh — every page of the web UI passes an automated accessibility check
# and can be worked with the keyboard.
#
# Fixtures: a config rolled out to two gateway.control.v1 data planes (so proxies,
# snapshots and a deployment exist), a second version (so the history has a
# difference), and a config written as the Kubernetes source writes it
# (tests/tools/managed_config, the write entry its controller calls: no API server
# needed) with the status its controller would have written back (a route with
# ResolvedRefs=False). The scenario visits the sign-in page and every page an operator
# can reach — dashboard, proxies, a proxy and its snapshot tabs, configs, the editor in
# JSON and YAML with the quick-edit forms open, a new config, history (list and side by
# side), apply, deployments, a deployment (its timeline, propagation curve and ACK list),
# snapshots, a group's snapshots, the audit log, the managed config with its Kubernetes
# status, its resources in its group's snapshot, the fleet (a group open, its proxies
# shown), the metrics, an unknown address, the search results — and runs axe-core on
# each: no serious or critical violation. Tab moves through the header in order with a
# visible focus ring, and the skip link takes the keyboard to the page's content. At
# 1280 and 1024 px the header keeps each entry on one line, none over another.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

TOOL=${SEXTANT_TEST_TOOLS:?SEXTANT_TEST_TOOLS must name the test tools folder}/managed_config

e2e_init a11y
e2e_services || exit 1
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
e2e_rolled_fleet e2e-a11y dp-a11y-1 dp-a11y-2 || exit 1

printf '%s' "$(e2e_spec gw.example 10090 8080)" >"$WORK/k8s_spec.json"
k8s_put() { "${SX_ENV[@]}" "$TOOL" put default gw e2e-a11y-k8s "Gateway default/gw" "$WORK/k8s_spec.json" >"$WORK/put.json"; }
check "the Kubernetes source writes config default/gw" k8s_put
MANAGED_ID=$(jv .config_id "$WORK/put.json")
# The status its controller would have written back: the Gateway programmed, a route with
# a backend that does not exist (stored as the controller stores it, tests/tools).
cat >"$WORK/gw_status.json" <<'JSON'
{"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"the Gateway is valid","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Programmed","status":"True","reason":"Programmed","message":"configuration built for proxy group e2e-a11y-k8s","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}],"listeners":[{"name":"http","attachedRoutes":1,"supportedKinds":[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute"}],"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"ResolvedRefs","status":"True","reason":"ResolvedRefs","message":"","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}]}
JSON
cat >"$WORK/route_status.json" <<'JSON'
{"parents":[{"parentRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw","sectionName":"http"},"controllerName":"sextant.dev/gateway-controller","conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"","observedGeneration":3,"lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"ResolvedRefs","status":"False","reason":"BackendNotFound","message":"Service default/gone does not exist","observedGeneration":3,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}]}
JSON
k8s_status() { "${SX_ENV[@]}" "$TOOL" status "$@" >/dev/null; }
check "the Gateway's status is stored" k8s_status Gateway default gw 1 "$WORK/gw_status.json"
check "a route's status is stored" k8s_status HTTPRoute default gw-route 3 "$WORK/route_status.json"

export ADMIN CONFIG_ID DEPLOYMENT_ID MANAGED_ID GROUP NODE=dp-a11y-1
# Some thirty pages, each loaded and checked: more than the usual scenario's time bound.
export E2E_TIME_LIMIT_MS=300000
e2e_browser "$E2E/scenarios/a11y.mjs"
finish

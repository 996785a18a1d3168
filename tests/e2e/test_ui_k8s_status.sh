#!/usr/bin/env bash
# test_ui_k8s_status.sh — a config translated from a Kubernetes Gateway shows the status
# Sextant wrote back to the cluster, and links to the resources it produced.
#
# The test Kubernetes API server (tests/lib/k8s.sh) holds Gateway shop/web with two
# HTTPRoutes, one to a Service that does not exist; `sextant serve` watches it and writes
# the Gateway's config and the objects' status. Beside it, a config written through the
# REST API shares the Gateway's group. An operator (dev sign-in) opens the Gateway's
# config: the page shows the Gateway's conditions and each listener's with its attached
# routes, then each route with its conditions, reasons and messages, all as kubectl
# reads them from the API server; the broken route's ResolvedRefs says False in words
# and with a mark; the observed generation and when it was written are shown. The link
# to the translated objects opens the group's current snapshot showing this config's
# listener, route and backends and not the REST config's. axe-core finds no serious
# violation on either view. Then the route is fixed in the cluster and the page, reloaded,
# shows ResolvedRefs True at the route's new generation.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"
# shellcheck source=tests/lib/k8s.sh
source "$SRC/tests/lib/k8s.sh"

e2e_init k8s-status
e2e_services || exit 1
K8S_DIR="$WORK/k8s"
k8s_start "$K8S_DIR" || exit 1
BG_PIDS+=("$(cat "$K8S_DIR/apiserver.pid")") # stopped with the other background processes
k8s_crds "$K8S_DIR" >"$WORK/crds.out" 2>&1 || { cat "$WORK/crds.out" >&2; exit 1; }
kc() { k8s_kubectl "$K8S_DIR" "$@"; }
for f in 00-namespace 10-gatewayclass 20-gateway 30-service 31-endpointslice 40-httproute; do
    kc apply -f "$SRC/tests/k8s/examples/$f.yaml" >/dev/null || exit 1
done
kc apply -f "$SRC/tests/k8s/fixtures/httproute-missing-backend.yaml" >/dev/null || exit 1

SEXTANT_K8S_ENABLED=true SEXTANT_K8S_KUBECONFIG="$K8S_DIR/kubeconfig" SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)

MANAGED_ID=
config_known() {
    [ "$(e2e_rest "$ADMIN" GET '/api/v1/configs?source=kubernetes&namespace=shop')" = 200 ] &&
        MANAGED_ID=$(jq -r '.items[] | select(.name == "web") | .id' "$WORK/body") && [ -n "$MANAGED_ID" ]
}
check "the Gateway's config is written" wait_for 30 config_known
# status_written: the API holds the status of the Gateway and of both routes, the broken
# one with ResolvedRefs=False, as the cluster does.
status_written() {
    [ "$(e2e_rest "$ADMIN" GET "/api/v1/configs/$MANAGED_ID/kubernetes")" = 200 ] &&
        jq -e '.gateway != null and ([.attached[] | select(.kind == "HTTPRoute")] | length) == 2 and
               ([.attached[] | select(.name == "broken") | .status.parents[].conditions[]
                 | select(.type == "ResolvedRefs" and .status == "False")] | length) == 1' "$WORK/body" >/dev/null
}
check "the status of the Gateway and both routes is written" wait_for 30 status_written
[ "$(e2e_rest "$ADMIN" GET "/api/v1/configs/$MANAGED_ID")" = 200 ] || fail "GET the managed config"
GROUP=$(jq -r '.groups[0]' "$WORK/body")
# The names of what the config put in its snapshot, for the scenario.
jq -c '{listeners: [.spec.listeners[]?.name], http_routes: [.spec.http_routes[]?.name], backends: [.spec.backends[]?.name]}' \
    "$WORK/body" >"$WORK/resources.json"
REST_ID=$(e2e_create_config "$ADMIN" other "$GROUP" "$(e2e_spec other.example 10099 8080)" "by hand") || exit 1

# What the API server holds: the scenario compares the page with it.
kc get gateway -n shop web -o json >"$WORK/gateway.json" || exit 1
kc get httproute -n shop broken -o json >"$WORK/broken.json" || exit 1
kc get httproute -n shop shop -o json >"$WORK/shop.json" || exit 1
check "kubectl reads ResolvedRefs=False BackendNotFound on route broken" jq -e \
    '.status.parents[].conditions[] | select(.type == "ResolvedRefs" and .status == "False" and .reason == "BackendNotFound")' \
    "$WORK/broken.json" >/dev/null

export MANAGED_ID REST_ID GROUP WORK
export K8S_GATEWAY="$WORK/gateway.json" K8S_BROKEN="$WORK/broken.json" K8S_SHOP="$WORK/shop.json" RESOURCES="$WORK/resources.json"
e2e_browser "$E2E/scenarios/k8s_status.mjs" phase1

# The route fixed in the cluster: a new generation, ResolvedRefs=True once written back.
kc patch httproute -n shop broken --type=json \
    -p '[{"op":"replace","path":"/spec/rules/0/backendRefs/0/name","value":"shop-api"}]' >/dev/null ||
    fail "kubectl patch of route broken"
fixed() {
    kc get httproute -n shop broken -o json >"$WORK/broken.json" &&
        jq -e '.status.parents[].conditions[] | select(.type == "ResolvedRefs" and .status == "True")' "$WORK/broken.json" >/dev/null
}
check "the controller writes ResolvedRefs=True back to the fixed route" wait_for 30 fixed
e2e_browser "$E2E/scenarios/k8s_status.mjs" phase2
finish

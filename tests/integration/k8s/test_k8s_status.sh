#!/usr/bin/env bash
# test_k8s_status.sh — the status Sextant writes back to the Kubernetes objects of a
# managed config, read back through GET /api/v1/configs/{id}/kubernetes, against the test
# Kubernetes API server driven with kubectl:
#   1. a Gateway with two HTTPRoutes, one of them to a Service that does not exist: the
#      API gives the Gateway's status and each route's exactly as kubectl reads them from
#      the API server (conditions, listeners, attachedRoutes), the broken route with
#      ResolvedRefs=False BackendNotFound, observed_generation = metadata.generation;
#   2. the broken route fixed (a new generation): the API follows, ResolvedRefs=True at
#      the new generation, still equal to what kubectl reads;
#   3. the route deleted: it is no longer attached in the API, and its row is gone from
#      the database; the Gateway's attachedRoutes drops with it;
#   4. a config written through the REST API has no Kubernetes status (404), nor has an
#      unknown config.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-status
conf_services || exit 1
k8s_source_init || exit 1
k8s_apply_examples 00-namespace 10-gatewayclass 20-gateway 30-service 31-endpointslice 40-httproute || exit 1
k8s_apply "$SRC/tests/k8s/fixtures/httproute-missing-backend.yaml" || exit 1

kc() { k8s_kubectl "$K8S_DIR" "$@"; }
jq_true() { jq -e "$@" >/dev/null; } # jq_true FILTER FILE: FILTER holds in FILE
k8s_source_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

ID=
config_known() { ID=$(k8s_config_id shop web) && [ -n "$ID" ]; }
check "the Gateway's config is written" wait_for 30 config_known

# status_api: GET .../kubernetes into $WORK/api.json; fails unless 200.
status_api() {
    [ "$(conf_rest GET "/api/v1/configs/$ID/kubernetes")" = 200 ] && cp "$WORK/body" "$WORK/api.json"
}
# cluster KIND NAME: the object as the API server holds it, in $WORK/cluster.json.
cluster() { kc get "$1" -n shop "$2" -o json >"$WORK/cluster.json" 2>/dev/null; }
# api_obj KIND NAME: the API's entry of that object (the gateway or an attached one), or null.
api_obj() {
    jq --arg k "$1" --arg n "$2" \
        '[.gateway, .attached[]] | map(select(. != null and .kind == $k and .namespace == "shop" and .name == $n)) | .[0]' \
        "$WORK/api.json"
}
# same_status KIND RESOURCE NAME: the API's status of the object is the API server's,
# and so is the generation it observed.
same_status() {
    status_api && cluster "$2" "$3" || return 1
    local a c
    a=$(api_obj "$1" "$3" | jq -S '{status, generation: .observed_generation}')
    c=$(jq -S '{status, generation: .metadata.generation}' "$WORK/cluster.json")
    [ "$a" = "$c" ] && [ "$(jq '.status | length' "$WORK/cluster.json")" -gt 0 ]
}
# route_cond NAME TYPE STATUS REASON: the API says so for route NAME's entry for shop/web.
route_cond() {
    status_api && api_obj HTTPRoute "$1" | jq -e --arg t "$2" --arg s "$3" --arg r "$4" \
        '.status.parents[] | select(.parentRef.name == "web" and .controllerName == "sextant.dev/gateway-controller")
         | .conditions[] | select(.type == $t and .status == $s and .reason == $r)' >/dev/null
}

# 1. Gateway and both routes as the cluster has them.
check "the API gives Gateway shop/web's status as kubectl reads it" wait_for 30 same_status Gateway gateway web
check "the API gives HTTPRoute shop/shop's status as kubectl reads it" wait_for 30 same_status HTTPRoute httproute shop
check "the API gives HTTPRoute shop/broken's status as kubectl reads it" wait_for 30 same_status HTTPRoute httproute broken
check "the Gateway's source is named" [ "$(jq -r .source_ref "$WORK/api.json")" = "Gateway shop/web" ]
check "route shop is Accepted and ResolvedRefs" route_cond shop ResolvedRefs True ResolvedRefs
check "route broken: ResolvedRefs=False BackendNotFound" route_cond broken ResolvedRefs False BackendNotFound
check "route broken is still Accepted" route_cond broken Accepted True Accepted
cluster httproute broken
check "kubectl reads the same BackendNotFound" jq_true \
    '.status.parents[].conditions[] | select(.type == "ResolvedRefs" and .status == "False" and .reason == "BackendNotFound")' \
    "$WORK/cluster.json"
status_api
check "the listener counts both routes, as the cluster does" \
    [ "$(jq '.gateway.status.listeners[] | select(.name == "http") | .attachedRoutes' "$WORK/api.json")" = 2 ]
check "the Gateway's conditions are listed (Accepted, Programmed)" jq_true \
    '[.gateway.status.conditions[].type] | index("Accepted") != null and index("Programmed") != null' "$WORK/api.json"
check "each entry says when it was written" jq_true '[.gateway, .attached[]] | all(.written_at | test("^[0-9]{4}-"))' \
    "$WORK/api.json"
gen1=$(kc get httproute -n shop broken -o jsonpath='{.metadata.generation}')

# 2. The broken route fixed: a new generation, ResolvedRefs=True.
kc patch httproute -n shop broken --type=json \
    -p '[{"op":"replace","path":"/spec/rules/0/backendRefs/0/name","value":"shop-api"}]' >/dev/null ||
    fail "kubectl patch of route broken"
gen2=$(kc get httproute -n shop broken -o jsonpath='{.metadata.generation}')
check "the patch made a new generation ($gen1 -> $gen2)" [ "$gen2" -gt "$gen1" ]
check "the API follows the fix: ResolvedRefs=True" wait_for 30 route_cond broken ResolvedRefs True ResolvedRefs
check "... at the new generation, as kubectl reads it" wait_for 30 same_status HTTPRoute httproute broken
check "... observed_generation is $gen2" [ "$(api_obj HTTPRoute broken | jq .observed_generation)" = "$gen2" ]

# 3. The route deleted: gone from the API and from the database.
kc delete httproute -n shop broken >/dev/null || fail "kubectl delete of route broken"
route_gone() { status_api && [ "$(api_obj HTTPRoute broken)" = null ]; }
check "the deleted route is no longer listed" wait_for 30 route_gone
rows=$(psql "$SEXTANT_DATABASE_URL" -Atc "SELECT count(*) FROM k8s_status WHERE kind = 'HTTPRoute' AND name = 'broken'")
check "its row is gone from the database (rows: $rows)" [ "$rows" = 0 ]
check "the Gateway's status follows (attachedRoutes 1), as kubectl reads it" wait_for 30 same_status Gateway gateway web
check "... attachedRoutes is 1" \
    [ "$(jq '.gateway.status.listeners[] | select(.name == "http") | .attachedRoutes' "$WORK/api.json")" = 1 ]
check "route shop is still listed" [ "$(api_obj HTTPRoute shop | jq -r .name)" = shop ]

# 4. No Kubernetes status for a REST config nor for an unknown one.
code=$(conf_rest POST /api/v1/configs '{"namespace":"shop","name":"by-rest","groups":["rest-only"],"spec":{}}')
check "a REST config is created ($code)" [ "$code" = 201 ]
rest_id=$(jv .id)
code=$(conf_rest GET "/api/v1/configs/$rest_id/kubernetes")
check "a REST config has no Kubernetes status: 404 ($code)" [ "$code" = 404 ]
check "... saying why" contains "$WORK/body" "not translated from Kubernetes"
code=$(conf_rest GET /api/v1/configs/00000000-0000-4000-8000-000000000000/kubernetes)
check "an unknown config: 404 ($code)" [ "$code" = 404 ]

conf_stop_serve r1
finish

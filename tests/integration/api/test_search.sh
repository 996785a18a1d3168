#!/usr/bin/env bash
# test_search.sh — GET /api/v1/search against the real daemon and PostgreSQL: a fragment
# of a proxy's node id finds it (any case), a config is found by namespace/name with its
# id, a group by name; a role scoped to edge-* groups finds only what lies in them;
# % in the query matches only itself; a missing, blank or too long q and a limit outside
# 1..50 answer 400 in the error shape naming the parameter (a NUL ends the text: "%00"
# is empty); ill-formed UTF-8 is searched as U+FFFD; no token answers 401.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init search
api_policy 'admin *=*' 'edge-viewer search=read' 'edge-viewer proxies=read@edge-*' 'edge-viewer configs=read@edge-*' \
    'edge-viewer groups=read@edge-*' 'edge-viewer deployments=read@edge-*'
api_serve
ADMIN=$(api_token ada admin)
EDGE=$(api_token eve edge-viewer)

call_status "POST /configs web in edge-a" 201 api_json "$ADMIN" POST /api/v1/configs "$(api_config_body web edge-a "$(api_spec 10080 a.example)")"
WEB=$(jv .id)
call_status "POST /configs webshop in prod" 201 api_json "$ADMIN" POST /api/v1/configs "$(api_config_body webshop prod "$(api_spec 10081 b.example)")"
sql "INSERT INTO proxy_nodes (node_id, group_name) VALUES
       ('envoy-9c41d2-edge', 'edge-a'), ('envoy-9c41ff-prod', 'prod'), ('pct-100%', 'edge-a')" >/dev/null

call_status "search 9C41 as admin" 200 api_call "$ADMIN" GET "/api/v1/search?q=9C41"
check "a fragment of the node id finds both proxies, any case" \
    [ "$(jv '.items.map(h => h.kind + ":" + h.id + ":" + h.detail).join(",")')" = \
      "proxy:envoy-9c41d2-edge:edge-a,proxy:envoy-9c41ff-prod:prod" ]
check "the answer repeats the query" [ "$(jv .query)" = 9C41 ]

call_status "search team/web as admin" 200 api_call "$ADMIN" GET "/api/v1/search?q=team%2Fweb"
check "namespace/name finds both configs with their ids, the exact one first" \
    jtrue "j.items.length === 2 && j.items[0].kind === 'config' && j.items[0].id === '$WEB' && j.items[0].label === 'team/web' && j.items[1].label === 'team/webshop'"

call_status "search edge- as admin" 200 api_call "$ADMIN" GET "/api/v1/search?q=edge-"
check "a group is found by its name" jtrue 'j.items.some(h => h.kind === "group" && h.id === "edge-a")'

call_status "search 9c41 as edge-viewer" 200 api_call "$EDGE" GET "/api/v1/search?q=9c41"
check "a scoped role finds only the proxy of its groups" \
    [ "$(jv '.items.map(h => h.id).join(",")')" = envoy-9c41d2-edge ]
call_status "search web as edge-viewer" 200 api_call "$EDGE" GET "/api/v1/search?q=web"
check "... and only the config of its groups" \
    [ "$(jv '.items.map(h => h.label).join(",")')" = team/web ]

call_status "search % as admin" 200 api_call "$ADMIN" GET "/api/v1/search?q=%25"
check "% matches only itself" [ "$(jv '.items.map(h => h.id).join(",")')" = "pct-100%" ]
call_status "search limit=1" 200 api_call "$ADMIN" GET "/api/v1/search?q=envoy&limit=1"
check "limit=1 gives one proxy" [ "$(jv '.items.length')" = 1 ]

long=$(printf 'a%.0s' $(seq 201))
call_status "search ill-formed UTF-8" 200 api_call "$ADMIN" GET "/api/v1/search?q=%FF%FEweb"
check "ill-formed UTF-8 is searched as U+FFFD and finds nothing" [ "$(jv '.items.length')" = 0 ]

for bad in "" "q=" "q=%20%20" "q=%00" "q=$long" "q=web&limit=0" "q=web&limit=51" "q=web&limit=x"; do
    call_error "search ?$bad" 400 invalid_argument api_call "$ADMIN" GET "/api/v1/search?$bad"
    want=q
    case "$bad" in *limit*) want=limit ;; esac
    check "search ?$bad: the details name $want" [ "$(jv '.error.details[0].path')" = "$want" ]
done
call_error "search without a token" 401 unauthenticated api_call "" GET "/api/v1/search?q=web"
finish

#!/usr/bin/env bash
# test_change_events.sh — what a config change tells an operator beside its answer:
#
#   - the live event stream (GET /api/v1/events) carries config_created, config_updated
#     and config_deleted with the config, its version, groups and author, a
#     snapshot_generated for every snapshot each change wrote, and deployment_started
#     when a rollout is created; a refused change writes none;
#   - /metrics counts changes by result (sextant_config_changes_total), times them
#     (sextant_apply_duration_seconds) and each validation check
#     (sextant_validation_duration_seconds{stage}), counts xDS requests by type
#     (sextant_xds_requests_total) and shows how many proxies of a group hold each
#     snapshot version (sextant_proxy_versions{group,version}).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init change-events
SSE="$SRC/tests/integration/api/sse.js"
CONF="$SRC/tests/conformance"
npm_ready "$CONF" || { echo "npm ci of $CONF failed" >&2; exit 1; }
export SEXTANT_NODES_FLUSH_INTERVAL=100ms
api_serve
OPER=$(api_token olga operator)
VIEW=$(api_token victor viewer)
G=edge-events

TYPES=config_created,config_updated,config_deleted,snapshot_generated,deployment_started
bg_run stream curl -sN -o "$WORK/all.sse" -H "Authorization: Bearer $VIEW" \
    "http://127.0.0.1:$HTTP_PORT/api/v1/events?since=0&types=$TYPES"
sse() { node "$SSE" "$WORK/all.sse" "$1"; }
at_least() { # at_least METRIC N: the /metrics line METRIC is at least N
    awk -v a="$(metric "$1")" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b + 0) }'
}
deployment_is() { # deployment_is ID STATE
    [ "$(api_call "$VIEW" GET "/api/v1/deployments/$1")" = 200 ] && [ "$(jv .state)" = "$2" ]
}
count() { node "$SSE" "$WORK/all.sse" -p "e.filter((x) => x.event === '$1').length"; }
wait_for 10 sse 'comments.includes(": connected")' || true

# ---------------------------------------------------------------- a refused change
st=$(api_json "$OPER" POST /api/v1/configs "$(api_config_body bad "$G" '{"listeners":[{"name":"x","port":99999}]}')")
expect_status "a config with a port out of range is refused" 422 "$st"

# ---------------------------------------------------------------- create, update, delete
st=$(api_json "$OPER" POST /api/v1/configs "$(api_config_body web "$G" "$(api_spec 10080 a.example)")")
expect_status "POST /configs creates web" 201 "$st"
ID=$(jv .id)
check "config_created names team/web v1 in $G, by olga" wait_for 10 sse \
    "e.some((x) => x.event === 'config_created' && x.data.type === 'config_created' &&
       x.data.group === '$G' && x.data.name === 'web' && x.data.namespace === 'team' &&
       x.data.version === 1 && x.data.config_id === '$ID' && x.data.by === 'olga' &&
       JSON.stringify(x.data.groups) === '[\"$G\"]')"
check "and snapshot_generated names $G v1" wait_for 10 sse \
    "e.some((x) => x.event === 'snapshot_generated' && x.data.group === '$G' && x.data.version === 1 &&
       x.data.by === 'olga' && /team\\/web v1 created/.test(x.data.reason))"

st=$(api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 10080 a.example 10.0.0.2)}")
expect_status "PUT /configs/{id} writes version 2" 200 "$st"
check "config_updated names v2" wait_for 10 sse \
    "e.some((x) => x.event === 'config_updated' && x.data.config_id === '$ID' && x.data.version === 2)"
check "and snapshot_generated names $G v2" wait_for 10 sse \
    "e.some((x) => x.event === 'snapshot_generated' && x.data.group === '$G' && x.data.version === 2)"
st=$(api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 10080 a.example 10.0.0.2)}")
expect_status "the same spec again answers 200" 200 "$st"

# ---------------------------------------------------------------- a proxy of the group
bg_run follow node "$CONF/lib/ads_follow.js" --server "127.0.0.1:$GRPC_PORT" --group "$G" \
    --node events-proxy --out "$WORK/follow.json"
check "a proxy of $G follows v2" wait_for 20 jtrue 'j.versions.CDS === "2"' "$WORK/follow.json"
check "sextant_proxy_versions says one proxy of $G holds v2" \
    wait_for 30 metric_is "sextant_proxy_versions{group=\"$G\",version=\"2\"}" 1
check "sextant_xds_requests_total counts its CDS requests" at_least 'sextant_xds_requests_total{type="cds"}' 2
check "... and its EDS requests" at_least 'sextant_xds_requests_total{type="eds"}' 2

# ---------------------------------------------------------------- a rollout
st=$(api_json "$OPER" POST "/api/v1/configs/$ID/apply" \
    "{\"version\":1,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"all_at_once\"},\"reason\":\"back\"}")
expect_status "POST /configs/{id}/apply of version 1 creates a deployment" 201 "$st"
DEP=$(jv .id)
check "deployment_started names the deployment, its strategy and who started it" wait_for 10 sse \
    "e.some((x) => x.event === 'deployment_started' && x.data.deployment_id === '$DEP' &&
       x.data.strategy.type === 'all_at_once' && x.data.by === 'olga' && x.data.config_version === 1)"
check "the snapshot it stages is generated for the deployment" wait_for 10 sse \
    "e.some((x) => x.event === 'snapshot_generated' && x.data.deployment_id === '$DEP' && x.data.staged_for === '$DEP')"
check "the deployment completes" wait_for 30 deployment_is "$DEP" completed
bg_stop follow

st=$(api_call "$OPER" DELETE "/api/v1/configs/$ID")
expect_status "DELETE /configs/{id}" 200 "$st"
check "config_deleted names web and the groups it had" wait_for 10 sse \
    "e.some((x) => x.event === 'config_deleted' && x.data.config_id === '$ID' &&
       JSON.stringify(x.data.groups) === '[\"$G\"]')"
check "one config_created, one config_deleted, and config_updated for v2 only" \
    [ "$(count config_created)/$(count config_deleted)/$(count config_updated)" = 1/1/1 ]

# ---------------------------------------------------------------- the metrics
check "three changes applied (create, update, delete)" \
    metric_is 'sextant_config_changes_total{result="applied"}' 3
check "one unchanged (the same spec again)" metric_is 'sextant_config_changes_total{result="unchanged"}' 1
check "one refused (the port out of range)" metric_is 'sextant_config_changes_total{result="refused"}' 1
check "every change is timed" metric_is 'sextant_apply_duration_seconds_count' 5
check "every validation check is timed, by stage (schema)" \
    at_least 'sextant_validation_duration_seconds_count{stage="schema"}' 3
check "... (translate)" at_least 'sextant_validation_duration_seconds_count{stage="translate"}' 3
bg_stop stream
api_stop
finish

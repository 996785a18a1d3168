#!/usr/bin/env bash
# test_managed_configs.sh — configs of source kubernetes over the REST API of the real
# daemon (PostgreSQL, Redis, JWT auth on). The Kubernetes source's writes come from
# tests/tools/managed_config, which calls the same write entry a controller does
# (changes_put_managed) against the daemon's database: the replica serving REST has no
# Kubernetes access and serves the config all the same.
#   - the config list and a config show source and source_ref; ?source= filters;
#   - PUT (also as a draft) and DELETE of a managed config answer 409
#     managed_by_kubernetes naming the Gateway, change nothing and audit the refusal;
#   - a rollback to an earlier version works and the config stays managed, and it holds
#     while the source repeats the Gateway's unchanged translation; a changed one is
#     written live (a rollout of one of its versions:
#     tests/integration/rollout/test_rollout_managed.sh);
#   - the source's own writes are audited with actor kubernetes; an unchanged one is not;
#     the source deletes its config when the Gateway is gone, never a REST config.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

TOOL=${SEXTANT_TEST_TOOLS:?SEXTANT_TEST_TOOLS must name the test tools folder}/managed_config

api_init managed
api_serve
ADMIN=$(api_token alice admin)
OPER=$(api_token olga operator)

audit_count() { # audit_count WHERE: rows of audit_log matching the SQL condition
    sql "SELECT count(*) FROM audit_log WHERE $1"
}
# k8s_put NAME SPEC: the Kubernetes source writes config default/NAME of Gateway
# default/NAME in group default/NAME; its answer goes to $WORK/put.json.
k8s_put() {
    printf '%s' "$2" >"$WORK/spec.json"
    "${SX_ENV[@]}" "$TOOL" put default "$1" "default/$1" "Gateway default/$1" "$WORK/spec.json" >"$WORK/put.json"
}
fails() { # fails COMMAND...: the command exits non-zero
    ! "$@"
}
served_port() { # served_port GROUP: the listener port of the group's current snapshot
    sql "SELECT s.ir->'listeners'->0->>'port' FROM snapshots s JOIN proxy_groups g
         ON g.name = s.group_name AND g.current_snapshot_version = s.version WHERE g.name = '$1'"
}

# ------------------------------------------------------------------ the source writes
SPEC1=$(api_spec 10080 web.example)
SPEC2=$(api_spec 10081 web.example)
check "the Kubernetes source creates config default/web" k8s_put web "$SPEC1"
check "... version 1, with a snapshot of group default/web" \
    jtrue 'j.created && j.changed && j.version === 1 && j.snapshots.length === 1 && j.snapshots[0].group === "default/web"' "$WORK/put.json"
ID=$(jv .config_id "$WORK/put.json")
check "the same spec again writes nothing" k8s_put web "$SPEC1"
check "... and says so" jtrue '!j.changed && j.version === 1 && j.snapshots.length === 0' "$WORK/put.json"
check "a changed spec becomes version 2" k8s_put web "$SPEC2"
check "... live, with a new snapshot" jtrue 'j.changed && j.version === 2 && j.snapshots.length === 1' "$WORK/put.json"
check "audit: two config.sync rows by kubernetes naming the Gateway (none for the unchanged spec)" \
    [ "$(audit_count "actor = 'kubernetes' AND action = 'config.sync' AND resource_id = '$ID' AND details->>'source_ref' = 'Gateway default/web'")" = 2 ]
check "the source's invalid spec is refused with its problems" fails k8s_put web "$(api_spec 70000 web.example)"
check "... validation_failed naming the bad field" \
    jtrue 'j.error.code === "validation_failed" && j.error.details.some(d => d.path === "spec.listeners[0].port")' "$WORK/put.json"
check "... and version 2 stays live and served" \
    [ "$(sql "SELECT latest_version || '/' || live_version FROM configs WHERE id = '$ID'")/$(served_port default/web)" = "2/2/10081" ]

# A config written through the REST API, beside it.
call_status "POST /configs: a REST config" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body api edge "$(api_spec 10090 api.example)")"
REST_ID=$(jv .id)

# ------------------------------------------------------------------ reading them
call_status "GET /configs" 200 api_call "$OPER" GET /api/v1/configs
check "the list shows each config's source" \
    jtrue "const k = j.items.find(c => c.id === '$ID'), r = j.items.find(c => c.id === '$REST_ID'); k.source === 'kubernetes' && k.source_ref === 'Gateway default/web' && r.source === 'rest' && r.source_ref === null"
call_status "GET /configs?source=kubernetes" 200 api_call "$OPER" GET '/api/v1/configs?source=kubernetes'
check "... only the managed config" jtrue "j.items.length === 1 && j.items[0].id === '$ID'"
call_status "GET /configs?source=rest" 200 api_call "$OPER" GET '/api/v1/configs?source=rest'
check "... only the REST config" jtrue "j.items.length === 1 && j.items[0].id === '$REST_ID'"
call_error "GET /configs?source=helm" 400 invalid_argument api_call "$OPER" GET '/api/v1/configs?source=helm'
check "... names the parameter" jtrue 'j.error.details.some(d => d.path === "source")'
call_status "GET /configs/{id} of the managed config" 200 api_call "$OPER" GET "/api/v1/configs/$ID"
check "... source, source_ref and the author kubernetes" \
    jtrue 'j.source === "kubernetes" && j.source_ref === "Gateway default/web" && j.author === "kubernetes" && j.version === 2 && j.live_version === 2'

# ------------------------------------------------------------------ REST may not edit it
MSG='config default/web is managed by Kubernetes (Gateway default/web); change the Gateway instead'
refused() { # refused WHAT STATUS-COMMAND...: 409 managed_by_kubernetes with the message
    call_error "$1" 409 managed_by_kubernetes "${@:2}"
    check "$1: the message names the Gateway" [ "$(jv .error.message)" = "$MSG" ]
}
refused "PUT /configs/{id} of a managed config" api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 10082 web.example)}"
refused "PUT /configs/{id} of a managed config as a draft" api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 10082 web.example),\"draft\":true}"
refused "PUT /configs/{id} with the current If-Match" api_json "$ADMIN" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 10082 web.example),\"groups\":[\"edge\"]}" -H 'If-Match: "2"'
refused "DELETE /configs/{id} of a managed config" api_call "$ADMIN" DELETE "/api/v1/configs/$ID"
check "the refusal says what to do instead" jtrue 'j.error.details.some(d => d.message.includes("roll back"))'
check "nothing changed: still version 2, live, served, in its group" \
    [ "$(sql "SELECT latest_version || '/' || live_version || '/' || (deleted_at IS NULL) || '/' || array_to_string(groups, ',') FROM configs WHERE id = '$ID'")/$(served_port default/web)" = "2/2/true/default/web/10081" ]
check "audit: the four refusals are failed rows with 409 and code managed_by_kubernetes" \
    [ "$(audit_count "resource_id = '$ID' AND result = 'failed' AND status_code = 409 AND details->>'code' = 'managed_by_kubernetes'")" = 4 ]
call_status "PUT /configs/{id} of the REST config still works" 200 api_json "$OPER" PUT "/api/v1/configs/$REST_ID" "{\"spec\":$(api_spec 10091 api.example)}"

# ------------------------------------------------------------------ rollback
call_status "POST /configs/{id}/rollback to version 1" 200 api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version":1,"message":"back to v1"}'
check "... version 3 copies version 1 and is live; the config stays managed" \
    jtrue 'j.version === 3 && j.live_version === 3 && j.source_version === 1 && j.source === "kubernetes" && j.source_ref === "Gateway default/web" && j.rollback.source_version === 1'
check "... and the group serves version 1's listener again" [ "$(served_port default/web)" = 10080 ]
check "audit: the rollback by olga" \
    [ "$(audit_count "actor = 'olga' AND action = 'config.rollback' AND result = 'success' AND resource_id = '$ID'")" = 1 ]
# The Gateway has not changed: its translation (version 2's spec) comes again on every
# pass of the source, and the rollback holds.
for pass in 1 2 3; do
    check "pass $pass: the source's unchanged translation writes nothing" k8s_put web "$SPEC2"
    check "... and says version 3 is live" jtrue '!j.changed && j.version === 3 && j.snapshots.length === 0' "$WORK/put.json"
done
check "the rollback holds: version 3 live and served (10080)" \
    [ "$(sql "SELECT latest_version || '/' || live_version FROM configs WHERE id = '$ID'")/$(served_port default/web)" = "3/3/10080" ]
check "audit: still two config.sync rows by kubernetes" \
    [ "$(audit_count "actor = 'kubernetes' AND action = 'config.sync' AND resource_id = '$ID'")" = 2 ]
# The Gateway changes: its translation replaces the rollback at once.
check "a changed translation is written" k8s_put web "$(api_spec 10082 web.example)"
check "... version 4, live, with a new snapshot" jtrue 'j.changed && j.version === 4 && j.snapshots.length === 1' "$WORK/put.json"
check "... and served (10082)" [ "$(served_port default/web)" = 10082 ]

# ------------------------------------------------------------------ the Gateway is gone
"${SX_ENV[@]}" "$TOOL" delete default web >"$WORK/delete.json"
check "the source deletes its config" jtrue "j.changed && j.config_id === '$ID'" "$WORK/delete.json"
call_error "GET /configs/{id} after the source deleted it" 404 not_found api_call "$OPER" GET "/api/v1/configs/$ID"
check "audit: config.delete by kubernetes" \
    [ "$(audit_count "actor = 'kubernetes' AND action = 'config.delete' AND resource_id = '$ID'")" = 1 ]
"${SX_ENV[@]}" "$TOOL" delete team api >"$WORK/delete.json"
check "the source may not delete a REST config" jtrue 'j.error.code === "conflict"' "$WORK/delete.json"
check "... which stays" [ "$(sql "SELECT count(*) FROM configs WHERE id = '$REST_ID' AND deleted_at IS NULL")" = 1 ]

api_stop
finish

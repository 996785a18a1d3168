#!/usr/bin/env bash
# test_group_names.sh — a proxy group whose name holds a slash, "shop/web" (the default
# group of the Kubernetes Gateway shop/web), through every REST route that names a group,
# with the real daemon, PostgreSQL and Redis, sent as a client sends it (percent-encoded,
# shop%2Fweb):
#   - a config of group shop/web is created and changed; GET /groups lists the group;
#     ?group=shop%2Fweb filters configs, snapshots and proxies, and one snapshot names it;
#   - POST /groups/shop%2Fweb/rollback rolls that group back (not "shop", not a route
#     of five segments), audited with resource_id shop/web, which ?resource_id= finds; a
#     node id with a slash works the same in /proxies/{node_id};
#   - the unencoded path /groups/shop/web/rollback is no route (404), a valid name with
#     no snapshot is 404, a segment that decodes to a control character or to bytes that
#     are not UTF-8 is 400 before any handler, and a name the rule for group names
#     refuses (a space, "..", a '%', a '*') is 400 for a rollback and 422 at groups[i]
#     for a config, a change or a dry run; nothing is written by any of them;
#   - the web UI's link to the group (/snapshots/shop%2Fweb) is its page.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init group-names
UI="$WORK/ui"
mkdir -p "$UI"
printf '<!doctype html><title>fake ui</title><div id="app">fake-ui-index</div>\n' >"$UI/index.html"
export SEXTANT_HTTP_UI_DIR="$UI"
api_serve
OPER=$(api_token olga operator)
VIEW=$(api_token victor viewer)

audit_count() { # audit_count WHERE: rows of audit_log matching the SQL condition
    sql "SELECT count(*) FROM audit_log WHERE $1"
}
served_port() { # served_port GROUP: the listener port of the group's current snapshot
    sql "SELECT s.ir->'listeners'->0->>'port' FROM snapshots s JOIN proxy_groups g
         ON g.name = s.group_name AND g.current_snapshot_version = s.version WHERE g.name = '$1'"
}
unchanged() { # unchanged: the counts of what a refused request must not have written
    [ "$(sql "SELECT (SELECT count(*) FROM configs) || '/' || (SELECT count(*) FROM config_versions) || '/' || (SELECT count(*) FROM snapshots)")" = "$COUNTS" ]
}

# ------------------------------------------------------------------ a group named shop/web
call_status "POST /configs with groups [\"shop/web\"]" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body web shop/web "$(api_spec 10080 web.example)")"
ID=$(jv .id)
check "... its snapshot is version 1 of group shop/web" jtrue 'j.groups[0] === "shop/web" && j.snapshots.length === 1 && j.snapshots[0].group === "shop/web" && j.snapshots[0].version === 1'
call_status "PUT /configs/{id}: another port" 200 api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 10081 web.example)}"
check "... version 2 of group shop/web, serving port 10081" [ "$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = 'shop/web'")/$(served_port shop/web)" = 2/10081 ]
# A config of group "shop" beside it: a path split at the encoded slash would reach it.
call_status "POST /configs with groups [\"shop\"]" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body shop shop "$(api_spec 10090 shop.example)")"
call_status "PUT /configs/{id} of group shop" 200 api_json "$OPER" PUT "/api/v1/configs/$(jv .id)" "{\"spec\":$(api_spec 10091 shop.example)}"

call_status "GET /groups" 200 api_call "$VIEW" GET /api/v1/groups
check "... lists shop and shop/web" jtrue 'j.items.map(g => g.name).join() === "shop,shop/web" && j.items[1].latest_version === 2'
call_status "GET /configs?group=shop%2Fweb" 200 api_call "$VIEW" GET '/api/v1/configs?group=shop%2Fweb'
check "... only the config of shop/web" jtrue "j.items.length === 1 && j.items[0].id === '$ID'"
call_status "GET /snapshots?group=shop%2Fweb" 200 api_call "$VIEW" GET '/api/v1/snapshots?group=shop%2Fweb'
check "... its two snapshots" jtrue 'j.items.length === 2 && j.items.every(s => s.group === "shop/web")'
SID=$(sql "SELECT id FROM snapshots WHERE group_name = 'shop/web' AND version = 1")
call_status "GET /snapshots/{id} of shop/web's version 1" 200 api_call "$VIEW" GET "/api/v1/snapshots/$SID"
check "... names its group and its id" jtrue "j.group === 'shop/web' && j.ir.id === 'shop/web:1'"

# ------------------------------------------------------------------ POST /groups/{group}/rollback
call_status "POST /groups/shop%2Fweb/rollback to snapshot 1" 200 api_json "$OPER" POST /api/v1/groups/shop%2Fweb/rollback '{"snapshot_version": 1, "message": "back to 10080"}'
check "... rolls back group shop/web: version 3 with snapshot 1's content" \
    jtrue 'j.group === "shop/web" && j.changed && j.before_version === 2 && j.version === 3 && j.snapshot_version === 1'
check "... shop/web serves port 10080 again" [ "$(served_port shop/web)" = 10080 ]
check "... and group shop is untouched" [ "$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = 'shop'")/$(served_port shop)" = 2/10091 ]
check "audit: group.rollback of resource shop/web by olga" \
    [ "$(audit_count "action = 'group.rollback' AND result = 'success' AND resource_type = 'group' AND resource_id = 'shop/web' AND actor = 'olga'")" = 1 ]
call_status "GET /audit?resource_id=shop%2Fweb" 200 api_call "$VIEW" GET '/api/v1/audit?resource_id=shop%2Fweb&action=group.rollback'
check "... finds the rollback" jtrue 'j.items.length === 1 && j.items[0].resource_id === "shop/web" && j.items[0].details.after_version === 3'
call_status "POST /groups/shop%2fweb/rollback (lower-case hex) to snapshot 2" 200 api_json "$OPER" POST /api/v1/groups/shop%2fweb/rollback '{"snapshot_version": 2}'
check "... version 4" jtrue 'j.group === "shop/web" && j.version === 4'
check "... serving 10081" [ "$(served_port shop/web)" = 10081 ]

# ------------------------------------------------------------------ proxies of the group
sql "INSERT INTO proxy_nodes (node_id, group_name, connected, last_seen) VALUES
       ('shop/web-1', 'shop/web', true, now()), ('shop-1', 'shop', true, now())" >/dev/null
call_status "GET /proxies?group=shop%2Fweb" 200 api_call "$VIEW" GET '/api/v1/proxies?group=shop%2Fweb'
check "... only its node" jtrue 'j.items.map(n => n.node_id).join() === "shop/web-1"'
call_status "GET /proxies/shop%2Fweb-1" 200 api_call "$VIEW" GET '/api/v1/proxies/shop%2Fweb-1'
check "... the node with a slash in its id, in group shop/web" jtrue 'j.node_id === "shop/web-1" && j.group === "shop/web"'
call_status "GET /proxies/shop%2Fweb-1/config" 200 api_call "$VIEW" GET '/api/v1/proxies/shop%2Fweb-1/config'
check "... should have shop/web's current snapshot, version 4" jtrue 'j.group === "shop/web" && j.desired.group === "shop/web" && j.desired.version === 4'

# ------------------------------------------------------------------ what is refused
COUNTS=$(sql "SELECT (SELECT count(*) FROM configs) || '/' || (SELECT count(*) FROM config_versions) || '/' || (SELECT count(*) FROM snapshots)")
call_error "POST /groups/shop/web/rollback (the slash not encoded)" 404 not_found api_json "$OPER" POST /api/v1/groups/shop/web/rollback '{"snapshot_version": 1}'
check "... is no route" jtrue 'j.error.message === "no route for POST /api/v1/groups/shop/web/rollback"'
call_error "POST /groups/shop%2Fweb%2Fapi/rollback: a valid name without snapshots" 404 not_found api_json "$OPER" POST /api/v1/groups/shop%2Fweb%2Fapi/rollback '{"snapshot_version": 1}'
check "... names the whole group" jtrue 'j.error.message.includes("shop/web/api")'
for seg in 'shop%00web' 'shop%0Aweb' 'shop%7F' '%FF' '%C0%AF'; do
    call_error "POST /groups/$seg/rollback: not UTF-8 text without control characters" 400 invalid_argument api_json "$OPER" POST "/api/v1/groups/$seg/rollback" '{"snapshot_version": 1}'
    check "... says the path is malformed" jtrue 'j.error.message.startsWith("malformed path: segment 4 ")'
done
for seg in 'shop%20web' '%2E%2E' 'shop%25web' 'shop-%2A'; do
    call_error "POST /groups/$seg/rollback: not a group name" 400 invalid_argument api_json "$OPER" POST "/api/v1/groups/$seg/rollback" '{"snapshot_version": 1}' --path-as-is
    check "... says why" jtrue 'j.error.message.startsWith("invalid proxy group name: ")'
done
check "audit: the four bad names are failed group.rollback rows" \
    [ "$(audit_count "action = 'group.rollback' AND result = 'failed' AND status_code = 400")" = 4 ]
for g in 'shop web' '..' 'edge*' 'caf\u00e9'; do
    call_error "POST /configs with groups [\"edge\", \"$g\"]" 422 validation_failed api_json "$OPER" POST /api/v1/configs "{\"namespace\":\"team\",\"name\":\"bad\",\"groups\":[\"edge\",\"$g\"],\"spec\":$(api_spec 10100 bad.example)}"
    check "... a schema problem at groups[1]" jtrue 'j.error.details.length === 1 && j.error.details[0].stage === "schema" && j.error.details[0].path === "groups[1]" && j.error.details[0].message.length > 0'
done
call_error "PUT /configs/{id} moving it to group \"shop web\"" 422 validation_failed api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"groups\":[\"shop web\"],\"spec\":$(api_spec 10081 web.example)}"
check "... a schema problem at groups[0]" jtrue 'j.error.details.some(d => d.stage === "schema" && d.path === "groups[0]")'
call_error "POST /configs/validate with groups [\"a/b\", \"%\"]" 422 validation_failed api_json "$OPER" POST /api/v1/configs/validate "{\"groups\":[\"a/b\",\"%\"],\"spec\":$(api_spec 10100 bad.example)}"
check "... a schema problem at groups[1] only" jtrue 'j.error.details.length === 1 && j.error.details[0].path === "groups[1]"'
call_status "POST /configs/validate with groups [\"a/b\"]" 200 api_json "$OPER" POST /api/v1/configs/validate "{\"groups\":[\"a/b\"],\"spec\":$(api_spec 10100 bad.example)}"
check "nothing was written by any refusal" unchanged
check "shop/web still serves version 4" [ "$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = 'shop/web'")/$(served_port shop/web)" = 4/10081 ]

# ------------------------------------------------------------------ the web UI's address of the group
st=$(http GET /snapshots/shop%2Fweb)
check "GET /snapshots/shop%2Fweb is the web UI's page (got $st)" bash -c "[ '$st' = 200 ] && grep -q fake-ui-index '$WORK/body'"

api_stop
finish

#!/usr/bin/env bash
# test_rest_api.sh — every REST endpoint of /api/v1 against the real daemon, PostgreSQL
# and Redis, as a client meets it: each endpoint's success and each error status it can
# answer (400, 404, 409, 412, 413, 415, 422, 503) with the error body checked; ETag and
# If-Match; pagination with cursors; the audit row of every change (and of every refused
# change) asserted with SQL; two writers racing with one If-Match; snapshots, groups,
# proxies, rollback of a config and of a group, the audit log API, and the database
# going away. Tokens come from `sextant token`; JWT auth is on throughout.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init rest
export SEXTANT_HTTP_MAX_BODY_BYTES=65536
api_serve
ADMIN=$(api_token alice admin)
OPER=$(api_token olga operator)
VIEW=$(api_token victor viewer)
check "sextant token mints tokens" [ -n "$ADMIN" ] && [ -n "$OPER" ] && [ -n "$VIEW" ]

audit_count() { # audit_count WHERE: rows of audit_log matching the SQL condition
    sql "SELECT count(*) FROM audit_log WHERE $1"
}

# ------------------------------------------------------------------ whoami, openapi
call_status "GET /whoami" 200 api_call "$VIEW" GET /api/v1/whoami
check "whoami names the token's user and role" jtrue 'j.user === "victor" && j.role === "viewer"'
call_status "GET /openapi.json" 200 api_call "$VIEW" GET /api/v1/openapi.json
check "the OpenAPI document is version 3 and lists /api/v1/configs/{id}" \
    jtrue 'j.openapi.startsWith("3.") && j.paths["/api/v1/configs/{id}"].put.operationId === "updateConfig"'
call_error "GET /openapi.json without a token" 401 unauthenticated api_call "" GET /api/v1/openapi.json

# ------------------------------------------------------------------ create
SPEC1=$(api_spec 10080 a.example)
st=$(api_json "$OPER" POST /api/v1/configs "$(api_config_body web edge "$SPEC1" '"message":"first"')" \
    -H 'X-Request-Id: req-create-1')
expect_status "POST /configs creates a config" 201 "$st"
ID=$(jv .id)
check "the answer is the config at version 1" \
    jtrue 'j.version === 1 && j.live_version === 1 && j.namespace === "team" && j.name === "web" && j.author === "olga" && j.message === "first"'
check "the answer says which snapshot was written" jtrue 'j.changed && j.snapshots.length === 1 && j.snapshots[0].group === "edge" && j.snapshots[0].version === 1'
check "ETag is the version" [ "$(header ETag)" = '"1"' ]
check "Location names the config" [ "$(header Location)" = "/api/v1/configs/$ID" ]
RID=$(header X-Request-Id)
check "X-Request-Id is the server's id, not the client's ($RID)" grep -Eqx '[0-9a-f]{32}' <<<"$RID"
check "the version's checksum is the sha256 of the canonical spec" \
    [ "$(jv .checksum)" = "$(sql "SELECT checksum FROM config_versions WHERE config_id = '$ID' AND version = 1")" ]
check "config_versions holds version 1 with author and message" \
    [ "$(sql "SELECT author || '/' || message FROM config_versions WHERE config_id = '$ID'")" = "olga/first" ]
check "snapshot edge v1 was built from the config's version 1" \
    [ "$(sql "SELECT source_versions->0->>'version' FROM snapshots WHERE group_name = 'edge' AND version = 1")" = 1 ]
check "audit: config.create by olga, success 201, request id, source IP, after_version 1" \
    [ "$(audit_count "action = 'config.create' AND actor = 'olga' AND actor_role = 'operator' AND result = 'success' AND status_code = 201 AND resource_id = '$ID' AND request_id = '$RID' AND details->>'client_request_id' = 'req-create-1' AND source_ip = '127.0.0.1' AND (details->>'after_version')::int = 1 AND (details->>'before_version')::int = 0")" = 1 ]

call_error "POST /configs with a taken name" 409 conflict api_json "$OPER" POST /api/v1/configs "$(api_config_body web edge "$(api_spec 10090 b.example)")"
check "409 names the config" jtrue 'j.error.message.includes("team/web")'
check "audit: the refused create is a failed row with 409" \
    [ "$(audit_count "action = 'config.create' AND result = 'failed' AND status_code = 409")" = 1 ]

call_error "POST /configs without Content-Type" 415 unsupported api_call "$OPER" POST /api/v1/configs --data-binary "$(api_config_body x edge "$SPEC1")"
call_error "POST /configs as text/plain" 415 unsupported api_call "$OPER" POST /api/v1/configs -H 'Content-Type: text/plain' --data-binary '{}'
call_error "POST /configs with malformed JSON" 400 invalid_argument api_json "$OPER" POST /api/v1/configs '{"name": "x", "groups": ['
check "malformed JSON: the details say where" jtrue 'j.error.details[0].message.startsWith("line 1")'
call_error "POST /configs with an array body" 400 invalid_argument api_json "$OPER" POST /api/v1/configs '[1,2]'
call_error "POST /configs with an empty body" 400 invalid_argument api_json "$OPER" POST /api/v1/configs ''
call_error "POST /configs with wrong types" 400 invalid_argument api_json "$OPER" POST /api/v1/configs '{"name": 7, "groups": "edge", "spec": [], "draft": "yes", "colour": "red"}'
check "wrong types: every field is named with its problem" \
    jtrue 'const p = Object.fromEntries(j.error.details.map(d => [d.path, d.message])); p.name === "must be a string" && p.groups === "must be an array of strings" && p.spec === "must be a JSON object" && p.draft === "must be true or false" && p.colour === "unknown field"'
call_error "POST /configs without required fields" 400 invalid_argument api_json "$OPER" POST /api/v1/configs '{"namespace": "team", "groups": ["edge", ""]}'
check "missing fields are named" \
    jtrue 'const p = j.error.details.map(d => d.path); p.includes("name") && p.includes("spec") && p.includes("groups[1]")'
head -c 70000 /dev/zero | tr '\0' 'x' >"$WORK/big"
call_error "POST /configs with a body over http.max_body_bytes" 413 payload_too_large api_call "$OPER" POST /api/v1/configs -H 'Content-Type: application/json' --data-binary @"$WORK/big"
check "audit: the oversized write is a denied row with 413 and its caller" \
    [ "$(audit_count "action = 'config.request_too_large' AND result = 'denied' AND status_code = 413 AND actor <> 'anonymous'")" = 1 ]
BAD_SPEC='{"listeners":[{"name":"web","address":"0.0.0.0","port":70000,"protocol":"LISTENER_PROTOCOL_HTTP"}]}'
call_error "POST /configs with an invalid spec" 422 validation_failed api_json "$OPER" POST /api/v1/configs "$(api_config_body bad edge "$BAD_SPEC")"
check "422 details carry stage, path and message" \
    jtrue 'j.error.details.some(d => d.stage === "schema" && d.path === "spec.listeners[0].port" && d.message.length > 0)'
check "audit: the refused create is a failed row with 422 and its problems" \
    [ "$(audit_count "action = 'config.create' AND result = 'failed' AND status_code = 422 AND jsonb_array_length(details->'problems') > 0")" = 1 ]
check "refused creates wrote no config" [ "$(sql "SELECT count(*) FROM configs")" = 1 ]
check "refused creates wrote no snapshot" [ "$(sql "SELECT count(*) FROM snapshots")" = 1 ]

call_error "a viewer may not create a config" 403 permission_denied api_json "$VIEW" POST /api/v1/configs "$(api_config_body v edge "$(api_spec 10091 v.example)")"

# A second config in the group, and one in another namespace and group.
call_status "POST /configs: a second config in group edge" 201 api_json "$ADMIN" POST /api/v1/configs "$(api_config_body api edge "$(api_spec 10081 api.example)")"
ID2=$(jv .id)
check "the group's snapshot v2 is built from both configs" \
    [ "$(sql "SELECT jsonb_array_length(source_versions) FROM snapshots WHERE group_name = 'edge' AND version = 2")" = 2 ]
call_status "POST /configs: the same name in another namespace" 201 api_json "$ADMIN" POST /api/v1/configs "{\"namespace\":\"other\",\"name\":\"web\",\"groups\":[\"inner\"],\"spec\":$(api_spec 10080 a.example)}"
ID3=$(jv .id)
call_status "POST /configs: a draft" 201 api_json "$ADMIN" POST /api/v1/configs "$(api_config_body draft1 edge "$(api_spec 10085 d.example)" '"draft":true')"
IDD=$(jv .id)
check "a draft has no live version and writes no snapshot" \
    jtrue 'j.live_version === null && j.draft === true && j.snapshots.length === 0'

# ------------------------------------------------------------------ list and read
call_status "GET /configs?namespace=team" 200 api_call "$VIEW" GET '/api/v1/configs?namespace=team'
check "lists the three team configs by name" jtrue 'j.items.map(c => c.name).join() === "api,draft1,web" && j.next_cursor === null'
st=$(api_call "$VIEW" GET '/api/v1/configs?group=inner')
check "GET /configs?group=inner lists the other namespace's config" jtrue 'j.items.length === 1 && j.items[0].namespace === "other"'
st=$(api_call "$VIEW" GET '/api/v1/configs?limit=2')
check "GET /configs?limit=2 gives two and a cursor" jtrue 'j.items.length === 2 && typeof j.next_cursor === "string"'
call_status "GET /configs with the cursor" 200 api_next_page "$VIEW" '/api/v1/configs?limit=2'
check "the second page has the other two, and ends" jtrue 'j.items.length === 2 && j.next_cursor === null'
call_error "GET /configs?limit=0" 400 invalid_argument api_call "$VIEW" GET '/api/v1/configs?limit=0'
call_error "GET /configs?limit=abc" 400 invalid_argument api_call "$VIEW" GET '/api/v1/configs?limit=abc'
call_error "GET /configs with a bad cursor" 400 invalid_argument api_call "$VIEW" GET '/api/v1/configs?cursor=not-a-cursor'

call_status "GET /configs/{id}" 200 api_call "$VIEW" GET "/api/v1/configs/$ID"
check "GET /configs/{id} has the spec and ETag" \
    bash -c "[ '$(header ETag)' = '\"1\"' ]" && jtrue 'j.spec.listeners[0].port === 10080'
call_error "GET /configs/{unknown}" 404 not_found api_call "$VIEW" GET /api/v1/configs/00000000-0000-4000-8000-000000000000
call_error "GET /configs/{not a uuid}" 404 not_found api_call "$VIEW" GET /api/v1/configs/not-a-uuid

# ------------------------------------------------------------------ update
SPEC2=$(api_spec 10082 a.example)
call_status "PUT /configs/{id} with If-Match \"1\"" 200 api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC2,\"message\":\"move\"}" -H 'If-Match: "1"'
check "PUT answers version 2 and its ETag" jtrue 'j.version === 2 && j.message === "move"' && [ "$(header ETag)" = '"2"' ]
check "audit: config.update with before 1 and after 2" \
    [ "$(audit_count "action = 'config.update' AND result = 'success' AND resource_id = '$ID' AND (details->>'before_version')::int = 1 AND (details->>'after_version')::int = 2")" = 1 ]
call_error "PUT /configs/{id} with a stale If-Match" 412 precondition_failed api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC1}" -H 'If-Match: "1"'
check "412 says which version is current" jtrue 'j.error.message.includes("latest version is 2")'
check "audit: the stale PUT is a failed row with 412" \
    [ "$(audit_count "action = 'config.update' AND result = 'failed' AND status_code = 412 AND resource_id = '$ID'")" = 1 ]
call_error "PUT /configs/{id} with a weak If-Match" 400 invalid_argument api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC1}" -H 'If-Match: W/"2"'
call_status "PUT /configs/{id} of the same content without If-Match" 200 api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC2}"
check "the same content writes no version" jtrue 'j.version === 2 && j.changed === false'
call_error "PUT renaming onto a taken name" 409 conflict api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC2,\"name\":\"api\"}"
call_error "PUT moving the config to another namespace" 400 invalid_argument api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC2,\"namespace\":\"other\"}"
call_error "PUT with an empty group list" 400 invalid_argument api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC2,\"groups\":[]}"
call_error "PUT with an invalid spec" 422 validation_failed api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$BAD_SPEC}"
call_error "PUT with a wrong type" 400 invalid_argument api_json "$OPER" PUT "/api/v1/configs/$ID" '{"spec": "x"}'
call_error "PUT without Content-Type" 415 unsupported api_call "$OPER" PUT "/api/v1/configs/$ID" --data-binary "{\"spec\":$SPEC2}"
st=$(api_json "$OPER" PUT /api/v1/configs/00000000-0000-4000-8000-000000000000 "{\"spec\":$SPEC2}")
expect_error "PUT /configs/{unknown}" 404 not_found "$st"
check "audit: every refused PUT has its failed row" \
    [ "$(audit_count "action = 'config.update' AND result = 'failed'")" = 9 ]
check "refused PUTs wrote no version" [ "$(sql "SELECT latest_version FROM configs WHERE id = '$ID'")" = 2 ]

# ------------------------------------------------------------------ two writers, one If-Match
racers=()
for i in 1 2; do
    curl -s -o "$WORK/race$i.body" -w '%{http_code}' -X PUT --max-time 20 \
        -H "Authorization: Bearer $OPER" -H 'Content-Type: application/json' -H 'If-Match: "2"' \
        --data-binary "{\"spec\":$(api_spec $((10100 + i)) a.example)}" \
        "http://127.0.0.1:$HTTP_PORT/api/v1/configs/$ID" >"$WORK/race$i.status" &
    racers+=($!)
done
wait "${racers[@]}"
statuses=$( (cat "$WORK/race1.status"; echo; cat "$WORK/race2.status"; echo) | sort | tr '\n' ' ')
check "two writers with If-Match \"2\": one 200, one 412 (got $statuses)" [ "$statuses" = "200 412 " ]
check "exactly one new version was written" [ "$(sql "SELECT count(*) FROM config_versions WHERE config_id = '$ID'")" = 3 ]
check "and it is the winner's" \
    [ "$(sql "SELECT spec->'listeners'->0->>'port' FROM config_versions WHERE config_id = '$ID' AND version = 3")" = \
        "$(for i in 1 2; do [ "$(cat "$WORK/race$i.status")" = 200 ] && echo $((10100 + i)); done)" ]

# ------------------------------------------------------------------ versions and diff
call_status "GET /configs/{id}/versions" 200 api_call "$VIEW" GET "/api/v1/configs/$ID/versions"
check "versions newest first, without specs" jtrue 'j.items.map(v => v.version).join() === "3,2,1" && j.items[0].spec === undefined'
st=$(api_call "$VIEW" GET "/api/v1/configs/$ID/versions?limit=2")
st=$(api_next_page "$VIEW" "/api/v1/configs/$ID/versions?limit=2")
check "versions page 2 holds version 1" jtrue 'j.items.length === 1 && j.items[0].version === 1 && j.next_cursor === null'
call_error "GET /configs/{unknown}/versions" 404 not_found api_call "$VIEW" GET /api/v1/configs/00000000-0000-4000-8000-000000000000/versions
call_status "GET /configs/{id}/versions/1" 200 api_call "$VIEW" GET "/api/v1/configs/$ID/versions/1"
check "version 1 has its spec and message" jtrue 'j.version === 1 && j.spec.listeners[0].port === 10080 && j.message === "first"'
call_error "GET /configs/{id}/versions/99" 404 not_found api_call "$VIEW" GET "/api/v1/configs/$ID/versions/99"
call_error "GET /configs/{id}/versions/x" 404 not_found api_call "$VIEW" GET "/api/v1/configs/$ID/versions/x"
call_status "GET /configs/{id}/diff?from=1&to=2" 200 api_call "$VIEW" GET "/api/v1/configs/$ID/diff?from=1&to=2"
check "the diff names the changed port with old and new values" \
    jtrue 'j.changed.length === 1 && j.changed[0].path === "spec.listeners[\"l-a-example\"].port" && j.changed[0].old === 10080 && j.changed[0].new === 10082 && j.added.length === 0 && j.removed.length === 0'
st=$(api_call "$VIEW" GET "/api/v1/configs/$ID/diff")
check "the default diff is the latest against the one before" jtrue 'j.from === 2 && j.to === 3'
call_error "GET /configs/{id}/diff?from=x" 400 invalid_argument api_call "$VIEW" GET "/api/v1/configs/$ID/diff?from=x"
call_error "GET /configs/{id}/diff?to=99" 404 not_found api_call "$VIEW" GET "/api/v1/configs/$ID/diff?from=1&to=99"

# ------------------------------------------------------------------ dry run
before_versions=$(sql "SELECT count(*) FROM config_versions")
before_snaps=$(sql "SELECT count(*) FROM snapshots")
before_audit=$(sql "SELECT count(*) FROM audit_log")
call_status "POST /configs/validate of a good config" 200 api_json "$OPER" POST /api/v1/configs/validate "$(api_config_body new edge "$(api_spec 10095 n.example)")"
check "the dry run says valid" jtrue 'j.valid === true'
call_status "POST /configs/validate of an update by id" 200 api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$(api_spec 10096 a.example)}"
call_error "POST /configs/validate of a bad config" 422 validation_failed api_json "$OPER" POST /api/v1/configs/validate "$(api_config_body new edge "$BAD_SPEC")"
call_error "POST /configs/validate of a config clashing with another" 409 conflict api_json "$OPER" POST /api/v1/configs/validate "$(api_config_body new edge "$(api_spec 10081 api2.example)")"
check "409 names the other config" jtrue 'j.error.details.some(d => d.stage === "conflict" && (d.conflict_with || "").includes("team/api"))'
call_error "POST /configs/validate without spec" 400 invalid_argument api_json "$OPER" POST /api/v1/configs/validate '{"name":"x"}'
call_error "POST /configs/validate without groups" 400 invalid_argument api_json "$OPER" POST /api/v1/configs/validate "{\"spec\":$SPEC1}"
call_error "POST /configs/validate of an unknown config" 404 not_found api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"00000000-0000-4000-8000-000000000000\",\"spec\":$SPEC1}"
call_error "POST /configs/validate without Content-Type" 415 unsupported api_call "$OPER" POST /api/v1/configs/validate --data-binary "{\"spec\":$SPEC1}"
call_error "a viewer may not validate" 403 permission_denied api_json "$VIEW" POST /api/v1/configs/validate "$(api_config_body new edge "$SPEC1")"
check "the dry runs wrote no version" [ "$(sql "SELECT count(*) FROM config_versions")" = "$before_versions" ]
check "the dry runs wrote no snapshot" [ "$(sql "SELECT count(*) FROM snapshots")" = "$before_snaps" ]
check "the dry runs wrote no audit row (but the viewer's refusal)" \
    [ "$(sql "SELECT count(*) FROM audit_log")" = $((before_audit + 1)) ]

# ------------------------------------------------------------------ config rollback
call_status "POST /configs/{id}/rollback to version 1" 200 api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version": 1}' -H 'If-Match: "3"'
check "rollback writes version 4 copying version 1" \
    jtrue 'j.version === 4 && j.source_version === 1 && j.spec.listeners[0].port === 10080 && j.rollback.before_version === 3 && j.rollback.after_version === 4'
check "version 4's spec equals version 1's (same checksum)" \
    [ "$(sql "SELECT count(DISTINCT checksum) FROM config_versions WHERE config_id = '$ID' AND version IN (1, 4)")" = 1 ]
check "version 4 records source_version 1" \
    [ "$(sql "SELECT source_version FROM config_versions WHERE config_id = '$ID' AND version = 4")" = 1 ]
check "the group's newest snapshot carries the rolled-back listener" \
    [ "$(sql "SELECT count(*) FROM snapshots s JOIN proxy_groups g ON g.name = s.group_name AND g.latest_snapshot_version = s.version, jsonb_array_elements(s.ir->'listeners') l WHERE s.group_name = 'edge' AND (l->>'port')::int = 10080")" = 1 ]
check "audit: config.rollback with source 1, before 3, after 4" \
    [ "$(audit_count "action = 'config.rollback' AND result = 'success' AND (details->>'source_version')::int = 1 AND (details->>'before_version')::int = 3 AND (details->>'after_version')::int = 4")" = 1 ]
call_error "rollback to a version that does not exist" 404 not_found api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version": 99}'
call_error "rollback with a stale If-Match" 412 precondition_failed api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version": 1}' -H 'If-Match: "3"'
call_error "rollback with a version that is not an integer" 400 invalid_argument api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version": "one"}'
call_error "rollback to version 0" 400 invalid_argument api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version": 0}'
call_error "rollback without Content-Type" 415 unsupported api_call "$OPER" POST "/api/v1/configs/$ID/rollback" --data-binary '{"version": 1}'
call_error "rollback of an unknown config" 404 not_found api_json "$OPER" POST /api/v1/configs/00000000-0000-4000-8000-000000000000/rollback '{"version": 1}'
check "audit: every refused rollback has its row" \
    [ "$(audit_count "action = 'config.rollback' AND result = 'failed'")" = 6 ]

# ------------------------------------------------------------------ snapshots and groups
call_status "GET /snapshots?group=edge" 200 api_call "$VIEW" GET '/api/v1/snapshots?group=edge'
NS=$(sql "SELECT latest_snapshot_version FROM proxy_groups WHERE name = 'edge'")
check "snapshots of edge, newest first" jtrue "j.items[0].version === $NS && j.items.every(s => s.group === 'edge') && j.items[0].ir === undefined"
st=$(api_call "$VIEW" GET '/api/v1/snapshots?limit=1')
check "GET /snapshots?limit=1 pages" jtrue 'j.items.length === 1 && typeof j.next_cursor === "string"'
call_status "GET /snapshots second page" 200 api_next_page "$VIEW" '/api/v1/snapshots?limit=1'
st=$(api_call "$VIEW" GET '/api/v1/snapshots?group=nothing')
check "GET /snapshots of an unknown group is an empty list" jtrue 'j.items.length === 0'
SID=$(sql "SELECT id FROM snapshots WHERE group_name = 'edge' AND version = 2")
call_status "GET /snapshots/{id}" 200 api_call "$VIEW" GET "/api/v1/snapshots/$SID"
check "a snapshot has its IR and the config versions it was built from, named" \
    jtrue "j.group === 'edge' && j.version === 2 && j.ir.id === 'edge:2' && j.sources.length === 2 && j.sources.some(s => s.config_id === '$ID' && s.name === 'web' && s.namespace === 'team')"
call_error "GET /snapshots/{unknown}" 404 not_found api_call "$VIEW" GET /api/v1/snapshots/999999
call_error "GET /snapshots/abc" 404 not_found api_call "$VIEW" GET /api/v1/snapshots/abc
call_status "GET /groups" 200 api_call "$VIEW" GET /api/v1/groups
check "groups edge and inner with their newest versions" \
    jtrue "j.items.map(g => g.name).join() === 'edge,inner' && j.items[0].latest_version === $NS"

call_status "POST /groups/edge/rollback to snapshot 1" 200 api_json "$OPER" POST /api/v1/groups/edge/rollback '{"snapshot_version": 1, "message": "back to one"}'
check "the group's new version republishes snapshot 1" jtrue "j.changed && j.before_version === $NS && j.version === $((NS + 1))"
check "the new snapshot's content is snapshot 1's (same checksum)" \
    [ "$(sql "SELECT count(DISTINCT checksum) FROM snapshots WHERE group_name = 'edge' AND version IN (1, $((NS + 1)))")" = 1 ]
check "the new snapshot names itself and keeps snapshot 1's sources" \
    [ "$(sql "SELECT ir->>'id' || ' ' || (source_versions = (SELECT source_versions FROM snapshots WHERE group_name = 'edge' AND version = 1)) FROM snapshots WHERE group_name = 'edge' AND version = $((NS + 1))")" = "edge:$((NS + 1)) true" ]
check "audit: group.rollback with snapshot, before and after versions" \
    [ "$(audit_count "action = 'group.rollback' AND result = 'success' AND resource_type = 'group' AND resource_id = 'edge' AND (details->>'snapshot_version')::int = 1 AND (details->>'before_version')::int = $NS AND (details->>'after_version')::int = $((NS + 1))")" = 1 ]
st=$(api_json "$OPER" POST /api/v1/groups/edge/rollback '{"snapshot_version": 1}')
check "rolling back to the content it already has writes nothing" jtrue "j.changed === false && j.version === $((NS + 1))"
call_error "group rollback to an unknown snapshot" 404 not_found api_json "$OPER" POST /api/v1/groups/edge/rollback '{"snapshot_version": 999}'
call_error "rollback of an unknown group" 404 not_found api_json "$OPER" POST /api/v1/groups/nothing/rollback '{"snapshot_version": 1}'
call_error "group rollback with the wrong field" 400 invalid_argument api_json "$OPER" POST /api/v1/groups/edge/rollback '{"version": 1}'
call_error "group rollback without Content-Type" 415 unsupported api_call "$OPER" POST /api/v1/groups/edge/rollback --data-binary '{"snapshot_version": 1}'
call_error "a viewer may not roll back a group" 403 permission_denied api_json "$VIEW" POST /api/v1/groups/edge/rollback '{"snapshot_version": 1}'
check "audit: refused group rollbacks have their rows" \
    [ "$(audit_count "action = 'group.rollback' AND result = 'failed'")" = 4 ]

# ------------------------------------------------------------------ proxies
# The xDS path writes these rows (tests/conformance proves it with real clients); here
# they are written the same way by hand so that every field has a known value.
sql "INSERT INTO proxy_nodes (node_id, group_name, namespace, labels, client, replica_id, connected, protocol)
     VALUES ('node-a', 'edge', 'team', '{\"zone\":\"a\"}', 'envoy/1.30.1', 'api-rest', true, 'ads-sotw'),
            ('node-b', 'edge', 'team', '{}', 'grpc-js/1.10.0', 'api-rest', false, 'ads-delta'),
            ('node-c', 'lonely', '', '{}', '', NULL, false, '');
     INSERT INTO node_status (node_id, acked_snapshot_version, acked_at, last_nack_version, last_nack_error, last_nack_at, nack_count)
     VALUES ('node-a', 1, now(), 2, 'port 10080 in use', now(), 1), ('node-b', NULL, NULL, NULL, NULL, NULL, 0),
            ('node-c', NULL, NULL, NULL, NULL, NULL, 0)" >/dev/null
call_status "GET /proxies" 200 api_call "$VIEW" GET /api/v1/proxies
check "three proxies by node id" jtrue 'j.items.map(n => n.node_id).join() === "node-a,node-b,node-c"'
st=$(api_call "$VIEW" GET '/api/v1/proxies?group=edge&connected=true')
check "GET /proxies?group=edge&connected=true" jtrue 'j.items.length === 1 && j.items[0].node_id === "node-a"'
st=$(api_call "$VIEW" GET '/api/v1/proxies?connected=false&limit=1')
check "GET /proxies?connected=false&limit=1 pages" jtrue 'j.items.length === 1 && j.items[0].node_id === "node-b" && j.next_cursor'
st=$(api_next_page "$VIEW" '/api/v1/proxies?connected=false&limit=1')
check "the next page is node-c" jtrue 'j.items.length === 1 && j.items[0].node_id === "node-c" && j.next_cursor === null'
call_error "GET /proxies?connected=maybe" 400 invalid_argument api_call "$VIEW" GET '/api/v1/proxies?connected=maybe'
call_status "GET /proxies/{node_id}" 200 api_call "$VIEW" GET /api/v1/proxies/node-a
check "a proxy has identity, status, acked version and last NACK" \
    jtrue 'j.group === "edge" && j.client === "envoy/1.30.1" && j.connected && j.labels.zone === "a" && j.acked_version === 1 && j.last_nack.version === 2 && j.last_nack.error === "port 10080 in use" && j.nack_count === 1'
call_error "GET /proxies/{unknown}" 404 not_found api_call "$VIEW" GET /api/v1/proxies/nobody
call_status "GET /proxies/{node_id}/config" 200 api_call "$VIEW" GET /api/v1/proxies/node-a/config
check "the config a proxy should have (its group's newest) and the one it acked" \
    jtrue "j.assignment === 'group_latest' && j.desired.version === $((NS + 1)) && j.desired.ir.listeners.length > 0 && j.acked.version === 1 && j.in_sync === false"
st=$(api_call "$VIEW" GET /api/v1/proxies/node-c/config)
check "a proxy whose group has no snapshot and that acked nothing" jtrue 'j.desired === null && j.acked === null && j.in_sync === false'
call_error "GET /proxies/{unknown}/config" 404 not_found api_call "$VIEW" GET /api/v1/proxies/nobody/config

# ------------------------------------------------------------------ delete
# After the group rollback, move team/api so that the group's newest snapshot has it.
call_status "PUT team/api to port 10083" 200 api_json "$OPER" PUT "/api/v1/configs/$ID2" "{\"spec\":$(api_spec 10083 api.example)}" -H 'If-Match: "1"'
call_error "DELETE with a stale If-Match" 412 precondition_failed api_call "$OPER" DELETE "/api/v1/configs/$ID2" -H 'If-Match: "1"'
before=$(sql "SELECT latest_snapshot_version FROM proxy_groups WHERE name = 'edge'")
check "the newest snapshot of edge has team/api's listener" \
    [ "$(sql "SELECT count(*) FROM snapshots s, jsonb_array_elements(s.ir->'listeners') l WHERE s.group_name = 'edge' AND s.version = $before AND (l->>'port')::int = 10083")" = 1 ]
call_status "DELETE /configs/{id}" 200 api_call "$OPER" DELETE "/api/v1/configs/$ID2?message=retired" -H 'If-Match: "2"'
check "the answer shows the deleted config and the snapshot written" \
    jtrue "typeof j.deleted_at === 'string' && j.changed && j.snapshots.length === 1 && j.snapshots[0].version === $((before + 1))"
check "the group was recomposed without it" \
    [ "$(sql "SELECT count(*) FROM snapshots s, jsonb_array_elements(s.ir->'listeners') l WHERE s.group_name = 'edge' AND s.version = $((before + 1)) AND (l->>'port')::int = 10083")" = 0 ]
check "audit: config.delete with the message" \
    [ "$(audit_count "action = 'config.delete' AND result = 'success' AND resource_id = '$ID2' AND details->>'message' = 'retired' AND (details->>'deleted')::boolean")" = 1 ]
call_error "GET of a deleted config" 404 not_found api_call "$VIEW" GET "/api/v1/configs/$ID2"
call_error "DELETE of a deleted config" 404 not_found api_call "$OPER" DELETE "/api/v1/configs/$ID2"
call_error "DELETE /configs/{not a uuid}" 404 not_found api_call "$OPER" DELETE /api/v1/configs/not-a-uuid
call_status "versions of a deleted config stay readable" 200 api_call "$VIEW" GET "/api/v1/configs/$ID2/versions/1"
call_status "a deleted config's name can be used again" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body api edge "$(api_spec 10081 api.example)")"
call_error "a viewer may not delete" 403 permission_denied api_call "$VIEW" DELETE "/api/v1/configs/$ID3"
check "audit: refused deletes have their rows" \
    [ "$(audit_count "action = 'config.delete' AND result = 'failed'")" = 3 ]

# ------------------------------------------------------------------ audit API
call_status "GET /audit?user=olga&action=config.create" 200 api_call "$VIEW" GET "/api/v1/audit?user=olga&action=config.create"
check "olga's creates: the API lists the rows SQL finds, two of them successes" \
    jtrue "j.items.length === $(audit_count "actor = 'olga' AND action = 'config.create'") && j.items.every(e => e.user === 'olga' && e.action === 'config.create') && j.items.filter(e => e.result === 'success').length === 2"
st=$(api_call "$VIEW" GET "/api/v1/audit?resource_type=config&resource_id=$ID&result=success")
check "the history of one config, newest first" \
    jtrue 'j.items.map(e => e.action).join() === "config.rollback,config.update,config.update,config.update,config.create"'
st=$(api_call "$VIEW" GET "/api/v1/audit?result=denied")
check "every denied request is in the audit log" jtrue 'j.items.length >= 5 && j.items.every(e => e.result === "denied")'
st=$(api_call "$VIEW" GET "/api/v1/audit?since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z&limit=3")
check "a time window with a page size" jtrue 'j.items.length === 3 && typeof j.next_cursor === "string"'
first=$(jv '.items[2].id')
st=$(api_next_page "$VIEW" '/api/v1/audit?since=2000-01-01T00:00:00Z&limit=3')
check "the next page continues below" jtrue "j.items[0].id < $first"
st=$(api_call "$VIEW" GET "/api/v1/audit?since=2999-01-01T00:00:00Z")
check "nothing since the future" jtrue 'j.items.length === 0'
call_error "GET /audit?since=yesterday" 400 invalid_argument api_call "$VIEW" GET "/api/v1/audit?since=yesterday"
call_error "GET /audit?result=maybe" 400 invalid_argument api_call "$VIEW" GET "/api/v1/audit?result=maybe"
st=$(api_call "$VIEW" GET "/api/v1/audit?limit=5000")
expect_error "GET /audit?limit=5000" 400 invalid_argument "$st"

# ------------------------------------------------------------------ every change has its row
check "every config version has its audit row" \
    [ "$(sql "SELECT count(*) FROM config_versions v WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.resource_id = v.config_id::text AND a.result = 'success' AND (a.details->>'after_version')::int = v.version)")" = 0 ]

# ------------------------------------------------------------------ the README's auditor queries
# The three SQL queries of README.md ("## REST API") run as printed and find rows here.
awk '/^## REST API/ { on = 1; next } /^## / { on = 0 } on && /^```sql/ { q = 1; next }
     on && q && /^```/ { q = 0 } on && q' "$SRC/README.md" >"$WORK/auditor.sql"
n=0
while IFS= read -r -d ';' stmt; do
    stmt=$(printf '%s' "$stmt" | sed '/^[[:space:]]*--/d')
    [ -n "${stmt//[[:space:]]/}" ] || continue
    n=$((n + 1))
    rows=$(psql "$SEXTANT_DATABASE_URL" -qtAX -v ON_ERROR_STOP=1 -c "$stmt;" 2>"$WORK/auditor.err" | grep -c . || true)
    check "README auditor query $n runs and finds rows ($rows)" \
        bash -c "[ ! -s '$WORK/auditor.err' ] && [ '$rows' -gt 0 ]"
done <"$WORK/auditor.sql"
check "the README has three auditor queries" [ "$n" = 3 ]

# ------------------------------------------------------------------ database down
api_stop
REAL_DB=$SEXTANT_DATABASE_URL
SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$(free_port)/nothing" \
    SEXTANT_DATABASE_CONNECT_TIMEOUT=500ms api_serve_unready
call_error "GET /configs with the database down" 503 unavailable api_call "$VIEW" GET /api/v1/configs
check "503 carries Retry-After" [ -n "$(header Retry-After)" ]
call_error "POST /configs with the database down" 503 unavailable api_json "$OPER" POST /api/v1/configs "$(api_config_body down edge "$SPEC1")"
call_error "PUT with the database down" 503 unavailable api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$SPEC1}"
call_error "GET /snapshots/{id} with the database down" 503 unavailable api_call "$VIEW" GET "/api/v1/snapshots/1"
call_error "GET /audit with the database down" 503 unavailable api_call "$VIEW" GET "/api/v1/audit"
api_stop
SEXTANT_DATABASE_URL=$REAL_DB
finish

#!/usr/bin/env bash
# test_idempotency.sh — retries of mutating requests with an Idempotency-Key, against the
# real daemon, PostgreSQL and Redis:
#   - a config created twice with one key: one config, one version, one audit row; the
#     retry gets the first answer byte for byte (status, body) marked
#     Idempotent-Replayed: true;
#   - the same key with another body: 422 idempotency_key_reused, nothing written;
#   - another user with the same key makes their own change (keys are per user);
#   - malformed keys (empty, too long, not printable ASCII): 400, nothing written;
#   - two requests with one key at the same time: one change, the same answer to both;
#   - an update, a config rollback, a group rollback, a rollout and an operator action
#     (pause) replayed: each acts once (one version, snapshot, deployment, audit row or
#     event);
#   - a request refused for its input stores nothing: corrected, the same key works;
#   - a key older than api.idempotency_ttl is deleted by the periodic sweep;
#   - the OpenAPI document describes the header on every change.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init idem
api_serve
ALICE=$(api_token alice operator)
BOB=$(api_token bob operator)

# keyed TOKEN METHOD PATH BODY KEY [curl args...]: api_json with an Idempotency-Key;
# prints the status.
keyed() {
    local tok=$1 method=$2 path=$3 body=$4 key=$5
    shift 5
    api_json "$tok" "$method" "$path" "$body" -H "Idempotency-Key: $key" "$@"
}
# replayed WHAT STATUS PATH BODY KEY CHECK...: alice POSTs BODY to PATH with KEY (status
# STATUS), the check CHECK... judges the answer, then the request is retried and must get
# the same answer byte for byte (left in $WORK/body).
replayed() {
    local what=$1 status=$2 path=$3 body=$4 key=$5
    shift 5
    call_status "POST $what with a key" "$status" keyed "$ALICE" POST "$path" "$body" "$key"
    cp "$WORK/body" "$WORK/$key.first"
    check "$@"
    call_status "the $what retried" "$status" keyed "$ALICE" POST "$path" "$body" "$key"
    check "... replays the answer" cmp -s "$WORK/$key.first" "$WORK/body"
}
audit_count() { # audit_count ACTION [WHERE]
    sql "SELECT count(*) FROM audit_log WHERE action = '$1' AND result = 'success' ${2:+AND $2}"
}

# ---------------------------------------------------------------- create, replayed
BODY=$(api_config_body web edge "$(api_spec 10080 a.example)")
K1=7f1c5a52-2b0e-4c1e-9d7e-0a1b2c3d4e5f
call_status "POST /configs with a key" 201 keyed "$ALICE" POST /api/v1/configs "$BODY" "$K1"
cp "$WORK/body" "$WORK/create1"
CID=$(jv .id)
check "the first answer is not marked replayed" [ -z "$(header Idempotent-Replayed)" ]
check "... and has its Location" [ "$(header Location)" = "/api/v1/configs/$CID" ]
call_status "the same POST with the same key" 201 keyed "$ALICE" POST /api/v1/configs "$BODY" "$K1"
check "... answers the first answer byte for byte" cmp -s "$WORK/create1" "$WORK/body"
check "... marked Idempotent-Replayed: true" [ "$(header Idempotent-Replayed)" = true ]
check "one config web, with one version" \
    [ "$(sql "SELECT count(*) || '/' || max(latest_version) FROM configs WHERE name = 'web'")" = "1/1" ]
check "one config.create audit row" [ "$(audit_count config.create)" = 1 ]
check "the key is stored for alice with the answer" \
    [ "$(sql "SELECT subject || ' ' || status || ' ' || (response = '$(cat "$WORK/create1")') FROM idempotency_keys WHERE key = '$K1'")" = "alice 201 true" ]

# ---------------------------------------------------------------- same key, other request
OTHER=$(api_config_body web2 edge "$(api_spec 10081 b.example)")
call_error "the key with another body" 422 idempotency_key_reused keyed "$ALICE" POST /api/v1/configs "$OTHER" "$K1"
check "... says the key was used for another request" jtrue '/another request/.test(j.error.message)'
check "... and nothing was written" [ "$(sql "SELECT count(*) FROM configs WHERE name = 'web2'")" = 0 ]
call_error "the key on another path" 422 idempotency_key_reused keyed "$ALICE" PUT "/api/v1/configs/$CID" "{\"spec\":$(api_spec 10080 a.example)}" "$K1"
check "... no new version" [ "$(sql "SELECT latest_version FROM configs WHERE id = '$CID'")" = 1 ]

# ---------------------------------------------------------------- per user
call_status "bob sends alice's key with his own config" 201 keyed "$BOB" POST /api/v1/configs "$OTHER" "$K1"
check "... it is created (keys are per user)" jtrue 'j.name === "web2"'
check "... and not marked replayed" [ -z "$(header Idempotent-Replayed)" ]
check "bob and alice each hold the key once" \
    [ "$(sql "SELECT string_agg(subject, ',' ORDER BY subject) FROM idempotency_keys WHERE key = '$K1'")" = "alice,bob" ]
call_status "alice's retry still gets her own answer" 201 keyed "$ALICE" POST /api/v1/configs "$BODY" "$K1"
check "... byte for byte" cmp -s "$WORK/create1" "$WORK/body"

# ---------------------------------------------------------------- malformed keys
AUDIT_BEFORE=$(sql "SELECT count(*) FROM audit_log WHERE result = 'success'")
BAD_BODY=$(api_config_body bad edge "$(api_spec 10082 c.example)")
call_error "an empty key" 400 invalid_argument api_json "$ALICE" POST /api/v1/configs "$BAD_BODY" -H "Idempotency-Key;"
check "... names the header" jtrue 'j.error.details.some(d => d.path === "Idempotency-Key")'
call_error "a key of 256 characters" 400 invalid_argument keyed "$ALICE" POST /api/v1/configs "$BAD_BODY" "$(printf 'k%.0s' $(seq 1 256))"
call_error "a key with a non-ASCII character" 400 invalid_argument keyed "$ALICE" POST /api/v1/configs "$BAD_BODY" "clé-1"
call_error "a key with a control character" 400 invalid_argument keyed "$ALICE" POST /api/v1/configs "$BAD_BODY" "$(printf 'a\tb')"
check "nothing was written" [ "$(sql "SELECT count(*) FROM configs WHERE name = 'bad'")" = 0 ]
check "... no change audited" [ "$(sql "SELECT count(*) FROM audit_log WHERE result = 'success'")" = "$AUDIT_BEFORE" ]
call_status "a key of 255 characters is taken" 201 keyed "$ALICE" POST /api/v1/configs "$BAD_BODY" "$(printf 'k%.0s' $(seq 1 255))"

# ---------------------------------------------------------------- a refusal stores nothing
K2=refused-then-fixed
call_status "an update with a stale If-Match is refused" 412 keyed "$ALICE" PUT "/api/v1/configs/$CID" "{\"spec\":$(api_spec 10090 a.example)}" "$K2" -H 'If-Match: "9"'
check "... and stores no answer" [ "$(sql "SELECT count(*) FROM idempotency_keys WHERE key = '$K2'")" = 0 ]
call_status "the same request with the right If-Match and the same key" 200 keyed "$ALICE" PUT "/api/v1/configs/$CID" "{\"spec\":$(api_spec 10090 a.example)}" "$K2" -H 'If-Match: "1"'
check "... makes version 2" jtrue 'j.version === 2 && j.changed === true'
check "... with its ETag" [ "$(header ETag)" = '"2"' ]
cp "$WORK/body" "$WORK/put1"
call_status "the update retried" 200 keyed "$ALICE" PUT "/api/v1/configs/$CID" "{\"spec\":$(api_spec 10090 a.example)}" "$K2" -H 'If-Match: "1"'
check "... replays version 2's answer (the stale If-Match is not judged again)" cmp -s "$WORK/put1" "$WORK/body"
check "one update, version 2 the latest" \
    [ "$(audit_count config.update "resource_id = '$CID'")/$(sql "SELECT latest_version FROM configs WHERE id = '$CID'")" = "1/2" ]

# ---------------------------------------------------------------- at the same time
RACE=$(api_config_body race edge "$(api_spec 10083 d.example)")
race_call() { # race_call N: POST race with key K3; status and body to $WORK/race.N
    curl -s -o "$WORK/race.$1" -w '%{http_code}' -X POST --max-time 20 \
        -H "Authorization: Bearer $ALICE" -H 'Content-Type: application/json' \
        -H 'Idempotency-Key: K3-race' --data-binary "$RACE" \
        "http://127.0.0.1:$HTTP_PORT/api/v1/configs" >"$WORK/race.$1.status"
}
race_call 1 &
R1=$!
race_call 2 &
R2=$!
wait "$R1" "$R2"
check "two requests with one key at once both answer 201" \
    [ "$(cat "$WORK/race.1.status")/$(cat "$WORK/race.2.status")" = "201/201" ]
check "... with the same body" cmp -s "$WORK/race.1" "$WORK/race.2"
check "... and make one config with one version, audited once" \
    [ "$(sql "SELECT count(*) || '/' || max(latest_version) FROM configs WHERE name = 'race'")/$(audit_count config.create "details->>'name' = 'race'")" = "1/1/1" ]

# ---------------------------------------------------------------- config rollback
RB='{"version":1,"message":"back"}'
replayed "config rollback" 200 "/api/v1/configs/$CID/rollback" "$RB" rb-1 \
    "... makes version 3 from version 1" jtrue 'j.rollback.after_version === 3 && j.rollback.source_version === 1'
check "... one rollback: version 3 the latest, one audit row" \
    [ "$(sql "SELECT latest_version FROM configs WHERE id = '$CID'")/$(audit_count config.rollback "resource_id = '$CID'")" = "3/1" ]

# ---------------------------------------------------------------- group rollback
SNAPS=$(sql "SELECT count(*) FROM snapshots WHERE group_name = 'edge'")
GRB='{"snapshot_version":1,"message":"first one"}'
replayed "group rollback" 200 /api/v1/groups/edge/rollback "$GRB" grb-1 \
    "... writes a new snapshot" jtrue 'j.changed === true'
check "... one new snapshot, one audit row" \
    [ "$(($(sql "SELECT count(*) FROM snapshots WHERE group_name = 'edge'") - SNAPS))/$(audit_count group.rollback)" = "1/1" ]

# ---------------------------------------------------------------- a rollout and its pause
# A connected node of group edge, so the rollout has someone to wait for (it never
# ACKs: the wave stays in progress).
sql "INSERT INTO proxy_nodes (node_id, group_name, connected, last_seen) VALUES ('n-1', 'edge', true, now())" >/dev/null
APPLY='{"version":1,"selector":{"groups":["edge"]},"strategy":{"type":"all_at_once"},"wave_timeout":"1h","reason":"idem"}'
replayed "config apply" 201 "/api/v1/configs/$CID/apply" "$APPLY" apply-1 \
    "... creates a deployment" jtrue 'typeof j.id === "string" && j.id.length > 0'
DID=$(jv .id)
check "... one deployment, one config.apply audit row" \
    [ "$(sql "SELECT count(*) FROM deployments WHERE config_id = '$CID'")/$(audit_count config.apply)" = "1/1" ]
in_progress() {
    [ "$(api_call "$ALICE" GET "/api/v1/deployments/$DID")" = 200 ] && jtrue 'j.state === "in_progress"'
}
check "the deployment is in progress" wait_for 20 in_progress
PAUSE='{"reason":"look first"}'
# The retry replays the answer, not a 409 for pausing a paused deployment.
replayed "pause" 200 "/api/v1/deployments/$DID/pause" "$PAUSE" pause-1 \
    "... paused" jtrue 'j.state === "paused"'
check "... one pause: one audit row, one rollout_paused event" \
    [ "$(audit_count deployment.pause "resource_id = '$DID'")/$(sql "SELECT count(*) FROM events WHERE deployment_id = '$DID' AND type = 'rollout_paused'")" = "1/1" ]
call_error "a pause with a new key is judged anew" 409 conflict keyed "$ALICE" POST "/api/v1/deployments/$DID/pause" "$PAUSE" pause-2
call_status "cancel, to end the rollout" 200 keyed "$ALICE" POST "/api/v1/deployments/$DID/cancel" '{}' cancel-1

# ---------------------------------------------------------------- expiry
sql "INSERT INTO idempotency_keys (subject, key, request_hash, status, response, created_at)
     VALUES ('alice', 'old-key', repeat('a', 64), 200, '{}', now() - interval '25 hours')" >/dev/null
call_status "a key older than the TTL counts as unused" 201 keyed "$ALICE" POST /api/v1/configs "$(api_config_body aged other "$(api_spec 10084 e.example)")" old-key
check "... the request ran and took the key over" \
    [ "$(sql "SELECT count(*) FROM configs WHERE name = 'aged'")/$(sql "SELECT request_hash <> repeat('a', 64) FROM idempotency_keys WHERE key = 'old-key'")" = "1/t" ]
sql "INSERT INTO idempotency_keys (subject, key, request_hash, status, response, created_at)
     VALUES ('carol', 'expired', repeat('b', 64), 200, '{}', now() - interval '25 hours')" >/dev/null
expired_gone() {
    [ "$(sql "SELECT count(*) FROM idempotency_keys WHERE key = 'expired'")" = 0 ]
}
check "the periodic sweep deletes a key older than api.idempotency_ttl" wait_for 30 expired_gone
check "... and keeps the young ones" [ "$(sql "SELECT count(*) FROM idempotency_keys WHERE key = '$K1'")" = 2 ]

# ---------------------------------------------------------------- the OpenAPI document
call_status "GET /openapi.json" 200 api_call "$ALICE" GET /api/v1/openapi.json
check "every change documents Idempotency-Key, its 422 and Idempotent-Replayed (the dry-run validate excepted)" jtrue '
    Object.entries(j.paths).flatMap(([p, ops]) => Object.entries(ops).filter(([m]) => m !== "get").map(([m, o]) => [p, o]))
      .filter(([p, o]) => o.operationId !== "validateConfig")
      .every(([p, o]) => o.parameters.some((x) => x.$ref === "#/components/parameters/idempotencyKey") && o.responses["422"] &&
        Object.entries(o.responses).some(([st, r]) => st.startsWith("2") && r.headers && r.headers["Idempotent-Replayed"]))'
check "... the header is 1 to 255 printable ASCII characters" \
    jtrue 'const s = j.components.parameters.idempotencyKey.schema; s.minLength === 1 && s.maxLength === 255'

api_stop
finish

#!/usr/bin/env bash
# test_bad_input.sh — the REST API's bad-input matrix: every write endpoint that takes a
# body (from api/routes.c: configs POST and PUT, validate, a config's rollback and apply,
# a deployment's pause, resume, cancel and rollback, a group's PUT and rollback) gets
# malformed JSON, JSON nested far too deep, invalid UTF-8, a body that is not an object,
# fields of the wrong type, huge arrays and strings, out-of-range numbers, names with
# `/` or `..`, an empty body, a body over http.max_body_bytes, and a missing or wrong
# Content-Type. Each answers a 4xx (the one of its kind) in the error shape with a
# message, never a 5xx, and changes no row: the rows of configs, config_versions,
# snapshots, proxy_groups, deployments, events, idempotency keys and the audit log's
# successful changes are counted with psql before and after each request.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init badinput
export SEXTANT_HTTP_MAX_BODY_BYTES=1048576
api_serve
OPER=$(api_token olga operator)
ADMIN=$(api_token alice admin)

# ------------------------------------------------------------------ what the writes act on
call_status "a config in group g" 201 api_json "$OPER" POST /api/v1/configs \
    "{\"namespace\":\"team\",\"name\":\"web\",\"groups\":[\"g\"],\"spec\":$(api_spec 8080 web.example)}"
ID=$(jv .id)
# A finished deployment of it (written here: rolling out needs connected proxies). Its
# actions are refused once the body is read; a body that passed would answer 409.
DID=$(sql "INSERT INTO deployments (config_id, config_version, state, created_by, reason, finished_at)
           VALUES ('$ID', 1, 'completed', 'olga', 'matrix', now()) RETURNING id" | head -n1)
check "the deployment has an id" grep -Eqx '[0-9a-f-]{36}' <<<"$DID"
st=$(api_json "$OPER" POST "/api/v1/deployments/$DID/pause" '{"reason":"a good body"}')
check "a good body reaches the deployment (409: it is finished)" [ "$st" = 409 ]

# ------------------------------------------------------------------ the bodies
B="$WORK/bodies"
mkdir -p "$B"
python3 - "$B" <<'EOF'
import json, sys, os
d = sys.argv[1]
def w(name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
w("malformed", '{"name": "web", "spec": {')
w("trailing", '{"version": 1} {"version": 2}')
w("duplicate", '{"version": 1, "version": 2}')
w("deep_array", "[" * 100000 + "]" * 100000)
w("deep_field", '{"spec":' + '{"a":' * 5000 + '1' + '}' * 5000 + ',"version":1,"reason":"x","data_planes":["envoy"],"snapshot_version":1,"name":"n","groups":["g"]}')
w("utf8_value", b'{"message": "caf\xc3\x28", "reason": "\xff\xfe", "version": 1}')
w("utf8_key", b'{"\xc0\xaf": 1}')
w("utf8_surrogate", '{"message": "\\ud800", "reason": "\\udfff"}')
w("nul_in_string", '{"message": "a\\u0000b", "reason": "a\\u0000b", "name": "a\\u0000b"}')
w("not_object", '[{"version": 1}]')
w("scalar", '"version"')
w("null", 'null')
w("wrong_types", '{"namespace": 7, "name": ["web"], "groups": "g", "spec": "{}", "message": {}, '
  '"draft": "yes", "version": "1", "snapshot_version": 1.5, "reason": false, '
  '"data_planes": "envoy", "use_default": "no", "selector": [], "strategy": 3, '
  '"dry_run": 1, "nack_threshold": "high", "nack_min_sample": 2.5, "wave_timeout": 30, '
  '"health_failures": "3", "promote": null, "id": 12}')
# within the body limit, so that the handlers see them
w("huge_array", json.dumps({"groups": ["g%d" % i for i in range(30000)],
                            "data_planes": ["envoy"] * 30000, "version": 1,
                            "snapshot_version": 1, "name": "n", "spec": {"listeners": [{}] * 5000}}))
assert os.path.getsize(os.path.join(d, "huge_array")) < 1000000
w("huge_string", json.dumps({"message": "m" * 300000, "reason": "r" * 300000, "name": "n" * 300000,
                             "namespace": "team", "groups": ["g"], "spec": {}, "version": 1,
                             "snapshot_version": 1}))
w("huge_number", '{"version": 1e400, "snapshot_version": 1e400, "nack_threshold": 1e400, "name": "n", "groups": ["g"], "spec": {}}')
w("big_integer", '{"version": 123456789012345678901234567890, "snapshot_version": 123456789012345678901234567890, "name": "n", "groups": ["g"], "spec": {}}')
w("out_of_range", json.dumps({"version": 2147483648, "snapshot_version": -1, "nack_threshold": -3,
                              "nack_min_sample": -1, "health_failures": 99999999999,
                              "name": "n", "groups": ["g"],
                              "spec": {"listeners": [{"name": "l", "address": "0.0.0.0", "port": 70000,
                                                      "protocol": "LISTENER_PROTOCOL_HTTP"}]}}))
w("negative_zero", '{"version": -0, "snapshot_version": 0, "name": "n", "groups": ["g"], "spec": {}}')
w("slash_names", json.dumps({"namespace": "team/../x", "name": "a/b", "groups": ["../etc"],
                             "spec": {}, "version": 1, "snapshot_version": 1,
                             "data_planes": ["../envoy", "a/b"], "id": "../x"}))
w("dotdot_names", json.dumps({"namespace": "..", "name": "..", "groups": [".."], "spec": {},
                              "data_planes": [".."], "version": 1, "snapshot_version": 1, "id": ".."}))
w("unknown_field", '{"version": 1, "snapshot_version": 1, "reason": "r", "evil": true}')
w("empty", '')
w("whitespace", '   \n ')
w("over_limit", '{"message": "' + "x" * (2 * 1024 * 1024) + '"}')
w("good_reason", '{"reason": "looks fine", "version": 1, "snapshot_version": 1, "data_planes": ["envoy"], "name": "x", "groups": ["g"], "spec": {}}')
EOF

# ------------------------------------------------------------------ the endpoints
# METHOD PATH: every write route of api/routes.c that takes a body.
ENDPOINTS=(
    "POST /api/v1/configs"
    "POST /api/v1/configs/validate"
    "PUT /api/v1/configs/$ID"
    "POST /api/v1/configs/$ID/rollback"
    "POST /api/v1/configs/$ID/apply"
    "POST /api/v1/deployments/$DID/pause"
    "POST /api/v1/deployments/$DID/resume"
    "POST /api/v1/deployments/$DID/cancel"
    "POST /api/v1/deployments/$DID/rollback"
    "POST /api/v1/deployments/$DID/promote"
    "PUT /api/v1/groups/g"
    "POST /api/v1/groups/g/rollback"
)
check "the matrix covers every write route that takes a body" \
    [ "$(grep -cE '^\s*\{"(POST|PUT|PATCH)", "/api/v1/' "$SRC/api/routes.c")" = "${#ENDPOINTS[@]}" ]

# The matrix: BODY CONTENT-TYPE STATUS, the answer every endpoint must give: 400 for a
# body that is not JSON or has a field the endpoint cannot take, 413 over the limit, 415
# without a JSON Content-Type.
MATRIX=(
    "malformed application/json 400"
    "trailing application/json 400"
    "duplicate application/json 400"
    "deep_array application/json 400"
    "deep_field application/json 400"
    "utf8_value application/json 400"
    "utf8_key application/json 400"
    "utf8_surrogate application/json 400"
    "nul_in_string application/json 400"
    "not_object application/json 400"
    "scalar application/json 400"
    "null application/json 400"
    "wrong_types application/json 400"
    "huge_array application/json 400"
    "huge_string application/json 400"
    "huge_number application/json 400"
    "big_integer application/json 400"
    "out_of_range application/json 400"
    "negative_zero application/json 400"
    "slash_names application/json 400"
    "dotdot_names application/json 400"
    "unknown_field application/json 400"
    "over_limit application/json 413"
    "empty application/json 400"
    "whitespace application/json 400"
    "good_reason - 415"
    "good_reason text/plain 415"
    "good_reason application/x-www-form-urlencoded 415"
    "good_reason application/jsonx 415"
    "malformed - 415"
)

# counts: the rows a write could change, as one line.
counts() {
    sql "SELECT (SELECT count(*) FROM configs) || '|' || (SELECT count(*) FROM config_versions) || '|' ||
                (SELECT count(*) FROM snapshots) || '|' || (SELECT count(*) FROM proxy_groups) || '|' ||
                (SELECT count(*) || ':' || coalesce(string_agg(state || '/' || state_reason || '/' || updated_at, ','), '') FROM deployments) || '|' ||
                (SELECT count(*) FROM events) || '|' || (SELECT count(*) FROM idempotency_keys) || '|' ||
                (SELECT count(*) FROM audit_log WHERE result = 'success') || '|' ||
                (SELECT coalesce(string_agg(name || '=' || coalesce(data_planes::text, 'default') || '@' || updated_at, ','), '') FROM proxy_groups)"
}
check "the row counts can be read ($(counts))" bash -c "[[ '$(counts)' == 1\|1\|* ]]"

# send METHOD PATH BODY CTYPE: the status of the request, body and headers in $WORK.
send() {
    local method=$1 path=$2 body=$3 ctype=$4 extra=()
    # "-": no Content-Type at all (curl would send its form type)
    if [ "$ctype" = - ]; then extra+=(-H 'Content-Type:'); else extra+=(-H "Content-Type: $ctype"); fi
    [ "$method" = PUT ] && extra+=(-H 'If-Match: *')
    curl -s --path-as-is -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' -X "$method" --max-time 60 \
        -H "Authorization: Bearer $ADMIN" "${extra[@]}" --data-binary @"$B/$body" \
        "http://127.0.0.1:$HTTP_PORT$path"
}

# the_error: the body is the error shape, with a code and a message.
the_error() {
    jtrue 'typeof j.error === "object" && typeof j.error.code === "string" && j.error.code.length > 0 && typeof j.error.message === "string" && j.error.message.length > 0 && Array.isArray(j.error.details)'
}

cases=0
for ep in "${ENDPOINTS[@]}"; do
    method=${ep%% *}
    path=${ep#* }
    for row in "${MATRIX[@]}"; do
        read -r body ctype want <<<"$row"
        what="$method ${path//$ID/\{id\}}"
        what="${what//$DID/\{id\}} with $body ($ctype)"
        before=$(counts)
        st=$(send "$method" "$path" "$body" "$ctype")
        after=$(counts)
        cases=$((cases + 1))
        expect_status "$what" "$want" "$st"
        check "$what: the error shape with a message" the_error
        check "$what: no row changed" [ "$before" = "$after" ]
        if [ "$after" != "$before" ]; then
            echo "  before: $before" >&2
            echo "  after:  $after" >&2
        fi
    done
done
check "the matrix ran ($cases cases)" [ "$cases" = $((${#ENDPOINTS[@]} * ${#MATRIX[@]})) ]

# ------------------------------------------------------------------ names in the path
# A group name with `/` or `..` in the path is refused as a name, never a file path.
for g in '..' '..%2Fetc' 'a%2Fb' '%2e%2e' 'a%00b' '%ff'; do
    before=$(counts)
    st=$(send PUT "/api/v1/groups/$g" good_reason application/json)
    check "PUT /groups/$g: a 4xx (got $st)" bash -c "[[ '$st' == 4[0-9][0-9] ]]"
    check "PUT /groups/$g: no row changed" [ "$before" = "$(counts)" ]
    before=$(counts)
    st=$(send POST "/api/v1/groups/$g/rollback" good_reason application/json)
    check "POST /groups/$g/rollback: a 4xx (got $st)" bash -c "[[ '$st' == 4[0-9][0-9] ]]"
    check "POST /groups/$g/rollback: no row changed" [ "$before" = "$(counts)" ]
done

# ------------------------------------------------------------------ still whole
check "the daemon is still ready" api_ready
check "no API request failed with a 5xx" bash -c "! grep '\"path\":\"/api/v1' '$WORK/serve.log' | grep '\"status\":5[0-9][0-9]' >&2"
check "the deployment is as it was" [ "$(sql "SELECT state FROM deployments WHERE id = '$DID'")" = completed ]
api_stop
finish

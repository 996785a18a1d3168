#!/usr/bin/env bash
# test_rest_validation.sh — the validation pipeline through the REST API: one config
# per stage (schema, semantic, dependency, security, quota, conflict, traps) refused
# through the dry run POST /api/v1/configs/validate and through PUT /api/v1/configs/{id},
# each problem in the 422 (409 for conflicts) with its stage and path; one config that
# fails several stages at once and gets every problem back; and a refused change that
# writes nothing but its audit row.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init validation
export SEXTANT_LIMITS_CONFIG_MAX_LISTENERS=2
export SEXTANT_VALIDATION_REGEX_MAX_PROGRAM_SIZE=200
api_serve
OPER=$(api_token olga operator)

# Building blocks of specs (group "g", namespace team).
L='{"name":"l","address":"0.0.0.0","port":8080,"protocol":"LISTENER_PROTOCOL_HTTP","hostnames":["s.example"],"attached_routes":["r"]}'
R='{"name":"r","namespace":"team","hostnames":["s.example"],"rules":[{"name":"all","matches":[{"path":"/","path_type":"PathPrefix"}],"backend_refs":[{"name":"b","namespace":"team","port":8080}]}]}'
B='{"name":"b","namespace":"team","protocol":"http","connect_timeout":"1s","endpoints":[{"address":"10.0.0.1","port":8080}]}'
GOOD="{\"listeners\":[$L],\"http_routes\":[$R],\"backends\":[$B]}"

declare -A SPEC PATHS
SPEC[schema]="{\"listeners\":[${L/8080/70000}],\"http_routes\":[$R],\"backends\":[$B]}"
PATHS[schema]="spec.listeners[0].port"
SPEC[semantic]="{\"listeners\":[$L],\"http_routes\":[${R/\"name\":\"b\"/\"name\":\"missing\"}],\"backends\":[$B]}"
PATHS[semantic]="spec.http_routes[0].rules[0].backend_refs[0]"
HTTPS='{"name":"l","address":"0.0.0.0","port":8443,"protocol":"LISTENER_PROTOCOL_HTTPS","hostnames":["s.example"],"attached_routes":["r"],"tls":{"enabled":true,"secret_refs":["team/SECRET"]}}'
SPEC[dependency]="{\"listeners\":[${HTTPS/SECRET/nope}],\"http_routes\":[$R],\"backends\":[$B]}"
PATHS[dependency]="spec.listeners[0].tls.secret_refs[0]"
SPEC[security]="{\"listeners\":[${HTTPS/SECRET/cert}],\"http_routes\":[$R],\"backends\":[$B],\"secrets\":[{\"namespace\":\"team\",\"name\":\"cert\",\"cert_pem\":\"not a certificate\",\"key_pem\":\"not a key\"}]}"
PATHS[security]="spec.secrets[0].cert_pem"
L2=${L/\"l\"/\"l2\"}
L3=${L/\"l\"/\"l3\"}
SPEC[quota]="{\"listeners\":[$L,${L2/8080/8081},${L3/8080/8082}],\"http_routes\":[$R],\"backends\":[$B]}"
PATHS[quota]="spec.listeners"
SPEC[traps]="{\"listeners\":[$L],\"http_routes\":[$R],\"backends\":[{\"name\":\"b\",\"namespace\":\"team\",\"protocol\":\"http\",\"connect_timeout\":\"1s\",\"endpoints\":[]}]}"
PATHS[traps]="spec.http_routes[0].rules[0].backend_refs[0]"

# has_problem STAGE PATH: the error's details hold a problem of that stage at that path.
has_problem() {
    jtrue "j.error.details.some(d => d.stage === '$1' && d.path.startsWith('$2') && d.message.length > 0)"
}

# ------------------------------------------------------------------ a peer, and the config to change
call_status "a peer config in group g" 201 api_json "$OPER" POST /api/v1/configs "{\"namespace\":\"team\",\"name\":\"peer\",\"groups\":[\"g\"],\"spec\":$(api_spec 9090 peer.example)}"
call_status "the config under test in group g" 201 api_json "$OPER" POST /api/v1/configs "{\"namespace\":\"team\",\"name\":\"target\",\"groups\":[\"g\"],\"spec\":$GOOD}"
ID=$(jv .id)
call_status "the dry run passes the config as it is" 200 api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$GOOD}"

versions_before=$(sql "SELECT count(*) FROM config_versions")
snaps_before=$(sql "SELECT count(*) FROM snapshots")

# ------------------------------------------------------------------ one stage at a time
for stage in schema semantic dependency security quota traps; do
    st=$(api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":${SPEC[$stage]}}")
    expect_error "validate: a $stage problem" 422 validation_failed "$st"
    check "validate: the $stage problem is reported at ${PATHS[$stage]}" has_problem "$stage" "${PATHS[$stage]}"
    st=$(api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":${SPEC[$stage]}}" -H 'X-Request-Id: put-'"$stage")
    expect_error "PUT: a $stage problem" 422 validation_failed "$st"
    check "PUT: the $stage problem is reported at ${PATHS[$stage]}" has_problem "$stage" "${PATHS[$stage]}"
    check "PUT: the refused $stage change is audited with its problems" \
        [ "$(sql "SELECT count(*) FROM audit_log WHERE details->>'client_request_id' = 'put-$stage' AND result = 'failed' AND status_code = 422 AND details->'problems' @> '[{\"stage\":\"$stage\"}]'")" = 1 ]
done

# ------------------------------------------------------------------ regular expressions: RE2's
# A regex of nested counts (each within RE2's 1000, their product not) is refused at its
# field, as the proxies' RE2 would refuse it; the program size limit is the configured one.
re_spec() { # PATTERN: GOOD with the route's match a RegularExpression of PATTERN
    echo "{\"listeners\":[$L],\"http_routes\":[${R/\"path\":\"\/\",\"path_type\":\"PathPrefix\"/\"path\":\"$1\",\"path_type\":\"RegularExpression\"}],\"backends\":[$B]}"
}
call_error "validate: a path regex of nested counts" 422 validation_failed api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$(re_spec '/((a{1,100}){1,100}){1,100}')}"
check "validate: the regex problem is at the match's path, in RE2's words" \
    jtrue "j.error.details.some(d => d.stage === 'schema' && d.path === 'spec.http_routes[0].rules[0].matches[0].path' && d.message.includes('invalid repetition size'))"
call_status "validate: a regex of a program over 100 and within the configured 200" 200 api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$(re_spec '/[a-z]{120}')}"
call_error "validate: a regex of a program over the configured 200" 422 validation_failed api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$(re_spec '/.{100}')}"
check "validate: the message names the limit" \
    jtrue "j.error.details.some(d => d.path === 'spec.http_routes[0].rules[0].matches[0].path' && d.message.includes('over the limit of 200'))"

# ------------------------------------------------------------------ conflict: 409 naming the other config
CONFLICT="{\"listeners\":[${L/8080/9090}],\"http_routes\":[$R],\"backends\":[$B]}"
call_error "validate: a listener address:port another config of the group claims" 409 conflict api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$CONFLICT}"
check "validate: the conflict names team/peer" \
    jtrue "j.error.details.some(d => d.stage === 'conflict' && d.path.startsWith('spec.listeners[0]') && d.conflict_with.includes('team/peer'))"
check "validate: the message names team/peer" jtrue "j.error.message.includes('team/peer')"
call_error "PUT: the same conflict" 409 conflict api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$CONFLICT}"
check "PUT: the conflict names team/peer" \
    jtrue "j.error.details.some(d => d.stage === 'conflict' && d.conflict_with.includes('team/peer'))"
call_error "POST: a new config with the same conflict" 409 conflict api_json "$OPER" POST /api/v1/configs "{\"namespace\":\"team\",\"name\":\"third\",\"groups\":[\"g\"],\"spec\":$(api_spec 9090 third.example)}"
# The same listener in another group is no conflict.
call_status "validate: the same listener in another group" 200 api_json "$OPER" POST /api/v1/configs/validate "{\"namespace\":\"team\",\"name\":\"third\",\"groups\":[\"elsewhere\"],\"spec\":$(api_spec 9090 third.example)}"

# ------------------------------------------------------------------ several stages at once
MANY="{\"listeners\":[${L/8080/70000},${HTTPS/SECRET/nope},${L3/8080/8082}],
  \"http_routes\":[${R/\"name\":\"b\"/\"name\":\"missing\"},
    {\"name\":\"r2\",\"namespace\":\"team\",\"hostnames\":[\"s.example\"],\"rules\":[{\"matches\":[{\"path\":\"/e\",\"path_type\":\"PathPrefix\"}],\"backend_refs\":[{\"name\":\"empty\",\"namespace\":\"team\",\"port\":8080}]}]}],
  \"backends\":[$B,{\"name\":\"empty\",\"namespace\":\"team\",\"protocol\":\"http\",\"endpoints\":[]}],
  \"secrets\":[{\"namespace\":\"team\",\"name\":\"bad\",\"cert_pem\":\"not a certificate\",\"key_pem\":\"not a key\"}]}"
for via in validate PUT; do
    if [ $via = validate ]; then
        st=$(api_json "$OPER" POST /api/v1/configs/validate "{\"id\":\"$ID\",\"spec\":$MANY}")
    else
        st=$(api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$MANY}")
    fi
    expect_error "$via: a config failing several stages" 422 validation_failed "$st"
    for stage in schema semantic dependency security quota traps; do
        check "$via: the several-stage config gets its $stage problem" \
            jtrue "j.error.details.some(d => d.stage === '$stage')"
    done
    check "$via: the message counts every problem" \
        jtrue 'j.error.message.includes(j.error.details.length + " problem")'
    check "$via: every problem has a path and a message" \
        jtrue 'j.error.details.every(d => d.path.startsWith("spec") && d.message.length > 0)'
done

# ------------------------------------------------------------------ nothing was written
check "refused changes wrote no version" [ "$(sql "SELECT count(*) FROM config_versions")" = "$versions_before" ]
check "refused changes wrote no snapshot" [ "$(sql "SELECT count(*) FROM snapshots")" = "$snaps_before" ]
st=$(api_call "$OPER" GET "/api/v1/configs/$ID")
check "the config is still at version 1" jtrue 'j.version === 1'
call_status "a good change still passes" 200 api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":${GOOD//s.example/t.example}}"

# ------------------------------------------------------------------ rollback against today's rules
# Version 1 passed when it was written; with private endpoints refused by policy it no
# longer does, and a rollback to it is refused with the reasons.
api_stop
export SEXTANT_VALIDATION_REFUSE_PRIVATE_ENDPOINTS=true
api_serve
versions_before=$(sql "SELECT count(*) FROM config_versions WHERE config_id = '$ID'")
call_error "rollback to a version today's rules refuse" 422 validation_failed api_json "$OPER" POST "/api/v1/configs/$ID/rollback" '{"version": 1}' -H 'X-Request-Id: rb-today'
check "the rollback's problem is the private endpoint, at its path" \
    jtrue "j.error.details.some(d => d.stage === 'security' && d.path.startsWith('spec.backends[0].endpoints[0]'))"
check "the refused rollback wrote no version" \
    [ "$(sql "SELECT count(*) FROM config_versions WHERE config_id = '$ID'")" = "$versions_before" ]
check "the refused rollback is audited with its reasons" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE details->>'client_request_id' = 'rb-today' AND action = 'config.rollback' AND result = 'failed' AND status_code = 422 AND details->'problems' @> '[{\"stage\":\"security\"}]'")" = 1 ]

api_stop
finish

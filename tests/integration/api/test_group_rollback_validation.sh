#!/usr/bin/env bash
# test_group_rollback_validation.sh — a group's rollback is validated like any change:
# snapshot 1 of a group serves a certificate that expires seconds after it is made;
# snapshot 2 replaces it with a valid one. Once the first certificate has expired, POST
# /api/v1/groups/{group}/rollback to snapshot 1 is refused (422, the security problem at
# its path in the snapshot) and writes no snapshot; an operator may not force it; an
# admin forces it, the group serves snapshot 1's content as version 3, and the audit row
# says it was forced and what validation said. A rollback to the valid snapshot 2 is not
# forced. whoami lists the force action for the admin only.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init rollback_validation
secrets_keyring "$WORK/secrets.keys"
api_serve
OPER=$(api_token olga operator)
ADMIN=$(api_token ada admin)
GROUP=rb-valid

cert_valid_for "$WORK/short" 6
check "openssl made a certificate that expires in 6 seconds" openssl x509 -in "$WORK/short/cert.pem" -noout -checkend 0
cert_valid_for "$WORK/long" 86400
check "openssl made a certificate valid for a day" openssl x509 -in "$WORK/long/cert.pem" -noout -checkend 3600

call_status "snapshot 1: the config with the short-lived certificate" 201 \
    api_json "$OPER" POST /api/v1/configs "$(api_config_body tls "$GROUP" "$(https_spec "$WORK/short")")"
ID=$(jv .id)
call_status "snapshot 2: the config with the valid certificate" 200 \
    api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(https_spec "$WORK/long")}"
check "the group has snapshots 1 and 2" [ "$(sql "SELECT string_agg(version::text, ',' ORDER BY version) FROM snapshots WHERE group_name = '$GROUP'")" = "1,2" ]

check "snapshot 1's certificate has expired" wait_for 20 cert_expired "$WORK/short"

# ------------------------------------------------------------------ refused
audit_before=$(sql "SELECT count(*) FROM audit_log WHERE action = 'group.rollback'")
st=$(api_json "$OPER" POST "/api/v1/groups/$GROUP/rollback" '{"snapshot_version": 1}')
expect_error "rollback to the snapshot whose certificate expired" 422 validation_failed "$st"
check "the problem names the expired certificate at its path in the snapshot" \
    jtrue 'j.error.details.some(d => d.stage === "security" && d.path === "snapshot.secrets[0].cert_pem" && /expired/.test(d.message))'
check "the refusal says how to force it" jtrue 'j.error.details.some(d => d.path === "force" && /"force": true/.test(d.message))'
check "the refused rollback wrote no snapshot" [ "$(sql "SELECT max(version) FROM snapshots WHERE group_name = '$GROUP'")" = 2 ]
check "the refused rollback is audited as a failure" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'group.rollback' AND resource_id = '$GROUP' AND result <> 'success'")" -ge 1 ]

# ------------------------------------------------------------------ force: who may
st=$(api_call "$OPER" GET /api/v1/whoami)
check "whoami: the operator may roll back but not force" \
    jtrue 'j.permissions.groups.includes("rollback") && !j.permissions.groups.includes("force_rollback")'
st=$(api_call "$ADMIN" GET /api/v1/whoami)
check "whoami: the admin may force a rollback" jtrue 'j.permissions.groups.includes("force_rollback")'
call_error "an operator may not force the rollback" 403 permission_denied \
    api_json "$OPER" POST "/api/v1/groups/$GROUP/rollback" '{"snapshot_version": 1, "force": true}'
check "the operator's forced rollback wrote no snapshot" [ "$(sql "SELECT max(version) FROM snapshots WHERE group_name = '$GROUP'")" = 2 ]

# ------------------------------------------------------------------ forced, audited
call_status "the admin forces the rollback" 200 \
    api_json "$ADMIN" POST "/api/v1/groups/$GROUP/rollback" '{"snapshot_version": 1, "force": true, "message": "the new certificate breaks clients"}'
check "the forced rollback is snapshot 3, and says it was forced" \
    [ "$(jv .version) $(jv .before_version) $(jv .changed) $(jv .forced)" = "3 2 true true" ]
check "snapshot 3 serves snapshot 1's certificate" \
    [ "$(sql "SELECT ir->'secrets'->0->>'cert_pem' FROM snapshots WHERE group_name = '$GROUP' AND version = 3" | head -c 200)" = "$(head -c 200 "$WORK/short/cert.pem")" ]
row=$(sql "SELECT actor || ' ' || (details->>'forced') || ' ' || (details->'validation'->0->>'stage') || ' ' || (details->'validation'->0->>'path') FROM audit_log WHERE action = 'group.rollback' AND resource_id = '$GROUP' AND result = 'success' AND (details->>'after_version')::int = 3")
check "the audit row says who forced it and what validation said (got: $row)" \
    [ "$row" = "ada true security snapshot.secrets[0].cert_pem" ]
check "the audit row keeps validation's message" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'group.rollback' AND (details->>'after_version')::int = 3 AND details->'validation'->0->>'message' LIKE '%expired%'")" = 1 ]

# ------------------------------------------------------------------ a valid rollback is not forced
call_status "rollback to snapshot 2, whose certificate is valid" 200 \
    api_json "$OPER" POST "/api/v1/groups/$GROUP/rollback" '{"snapshot_version": 2, "force": false}'
check "it is snapshot 4, not forced" [ "$(jv .version) $(jv .forced)" = "4 false" ]
check "its audit row says not forced and carries no validation" \
    [ "$(sql "SELECT (details->>'forced') || ' ' || (details ? 'validation')::text FROM audit_log WHERE action = 'group.rollback' AND (details->>'after_version')::int = 4")" = "false false" ]
check "audit rows: the refusals and the two rollbacks" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'group.rollback'")" -ge $((audit_before + 4)) ]

finish

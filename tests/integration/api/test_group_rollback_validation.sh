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

# A self-signed certificate for s.example valid from a minute ago until SECS from now
# (openssl ca is what sets an end date to the second).
make_cert() {
    local name=$1 secs=$2 d="$WORK/$1"
    mkdir -p "$d" && : >"$d/index.txt" && echo 01 >"$d/serial"
    printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s/index.txt\nnew_certs_dir = %s\nserial = %s/serial\ndefault_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n' \
        "$d" "$d" "$d" >"$d/ca.cnf"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=s.example \
        -keyout "$d/key.pem" -out "$d/csr.pem" 2>/dev/null &&
        openssl ca -batch -selfsign -notext -config "$d/ca.cnf" -keyfile "$d/key.pem" -in "$d/csr.pem" \
            -out "$d/cert.pem" -startdate "$(date -u -d '-1 min' +%y%m%d%H%M%SZ)" \
            -enddate "$(date -u -d "+$secs sec" +%y%m%d%H%M%SZ)" 2>/dev/null
}
make_cert short 3
check "openssl made a certificate that expires in 3 seconds" openssl x509 -in "$WORK/short/cert.pem" -noout -checkend 0
make_cert long 86400
check "openssl made a certificate valid for a day" openssl x509 -in "$WORK/long/cert.pem" -noout -checkend 3600

# spec CERT_DIR: an HTTPS listener for s.example whose certificate is that one.
spec() {
    node -e '
        const fs = require("fs"), d = process.argv[1];
        const spec = {
            listeners: [{name: "l", address: "0.0.0.0", port: 8443, protocol: "LISTENER_PROTOCOL_HTTPS",
                hostnames: ["s.example"], attached_routes: ["r"], tls: {enabled: true, secret_refs: ["team/cert"]}}],
            http_routes: [{name: "r", namespace: "team", hostnames: ["s.example"],
                rules: [{name: "all", matches: [{path: "/", path_type: "PathPrefix"}],
                    backend_refs: [{name: "b", namespace: "team", port: 8080}]}]}],
            backends: [{name: "b", namespace: "team", protocol: "http", connect_timeout: "1s",
                endpoints: [{address: "10.0.0.1", port: 8080, healthy: true}]}],
            secrets: [{namespace: "team", name: "cert", cert_pem: fs.readFileSync(d + "/cert.pem", "utf8"),
                key_pem: fs.readFileSync(d + "/key.pem", "utf8")}],
        };
        process.stdout.write(JSON.stringify(spec));' "$1"
}

call_status "snapshot 1: the config with the short-lived certificate" 201 \
    api_json "$OPER" POST /api/v1/configs "$(api_config_body tls "$GROUP" "$(spec "$WORK/short")")"
ID=$(jv .id)
call_status "snapshot 2: the config with the valid certificate" 200 \
    api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(spec "$WORK/long")}"
check "the group has snapshots 1 and 2" [ "$(sql "SELECT string_agg(version::text, ',' ORDER BY version) FROM snapshots WHERE group_name = '$GROUP'")" = "1,2" ]

# Validation counts a certificate as expired once its notAfter is in the past.
NOT_AFTER=$(date -u -d "$(openssl x509 -in "$WORK/short/cert.pem" -noout -enddate | cut -d= -f2)" +%s)
expired() { [ "$(date -u +%s)" -gt "$NOT_AFTER" ]; }
check "snapshot 1's certificate has expired" wait_for 10 expired

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

#!/usr/bin/env bash
# test_ui_rollback_force.sh — the republish dialog when validation refuses a snapshot.
#
# Group e2e-force's snapshot v1 serves a certificate that expires seconds after it is
# written; v2 replaces it. Once it has expired, an operator opens v1 on the snapshots
# page and republishes it: the dialog shows the refusal with the security problem at
# snapshot.secrets[0].cert_pem and says the role may not force it (no force button).
# An admin does the same, gets "Force republish", uses it: the group serves v1's content
# as v3, and the audit row says forced, by whom, and what validation said.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init rollback-force
e2e_services || exit 1
secrets_keyring "$WORK/secrets.keys"
e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
OPERATOR=$(e2e_token olga operator)
GROUP=e2e-force

cert_valid_for "$WORK/short" 6 || { fail "openssl made a short-lived certificate"; finish; }
cert_valid_for "$WORK/long" 86400 || { fail "openssl made a certificate"; finish; }
CONFIG_ID=$(e2e_create_config "$ADMIN" tls "$GROUP" "$(https_spec "$WORK/short")" "short-lived certificate") || exit 1
e2e_put_config "$ADMIN" "$CONFIG_ID" "$(https_spec "$WORK/long")" "renewed certificate" || exit 1
check "snapshot v1's certificate has expired" wait_for 20 cert_expired "$WORK/short"

export OPERATOR ADMIN GROUP
e2e_browser "$E2E/scenarios/rollback_force.mjs"

st=$(e2e_rest "$ADMIN" GET "/api/v1/snapshots?group=$GROUP")
check "the group has three snapshots, the last one the admin's forced republish" \
    [ "$st $(jv '.items.map((s) => s.version + ":" + s.created_by).join()')" = "200 3:e2e-admin,2:e2e-admin,1:e2e-admin" ]
row=$(sql "SELECT actor || ' ' || (details->>'forced') || ' ' || (details->'validation'->0->>'path') FROM audit_log WHERE action = 'group.rollback' AND result = 'success'")
check "the audit log has the forced rollback by the admin with what validation said (got: $row)" \
    [ "$row" = "e2e-admin true snapshot.secrets[0].cert_pem" ]
finish

#!/usr/bin/env bash
# test_audit_reads.sh — audit.reads: with it on, every answered read of /api/v1 leaves an
# audit row (action <resource>.read, the reader, the status, the path); a read that fails
# (404) or is refused (401, 403: audited as refusals) leaves none; with it off (the
# default) reads leave nothing.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init audit-reads
rows() { sql "SELECT count(*) FROM audit_log WHERE action LIKE '%.read' AND result = 'success'"; }

api_serve
VIEW=$(api_token victor viewer)
st=$(api_call "$VIEW" GET /api/v1/configs)
expect_status "GET /configs with audit.reads off" 200 "$st"
check "reads leave no audit row by default" [ "$(rows)" = 0 ]
api_stop

# The second run: a policy with a role that may read events only, to be refused a read.
rbac_policy "$WORK/rbac.yaml" 'admin *=*' 'viewer *=read' 'watcher events=read'
SEXTANT_AUTH_POLICY_FILE="$WORK/rbac.yaml" SEXTANT_AUDIT_READS=true api_serve
st=$(api_call "$VIEW" GET /api/v1/configs)
expect_status "GET /configs with audit.reads on" 200 "$st"
REQ=$(header X-Request-Id)
row=$(sql "SELECT actor || '|' || actor_role || '|' || action || '|' || result || '|' || status_code || '|' || (details->>'path')
           FROM audit_log WHERE action LIKE '%.read' AND request_id = '$REQ'")
check "the read is audited: victor, viewer, config.read, success, 200, the path (got $row)" \
    [ "$row" = "victor|viewer|config.read|success|200|/api/v1/configs" ]
st=$(api_call "$VIEW" GET /api/v1/groups/edge)
expect_status "GET /groups/edge" 200 "$st"
check "a read of one object names it" \
    [ "$(sql "SELECT resource_type || '/' || resource_id FROM audit_log WHERE request_id = '$(header X-Request-Id)'")" = group/edge ]
before=$(rows)
st=$(api_call "$VIEW" GET /api/v1/configs/00000000-0000-4000-8000-000000000000)
expect_status "GET of a config that does not exist" 404 "$st"
check "a failed read leaves no read row" [ "$(rows)" = "$before" ]
st=$(api_call "" GET /api/v1/configs)
expect_status "a read without a token" 401 "$st"
check "a refused read leaves no read row (refusals are audited as such)" [ "$(rows)" = "$before" ]
WATCHER=$(SEXTANT_AUTH_POLICY_FILE="$WORK/rbac.yaml" api_token wanda watcher)
st=$(api_call "$WATCHER" GET /api/v1/configs)
expect_status "a read by a role that may not read configs" 403 "$st"
check "the 403 keeps its denied row, and adds no read row" \
    [ "$(rows)/$(sql "SELECT count(*) FROM audit_log WHERE result = 'denied' AND request_id = '$(header X-Request-Id)'")" = "$before/1" ]
api_stop
finish

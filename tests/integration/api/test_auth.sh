#!/usr/bin/env bash
# test_auth.sh — authentication, authorization, rate limits and the audit of refusals,
# through the real daemon against a real PostgreSQL and Redis.
#
# `sextant token` mints an HS256 token that GET /api/v1/whoami accepts; missing,
# expired, badly signed and unsigned tokens (made here with openssl) get 401 with the
# reason in the error shape; a role the RBAC policy file does not grant gets 403; a user
# past the read burst gets 429 with Retry-After; every 403 is one audit_log row
# (checked by request id with psql), 401s and 429s are audited in aggregate (one row per
# address or user and status per api.refusal_interval, written at the latest when the
# daemon stops, its count adding up to every refusal however many were sent), and every
# refusal is counted in /metrics; /healthz, /readyz and /metrics need no token. Then the daemon restarts with auth.enabled=false (answers
# without a token and warns) and with no key at all (warns, refuses everything).
set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
source "$SRC/tests/lib/shtest.sh"

own_init auth
SECRET="integration-test-secret-0123456789abcdef"
export SEXTANT_AUTH_HS256_SECRET="$SECRET"
export SEXTANT_AUTH_ISSUER="https://sextant.test"
export SEXTANT_AUTH_AUDIENCE="sextant-api"
export SEXTANT_RATELIMIT_READ_BURST=5
export SEXTANT_RATELIMIT_READ_RATE=1
# One interval for the whole run: the aggregate rows are written when the daemon stops.
export SEXTANT_API_REFUSAL_INTERVAL=1h
# viewer may read configs only, so whoami (auth.read) is refused to it; operator reads
# everything; admin does everything.
rbac_policy "$WORK/rbac.yaml" 'admin *=*' 'operator *=read' 'viewer configs=read'
export SEXTANT_AUTH_POLICY_FILE="$WORK/rbac.yaml"

# ------------------------------------------------------------------ tokens made by hand
NOW=$(date +%s)
claims() { # claims SUB ROLE EXP
    printf '{"sub":"%s","role":"%s","iss":"https://sextant.test","aud":"sextant-api","exp":%s}' \
        "$1" "$2" "$3"
}

# denied ID STATUS REASON ACTOR ROLE: the request with X-Request-Id ID got STATUS with
# the reason in the error shape; a 403 wrote exactly one matching audit_log row, which
# keeps ID as details.client_request_id beside the server's own request id (the one
# answered), a 401 or 429 no row of its own (they are counted in aggregate rows).
denied() {
    local id=$1 status=$2 reason=$3 actor=$4 role=$5 code
    case $status in
    401) code=unauthenticated ;;
    403) code=permission_denied ;;
    429) code=rate_limited ;;
    esac
    check "$id: error code $code" contains "$WORK/body" "\"code\":\"$code\""
    check "$id: message \"$reason\"" contains "$WORK/body" "\"message\":\"$reason"
    check "$id: details array" contains "$WORK/body" '"details":[]'
    local rid
    rid=$(grep -i '^X-Request-Id:' "$WORK/headers" | tr -d '\r' | awk '{print $2}')
    check "$id: the answered X-Request-Id is the server's ($rid)" grep -Eqx '[0-9a-f]{32}' <<<"$rid"
    if [ "$status" != 403 ]; then
        check "$id: no audit row of its own" [ "$(sql "SELECT count(*) FROM audit_log WHERE request_id = '$rid'")" = 0 ]
        return
    fi
    check "$id: one audit_log row" [ "$(sql "SELECT count(*) FROM audit_log WHERE request_id = '$rid' AND details->>'client_request_id' = '$id'")" = 1 ]
    check "$id: audit row says who, what, denied, $status" [ "$(sql "SELECT actor || '|' || actor_role || '|' || action || '|' || resource_type || '|' || result || '|' || status_code || '|' || host(source_ip) FROM audit_log WHERE request_id = '$rid'")" = "$actor|$role|auth.read|auth|denied|$status|127.0.0.1" ]
}

# ------------------------------------------------------------------ services and daemon
own_services || exit 1
serve_start
check "the daemon becomes ready" wait_for 15 ready

# ------------------------------------------------------------------ open endpoints
check "/healthz needs no token" [ "$(http GET /healthz)" = 200 ]
check "/readyz needs no token" [ "$(http GET /readyz)" = 200 ]
check "/metrics needs no token" [ "$(http GET /metrics)" = 200 ]

# ------------------------------------------------------------------ sextant token
"$BIN" token --help >"$WORK/out" 2>&1
check "sextant token --help exits 0" [ $? -eq 0 ]
check "token --help names its options" bash -c "grep -q -- --user '$WORK/out' && grep -q -- --role '$WORK/out' && grep -q -- --ttl '$WORK/out'"
"$BIN" token --user alice@example.com --role operator --ttl 1h >"$WORK/token" 2>"$WORK/token.err"
check "sextant token exits 0" [ $? -eq 0 ]
OPERATOR=$(cat "$WORK/token")
check "sextant token prints a JWT" bash -c "[[ '$OPERATOR' =~ ^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$ ]]"
"$BIN" token --user bob --role root >/dev/null 2>"$WORK/token.err"
check "a role the policy does not define is refused" [ $? -eq 1 ]
check "the refusal names the roles" contains "$WORK/token.err" "admin, operator, viewer"
"$BIN" token --user bob --role viewer --ttl soon >/dev/null 2>&1
check "a bad --ttl is a usage error" [ $? -eq 2 ]
"$BIN" token --role viewer >/dev/null 2>&1
check "a missing --user is a usage error" [ $? -eq 2 ]

status=$(http GET /api/v1/whoami -H "Authorization: Bearer $OPERATOR")
check "a minted token is accepted (got $status)" [ "$status" = 200 ]
check "whoami says who" contains "$WORK/body" '"user":"alice@example.com"'
check "whoami says the role" contains "$WORK/body" '"role":"operator"'

# ------------------------------------------------------------------ 401
status=$(http GET /api/v1/whoami -H "X-Request-Id: auth-missing")
check "no token: 401 (got $status)" [ "$status" = 401 ]
check "no token: bare Bearer challenge" grep -qi '^WWW-Authenticate: Bearer realm="sextant"' "$WORK/headers"
denied auth-missing 401 "missing bearer token" anonymous ""

T=$(hs256_token "$SECRET" "$(claims alice operator $((NOW - 3600)))")
status=$(http GET /api/v1/whoami -H "X-Request-Id: auth-expired" -H "Authorization: Bearer $T")
check "expired token: 401 (got $status)" [ "$status" = 401 ]
check "expired token: invalid_token challenge" grep -qi 'error="invalid_token"' "$WORK/headers"
denied auth-expired 401 "token expired" anonymous ""

T=$(hs256_token "not-the-secret-not-the-secret-000000" "$(claims alice admin $((NOW + 3600)))")
status=$(http GET /api/v1/whoami -H "X-Request-Id: auth-badsig" -H "Authorization: Bearer $T")
check "bad signature: 401 (got $status)" [ "$status" = 401 ]
denied auth-badsig 401 "bad signature" anonymous ""

H=$(printf '%s' '{"alg":"none","typ":"JWT"}' | b64url)
P=$(claims alice admin $((NOW + 3600)) | b64url)
status=$(http GET /api/v1/whoami -H "X-Request-Id: auth-none" -H "Authorization: Bearer $H.$P.")
check "alg none: 401 (got $status)" [ "$status" = 401 ]
denied auth-none 401 "unsigned tokens are not accepted" anonymous ""

T=$(hs256_token "$SECRET" '{"sub":"alice","role":"admin","iss":"https://evil.test","aud":"sextant-api","exp":'$((NOW + 3600))'}')
status=$(http GET /api/v1/whoami -H "X-Request-Id: auth-issuer" -H "Authorization: Bearer $T")
check "wrong issuer: 401 (got $status)" [ "$status" = 401 ]
denied auth-issuer 401 "wrong issuer" anonymous ""

status=$(http GET /api/v1/whoami -H "X-Request-Id: auth-garbled" -H "Authorization: Basic YWxpY2U6cHc=")
check "garbled header: 401 (got $status)" [ "$status" = 401 ]
denied auth-garbled 401 "malformed authorization header" anonymous ""

# A hand-made token with the right secret is as good as a minted one.
T=$(hs256_token "$SECRET" "$(claims carol admin $((NOW + 3600)))")
check "a hand-made HS256 token is accepted" [ "$(http GET /api/v1/whoami -H "Authorization: Bearer $T")" = 200 ]

# ------------------------------------------------------------------ 403
VIEWER=$("$BIN" token --user vera --role viewer --ttl 10m)
status=$(http GET /api/v1/whoami -H "X-Request-Id: authz-viewer" -H "Authorization: Bearer $VIEWER")
check "viewer without auth.read in the policy: 403 (got $status)" [ "$status" = 403 ]
denied authz-viewer 403 "role viewer may not read auth" vera viewer

T=$(hs256_token "$SECRET" "$(claims mallory superuser $((NOW + 3600)))")
status=$(http GET /api/v1/whoami -H "X-Request-Id: authz-role" -H "Authorization: Bearer $T")
check "a role the policy does not define: 403 (got $status)" [ "$status" = 403 ]
denied authz-role 403 'role \"superuser\" is not defined by the RBAC policy' mallory superuser

# A write route: viewers may not create configs.
status=$(http POST /api/v1/configs -H "X-Request-Id: authz-write" -H "Authorization: Bearer $VIEWER" \
    -H 'Content-Type: application/json' -d '{}')
check "viewer POST /api/v1/configs: 403 (got $status)" [ "$status" = 403 ]
check "authz-write: one audit_log row naming config.create" [ "$(sql "SELECT count(*) FROM audit_log WHERE details->>'client_request_id' = 'authz-write' AND result = 'denied' AND status_code = 403 AND actor = 'vera' AND action = 'config.create' AND resource_type = 'config'")" = 1 ]

# ------------------------------------------------------------------ 429
BURST=$("$BIN" token --user burst@example.com --role operator --ttl 10m)
# Reads until the first 429 (the bucket refills at 1/s, so how many pass depends on how
# fast this machine sends them: the bound is burst + rate x elapsed).
codes=
first429=
t0=$(date +%s%N)
for i in $(seq 1 30); do
    c=$(http GET /api/v1/whoami -H "X-Request-Id: rate-$i" -H "Authorization: Bearer $BURST")
    codes="$codes $c"
    if [ "$c" = 429 ]; then
        first429=$i
        cp "$WORK/headers" "$WORK/headers.429" && cp "$WORK/body" "$WORK/body.429"
        break
    fi
done
elapsed_s=$((($(date +%s%N) - t0 + 999999999) / 1000000000))
ok=$(echo "$codes" | tr ' ' '\n' | grep -c '^200$')
limited=$(echo "$codes" | tr ' ' '\n' | grep -c '^429$')
check "the first five are 200 (the burst)" bash -c "[[ '$codes' == ' 200 200 200 200 200'* ]]"
check "then a 429 (got$codes in ${elapsed_s} s)" [ -n "$first429" ]
check "no more passed than the burst and the refill allow ($ok <= 5 + 1/s x ${elapsed_s} s)" [ "$ok" -le $((5 + elapsed_s)) ]
check "429 carries Retry-After" grep -qi '^Retry-After: [1-9]' "$WORK/headers.429"
cp "$WORK/body.429" "$WORK/body"
denied "rate-$first429" 429 "too many read requests" burst@example.com operator
# The same user goes on: a flood of 429s (a few may pass as the bucket refills).
curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 -H "Authorization: Bearer $BURST" \
    "http://127.0.0.1:$HTTP_PORT/api/v1/whoami?n=[1-100]" >"$WORK/burst.codes"
limited=$((limited + $(grep -c '^429$' "$WORK/burst.codes")))
check "the user's flood is refused (${limited} 429s)" [ "$limited" -gt 50 ]
check "another user is not limited by it" [ "$(http GET /api/v1/whoami -H "Authorization: Bearer $OPERATOR")" = 200 ]

# ------------------------------------------------------------------ a flood without a token
# 300 requests without a token from one address: 401s while the address's
# failed-authentication bucket lasts, then 429s.
curl -s -o /dev/null -w '%{http_code}\n' --max-time 120 \
    "http://127.0.0.1:$HTTP_PORT/api/v1/configs?n=[1-300]" >"$WORK/flood.codes"
flood401=$(grep -c '^401$' "$WORK/flood.codes")
flood429=$(grep -c '^429$' "$WORK/flood.codes")
check "the flood is all refused ($flood401 401s, $flood429 429s)" [ $((flood401 + flood429)) = 300 ]
check "the flood turns into 429s" [ "$flood429" -gt 0 ]

# ------------------------------------------------------------------ metrics and totals
n401=$((6 + flood401))
n403=$(sql "SELECT count(*) FROM audit_log WHERE status_code = 403")
check "401s are counted" [ "$(metric 'sextant_api_requests_denied_total{status="401"}')" = "$n401" ]
check "403s are counted" [ "$(metric 'sextant_api_requests_denied_total{status="403"}')" = "$n403" ]
check "429s are counted" [ "$(metric 'sextant_api_requests_denied_total{status="429"}')" = "$((limited + flood429))" ]
check "rate-limited reads are counted" [ "$(metric 'sextant_api_rate_limited_total{kind="read"}')" = "$limited" ]
check "successful reads wrote no denial rows" [ "$(sql "SELECT count(*) FROM audit_log WHERE result = 'denied' AND actor = 'alice@example.com'")" = 0 ]
check "401s and 429s wrote no row yet (their interval is open)" [ "$(sql "SELECT count(*) FROM audit_log WHERE status_code IN (401, 429)")" = 0 ]
check "the log names the auth settings" grep -q '"msg":"API authentication enabled"' "$WORK/serve.log"
check "no secret in the log" bash -c "! grep -q '$SECRET' '$WORK/serve.log'"
check "the flood is logged once per address and status, not per request" \
    [ "$(grep -c '"msg":"refused GET /api/v1/configs' "$WORK/serve.log")" -le 2 ]
serve_stop

# ------------------------------------------------------------------ the aggregate rows
# Written when the daemon stops: one row per address and status, one per limited user,
# however many requests; their counts add up to every refusal.
agg() { sql "SELECT count(*) || '|' || coalesce(sum((details->>'count')::int), 0) FROM audit_log WHERE result = 'denied' AND $1"; }
check "401s: one row from 127.0.0.1 counting all $n401" \
    [ "$(agg "action = 'api.authenticate' AND status_code = 401 AND actor = 'anonymous' AND host(source_ip) = '127.0.0.1'")" = "1|$n401" ]
check "401s: counted per reason" [ "$(sql "SELECT (details->'reasons'->>'missing bearer token') || '|' || (details->'reasons'->>'token expired') || '|' || (details->'reasons'->>'bad signature') FROM audit_log WHERE action = 'api.authenticate' AND status_code = 401")" = "$((1 + flood401))|1|1" ]
check "401s: the routes asked for" [ "$(sql "SELECT details->'routes' FROM audit_log WHERE action = 'api.authenticate' AND status_code = 401")" = '["GET /api/v1/whoami", "GET /api/v1/configs"]' ]
check "failed-authentication 429s: one row counting all $flood429" \
    [ "$(agg "action = 'api.authenticate' AND status_code = 429 AND actor = 'anonymous' AND host(source_ip) = '127.0.0.1'")" = "1|$flood429" ]
check "the user's 429s: one row counting all $limited" \
    [ "$(agg "action = 'api.request' AND status_code = 429 AND actor = 'burst@example.com' AND actor_role = 'operator' AND resource_id = 'GET /api/v1/whoami'")" = "1|$limited" ]
check "no other refusal rows: $((n401 + flood429 + limited + n403)) refusals in $((n403 + 3)) rows" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE result = 'denied'")" = "$((n403 + 3))" ]

# ------------------------------------------------------------------ auth.enabled=false
SEXTANT_AUTH_ENABLED=false serve_start
check "auth disabled: the daemon becomes ready" wait_for 15 ready
status=$(http GET /api/v1/whoami)
check "auth disabled: /api/v1 answers without a token (got $status)" [ "$status" = 200 ]
check "auth disabled: the caller is anonymous" contains "$WORK/body" '"user":"anonymous"'
check "auth disabled: a warning at start" \
    bash -c "grep '\"level\":\"warn\"' '$WORK/serve.log' | grep -q 'authentication is disabled'"
serve_stop

# ------------------------------------------------------------------ no key: fail closed
: >"$WORK/serve.log"
SEXTANT_AUTH_HS256_SECRET= serve_start
check "no key: the daemon still starts" wait_for 15 ready
check "no key: a warning at start" grep -q 'no token verification key is configured' "$WORK/serve.log"
status=$(http GET /api/v1/whoami -H "Authorization: Bearer $OPERATOR")
check "no key: every token is refused (got $status)" [ "$status" = 401 ]
check "no key: the reason says so" contains "$WORK/body" "no token verification key is configured"
serve_stop

# ------------------------------------------------------------------ bad policy: no start
printf 'roles:\n  - name: viewer\n    permisions: []\n' >"$WORK/bad.yaml"
SEXTANT_AUTH_POLICY_FILE="$WORK/bad.yaml" "$BIN" serve >"$WORK/bad.log" 2>&1
check "a bad policy file stops the start (exit 1)" [ $? -eq 1 ]
check "the error names the file and line" contains "$WORK/bad.log" "bad.yaml:3"

finish

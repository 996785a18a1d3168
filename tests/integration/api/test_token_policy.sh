#!/usr/bin/env bash
# test_token_policy.sh — the strict token policy and revocation, through two `sextant
# serve` replicas on one database, with REST tokens on /api/v1 and proxy tokens on xDS
# (xds.auth jwt).
#
# Tokens made here with openssl (HS256) that live longer than auth.max_token_lifetime
# (from iat, and from now without iat), carry a crit header, or name a reserved or
# bidi-laden subject get 401 with the reason; `sextant token` refuses to mint beyond
# the maximum. `sextant token revoke --jti` on one token, and `--user` with and without
# `--before`, are honoured by the other replica within seconds, while the other tokens
# keep working; bad revoke arguments change nothing. A proxy token revoked by jti is
# refused PERMISSION_DENIED on a new xDS stream, while an unrevoked one is served.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

PYTHON=/usr/bin/python3
api_init tokens
"$PYTHON" -c 'import grpc' 2>/dev/null || {
    echo "$PYTHON cannot import grpc (apt-get install python3-grpcio; tests/run.sh does)" >&2
    exit 1
}
export SEXTANT_XDS_AUTH=jwt
export SEXTANT_AUTH_MAX_TOKEN_LIFETIME=2h
# C core polls for xDS responses every 5 s unless an RPC is active; tests cannot wait.
export GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=100

# replica NAME: `sextant serve` as NAME on ports of its own (NAME_HTTP, NAME_GRPC).
replica() {
    local http grpc up
    http=$(free_port) || return 1
    grpc=$(free_port) || return 1
    up=$(echo "$1" | tr '[:lower:]' '[:upper:]')
    printf -v "${up}_HTTP" '%s' "$http"
    printf -v "${up}_GRPC" '%s' "$grpc"
    SEXTANT_HTTP_LISTEN="127.0.0.1:$http" SEXTANT_GRPC_LISTEN="127.0.0.1:$grpc" \
        SEXTANT_REPLICA_ID="tokens-$1" bg_run "$1" "${SX_ENV[@]}" "$BIN" serve
    wait_for 30 ready "$http" && wait_for 5 listening "$grpc"
}
replica r1 || exit 1
replica r2 || exit 1
pass "two replicas on one database are ready"

# whoami PORT TOKEN: the status of GET /api/v1/whoami on that replica (body in $WORK/body).
whoami() {
    curl -s -o "$WORK/body" -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $2" \
        "http://127.0.0.1:$1/api/v1/whoami"
}
# refused PORT TOKEN REASON: 401 with REASON as the error message.
refused() {
    [ "$(whoami "$1" "$2")" = 401 ] && [ "$(jv .error.message)" = "$3" ]
}
accepted() { [ "$(whoami "$1" "$2")" = 200 ]; }

# hs256 PAYLOAD-JSON [HEADER-JSON]: a token signed with the daemons' secret.
hs256() { hs256_token "$SEXTANT_AUTH_HS256_SECRET" "$@"; }
# jti TOKEN: the token's "jti" claim.
jti() {
    node -e 'console.log(JSON.parse(Buffer.from(process.argv[1].split(".")[1], "base64url")).jti)' "$1"
}
NOW=$(date +%s)
# claims SUB-JSON IAT EXP: the payload of a viewer's token ("" IAT: none).
claims() {
    printf '{"sub":%s,"role":"admin"%s,"exp":%s}' "$1" "${2:+,\"iat\":$2}" "$3"
}

# ------------------------------------------------------------------ the token rules
check "a token within the maximum lifetime is accepted" \
    accepted "$R1_HTTP" "$(hs256 "$(claims '"alice"' "$NOW" $((NOW + 7200)))")"
check "a token living longer than auth.max_token_lifetime from iat is refused" \
    refused "$R1_HTTP" "$(hs256 "$(claims '"alice"' $((NOW - 60)) $((NOW + 7200)))")" \
    "token lifetime exceeds the maximum"
check "a token valid until year 9999 is refused" \
    refused "$R1_HTTP" "$(hs256 "$(claims '"alice"' "$NOW" 253402300799)")" \
    "token lifetime exceeds the maximum"
check "without iat, a token whose remaining life is within the maximum is accepted" \
    accepted "$R1_HTTP" "$(hs256 "$(claims '"alice"' "" $((NOW + 3600)))")"
check "without iat, a token with more than the maximum left is refused" \
    refused "$R1_HTTP" "$(hs256 "$(claims '"alice"' "" $((NOW + 3 * 3600)))")" \
    "token lifetime exceeds the maximum"
check "an unknown crit header is refused" \
    refused "$R1_HTTP" "$(hs256 "$(claims '"alice"' "$NOW" $((NOW + 600)))" \
        '{"alg":"HS256","typ":"JWT","crit":["urn:example:ext"],"urn:example:ext":1}')" \
    "unsupported critical header"
for sub in anonymous kubernetes system:admin; do
    check "subject $sub is reserved" \
        refused "$R1_HTTP" "$(hs256 "$(claims "\"$sub\"" "$NOW" $((NOW + 600)))")" \
        "token subject is reserved"
done
check "a subject with a control character is refused" \
    refused "$R1_HTTP" "$(hs256 "$(claims '"ali\u001bce"' "$NOW" $((NOW + 600)))")" \
    "token subject contains control characters"
check "a subject with a right-to-left override is refused" \
    refused "$R1_HTTP" "$(hs256 "$(claims '"admin\u202egpj.exe"' "$NOW" $((NOW + 600)))")" \
    "token subject contains bidirectional control characters"

"${SX_ENV[@]}" "$BIN" token --user alice --role admin --ttl 3h >"$WORK/long" 2>"$WORK/long.err"
check "sextant token refuses to mint beyond the maximum (exit 1)" [ $? = 1 ]
check "... and names the setting" contains "$WORK/long.err" "auth.max_token_lifetime"
check "... and prints no token" [ ! -s "$WORK/long" ]
"${SX_ENV[@]}" "$BIN" token --user anonymous --role admin >"$WORK/anon" 2>"$WORK/anon.err"
st=$?
check "sextant token refuses a reserved user (exit 1, no token)" eval '[ $st = 1 ] && [ ! -s "$WORK/anon" ]'

# ------------------------------------------------------------------ revocation by jti
A=$(token alice admin 2h)
B=$(token alice admin 1h)
check "minted tokens carry distinct jtis" eval '[ -n "$(jti "$A")" ] && [ "$(jti "$A")" != "$(jti "$B")" ]'
for t in "$A" "$B"; do
    check "alice's minted token is accepted on r1 and r2" \
        eval 'accepted "$R1_HTTP" "$t" && accepted "$R2_HTTP" "$t"'
done

rows() { sql "SELECT count(*) FROM token_revocations"; }
revoke() { "${SX_ENV[@]}" "$BIN" token revoke "$@"; }
revoke >"$WORK/out" 2>&1
check "token revoke without --jti or --user is a usage error" [ $? = 2 ]
revoke --jti x --user y >"$WORK/out" 2>&1
check "token revoke with both --jti and --user is a usage error" [ $? = 2 ]
revoke --jti x --before 2026-01-01T00:00:00Z >"$WORK/out" 2>&1
check "--before with --jti is a usage error" [ $? = 2 ]
revoke --user bob --before yesterday-ish >"$WORK/out" 2>&1
check "an unreadable --before fails (exit 1)" [ $? = 1 ]
check "... saying so" contains "$WORK/out" "invalid time"
check "bad revocations stored nothing" [ "$(rows)" = 0 ]

JTI_A=$(jti "$A")
revoke --jti "$JTI_A" >"$WORK/out" 2>&1
check "token revoke --jti exits 0" [ $? = 0 ]
check "... and prints what it recorded" contains "$WORK/out" "\"jti\":\"$JTI_A\""
check "r2 refuses the revoked token within seconds" wait_for 10 refused "$R2_HTTP" "$A" "token revoked"
check "r1 refuses it too" refused "$R1_HTTP" "$A" "token revoked"
check "alice's other token still works on both" \
    eval 'accepted "$R1_HTTP" "$B" && accepted "$R2_HTTP" "$B"'

# ------------------------------------------------------------------ revocation by user
OLD=$(hs256 "$(claims '"bob"' $((NOW - 100)) $((NOW + 3600)))")
NEW=$(hs256 "$(claims '"bob"' $((NOW - 10)) $((NOW + 3600)))")
NOIAT=$(hs256 "$(claims '"bob"' "" $((NOW + 3600)))")
check "bob's tokens are accepted before the revocation" \
    eval 'accepted "$R2_HTTP" "$OLD" && accepted "$R2_HTTP" "$NEW" && accepted "$R2_HTTP" "$NOIAT"'
revoke --user bob --before "$(date -u -d @$((NOW - 50)) +%Y-%m-%dT%H:%M:%SZ)" >"$WORK/out" 2>&1
check "token revoke --user --before exits 0" [ $? = 0 ]
check "r2 refuses bob's token issued before --before within seconds" \
    wait_for 10 refused "$R2_HTTP" "$OLD" "token revoked"
check "... and bob's token without iat" refused "$R2_HTTP" "$NOIAT" "token revoked"
check "... but accepts bob's token issued after it" accepted "$R2_HTTP" "$NEW"

C=$(token carol operator)
check "carol's token works" accepted "$R2_HTTP" "$C"
revoke --user carol >"$WORK/out" 2>&1
check "token revoke --user (before now) exits 0" [ $? = 0 ]
check "r2 refuses every token carol had within seconds" \
    wait_for 10 refused "$R2_HTTP" "$C" "token revoked"
check "r1 too" refused "$R1_HTTP" "$C" "token revoked"
check "three revocations are stored" [ "$(rows)" = 3 ]

# ------------------------------------------------------------------ xDS proxy tokens
node "$SRC/tests/conformance/lib/snapshots.js" echo 9 >"$WORK/snap.json"
"$BIN" publish --group edge --author tokens "$WORK/snap.json" >"$WORK/publish.out" 2>&1
check "a snapshot is published to group edge" [ $? = 0 ]
GOOD=$("${SX_ENV[@]}" "$BIN" token --node-pattern 'edge-1')
BAD=$("${SX_ENV[@]}" "$BIN" token --node-pattern 'edge-2')
revoke --jti "$(jti "$BAD")" >"$WORK/out" 2>&1
check "a proxy token is revoked by jti" [ $? = 0 ]
# A REST token revoked after it: once r2 refuses that one, it has loaded both.
D=$(token dave viewer)
revoke --jti "$(jti "$D")" >"$WORK/out" 2>&1
check "r2 has loaded the later revocation" wait_for 10 refused "$R2_HTTP" "$D" "token revoked"

# client NAME NODE TOKEN: the raw xDS client on r2, logging to $WORK/NAME.out.
client() {
    bg_run "c-$1" "$PYTHON" "$SRC/tests/conformance/lib/ads_auth.py" --server "127.0.0.1:$R2_GRPC" \
        --node "$2" --cluster edge --token "$3" --out "$WORK/$1.out"
}
has() { [ -f "$WORK/$1.out" ] && grep -qF -- "$2" "$WORK/$1.out"; }
client good edge-1 "$GOOD"
client bad edge-2 "$BAD"
check "an unrevoked proxy token is served on xDS" wait_for 20 has good " response "
check "the revoked proxy token's stream is refused PERMISSION_DENIED" \
    wait_for 20 has bad " end PERMISSION_DENIED"
check "... and told the token is revoked" has bad "token revoked"
check "the unrevoked stream is still up" eval '! has good " end "'
bg_stop c-good

stop_daemon r1 "$PID_r1" 15
stop_daemon r2 "$PID_r2" 15
finish

#!/usr/bin/env bash
# test_xds_auth.sh — proxy identity (xds.auth): with mTLS (the client certificate's
# SAN) and with bearer tokens (`sextant token --node-pattern`), a client whose
# credentials do not cover the node id it claims is refused PERMISSION_DENIED on every
# protocol (ADS state of the world, Delta, gateway.control.v1 stream and ReportStatus),
# counted by reason and audited in aggregate, while the real proxy's stream keeps
# running and still receives the next snapshot; only a stream of the same identity
# replaces a node's stream; xds.auth: none still serves anyone. The clients are raw xDS
# clients on gRPC's C core (lib/ads_auth.py); the certificates are made here with
# openssl.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init xds-auth
conf_need_python_grpc || exit 1
conf_rest_auth "conformance-xds-auth-secret-0123456789abcdef"
conf_services || exit 1

# ------------------------------------------------------------------ certificates
PKI=$WORK/pki
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.pem" -days 2 \
    -subj "/CN=sextant test CA" 2>/dev/null
# issue NAME SAN: a key and a certificate signed by the CA, with subjectAltName SAN.
issue() {
    openssl req -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" \
        -subj "/CN=$1" 2>/dev/null &&
        openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
            -CAcreateserial -out "$PKI/$1.pem" -days 2 \
            -extfile <(printf 'subjectAltName=%s\n' "$2") 2>/dev/null
}
issue server "DNS:localhost,IP:127.0.0.1" || exit 1
issue edge-1 "URI:spiffe://example.org/ns/prod/node/edge-1" || exit 1
issue edge-2 "URI:spiffe://example.org/ns/prod/node/edge-2" || exit 1

# snapshot FILE SECONDS: the echo backend alone, with a connect timeout of SECONDS, so
# that each new one changes the cluster the clients subscribe to.
snapshot() {
    node -e "const s = require('$CONF/lib/snapshots.js');
        process.stdout.write(JSON.stringify(s.build([{host: 'echo.test', name: 'echo',
            ports: [9], listener: false, connectTimeout: '$2s'}])))" >"$1"
}
snapshot "$WORK/snap.json" 1
V1=$(conf_publish edge "$WORK/snap.json") || exit 1

# client NAME ARGS...: lib/ads_auth.py against r1 in the background, logging to
# $WORK/NAME.out.
client() {
    local name=$1
    shift
    bg_run "c-$name" "$PYTHON" "$CONF/lib/ads_auth.py" --server "127.0.0.1:$R1_GRPC" \
        --out "$WORK/$name.out" "$@"
}
# mtls NAME: the TLS arguments of a client holding NAME's certificate.
mtls() {
    echo --ca "$PKI/ca.pem" --cert "$PKI/$1.pem" --key "$PKI/$1.key"
}
has() { # has NAME TEXT: NAME's log has a line with TEXT
    [ -f "$WORK/$1.out" ] && grep -qF -- "$2" "$WORK/$1.out"
}
got() { # got NAME VERSION: NAME received a response of VERSION (a number)
    [ -n "$2" ] && [ -f "$WORK/$1.out" ] && grep -qE " response $2\$" "$WORK/$1.out"
}
ended() { # ended NAME: NAME's stream has ended
    has "$1" " end "
}
refused() { # refused NAME: NAME ended with PERMISSION_DENIED
    wait_for 20 ended "$1" && has "$1" " end PERMISSION_DENIED"
}
failures() { # failures REASON: sextant_xds_auth_failures_total{reason}
    metric "sextant_xds_auth_failures_total{reason=\"$1\"}" "$R1_HTTP"
}
audited() { # audited: the refusals the audit rows of proxy.connect count, in all
    sql "SELECT coalesce(sum((details->>'count')::int), 0) FROM audit_log
         WHERE action = 'proxy.connect' AND result = 'denied'"
}
audit_rows() {
    sql "SELECT count(*) FROM audit_log WHERE action = 'proxy.connect'"
}
audited_is() { [ "$(audited)" = "$1" ]; }

# ------------------------------------------------------------------ mTLS
SEXTANT_XDS_AUTH=mtls SEXTANT_XDS_MTLS_NODE_ID_FROM='spiffe://example.org/ns/*/node/{node}' \
    SEXTANT_GRPC_TLS_CERT_FILE="$PKI/server.pem" SEXTANT_GRPC_TLS_KEY_FILE="$PKI/server.key" \
    SEXTANT_GRPC_TLS_CLIENT_CA_FILE="$PKI/ca.pem" SEXTANT_XDS_AUTH_FAILURE_INTERVAL=3s \
    conf_serve r1 || exit 1

# shellcheck disable=SC2046
client m-real --node edge-1 --cluster edge $(mtls edge-1)
check "mtls: edge-1 with its own certificate receives version $V1" \
    wait_for 20 got m-real "$V1"
for proto in sotw delta control report; do
    # shellcheck disable=SC2046
    client "m-impostor-$proto" --protocol "$proto" --node edge-1 --cluster edge $(mtls edge-2)
    check "mtls: edge-2's certificate claiming edge-1 ($proto) is refused PERMISSION_DENIED" \
        refused "m-impostor-$proto"
done
check "mtls: ... and told why" has m-impostor-sotw 'do not cover node id "edge-1"'
# shellcheck disable=SC2046
client m-edge2 --node edge-2 --cluster edge $(mtls edge-2)
check "mtls: edge-2 with its own certificate is served" wait_for 20 got m-edge2 "$V1"
check "mtls: four refusals counted as node_not_covered" \
    wait_for 10 eval '[ "$(failures node_not_covered)" = 4 ]'

# A burst of refused reports: one log line and a handful of audit rows, not one each.
# shellcheck disable=SC2046
client m-burst --protocol report --repeat 20 --node edge-1 $(mtls edge-2)
check "mtls: a burst of 20 impostor reports is refused" \
    wait_for 30 eval '[ "$(grep -c "end PERMISSION_DENIED" "$WORK/m-burst.out" 2>/dev/null)" = 20 ]'
check "mtls: every refusal is in the audit rows' counts (24)" wait_for 20 audited_is 24
rows=$(audit_rows)
check "mtls: ... in fewer rows than refusals ($rows rows)" eval '[ "$rows" -ge 1 ] && [ "$rows" -lt 24 ]'
logged=$(grep -c 'refused an xds client from 127.0.0.1' "$WORK/r1.log")
check "mtls: ... and fewer log lines than refusals ($logged lines)" \
    eval '[ "$logged" -ge 1 ] && [ "$logged" -lt 24 ]'
check "mtls: the audit row names the address, the certificate and the node claimed" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'proxy.connect'
              AND host(source_ip) = '127.0.0.1' AND resource_id = 'edge-1'
              AND actor = 'x509:spiffe://example.org/ns/prod/node/edge-2'
              AND details->'reasons' ? 'node_not_covered'")" -ge 1 ]

snapshot "$WORK/snap2.json" 2
V2=$(conf_publish edge "$WORK/snap2.json") || exit 1
check "a new version is published ($V1 -> $V2)" [ "${V2:-0}" -gt "$V1" ]
check "mtls: the real edge-1 still receives the next version ($V2)" \
    wait_for 20 got m-real "$V2"
check "mtls: ... on the stream it opened first (never ended)" eval '! ended m-real'
bg_stop c-m-real
bg_stop c-m-edge2
conf_stop_serve r1

# ------------------------------------------------------------------ bearer tokens
proxy_token() { "${SX_ENV[@]}" "$BIN" token --ttl 1h "$@"; }
EDGE=$(proxy_token --node-pattern 'edge-*')
DB=$(proxy_token --node-pattern 'db-*')
OTHER=$(proxy_token --node-pattern 'edge-*' --user someone-else)
GROUPED=$(proxy_token --node-pattern 'edge-*' --group 'payments-*')
check "jwt: sextant token --node-pattern without a signing key is refused" \
    eval '! env -u SEXTANT_AUTH_HS256_SECRET "$BIN" token --node-pattern "edge-*" >/dev/null 2>&1'
check "jwt: --role and --node-pattern do not go together" \
    eval '! "${SX_ENV[@]}" "$BIN" token --node-pattern "edge-*" --role admin >/dev/null 2>&1'

SEXTANT_XDS_AUTH=jwt conf_serve r1 || exit 1
client j-real --node edge-1 --cluster edge --token "$EDGE"
check "jwt: edge-1 with an edge-* token receives version $V2" wait_for 20 got j-real "$V2"
client j-db --node edge-1 --cluster edge --token "$DB"
check "jwt: a db-* token claiming edge-1 is refused PERMISSION_DENIED" refused j-db
client j-delta --protocol delta --node edge-1 --cluster edge --token "$DB"
check "jwt: ... on Delta too" refused j-delta
client j-control --protocol control --node edge-1 --cluster edge --token "$DB"
check "jwt: ... and on gateway.control.v1" refused j-control
client j-report --protocol report --node edge-1 --token "$DB"
check "jwt: ... and its ReportStatus" refused j-report
client j-long --protocol report --node "$(head -c 100000 /dev/zero | tr '\0' x)" --token "$DB"
check "jwt: ... and one about a 100 kB node id" refused j-long
client j-none --node edge-1 --cluster edge
check "jwt: no token is refused PERMISSION_DENIED" refused j-none
client j-rest --node edge-1 --cluster edge --token "$TOKEN"
check "jwt: a REST API token (no node patterns) is refused" refused j-rest
client j-group --node edge-1 --cluster edge --token "$GROUPED"
check "jwt: a token for groups payments-* claiming a node of group edge is refused" refused j-group
client j-other --node edge-1 --cluster edge --token "$OTHER"
check "jwt: another identity covering edge-1 cannot take over its stream" refused j-other
check "jwt: ... and is told so" has j-other "live stream of another identity"
check "jwt: refusals counted by reason" wait_for 10 eval '[ "$(failures node_not_covered)" = 5 ] &&
    [ "$(failures missing_credentials)" = 1 ] && [ "$(failures bad_token)" = 1 ] &&
    [ "$(failures group_not_covered)" = 1 ] && [ "$(failures identity_conflict)" = 1 ]'

snapshot "$WORK/snap3.json" 3
V3=$(conf_publish edge "$WORK/snap3.json") || exit 1
check "a new version is published ($V2 -> $V3)" [ "${V3:-0}" -gt "$V2" ]
check "jwt: the real edge-1 still receives the next version ($V3)" wait_for 20 got j-real "$V3"
check "jwt: ... on the stream it opened first (never ended)" eval '! ended j-real'

# The same identity reconnecting replaces the stream (a proxy whose old connection
# died), as before.
client j-again --node edge-1 --cluster edge --token "$EDGE"
check "jwt: edge-1 reconnecting with its token is served" wait_for 20 got j-again "$V3"
check "jwt: ... and its old stream is superseded" \
    eval 'wait_for 20 ended j-real && has j-real " end ABORTED"'
bg_stop c-j-again
conf_stop_serve r1
check "jwt: the interval's refusals are audited at shutdown, under the token's subject" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'proxy.connect'
              AND actor = 'jwt:proxies:db-*'")" = 1 ]
check "jwt: ... with the node ids claimed cut to 256 bytes" \
    [ "$(sql "SELECT max(length(n)) FROM audit_log, jsonb_array_elements_text(details->'nodes') n
              WHERE action = 'proxy.connect'")" = 256 ]

# ------------------------------------------------------------------ none
SEXTANT_XDS_AUTH=none conf_serve r1 || exit 1
check "none: the daemon warns that xDS clients are not authenticated" \
    grep -q 'xds clients are not authenticated' "$WORK/r1.log"
client n-any --node edge-1 --cluster edge
check "none: a client without credentials is served" wait_for 20 got n-any "$V3"
bg_stop c-n-any
conf_stop_serve r1

HTTP_FREE=$(free_port) && GRPC_FREE=$(free_port) || exit 1
check "serve refuses to start without xds.auth" \
    eval '! env -u SEXTANT_XDS_AUTH SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_FREE" \
        SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_FREE" "${SX_ENV[@]}" "$BIN" serve >"$WORK/noauth.log" 2>&1'
check "... and says which key to set" grep -q 'xds.auth is not set' "$WORK/noauth.log"
finish

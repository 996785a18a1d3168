#!/usr/bin/env bash
# test_tls_managed.sh — managed TLS (tls.managed): three replicas serve one certificate
# that Sextant issued from the test's CA and keeps in PostgreSQL, and the leader renews
# it 14 days before it expires.
#   - m1 starts alone and leads; it issues the certificate with a lifetime of 10 days
#     and, told to renew only 1 h before expiry, keeps it: both its listeners serve it
#     (verified against the CA, names localhost and 127.0.0.1), /readyz notes the
#     expiry, the database holds the key encrypted only;
#   - m2 and m3 (default renewal: 14 days before) start as standbys and serve the same
#     certificate without renewing it;
#   - m1 stops: the new leader finds the certificate inside its 14 days and renews it
#     (90 days); both replicas pick the new one up, on REST and gRPC, and the expiry
#     gauge moves.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init tls-managed
conf_services || exit 1
export SEXTANT_AUTH_ENABLED=false SEXTANT_TLS_MANAGED=true SEXTANT_TLS_RELOAD_INTERVAL=200ms
export SEXTANT_LEADER_RETRY=500ms SEXTANT_LEADER_LEASE=6s SEXTANT_LEADER_CHECK=500ms
CA="$WORK/ca"
mkdir -p "$CA"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=sextant managed CA" \
    -keyout "$CA/ca.key" -out "$CA/ca.pem" -days 365 2>/dev/null || { fail "could not make the CA"; finish; }
export SEXTANT_TLS_CA_CERT_FILE="$CA/ca.pem" SEXTANT_TLS_CA_KEY_FILE="$CA/ca.key"

# served PORT: SHA-256 of the certificate a new TLS connection to PORT gets, verified
# against the CA for the name localhost; empty when it does not verify.
served() {
    openssl s_client -connect "127.0.0.1:$1" -servername localhost -alpn h2 -CAfile "$CA/ca.pem" \
        -verify_return_error -verify_hostname localhost </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2 | tr -d ':' | tr '[:upper:]' '[:lower:]'
}
serves() { # serves PORT FINGERPRINT
    [ "$(served "$1")" = "$2" ]
}
serves_other_than() { # serves_other_than PORT FINGERPRINT: a verified certificate, not that one
    local f
    f=$(served "$1")
    [ -n "$f" ] && [ "$f" != "$2" ]
}
https() { # https PORT PATH: body to $WORK/body, prints the status
    curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 --cacert "$CA/ca.pem" \
        --resolve "localhost:$1:127.0.0.1" "https://localhost:$1$2"
}
readyz() {
    [ "$(https "$1" /readyz)" = 200 ]
}
metric_at() { # metric_at PORT NAME
    https "$1" /metrics >/dev/null
    awk -v m="$2" '$1 == m { print $2 }' "$WORK/body"
}
leads() { # leads PORT
    [ "$(metric_at "$1" sextant_leader)" = 1 ]
}
start() { # start NAME [ENV...]: a managed replica; NAME_HTTP, NAME_GRPC, PID_NAME
    local name=$1 http grpc
    shift
    conf_ports "$name" || return 1
    SEXTANT_HTTP_LISTEN="127.0.0.1:$http" SEXTANT_GRPC_LISTEN="127.0.0.1:$grpc" \
        SEXTANT_REPLICA_ID="$name" bg_run "$name" "${SX_ENV[@]}" "$@" "$BIN" serve
    wait_for 30 readyz "$http" && wait_for 5 listening "$grpc"
}

start m1 SEXTANT_TLS_MANAGED_LIFETIME=240h SEXTANT_TLS_MANAGED_RENEW_BEFORE=1h ||
    { fail "m1 did not become ready over managed TLS: $(cat "$WORK/body" 2>/dev/null)"; finish; }
check "m1 leads" wait_for 20 leads "$M1_HTTP"
C1=$(served "$M1_HTTP")
check "m1's REST listener serves a certificate the CA verifies for localhost" [ -n "$C1" ]
check "m1's gRPC listener serves the same certificate" serves "$M1_GRPC" "$C1"
check "it also names 127.0.0.1" bash -c "openssl s_client -connect 127.0.0.1:$M1_HTTP </dev/null 2>/dev/null | openssl x509 -noout -ext subjectAltName | grep -q 'IP Address:127.0.0.1'"
readyz "$M1_HTTP"
check "/readyz (200) notes that it expires within 14 days" jtrue '/expires at/.test(j.notices.tls_http)'
check "the database holds it with the key encrypted" \
    [ "$(sql "SELECT count(*) FROM serving_certificates WHERE key_pem LIKE '-----BEGIN ENCRYPTED PRIVATE KEY-----%' AND key_pem NOT LIKE '%BEGIN PRIVATE KEY%'")" = 1 ]
NA1=$(sql "SELECT extract(epoch FROM not_after)::bigint FROM serving_certificates")
LEFT1=$((NA1 - $(date +%s)))
check "it expires in 10 days (tls.managed_lifetime 240h; ${LEFT1} s left)" \
    [ "$LEFT1" -gt $((239 * 3600)) -a "$LEFT1" -le $((240 * 3600)) ]

start m2 || { fail "m2 did not become ready"; finish; }
start m3 || { fail "m3 did not become ready"; finish; }
check "m2 serves the same certificate (REST)" serves "$M2_HTTP" "$C1"
check "m3 serves the same certificate (gRPC)" serves "$M3_GRPC" "$C1"
check "standbys renew nothing: one certificate, still m1's" \
    [ "$(sql "SELECT issued_by || ' ' || extract(epoch FROM not_after)::bigint FROM serving_certificates")" = "m1 $NA1" ]

conf_stop_serve m1
check "the new leader renews it, and m2 serves the renewed certificate (REST)" \
    wait_for 30 serves_other_than "$M2_HTTP" "$C1"
C2=$(served "$M2_HTTP")
check "m2's gRPC listener serves it too" wait_for 10 serves "$M2_GRPC" "$C2"
check "m3 picks it up (REST)" wait_for 10 serves "$M3_HTTP" "$C2"
check "m3 picks it up (gRPC)" wait_for 10 serves "$M3_GRPC" "$C2"
NA2=$(sql "SELECT extract(epoch FROM not_after)::bigint FROM serving_certificates")
check "the renewed certificate runs 90 days" [ $((NA2 - $(date +%s))) -gt $((89 * 86400)) ]
check "the row names the new leader as its issuer" \
    bash -c "[ \"\$(psql '$SEXTANT_DATABASE_URL' -qtAXc 'SELECT issued_by FROM serving_certificates')\" != m1 ]"
check "the leader logged the renewal" wait_for 10 bash -c "grep -q 'renewed the managed serving certificate' '$WORK/m2.log' '$WORK/m3.log'"
metric_num() { # metric_num PORT NAME VALUE
    local v
    v=$(metric_at "$1" "$2")
    [ -n "$v" ] && awk -v a="$v" -v b="$3" 'BEGIN { exit !(a == b) }'
}
check "the expiry gauge on m3 is the renewed notAfter" \
    wait_for 10 metric_num "$M3_HTTP" 'sextant_tls_cert_expiry_timestamp_seconds{listener="grpc"}' "$NA2"

conf_stop_serve m2
conf_stop_serve m3
finish

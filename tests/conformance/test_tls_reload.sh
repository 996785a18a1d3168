#!/usr/bin/env bash
# test_tls_reload.sh — the serving certificates are replaced under live clients, without
# a restart. Replica r1 watches its files (tls.reload_interval 200ms); its REST and gRPC
# listeners share one certificate, which expires within 14 days at first:
#   - /readyz (still 200) carries the expiry notice, the log a warning, and
#     sextant_tls_cert_expiry_timestamp_seconds{listener} is the certificate's notAfter;
#   - the files are replaced (renamed over, as certificate tools do): new TLS
#     connections to both ports get the new certificate (SHA-256 compared), the notice
#     goes, the gauge moves; an ADS stream (gRPC C core through python3-grpcio) opened
#     before keeps running and receives the next push; an HTTPS connection opened before
#     still answers on its old session;
#   - a key that does not belong to the certificate, then a certificate file that is not
#     PEM, are refused: counted, logged, and the previous certificate keeps serving.
# Replica r2 checks only every hour: its replaced files are taken on SIGHUP. Replica r3
# verifies proxies' certificates (mutual TLS): a new client CA file admits the proxies
# it signed and refuses those of the old one.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init tls-reload
conf_need_python_grpc || exit 1
conf_services || exit 1
export SEXTANT_AUTH_ENABLED=false

CERTS="$WORK/certs"
mkdir -p "$CERTS"
# issue NAME DAYS [CA]: an ECDSA key and a certificate for localhost / 127.0.0.1 signed
# by the test CA (or the CA called CA), valid DAYS days.
issue() {
    local ca=${3:-ca}
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null &&
        openssl x509 -req -in "$CERTS/$1.csr" -CA "$CERTS/$ca.pem" -CAkey "$CERTS/$ca.key" \
            -set_serial "0x$(openssl rand -hex 8)" -days "$2" -out "$CERTS/$1.pem" \
            -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n') 2>/dev/null
}
make_ca() { # make_ca NAME
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=test CA $1" \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.pem" -days 30 2>/dev/null
}
# fp FILE: the SHA-256 fingerprint of a PEM certificate, lower-case hex.
fp() {
    openssl x509 -in "$1" -noout -fingerprint -sha256 | cut -d= -f2 | tr -d ':' | tr '[:upper:]' '[:lower:]'
}
# served PORT: the SHA-256 of the certificate a new TLS connection to PORT gets.
served() {
    openssl s_client -connect "127.0.0.1:$1" -servername localhost -alpn h2 </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2 | tr -d ':' | tr '[:upper:]' '[:lower:]'
}
serves() { # serves PORT FINGERPRINT
    [ "$(served "$1")" = "$2" ]
}
# put NAME DIR: installs NAME's key and certificate as DIR/key.pem and DIR/cert.pem,
# each renamed over the old file.
put() {
    cp "$CERTS/$1.key" "$2/key.pem.new" && mv "$2/key.pem.new" "$2/key.pem"
    cp "$CERTS/$1.pem" "$2/cert.pem.new" && mv "$2/cert.pem.new" "$2/cert.pem"
}
enddate() { # enddate FILE: notAfter, seconds since the epoch
    date -d "$(openssl x509 -in "$1" -noout -enddate | cut -d= -f2)" +%s
}
metric_at() { # metric_at PORT NAME: a /metrics value over HTTPS
    curl -s --max-time 5 --cacert "$CERTS/ca.pem" --resolve "localhost:$1:127.0.0.1" \
        "https://localhost:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'
}
metric_num_is() { # metric_num_is PORT NAME VALUE: numerically equal
    local v
    v=$(metric_at "$1" "$2")
    [ -n "$v" ] && awk -v a="$v" -v b="$3" 'BEGIN { exit !(a == b) }'
}
metric_above() { # metric_above PORT NAME VALUE
    local v
    v=$(metric_at "$1" "$2")
    awk -v a="${v:-0}" -v b="$3" 'BEGIN { exit !(a > b) }'
}
readyz() { # readyz PORT: /readyz over HTTPS answers 200; the body in $WORK/readyz.json
    [ "$(curl -s -o "$WORK/readyz.json" -w '%{http_code}' --max-time 2 --cacert "$CERTS/ca.pem" \
        --resolve "localhost:$1:127.0.0.1" "https://localhost:$1/readyz")" = 200 ]
}
# start NAME DIR INTERVAL: a replica serving DIR's certificate on both listeners.
start() {
    local name=$1 dir=$2 http grpc
    conf_ports "$name" || return 1
    SEXTANT_HTTP_LISTEN="127.0.0.1:$http" SEXTANT_GRPC_LISTEN="127.0.0.1:$grpc" \
        SEXTANT_REPLICA_ID="$name" SEXTANT_HTTP_TLS_CERT_FILE="$dir/cert.pem" \
        SEXTANT_HTTP_TLS_KEY_FILE="$dir/key.pem" SEXTANT_GRPC_TLS_CERT_FILE="$dir/cert.pem" \
        SEXTANT_GRPC_TLS_KEY_FILE="$dir/key.pem" SEXTANT_TLS_RELOAD_INTERVAL="$3" \
        bg_run "$name" "${SX_ENV[@]}" "$BIN" serve
    wait_for 20 readyz "$http" && wait_for 5 listening "$grpc"
}

make_ca ca && make_ca clients1 && make_ca clients2 &&
    issue a 5 && issue b 90 && issue c 90 && issue d 90 && issue e 90 && issue f 90 &&
    issue client1 90 clients1 && issue client2 90 clients2 || { fail "could not make certificates"; finish; }
FP_A=$(fp "$CERTS/a.pem")
FP_B=$(fp "$CERTS/b.pem")
mkdir -p "$WORK/r1" "$WORK/r2"
put a "$WORK/r1"
put d "$WORK/r2"

echo_backend A
conf_echo_snapshot "$WORK/snap1.json" "$ECHO_A"
conf_echo_snapshot "$WORK/snap2.json" "$ECHO_A" --no-listener
V1=$(conf_publish tls "$WORK/snap1.json") || exit 1

start r1 "$WORK/r1" 200ms || { fail "replica r1 with TLS did not become ready"; finish; }
start r2 "$WORK/r2" 1h || { fail "replica r2 with TLS did not become ready"; finish; }

# --- before: the certificate that expires in 5 days
check "r1's REST listener serves certificate a" serves "$R1_HTTP" "$FP_A"
check "r1's gRPC listener serves certificate a" serves "$R1_GRPC" "$FP_A"
readyz "$R1_HTTP"
check "/readyz is 200 with a notice that the certificate expires soon" \
    jtrue '/expires at/.test(j.notices.tls_http) && /expires at/.test(j.notices.tls_grpc)' "$WORK/readyz.json"
check "the log warns of the expiry" wait_for 10 grep -q '"level":"warn".*certificate (serial [0-9A-F]*) expires at' "$WORK/r1.log"
check "the expiry gauge is certificate a's notAfter" \
    metric_num_is "$R1_HTTP" 'sextant_tls_cert_expiry_timestamp_seconds{listener="grpc"}' "$(enddate "$CERTS/a.pem")"

# --- live clients on certificate a
bg_run ads1 "$PYTHON" "$CONF/lib/tls_clients.py" ads --target "127.0.0.1:$R1_GRPC" \
    --ca "$CERTS/ca.pem" --node tls-node-1 --group tls --out "$WORK/ads1.out"
mkfifo "$WORK/go"
bg_run rest1 "$PYTHON" "$CONF/lib/tls_clients.py" rest --port "$R1_HTTP" --ca "$CERTS/ca.pem" \
    --go "$WORK/go" --out "$WORK/rest1.out"
check "an ADS stream over TLS receives version $V1" wait_for 20 grep -q " version $V1\$" "$WORK/ads1.out"
check "an HTTPS connection is open on certificate a" wait_for 20 grep -q "^first 200 $FP_A\$" "$WORK/rest1.out"

# --- rotation to certificate b
put b "$WORK/r1"
check "new REST connections get certificate b" wait_for 20 serves "$R1_HTTP" "$FP_B"
check "new gRPC connections get certificate b" wait_for 20 serves "$R1_GRPC" "$FP_B"
check "the expiry gauge follows to certificate b's notAfter" \
    wait_for 10 metric_num_is "$R1_HTTP" 'sextant_tls_cert_expiry_timestamp_seconds{listener="http"}' "$(enddate "$CERTS/b.pem")"
no_notice() {
    readyz "$R1_HTTP" && jtrue 'j.notices === undefined' "$WORK/readyz.json"
}
check "the expiry notice is gone from /readyz" wait_for 10 no_notice
check "the log says the certificate was reloaded" wait_for 10 grep -q 'certificate reloaded from' "$WORK/r1.log"

V2=$(conf_publish tls "$WORK/snap2.json") || exit 1
check "the ADS stream opened before the rotation receives version $V2" \
    wait_for 20 grep -q " version $V2\$" "$WORK/ads1.out"
check "that stream never ended" bash -c "! grep -q ' ended ' '$WORK/ads1.out'"
bg_run ads2 "$PYTHON" "$CONF/lib/tls_clients.py" ads --target "127.0.0.1:$R1_GRPC" \
    --ca "$CERTS/ca.pem" --node tls-node-2 --group tls --out "$WORK/ads2.out"
check "a new ADS stream over the new certificate receives version $V2" \
    wait_for 20 grep -q " version $V2\$" "$WORK/ads2.out"
echo go >"$WORK/go"
check "the HTTPS connection opened before answers again on its old session (certificate a)" \
    wait_for 20 grep -q "^second 200 $FP_A\$" "$WORK/rest1.out"

# --- bad replacements keep certificate b
errors() {
    metric_at "$R1_HTTP" 'sextant_tls_reloads_total{listener="http",result="error"}'
}
E0=$(errors)
cp "$CERTS/c.key" "$WORK/r1/key.pem.new" && mv "$WORK/r1/key.pem.new" "$WORK/r1/key.pem"
check "a key that does not match the certificate is refused and counted" \
    wait_for 20 metric_above "$R1_HTTP" 'sextant_tls_reloads_total{listener="http",result="error"}' "${E0:-0}"
check "the refusal is logged" wait_for 10 grep -q '"level":"error".*certificate not reloaded.*private key does not belong' "$WORK/r1.log"
check "new REST connections still get certificate b" serves "$R1_HTTP" "$FP_B"
check "new gRPC connections still get certificate b" serves "$R1_GRPC" "$FP_B"
E1=$(errors)
printf 'not a certificate\n' >"$WORK/r1/cert.pem.new" && mv "$WORK/r1/cert.pem.new" "$WORK/r1/cert.pem"
check "a certificate file that is not PEM is refused and counted" \
    wait_for 20 metric_above "$R1_HTTP" 'sextant_tls_reloads_total{listener="http",result="error"}' "${E1:-0}"
check "new REST connections still get certificate b after it" serves "$R1_HTTP" "$FP_B"
check "new gRPC connections still get certificate b after it" serves "$R1_GRPC" "$FP_B"
readyz "$R1_HTTP"
check "/readyz stays 200" [ "$?" = 0 ]

# --- SIGHUP on a replica that polls only hourly
FP_D=$(fp "$CERTS/d.pem")
FP_E=$(fp "$CERTS/e.pem")
check "r2 serves certificate d" serves "$R2_HTTP" "$FP_D"
put e "$WORK/r2"
kill -HUP "$PID_r2"
check "after SIGHUP new REST connections to r2 get certificate e" wait_for 20 serves "$R2_HTTP" "$FP_E"
check "after SIGHUP new gRPC connections to r2 get certificate e" wait_for 20 serves "$R2_GRPC" "$FP_E"
check "r2 logged the SIGHUP reload" wait_for 10 grep -q 'reloading the certificates (SIGHUP)' "$WORK/r2.log"

# --- mutual TLS: the client CA is reloaded too (r3: gRPC only, client CA clients1)
mkdir -p "$WORK/r3"
put f "$WORK/r3"
cp "$CERTS/clients1.pem" "$WORK/r3/client_ca.pem"
R3_HTTP=$(free_port) && R3_GRPC=$(free_port)
SEXTANT_HTTP_LISTEN="127.0.0.1:$R3_HTTP" SEXTANT_GRPC_LISTEN="127.0.0.1:$R3_GRPC" SEXTANT_REPLICA_ID=r3 \
    SEXTANT_GRPC_TLS_CERT_FILE="$WORK/r3/cert.pem" SEXTANT_GRPC_TLS_KEY_FILE="$WORK/r3/key.pem" \
    SEXTANT_GRPC_TLS_CLIENT_CA_FILE="$WORK/r3/client_ca.pem" SEXTANT_TLS_RELOAD_INTERVAL=200ms \
    bg_run r3 "${SX_ENV[@]}" "$BIN" serve
if wait_for 20 ready "$R3_HTTP" && wait_for 5 listening "$R3_GRPC"; then
    probe() { # probe CLIENT: an ADS stream with CLIENT's certificate gets its first response
        "$PYTHON" "$CONF/lib/tls_clients.py" probe --target "127.0.0.1:$R3_GRPC" --ca "$CERTS/ca.pem" \
            --cert "$CERTS/$1.pem" --key "$CERTS/$1.key" --node "mtls-$1" --group tls >"$WORK/probe.out" 2>&1
    }
    refused() { ! probe "$1"; }
    check "a proxy whose certificate clients1 signed is served" probe client1
    check "a proxy whose certificate another CA signed is refused" refused client2
    cp "$CERTS/clients2.pem" "$WORK/r3/client_ca.pem.new" && mv "$WORK/r3/client_ca.pem.new" "$WORK/r3/client_ca.pem"
    check "after the client CA file changes to clients2, its proxies are served" wait_for 20 probe client2
    check "and those of clients1 are refused" refused client1
    conf_stop_serve r3
else
    fail "replica r3 with mutual TLS did not become ready"
fi

bg_stop ads1
bg_stop ads2
conf_stop_serve r2
conf_stop_serve r1
finish

#!/usr/bin/env bash
# test_daemon_frame.sh — the daemon's frame, driven through the real binary: the CLI
# (help, usage errors), configuration errors (all reported, nothing listens), and a
# running `sextant serve`: /healthz, /readyz, /metrics, JSON 404/405/413, X-Request-Id,
# JSON log lines, and a clean exit 0 on SIGTERM with a final log line.
#
# No database is needed yet: SEXTANT_DATABASE_URL only has to be well-formed. Every
# check runs; the script prints each failure and exits 1 when there was any.
set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
# shellcheck source=tests/lib/shtest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/shtest.sh"

PID=
cleanup() {
    serve_kill
    rm -rf "$WORK"
}
work_init frame cleanup

HTTP_PORT=$(free_port) || exit 1
GRPC_PORT=$(free_port) || exit 1
DB_URL="postgres://sextant:frame-test-pw@127.0.0.1:1/sextant"

# ------------------------------------------------------------------ CLI
"$BIN" --help >"$WORK/out" 2>&1
check "sextant --help exits 0" [ $? -eq 0 ]
check "sextant --help lists the commands" bash -c "grep -q serve '$WORK/out' && grep -q migrate '$WORK/out' && grep -q version '$WORK/out'"

"$BIN" serve --help >"$WORK/out" 2>&1
check "sextant serve --help exits 0" [ $? -eq 0 ]
for word in --config SEXTANT_DATABASE_URL SEXTANT_HTTP_LISTEN SEXTANT_GRPC_LISTEN \
    SEXTANT_REDIS_URL SEXTANT_REPLICA_ID SEXTANT_SHUTDOWN_TIMEOUT database.pool_size \
    http.max_body_bytes auth.hs256_secret_file "default 127.0.0.1:8080"; do
    check "serve --help mentions $word" contains "$WORK/out" "$word"
done

"$BIN" migrate --help >"$WORK/out" 2>&1
check "sextant migrate --help exits 0" [ $? -eq 0 ]
check "migrate --help mentions --config" contains "$WORK/out" "--config"
check "migrate --help mentions --dir" contains "$WORK/out" "--dir"

"$BIN" version >"$WORK/out" 2>&1
check "sextant version exits 0 and prints a version" bash -c "[ $? -eq 0 ] && grep -Eq '^sextant [0-9]+\.[0-9]+' '$WORK/out'"

"$BIN" frobnicate >"$WORK/out" 2>"$WORK/err"
rc=$?
check "an unknown command exits 2 (got $rc)" [ $rc -eq 2 ]
check "an unknown command prints usage on stderr" contains "$WORK/err" "Usage: sextant"

"$BIN" serve --frobnicate >"$WORK/out" 2>"$WORK/err"
rc=$?
check "an unknown option exits 2 (got $rc)" [ $rc -eq 2 ]
check "an unknown option is named on stderr" contains "$WORK/err" "--frobnicate"

"$BIN" >"$WORK/out" 2>"$WORK/err"
check "no command exits 2" [ $? -eq 2 ]

# ------------------------------------------------------------------ bad configuration
cat >"$WORK/bad.yaml" <<'EOF'
databse:
  url: postgres://x/y
database:
  pool_size: eight
http:
  tls:
    cert_file: /nonexistent/cert.pem
log:
  level: loud
EOF
env -u SEXTANT_DATABASE_URL SEXTANT_HTTP_LISTEN=127.0.0.1:$HTTP_PORT \
    SEXTANT_GRPC_LISTEN=127.0.0.1:99999 \
    timeout 10 "$BIN" serve --config "$WORK/bad.yaml" >"$WORK/out" 2>"$WORK/err"
rc=$?
check "a bad configuration exits 1 (got $rc)" [ $rc -eq 1 ]
for key in 'databse' 'database.pool_size' 'http.tls.cert_file' 'http.tls.key_file' 'log.level' \
    'SEXTANT_GRPC_LISTEN (grpc.listen)' 'database.url'; do
    check "the bad configuration report names $key" contains "$WORK/err" "sextant: config: $key"
done
check "every configuration error is reported (7 lines)" \
    [ "$(grep -c '^sextant: config: ' "$WORK/err")" -eq 7 ]
check "a bad configuration never listens" bash -c "! grep -q 'listening' '$WORK/err'"
check "the HTTP port stayed closed" bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$HTTP_PORT) 2>/dev/null"

env SEXTANT_DATABASE_URL="$DB_URL" timeout 10 "$BIN" serve --config "$WORK/missing.yaml" \
    >"$WORK/out" 2>"$WORK/err"
check "a missing config file exits 1" [ $? -eq 1 ]
check "a missing config file is named" contains "$WORK/err" "$WORK/missing.yaml"

# ------------------------------------------------------------------ a running daemon
SEXTANT_DATABASE_URL="$DB_URL" \
    SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT" \
    SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT" \
    SEXTANT_HTTP_MAX_BODY_BYTES=4096 \
    SEXTANT_REPLICA_ID=frame-test \
    SEXTANT_SHUTDOWN_TIMEOUT=5s \
    "$BIN" serve >"$WORK/serve.out" 2>"$WORK/serve.log" &
PID=$!

up=0
for _ in $(seq 1 100); do
    if ! kill -0 "$PID" 2>/dev/null; then break; fi
    if [ "$(http GET /healthz 2>/dev/null)" = 200 ]; then
        up=1
        break
    fi
    sleep 0.1
done
if [ $up -ne 1 ]; then
    fail "sextant serve did not answer /healthz on port $HTTP_PORT"
    echo "--- serve log" >&2
    cat "$WORK/serve.log" >&2
    exit 1
fi
pass "sextant serve answers on 127.0.0.1:$HTTP_PORT"

code=$(http GET /healthz)
check "/healthz is 200 (got $code)" [ "$code" = 200 ]
check "/healthz body is {\"status\":\"ok\"}" [ "$(cat "$WORK/body")" = '{"status":"ok"}' ]
check "/healthz is JSON" grep -qi '^Content-Type: application/json' "$WORK/headers"
check "/healthz has a generated X-Request-Id" grep -Eqi '^X-Request-Id: [0-9a-f]{32}' "$WORK/headers"

code=$(http GET /readyz)
body=$(cat "$WORK/body")
if [ "$code" = 200 ]; then
    check "/readyz 200 says ready with every component true" \
        bash -c "[[ '$body' == '{\"status\":\"ready\",\"components\":{'* ]] && [[ '$body' != *false* ]]"
elif [ "$code" = 503 ]; then
    check "/readyz 503 says not_ready and names a component that is not ready" \
        bash -c "[[ '$body' == '{\"status\":\"not_ready\",\"components\":{'* ]] && [[ '$body' == *false* ]]"
else
    fail "/readyz answered $code: $body"
fi
check "/readyz lists the http component" contains "$WORK/body" '"http":true'
code2=$(http GET /readyz)
check "/readyz is consistent across calls ($code then $code2)" [ "$code" = "$code2" ]

code=$(http GET /metrics)
check "/metrics is 200 (got $code)" [ "$code" = 200 ]
check "/metrics has the Prometheus content type" \
    grep -qi '^Content-Type: text/plain; version=0.0.4' "$WORK/headers"
for m in 'sextant_build_info{version="' sextant_start_time_seconds 'sextant_ready ' \
    'sextant_http_requests_total{method="GET",route="/healthz",status="200"}' \
    sextant_http_request_duration_seconds_bucket; do
    check "/metrics contains $m" contains "$WORK/body" "$m"
done

# Paths outside /api belong to the web UI (its own pages, see test_ui_static.sh); an
# unknown API path is a JSON 404.
code=$(http GET /api/no/such/thing)
check "an unknown API path is 404 (got $code)" [ "$code" = 404 ]
check "the 404 has the error shape" \
    [ "$(cat "$WORK/body")" = '{"error":{"code":"not_found","message":"no route for GET /api/no/such/thing","details":[]}}' ]
check "the 404 is JSON" grep -qi '^Content-Type: application/json' "$WORK/headers"

code=$(http POST /healthz)
check "a wrong method on a known path is 405 (got $code)" [ "$code" = 405 ]
check "the 405 names the allowed methods" grep -qi '^Allow: GET, HEAD' "$WORK/headers"
check "the 405 has the error shape" contains "$WORK/body" '{"error":{"code":"method_not_allowed",'

head -c 8192 /dev/zero | tr '\0' 'x' >"$WORK/big"
code=$(http POST /healthz --data-binary @"$WORK/big" -H 'Content-Type: application/json')
check "a body over http.max_body_bytes is 413 (got $code)" [ "$code" = 413 ]
check "the 413 has the error shape" contains "$WORK/body" '{"error":{"code":"payload_too_large",'
code=$(http POST /healthz --data-binary @"$WORK/big" -H 'Transfer-Encoding: chunked')
check "a chunked body over the limit is 413 too (got $code)" [ "$code" = 413 ]
head -c 100 /dev/zero | tr '\0' 'x' >"$WORK/small"
code=$(http POST /healthz --data-binary @"$WORK/small")
check "a body under the limit reaches routing (405, got $code)" [ "$code" = 405 ]

code=$(http GET /healthz -H 'X-Request-Id: frame-test-42')
RID42=$(grep -i '^X-Request-Id:' "$WORK/headers" | tr -d '\r' | awk '{print $2}')
check "a client's X-Request-Id is not echoed: the server's id is ($RID42)" grep -Eqx '[0-9a-f]{32}' <<<"$RID42"
code=$(http GET /no/such/thing -H 'X-Request-Id: frame-test-43')
check "errors carry the server's id too" grep -Eqi '^X-Request-Id: [0-9a-f]{32}' "$WORK/headers"

sleep 0.2
check "the access log has the request id" \
    bash -c "grep '\"request_id\":\"$RID42\"' '$WORK/serve.log' | grep '\"status\":200' | grep '\"client_request_id\":\"frame-test-42\"' | grep -q '\"duration_ms\":'"
check "the access log has method and path" \
    contains "$WORK/serve.log" '"method":"GET","path":"/no/such/thing"'
check "sextant started was logged with listen addresses" \
    bash -c "grep '\"msg\":\"sextant started\"' '$WORK/serve.log' | grep -q '\"http_listen\":\"127.0.0.1:$HTTP_PORT\"'"
check "the database password is never logged" bash -c "! grep -q frame-test-pw '$WORK/serve.log'"
check "log lines carry the replica id" contains "$WORK/serve.log" '"replica":"frame-test"'
check "every log line is one JSON object" bash -c "! grep -vq '^{.*}$' '$WORK/serve.log'"

# ------------------------------------------------------------------ SIGTERM
if serve_stop 5; then
    check "the last log line says sextant stopped" \
        bash -c "tail -n 1 '$WORK/serve.log' | grep -q '\"msg\":\"sextant stopped\"'"
    check "the port is closed after exit" bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$HTTP_PORT) 2>/dev/null"
fi

if [ $FAILS -ne 0 ]; then
    echo "--- serve log (tail)" >&2
    tail -n 30 "$WORK/serve.log" >&2
    echo "$FAILS check(s) failed" >&2
    exit 1
fi
echo "all daemon frame checks passed"

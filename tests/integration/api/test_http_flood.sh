#!/usr/bin/env bash
# test_http_flood.sh — the REST port under a connection flood, against the real daemon,
# PostgreSQL and Redis, with an admin listener (http.admin_listen):
#
#   - the admin listener serves /healthz, /readyz, /readyz/xds and /metrics, and nothing
#     else (no API, no UI);
#   - while one address (127.0.0.1) holds over a thousand idle and trickling connections
#     (flood.py), a client on another address (127.0.0.2) gets its answers, on the API
#     and on /healthz, and so does the probe on the admin listener: the per-address limit
#     keeps the flood to its share; the flood's connections are refused
#     (address_limit) or closed when their headers do not come in time
#     (header_timeout), whatever trickles in, and counted on /metrics;
#   - the refusals are logged once per address and reason, not once per connection;
#   - when several addresses together fill the port (http.max_connections), the refusals
#     are counted as connection_limit and the admin listener still answers;
#   - once the flood goes, the replica serves the flooding address again at once and
#     holds no connection of it.
#
# The flood takes about 1,300 sockets in flood.py (its open-files limit is raised to the
# hard limit, and the flood cut to fit) and at most http.max_connections in the daemon.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init http_flood
FLOOD="$SRC/tests/integration/api/flood.py"
ADMIN_PORT=$(free_port) || exit 1
PER_ADDR=40
MAX_CONN=300
export SEXTANT_HTTP_ADMIN_LISTEN="127.0.0.1:$ADMIN_PORT"
export SEXTANT_HTTP_MAX_CONNECTIONS=$MAX_CONN
export SEXTANT_HTTP_MAX_CONNECTIONS_PER_ADDRESS=$PER_ADDR
export SEXTANT_HTTP_HEADER_TIMEOUT=2s
export SEXTANT_HTTP_IDLE_TIMEOUT=30s
api_serve
VIEW=$(api_token victor viewer)

# admin PATH: status of GET PATH on the admin listener (body in $WORK/admin.body).
admin() {
    curl -s -o "$WORK/admin.body" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$ADMIN_PORT$1"
}
# from ADDR PATH [TOKEN]: status of GET PATH on the API port from source address ADDR.
from() {
    local auth=()
    [ -n "${3:-}" ] && auth=(-H "Authorization: Bearer $3")
    curl -s -o "$WORK/from.body" -w '%{http_code}' --max-time 5 --interface "$1" "${auth[@]}" \
        "http://127.0.0.1:$HTTP_PORT$2"
}
# refused REASON: the value of sextant_http_connections_refused_total{reason="REASON"},
# read on the admin listener.
refused() {
    metric "sextant_http_connections_refused_total{reason=\"$1\"}" "$ADMIN_PORT"
}
more_than() { # more_than VALUE MIN
    [ -n "$1" ] && awk -v v="$1" -v m="$2" 'BEGIN { exit !(v > m) }'
}
open_api() {
    metric 'sextant_http_connections{listener="api"}' "$ADMIN_PORT"
}
# flood_status FIELD: a field of the flooder's status file.
flood_status() {
    node -e 'try { console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]]) } catch (e) { console.log(0) }' \
        "$WORK/flood.status" "$1"
}

# ------------------------------------------------------------------ the admin listener
check "admin listener: /healthz is 200" [ "$(admin /healthz)" = 200 ]
check "admin listener: /readyz is 200" [ "$(admin /readyz)" = 200 ]
check "admin listener: /readyz/xds is 200" [ "$(admin /readyz/xds)" = 200 ]
check "admin listener: /metrics has the request counter" \
    bash -c "[ \"\$(curl -s --max-time 5 http://127.0.0.1:$ADMIN_PORT/metrics | grep -c '^sextant_http_requests_total')\" -gt 0 ]"
check "admin listener: /api/v1/whoami is 404 (no API there)" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $VIEW" "http://127.0.0.1:$ADMIN_PORT/api/v1/whoami")" = 404 ]
check "admin listener: / is 404 (no UI there)" [ "$(admin /)" = 404 ]
check "the API port still serves the API" [ "$(from 127.0.0.2 /api/v1/whoami "$VIEW")" = 200 ]
check "every refusal reason shows on /metrics, at 0" \
    bash -c "[ '$(refused connection_limit)' = 0 ] && [ '$(refused address_limit)' = 0 ] && [ '$(refused header_timeout)' = 0 ]"

# ------------------------------------------------------------------ one address floods
bg_run flood python3 "$FLOOD" "$HTTP_PORT" "$WORK/flood.status" 127.0.0.1:1200
check "the flood opens over a thousand connections" \
    wait_for 60 bash -c "[ \"\$(node -p 'JSON.parse(require(\"fs\").readFileSync(\"$WORK/flood.status\")).connects' 2>/dev/null || echo 0)\" -ge 1000 ]"
check "connections over the per-address limit are refused and counted (address_limit)" \
    wait_for 20 bash -c "v=\$(curl -s --max-time 5 http://127.0.0.1:$ADMIN_PORT/metrics | awk '\$1 == \"sextant_http_connections_refused_total{reason=\\\"address_limit\\\"}\" { print \$2 }'); [ -n \"\$v\" ] && [ \"\${v%.*}\" -ge 100 ]"
check "trickling and idle connections are closed at the header deadline (header_timeout)" \
    wait_for 20 bash -c "v=\$(curl -s --max-time 5 http://127.0.0.1:$ADMIN_PORT/metrics | awk '\$1 == \"sextant_http_connections_refused_total{reason=\\\"header_timeout\\\"}\" { print \$2 }'); [ -n \"\$v\" ] && [ \"\${v%.*}\" -ge $PER_ADDR ]"
open=$(open_api)
check "the API port holds at most the per-address share of the flood ($open open)" \
    bash -c "[ -n '$open' ] && [ '${open%.*}' -le $((PER_ADDR + 4)) ]"

# While the flood goes on: every answer arrives (curl gives up after 5 s; without the
# per-address limit none would, for as long as the flood lasts).
for i in 1 2 3 4 5 6 7 8 9 10; do
    t0=$(date +%s%N)
    h=$(from 127.0.0.2 /healthz)
    w=$(from 127.0.0.2 /api/v1/whoami "$VIEW")
    a=$(admin /readyz)
    t1=$(date +%s%N)
    echo "round $i: /healthz $h, /whoami $w, admin /readyz $a in $(((t1 - t0) / 1000000)) ms"
    check "during the flood, round $i: 127.0.0.2 gets /healthz ($h) and /api/v1/whoami ($w), the admin probe /readyz ($a)" \
        [ "$h$w$a" = 200200200 ]
    sleep 0.3
done
check "the flood is still on (the server closed $(flood_status closed_by_server) of its connections)" \
    kill -0 "$PID_flood"

# The log: one line per address and reason, not one per connection.
lines=$(grep -c '"msg":"closing connections from 127.0.0.1' "$WORK/serve.log")
warns=$(grep '"component":"http"' "$WORK/serve.log" | grep -c '"level":"warn"')
total=$(($(refused address_limit | cut -d. -f1) + $(refused header_timeout | cut -d. -f1)))
check "the refusals of 127.0.0.1 are logged once per reason ($lines lines for $total refusals)" \
    bash -c "[ $lines -ge 1 ] && [ $lines -le 2 ]"
check "the http component logged $warns warnings in all, far fewer than refusals ($total)" \
    bash -c "[ $warns -le 12 ] && [ $total -ge 200 ]"

# ------------------------------------------------------------------ many addresses fill the port
# Eight more addresses, each up to its limit: together past http.max_connections.
srcs=()
for n in 3 4 5 6 7 8 9 10; do srcs+=("127.0.0.$n:$((PER_ADDR + 10))"); done
bg_run flood2 python3 "$FLOOD" "$HTTP_PORT" "$WORK/flood2.status" "${srcs[@]}"
check "connections over http.max_connections are refused and counted (connection_limit)" \
    wait_for 60 bash -c "v=\$(curl -s --max-time 5 http://127.0.0.1:$ADMIN_PORT/metrics | awk '\$1 == \"sextant_http_connections_refused_total{reason=\\\"connection_limit\\\"}\" { print \$2 }'); [ -n \"\$v\" ] && [ \"\${v%.*}\" -ge 1 ]"
open=$(open_api)
check "the API port holds at most http.max_connections ($open open)" \
    bash -c "[ -n '$open' ] && [ '${open%.*}' -le $MAX_CONN ]"
check "with the API port full, the admin listener answers /healthz" [ "$(admin /healthz)" = 200 ]
check "... and /readyz" [ "$(admin /readyz)" = 200 ]
check "... and /metrics" [ "$(admin /metrics)" = 200 ]

# ------------------------------------------------------------------ the flood goes
bg_stop flood2
bg_stop flood
check "once the flood is gone, 127.0.0.1 is served again" \
    wait_for 10 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:$HTTP_PORT/healthz)\" = 200 ]"
check "... and the API answers it" [ "$(api_call "$VIEW" GET /api/v1/whoami)" = 200 ]
check "the flood's connections are all closed" \
    wait_for 10 bash -c "v=\$(curl -s --max-time 5 http://127.0.0.1:$ADMIN_PORT/metrics | awk '\$1 == \"sextant_http_connections{listener=\\\"api\\\"}\" { print \$2 }'); [ -n \"\$v\" ] && [ \"\${v%.*}\" -le 2 ]"
check "no request was answered 500" bash -c "! grep -q '\"status\":500' '$WORK/serve.log'"

api_stop
finish

# harness.sh — what every conformance test needs: a scratch folder, its own
# PostgreSQL and Redis on free loopback ports, a migrated database, `sextant serve`
# replicas, echo backends, xDS client bootstraps, and a cleanup that stops all of it
# (also on failure or Ctrl-C).
#
# A test sets nothing but SEXTANT_BIN and SEXTANT_SOURCE_DIR (ctest does), sources
# this file, calls conf_init NAME, starts what it needs, checks, and calls finish.
# Every background process goes through bg_run (tests/lib/shtest.sh, with the echo
# backends, xDS bootstraps and the rest of what the harnesses share), so cleanup knows
# its pid.
#
#   source "$SEXTANT_SOURCE_DIR/tests/conformance/lib/harness.sh"
#   conf_init demo
#   conf_services                 # PostgreSQL + Redis + sextant migrate
#   conf_serve r1                 # a replica: R1_HTTP, R1_GRPC, R1_PID
#   echo_backend A                # ECHO_A (port)
#   conf_publish GROUP FILE       # prints the version
#   finish

set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
CONF="$SRC/tests/conformance"
# Debian's python3 (with python3-grpcio), not whatever python3 comes first on PATH.
PYTHON=/usr/bin/python3
export SEXTANT_BIN SEXTANT_SOURCE_DIR
# C core polls for xDS responses every 5 s unless an RPC is active; tests cannot wait.
export GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=100

# shellcheck source=tests/lib/shtest.sh
source "$SRC/tests/lib/shtest.sh"

WORK=
CONF_NAME=

# conf_init NAME: scratch folder, cleanup trap, node_modules ready.
conf_init() {
    CONF_NAME=$1
    work_init "conf-$1" conf_cleanup
    npm_ready "$CONF" || exit 1
}

# conf_cleanup: stops every background process (SIGTERM, then SIGKILL after 3 s),
# Redis and PostgreSQL, and removes the scratch folder. On failure it first prints
# the tail of every log, so ctest --output-on-failure shows what happened.
conf_cleanup() {
    local rc=$?
    if [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; then
        log_tails 25
    fi
    bg_stop_all
    own_services_stop
    rm -rf "$WORK"
    exit "$rc"
}

# conf_need_python_grpc: fails the test (with a reason) when Debian's grpcio is absent.
conf_need_python_grpc() {
    "$PYTHON" -c 'import grpc' 2>/dev/null && return 0
    echo "conformance: $PYTHON cannot import grpc (apt-get install python3-grpcio; tests/run.sh does)" >&2
    return 1
}

# conf_services: PostgreSQL and Redis on free ports, database created and migrated
# (own_services). Exports SEXTANT_DATABASE_URL and SEXTANT_REDIS_URL for sextant and
# for psql.
conf_services() {
    own_services
}

# conf_stop_serve NAME: SIGTERM to a replica; checks that it exits 0 within 15 s
# (under the sanitizer build that also means no leak and no memory error).
conf_stop_serve() {
    local var="PID_$1"
    stop_daemon "replica $1" "${!var}" 15
}

# conf_end_client LOG: the end of a test that followed one client (bg_run "client"), with
# replica r1: on failure, how the client's attempts ended (the kinds of LOG's lines,
# counted, the last 20); then the client and r1 stopped, and finish.
conf_end_client() {
    if [ "$FAILS" -gt 0 ]; then
        echo "--- client outcomes" >&2
        cut -d' ' -f2- "$1" | uniq -c | tail -n 20 >&2
    fi
    bg_stop client
    conf_stop_serve r1
    finish
}

# conf_serve NAME: a `sextant serve` replica with its own HTTP and gRPC ports and
# replica id NAME; sets NAME_HTTP, NAME_GRPC (upper case) and PID_NAME, and waits
# until /readyz is 200 and the gRPC port accepts connections.
conf_serve() {
    local http grpc
    conf_ports "$1" || return 1
    conf_serve_on "$1" "$http" "$grpc" 20
}

# conf_ports NAME [HTTP GRPC]: the ports of replica NAME, free ones unless given, in the
# caller's variables http and grpc and in NAME_HTTP and NAME_GRPC (upper case).
conf_ports() {
    local up
    up=$(echo "$1" | tr '[:lower:]' '[:upper:]')
    http=${2:-} grpc=${3:-}
    [ -n "$http" ] || http=$(free_port) || return 1
    [ -n "$grpc" ] || grpc=$(free_port) || return 1
    printf -v "${up}_HTTP" '%s' "$http"
    printf -v "${up}_GRPC" '%s' "$grpc"
}

# conf_serve_on NAME HTTP GRPC SECONDS: conf_serve on the given ports, waiting at most
# SECONDS for /readyz.
conf_serve_on() {
    local name=$1 http grpc
    conf_ports "$name" "$2" "$3"
    SEXTANT_HTTP_LISTEN="127.0.0.1:$http" SEXTANT_GRPC_LISTEN="127.0.0.1:$grpc" \
        SEXTANT_REPLICA_ID="$name" SEXTANT_LOG_LEVEL=${SEXTANT_LOG_LEVEL:-info} \
        bg_run "$name" "${SX_ENV[@]}" "$BIN" serve
    if ! wait_for "$4" ready "$http" || ! wait_for 5 listening "$grpc"; then
        echo "conformance: replica $name did not become ready" >&2
        return 1
    fi
}

# conf_run_checks SCRIPT WHAT: the whole of a protocol test: services, one replica r1,
# the node program lib/SCRIPT driven against it (XDS_SERVER, HTTP_PORT), a check that
# it passed, the replica's clean exit, finish.
conf_run_checks() {
    conf_services || exit 1
    conf_serve r1 || exit 1
    XDS_SERVER="127.0.0.1:$R1_GRPC" HTTP_PORT=$R1_HTTP node "$CONF/lib/$1" | tee "$WORK/${1%.js}.out"
    check "every $2 check passed (lib/$1)" [ "${PIPESTATUS[0]}" = 0 ]
    conf_stop_serve r1
    finish
}

# conf_rest_auth SECRET [USER]: JWT auth on for the replicas started next (HS256 with SECRET);
# TOKEN is a token of USER (conformance-tester), an operator, for conf_rest.
conf_rest_auth() {
    export SEXTANT_AUTH_ENABLED=true
    export SEXTANT_AUTH_HS256_SECRET="$1"
    TOKEN=$(token "${2:-conformance-tester}" operator)
}

# conf_rest METHOD PATH [JSON [curl args...]]: a REST call with TOKEN to HTTP_PORT;
# prints the status; the body goes to $WORK/body and the headers to $WORK/headers.
conf_rest() {
    local method=$1 path=$2 data=()
    shift 2
    if [ $# -gt 0 ]; then
        data=(-H 'Content-Type: application/json' --data-binary "$1")
        shift
    fi
    http "$method" "$path" -H "Authorization: Bearer $TOKEN" "${data[@]}" "$@"
}

# conf_publish GROUP FILE: `sextant publish`; prints the new version (output kept in
# $WORK/publish.out); fails when publish fails.
conf_publish() {
    if ! "$BIN" publish --group "$1" --author conformance "$2" >"$WORK/publish.out" 2>&1; then
        echo "sextant publish failed:" >&2
        cat "$WORK/publish.out" >&2
        return 1
    fi
    tr -d ' \n' <"$WORK/publish.out" | sed -n 's/.*"version":\([0-9]*\).*/\1/p'
}

# conf_echo_snapshot FILE PORT [--no-listener]: writes the echo.test snapshot routing
# to 127.0.0.1:PORT (without listener and route with --no-listener).
conf_echo_snapshot() {
    local file=$1
    shift
    node "$CONF/lib/snapshots.js" echo "$@" >"$file"
}

# last_is LOG TEXT: the last outcome starts with TEXT.
last_is() {
    case "$(last_result "$1")" in "$2"*) return 0 ;; esac
    return 1
}
# conf_client_on_a LOG INTERVAL_MS WHAT: the grpc-js xDS client (bg_run client), node
# NODE of group GROUP on r1, calls xds:///echo.test every INTERVAL_MS ms into LOG; the
# check WHAT is that a call reaches backend A within 20 s, and the test ends there (with
# the last outcome) when none does.
conf_client_on_a() {
    GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "$NODE" "$GROUP" "$R1_GRPC") \
        bg_run client node "$CONF/lib/xds_client.js" --target xds:///echo.test --out "$1" \
        --interval-ms "$2"
    check "$3" wait_for 20 last_is "$1" "ok A"
    if ! last_is "$1" "ok A"; then
        echo "last outcome: $(last_result "$1")" >&2
        finish
    fi
}
# results_since LOG MS: the outcomes logged at or after unix time MS.
results_since() {
    awk -v t="$2" '$1 >= t { $1 = ""; sub(/^ /, ""); print }' "$1"
}
now_ms() {
    date +%s%3N
}

# conf_create_config FILE WHAT NODE: POST /api/v1/configs with the body in FILE (the check
# says "a config with WHAT is created in the group"; the test ends, printing the answer,
# when it is not), then lib/ads_fetch.js as NODE of GROUP against r1 into
# $WORK/fetch.json, checked to walk every resource type.
conf_create_config() {
    local status
    status=$(conf_rest POST /api/v1/configs "$(cat "$1")")
    check "a config with $2 is created in the group (got $status)" [ "$status" = 201 ]
    if [ "$status" != 201 ]; then
        cat "$WORK/body" >&2
        finish
    fi
    node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$R1_GRPC" --group "$GROUP" --node "$3" \
        >"$WORK/fetch.json"
    check "ads_fetch walks LDS, RDS, CDS and EDS of the group" [ $? = 0 ]
}

# conf_both_clients PREFIX [HOW]: both real proxyless clients of GROUP on r1, gRPC C core
# (Python) then gRPC-JS, as nodes PREFIX-py-client and PREFIX-js-client: calls to
# xds:///echo.test reach backend A (HOW, when given, ends that check's words), and
# node_status holds each client's ACK of version 1 and no NACK. On a failure, the
# client's outcomes and node_status are printed.
conf_both_clients() {
    local kind node_id log n client
    for kind in py js; do
        node_id="$1-$kind-client"
        case "$kind" in
        js) client=(node "$CONF/lib/xds_client.js") ;;
        py) client=("$PYTHON" "$CONF/lib/xds_client.py") ;;
        esac
        log="$WORK/calls-$kind.log"
        GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "$node_id" "$GROUP" "$R1_GRPC") \
            bg_run "client-$kind" "${client[@]}" --target xds:///echo.test --out "$log" \
            --interval-ms 50
        check "$kind: calls to xds:///echo.test reach backend A${2:+ $2}" \
            wait_for 20 last_is "$log" "ok A"
        check "$kind: node_status records the client's ACK of version 1" \
            wait_for 10 conf_acked "$node_id" 1
        n=$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT count(*) FROM node_status WHERE node_id = '$node_id' AND last_nack_error IS NOT NULL")
        check "$kind: the client NACKed nothing Sextant sent" [ "$n" = 0 ]
        if [ "$FAILS" -gt 0 ]; then
            echo "--- $kind outcomes" >&2
            cut -d' ' -f2- "$log" | uniq -c | tail -n 10 >&2
            psql "$SEXTANT_DATABASE_URL" -qXc "SELECT node_id, acked_snapshot_version, last_nack_error FROM node_status" >&2
        fi
        bg_stop "client-$kind"
    done
}

# conf_acked NODE VERSION: node_status holds NODE's ACK of VERSION.
conf_acked() {
    [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT acked_snapshot_version FROM node_status WHERE node_id = '$1'")" = "$2" ]
}

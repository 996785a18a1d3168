# harness.sh — what every conformance test needs: a scratch folder, its own
# PostgreSQL and Redis on free loopback ports, a migrated database, `sextant serve`
# replicas, echo backends, xDS client bootstraps, and a cleanup that stops all of it
# (also on failure or Ctrl-C).
#
# A test sets nothing but SEXTANT_BIN and SEXTANT_SOURCE_DIR (ctest does), sources
# this file, calls conf_init NAME, starts what it needs, checks, and calls finish.
# Every background process goes through conf_bg, so cleanup knows its pid.
#
#   source "$SEXTANT_SOURCE_DIR/tests/conformance/lib/harness.sh"
#   conf_init demo
#   conf_services                 # PostgreSQL + Redis + sextant migrate
#   conf_serve r1                 # a replica: R1_HTTP, R1_GRPC, R1_PID
#   conf_echo_backend A           # ECHO_A (port)
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
# shellcheck source=tests/lib/services.sh
source "$SRC/tests/lib/services.sh"

BG_PIDS=()
BG_NAMES=()
WORK=
CONF_NAME=

# conf_init NAME: scratch folder, cleanup trap, node_modules ready.
conf_init() {
    CONF_NAME=$1
    WORK=$(mktemp -d "/tmp/sextant-conf-$1-XXXXXX")
    chmod 755 "$WORK"
    trap conf_cleanup EXIT
    trap 'exit 1' INT TERM
    conf_node_modules || exit 1
}

# conf_cleanup: stops every background process (SIGTERM, then SIGKILL after 3 s),
# Redis and PostgreSQL, and removes the scratch folder. On failure it first prints
# the tail of every log, so ctest --output-on-failure shows what happened.
conf_cleanup() {
    local rc=$? i pid f
    if [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; then
        for f in "$WORK"/*.log; do
            [ -f "$f" ] || continue
            echo "--- $(basename "$f") (tail)" >&2
            tail -n 25 "$f" >&2
        done
    fi
    for i in "${!BG_PIDS[@]}"; do
        pid=${BG_PIDS[$i]}
        kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null
    done
    for i in "${!BG_PIDS[@]}"; do
        pid=${BG_PIDS[$i]}
        conf_wait_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    svc_redis_stop "$WORK/redis"
    svc_pg_stop "$WORK/pg"
    rm -rf "$WORK"
    exit "$rc"
}

# conf_wait_gone PID TENTHS: true once PID has exited (within TENTHS × 0.1 s).
conf_wait_gone() {
    local pid=$1 n=$2 i
    for i in $(seq 1 "$n"); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    ! kill -0 "$pid" 2>/dev/null
}

# conf_node_modules: installs tests/conformance/node_modules with `npm ci` when it is
# missing or older than package-lock.json (a stamp holds the lock it was built from).
# Serialised with flock, since ctest -j may start several tests at once.
conf_node_modules() {
    local stamp="$CONF/node_modules/.sextant-lock-stamp"
    cmp -s "$CONF/package-lock.json" "$stamp" 2>/dev/null && return 0
    command -v npm >/dev/null || { echo "conformance: npm is missing (tests/run.sh installs it)" >&2; return 1; }
    (
        flock -w 300 9 || exit 1
        cmp -s "$CONF/package-lock.json" "$stamp" 2>/dev/null && exit 0
        echo "conformance: npm ci in $CONF" >&2
        cd "$CONF" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2 &&
            cp package-lock.json "$stamp"
    ) 9>"/tmp/sextant-conformance-npm.lock"
}

# conf_need_python_grpc: fails the test (with a reason) when Debian's grpcio is absent.
conf_need_python_grpc() {
    "$PYTHON" -c 'import grpc' 2>/dev/null && return 0
    echo "conformance: $PYTHON cannot import grpc (apt-get install python3-grpcio; tests/run.sh does)" >&2
    return 1
}

# conf_services: PostgreSQL and Redis on free ports, database created and migrated.
# Exports SEXTANT_DATABASE_URL and SEXTANT_REDIS_URL for sextant and for psql.
conf_services() {
    local pg_port redis_port
    pg_port=$(free_port) || return 1
    redis_port=$(free_port) || return 1
    svc_pg_start "$WORK/pg" "$pg_port" || return 1
    psql "postgresql://sextant@127.0.0.1:$pg_port/postgres" -qc "CREATE DATABASE sextant" >/dev/null ||
        return 1
    svc_redis_start "$WORK/redis" "$redis_port" || return 1
    export SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$pg_port/sextant"
    export SEXTANT_REDIS_URL="redis://127.0.0.1:$redis_port"
    "$BIN" migrate >"$WORK/migrate.log" 2>&1 || { echo "sextant migrate failed" >&2; cat "$WORK/migrate.log" >&2; return 1; }
}

# conf_bg NAME COMMAND...: runs COMMAND in the background, output to $WORK/NAME.log;
# its pid goes to BG_PIDS (for cleanup) and to the variable PID_NAME.
conf_bg() {
    local name=$1
    shift
    "$@" >>"$WORK/$name.log" 2>&1 &
    local pid=$!
    BG_PIDS+=("$pid")
    BG_NAMES+=("$name")
    printf -v "PID_$name" '%s' "$pid"
}

# conf_stop NAME [SIGNAL]: signals a background process (default TERM) and waits for
# it to exit (3 s, then SIGKILL).
conf_stop() {
    local var="PID_$1" sig=${2:-TERM}
    local pid=${!var}
    # bash reports a job killed by a signal ("Killed") on stderr when it reaps it;
    # that is what we asked for, so keep it out of the test output.
    exec 3>&2 2>/dev/null
    kill "-$sig" "$pid"
    conf_wait_gone "$pid" 30 || kill -KILL "$pid"
    wait "$pid"
    exec 2>&3 3>&-
    return 0
}

# conf_stop_serve NAME: SIGTERM to a replica; checks that it exits 0 within 15 s
# (under the sanitizer build that also means no leak and no memory error).
conf_stop_serve() {
    local var="PID_$1" rc
    local pid=${!var}
    kill -TERM "$pid" 2>/dev/null
    if ! conf_wait_gone "$pid" 150; then
        fail "replica $1 exits within 15 s of SIGTERM"
        return
    fi
    wait "$pid"
    rc=$?
    check "replica $1 exits 0 on SIGTERM (got $rc)" [ "$rc" = 0 ]
}

# conf_ready HTTP_PORT: /readyz answers 200.
conf_ready() {
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/readyz")" = 200 ]
}

# conf_serve NAME: a `sextant serve` replica with its own HTTP and gRPC ports and
# replica id NAME; sets NAME_HTTP, NAME_GRPC (upper case) and PID_NAME, and waits
# until /readyz is 200 and the gRPC port accepts connections.
conf_serve() {
    local name=$1 up http grpc
    up=$(echo "$name" | tr '[:lower:]' '[:upper:]')
    http=$(free_port) || return 1
    grpc=$(free_port) || return 1
    printf -v "${up}_HTTP" '%s' "$http"
    printf -v "${up}_GRPC" '%s' "$grpc"
    SEXTANT_HTTP_LISTEN="127.0.0.1:$http" SEXTANT_GRPC_LISTEN="127.0.0.1:$grpc" \
        SEXTANT_REPLICA_ID="$name" SEXTANT_LOG_LEVEL=${SEXTANT_LOG_LEVEL:-info} \
        conf_bg "$name" env -u SEXTANT_BIN -u SEXTANT_SOURCE_DIR "$BIN" serve
    if ! wait_for 20 conf_ready "$http" || ! wait_for 5 listening "$grpc"; then
        echo "conformance: replica $name did not become ready" >&2
        return 1
    fi
}

# conf_echo_backend NAME: a test gRPC backend answering with NAME; sets ECHO_NAME (port).
conf_echo_backend() {
    local name=$1
    conf_bg "echo_$name" node "$CONF/lib/echo_server.js" --name "$name" --port-file "$WORK/echo_$name.port"
    wait_for 10 test -s "$WORK/echo_$name.port" || { echo "echo backend $name did not start" >&2; return 1; }
    printf -v "ECHO_$name" '%s' "$(cat "$WORK/echo_$name.port")"
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

# conf_bootstrap NODE_ID GROUP SERVER_PORT: the xDS bootstrap JSON for the clients.
# grpc-js needs node.id and node.locality; node.cluster is the proxy group.
conf_bootstrap() {
    printf '{"xds_servers":[{"server_uri":"127.0.0.1:%s","channel_creds":[{"type":"insecure"}]}],"node":{"id":"%s","cluster":"%s","locality":{}}}' \
        "$3" "$1" "$2"
}

# last_result LOG: the last outcome an xds_client logged, without its time stamp.
last_result() {
    tail -n 1 "$1" 2>/dev/null | cut -d' ' -f2-
}
# last_is LOG TEXT: the last outcome starts with TEXT.
last_is() {
    case "$(last_result "$1")" in "$2"*) return 0 ;; esac
    return 1
}
# results_since LOG MS: the outcomes logged at or after unix time MS.
results_since() {
    awk -v t="$2" '$1 >= t { $1 = ""; sub(/^ /, ""); print }' "$1"
}
now_ms() {
    date +%s%3N
}

# lib.sh — what the benchmark drivers (tests/bench/*.sh) share: the Release binaries they
# measure, a private PostgreSQL and Redis, `sextant serve` replicas and readings of a process.
#
# A driver sets ROOT (the repository) and WORK (its scratch folder, from bench_workdir,
# before the helpers that use it) and sources this file.

# shellcheck source=tests/lib/services.sh
source "$ROOT/tests/lib/services.sh"

# The benchmarks' clients connect without credentials (xds.auth must be set explicitly).
export SEXTANT_XDS_AUTH=${SEXTANT_XDS_AUTH:-none}

# bench_options SPEC ARGS...: parses a driver's command line. SPEC lists its options as
# "--opt=VAR" (sets VAR to the word after --opt) and "--flag:VAR=VALUE" (sets VAR to VALUE);
# -h and --help print the driver's usage and exit 0; anything else prints it to stderr
# and exits 2.
bench_options() {
    local spec=$1 s a
    shift
    while [ $# -gt 0 ]; do
        case $1 in -h | --help) usage; exit 0 ;; esac
        for s in $spec; do
            case $s in
            "$1="*) printf -v "${s#*=}" '%s' "${2:?}"; shift 2; continue 2 ;;
            "$1:"*) a=${s#*:}; printf -v "${a%%=*}" '%s' "${a#*=}"; shift; continue 2 ;;
            esac
        done
        usage >&2
        exit 2
    done
}

# bench_numbers NAME VALUE...: exits 2 unless every VALUE is a whole number.
bench_numbers() {
    local name=$1 n
    shift
    for n in "$@"; do
        [[ $n =~ ^[0-9]+$ ]] || { echo "$name: not a number: $n" >&2; exit 2; }
    done
}

# bench_binaries NAME TARGET: sets SEXTANT_BIN and BENCH_BIN (default build-release/sextant
# and build-release/TARGET) and, when either is not given, builds them; exits 1 when one
# is missing.
bench_binaries() {
    local name=$1 target=$2 b
    if [ -z "${SEXTANT_BIN:-}" ] || [ -z "${BENCH_BIN:-}" ]; then
        SEXTANT_BIN=${SEXTANT_BIN:-$ROOT/build-release/sextant}
        BENCH_BIN=${BENCH_BIN:-$ROOT/build-release/$target}
        # Benchmarks measure the Release build: configure it as one (an older tree of
        # another build type is switched over) and bring it up to date.
        echo "$name: building build-release (Release)" >&2
        cmake -S "$ROOT" -B "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release >/dev/null
        cmake --build "$ROOT/build-release" -j"$(nproc)" --target sextant "$target" >/dev/null
    fi
    # Sextant warns about SEXTANT_* variables it does not know: keep ours to ourselves.
    export -n SEXTANT_BIN BENCH_BIN
    for b in "$SEXTANT_BIN" "$BENCH_BIN"; do
        [ -x "$b" ] || { echo "$name: $b is missing" >&2; exit 1; }
    done
}

# bench_workdir NAME: a new private directory /tmp/sextant-bench-NAME-XXXXXX that the
# services (running as another user) can enter.
bench_workdir() {
    local d
    d=$(mktemp -d "/tmp/sextant-bench-$1-XXXXXX")
    chmod 755 "$d"
    echo "$d"
}

# bench_database WORK: PostgreSQL in WORK/pg and Redis in WORK/redis on free ports, with
# an empty database "sextant"; exports SEXTANT_DATABASE_URL and SEXTANT_REDIS_URL. The
# driver migrates it, and its cleanup stops both (svc_redis_stop, svc_pg_stop).
bench_database() {
    local work=$1 pg_port redis_port
    pg_port=$(svc_free_port)
    redis_port=$(svc_free_port)
    svc_pg_start "$work/pg" "$pg_port"
    psql "postgresql://sextant@127.0.0.1:$pg_port/postgres" -qc "CREATE DATABASE sextant" >/dev/null
    svc_redis_start "$work/redis" "$redis_port"
    export SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$pg_port/sextant"
    export SEXTANT_REDIS_URL="redis://127.0.0.1:$redis_port"
}

# bench_stop_pid NAME PID SECONDS: stops PID (nothing when empty or gone) with TERM, then
# KILL when it has not exited within SECONDS, and reaps it.
bench_stop_pid() {
    local name=$1 pid=$2 i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < $3 * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "$name: pid $pid did not stop within $3 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# bench_stream_traps NAME PIDVAR...: the traps of a driver whose client holds many ADS
# streams, and the open-file limit they need (the server holds one file per stream). Sets
# every PIDVAR empty; on exit the client's control pipe (fd 7) is closed and bench_finish
# NAME stops the processes whose ids the PIDVARs then hold; INT and TERM exit 130; a write
# to a dead client fails (and the driver stops) rather than kill the driver.
bench_stream_traps() {
    local v
    for v in "${@:2}"; do
        printf -v "$v" '%s' ''
    done
    # shellcheck disable=SC2064 # the names are fixed now, their values read on exit
    trap "bench_stream_exit $*" EXIT
    trap 'exit 130' INT TERM
    trap '' PIPE
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}
bench_stream_exit() {
    local rc=$? name=$1 v pids=()
    { exec 7>&-; } 2>/dev/null || true
    for v in "${@:2}"; do
        pids+=("${!v}")
    done
    bench_finish "$name" "$rc" "${pids[@]}"
}

# bench_services [--pg-statements]: bench_database in WORK, with pg_stat_statements
# (bench_pg_statements) when asked, migrated (its output in WORK/migrate.log).
bench_services() {
    bench_database "$WORK"
    [ "${1:-}" != --pg-statements ] || bench_pg_statements
    "$SEXTANT_BIN" migrate >"$WORK/migrate.log" 2>&1
}

# bench_pg_statements: restarts the PostgreSQL of bench_database with pg_stat_statements
# loaded and creates the extension, so a driver can count the statements of what it
# measures (SELECT pg_stat_statements_reset() before, sum(calls) after).
bench_pg_statements() {
    local port
    port=$(sed -n 's|.*@127.0.0.1:\([0-9]*\)/.*|\1|p' <<<"$SEXTANT_DATABASE_URL")
    echo "shared_preload_libraries = 'pg_stat_statements'" | svc_as_pg tee -a "$WORK/pg/data/postgresql.conf" >/dev/null
    svc_as_pg "$(svc_pg_bin)/pg_ctl" -D "$WORK/pg/data" -w -t 60 stop >/dev/null
    svc_pg_ctl_start "$WORK/pg" "$port"
    psql "$SEXTANT_DATABASE_URL" -qc "CREATE EXTENSION pg_stat_statements" >/dev/null
}

# bench_wait_line FILE REGEX SECONDS PID: true once a line of FILE matches REGEX; false
# when PID exits or the time is up.
bench_wait_line() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -Eq "$2" "$1" 2>/dev/null && return 0
        kill -0 "$4" 2>/dev/null || { grep -Eq "$2" "$1" 2>/dev/null; return; }
        sleep 0.1
    done
    return 1
}

# bench_serve NAME REPLICA_ID LOG: starts `sextant serve` (SEXTANT_BIN) as replica
# REPLICA_ID on free ports, its output to LOG, and waits until /readyz answers 200 and
# the gRPC port takes connections; sets SERVE_PID, SERVE_HTTP and SERVE_GRPC. False (with
# a message) when it exits or is not ready within 60 s.
bench_serve() {
    local i
    SERVE_HTTP=$(svc_free_port)
    SERVE_GRPC=$(svc_free_port)
    SEXTANT_HTTP_LISTEN="127.0.0.1:$SERVE_HTTP" SEXTANT_GRPC_LISTEN="127.0.0.1:$SERVE_GRPC" \
        SEXTANT_REPLICA_ID="$2" "$SEXTANT_BIN" serve >"$3" 2>&1 &
    SERVE_PID=$!
    for ((i = 0; i < 300; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$SERVE_HTTP/readyz" || true)" = 200 ] &&
            (exec 3<>"/dev/tcp/127.0.0.1/$SERVE_GRPC") 2>/dev/null && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || { echo "$1: sextant serve exited" >&2; return 1; }
        sleep 0.2
    done
    echo "$1: sextant serve did not become ready" >&2
    return 1
}

# bench_rss_kb PID, bench_peak_mb PID: the resident memory of PID now (kB) and its peak (MB).
bench_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
bench_peak_mb() { awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$1/status"; }
# bench_cpu_ticks PID: user + system CPU time of PID so far, in clock ticks;
# bench_cpu_s TICKS_BEFORE PID: the seconds of CPU PID used since.
bench_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
bench_cpu_s() {
    awk -v a="$1" -v b="$(bench_cpu_ticks "$2")" -v t="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / t }'
}

# bench_publish GROUP FILE: `sextant publish` of FILE to GROUP; prints the new version.
bench_publish() {
    "$SEXTANT_BIN" publish --group "$1" --author bench "$2" >"$WORK/publish.out" 2>&1 ||
        { cat "$WORK/publish.out" >&2; return 1; }
    tr -d ' \n' <"$WORK/publish.out" | sed -n 's/.*"version":\([0-9]*\).*/\1/p'
}

# bench_machine: a comment line naming the machine and the server's build.
bench_machine() {
    echo "# $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo), $(uname -sr); $("$SEXTANT_BIN" version 2>/dev/null | head -n 1)"
}

# bench_finish NAME RC PID...: a driver's exit (its EXIT trap): stops every PID given
# (empty ones skipped), then Redis and PostgreSQL; when RC is not 0 prints the tail of
# every log in WORK; removes WORK and exits RC.
bench_finish() {
    local name=$1 rc=$2 pid f
    shift 2
    for pid in "$@"; do
        bench_stop_pid "$name" "$pid" 60
    done
    svc_redis_stop "$WORK/redis" || true
    svc_pg_stop "$WORK/pg" || true
    if [ "$rc" -ne 0 ]; then
        for f in "$WORK"/*.log "$WORK"/client.err; do
            [ -s "$f" ] && { echo "--- $(basename "$f") (tail)" >&2; tail -n 15 "$f" >&2; }
        done
    fi
    rm -rf "$WORK"
    exit "$rc"
}

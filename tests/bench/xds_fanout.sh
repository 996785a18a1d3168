#!/usr/bin/env bash
# xds_fanout.sh — ADS fan-out benchmark: memory per idle stream and publish-to-all
# latency of one `sextant serve` replica with N Envoy-like streams.
#
# Starts its own PostgreSQL and Redis (tests/lib/services.sh) in a scratch folder,
# migrates, and for every (endpoints, streams) pair: publishes the initial snapshot of
# group "bench" (xds_fanout_snapshot.py: 100 clusters sharing ENDPOINTS endpoints, one
# listener and route), starts a fresh `sextant serve`, reads its VmRSS, connects N
# streams from bench_xds_fanout (its own process, one HTTP/2 connection per stream,
# CDS wildcard + EDS for the 100 clusters, every response ACKed), waits until all hold
# the initial version and the server is idle, reads VmRSS again, then takes a
# CLOCK_MONOTONIC time stamp, runs `sextant publish` with the changed snapshot (every
# endpoint's port and every cluster's connect timeout differ) and hands the time stamp
# to the client, which reports per type when each stream received the new version, and
# the bytes and messages each stream received for the push. --change one publishes instead
# a snapshot where only the first cluster's endpoints moved (one ClusterLoadAssignment out
# of 100 changes; the client then waits for EDS alone). Prints plain lines; everything it
# started is stopped on exit.
#
#   tests/bench/xds_fanout.sh                                   # 1,000 and 10,000 streams × 1,000 and 100,000 endpoints
#   tests/bench/xds_fanout.sh --streams 100 --endpoints 1000    # smoke test
#   tests/bench/xds_fanout.sh --streams 1000 --endpoints 1000 --pg-load
#   tests/bench/xds_fanout.sh --streams 10000 --endpoints 1000 --change one  # bytes per stream of an endpoint change
#
# --pg-load also prints what PostgreSQL does for one config change (`sextant import` into a
# group no stream is in) and for the push (the publish and the N streams' ACKs): rows
# inserted, updated and deleted per table (pg_stat_user_tables), transactions committed,
# and the notifications the replica received per channel (sextant_db_notifications_total).
# PostgreSQL publishes a backend's table counters at most once a second and an idle one's
# after up to 10 s, so each reading is taken once the work is done and 11 s have passed.
#
# SEXTANT_BIN and BENCH_BIN name the binaries (default build-release/sextant and
# build-release/bench_xds_fanout, built with cmake when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GRPC_FLOOR_KB=30 # gRPC's own cost per idle stream with one connection each (measured)
STREAMS="1000,10000"
ENDPOINTS="1000,100000"
TIMEOUT=300
IDLE_S=5
EDS=1
PG_LOAD=0
FLOOR=1
CHANGE=all
JSON_OUT=$ROOT/tests/out/bench/xds_fanout.json

usage() {
    cat <<'TXT'
usage: tests/bench/xds_fanout.sh [--streams N[,N...]] [--endpoints N[,N...]]
                                 [--no-eds] [--timeout S] [--idle S] [--pg-load]
                                 [--no-floor] [--change all|one] [--json FILE]
  --streams     concurrent ADS streams per run (default 1000,10000; at most 19000)
  --endpoints   endpoints in total over the 100 clusters (default 1000,100000)
  --no-eds      subscribe to CDS only
  --timeout     longest wait for the streams to connect and for the new version (default 300)
  --idle        seconds to let the server settle before reading its idle RSS (default 5)
  --pg-load     also count PostgreSQL's rows, transactions and notifications for one
                config change and for the push
  --no-floor    skip the floor (bench_xds_floor: a bare gRPC server pushing the same
                bytes) that every run is otherwise compared with
  --change      all (default): every endpoint and every cluster changes; one: only the
                first cluster's endpoints (no floor: it pushes whole responses)
  --json        where the figures go, one JSON object per run (default
                tests/out/bench/xds_fanout.json)
Environment: SEXTANT_BIN, BENCH_BIN (default build-release/sextant, build-release/bench_xds_fanout);
CLIENT_MAX_RSS_MB (default 12000): the client stops rather than exhaust the machine's memory.
TXT
}

# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_options "--streams=STREAMS --endpoints=ENDPOINTS --no-eds:EDS=0 --pg-load:PG_LOAD=1 --no-floor:FLOOR=0 --change=CHANGE --json=JSON_OUT --timeout=TIMEOUT --idle=IDLE_S" "$@"
bench_numbers xds_fanout ${STREAMS//,/ } ${ENDPOINTS//,/ } "$TIMEOUT" "$IDLE_S"
bench_binaries xds_fanout bench_xds_fanout
case "$CHANGE" in
all) VARIANT=1 CHANGED=cds,eds ;;
one) VARIANT=2 CHANGED=eds FLOOR=0 ;;
*) echo "xds_fanout: --change is all or one" >&2; exit 2 ;;
esac
[ "$EDS" = 1 ] || [ "$CHANGE" = all ] || { echo "xds_fanout: --change one needs EDS" >&2; exit 2; }
[ "$EDS" = 1 ] || CHANGED=cds
# The floor server is built beside the client (FLOOR_BIN names another one).
if [ "$FLOOR" = 1 ] && [ -z "${FLOOR_BIN:-}" ]; then
    FLOOR_BIN=$(dirname "$BENCH_BIN")/bench_xds_floor
    cmake --build "$(dirname "$BENCH_BIN")" -j"$(nproc)" --target bench_xds_floor >/dev/null
fi
[ "$FLOOR" = 0 ] || [ -x "$FLOOR_BIN" ] || { echo "xds_fanout: $FLOOR_BIN is missing" >&2; exit 1; }
rm -f "$JSON_OUT"
"$SEXTANT_BIN" publish --help >/dev/null 2>&1 ||
    { echo "xds_fanout: $SEXTANT_BIN has no 'publish' command; rebuild it" >&2; exit 1; }

# ---------------------------------------------------------------- cleanup
WORK=$(bench_workdir fanout)
# Each process may hold 20,000 files here: the server needs one per stream.
bench_stream_traps xds_fanout CLIENT_PID SERVE_PID

# ---------------------------------------------------------------- services
bench_services

python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" --eds-names >"$WORK/eds.txt"
EDS_ARGS=()
[ "$EDS" = 1 ] && EDS_ARGS=(--eds-names "$WORK/eds.txt")


# pg_reading HTTP_PORT: rows per table (ins upd del), transactions and notifications by
# channel, one "name a b c" line each, once PostgreSQL has published the counters.
pg_reading() {
    sleep 11 # a backend's statistics reach pg_stat_* within PGSTAT_IDLE_INTERVAL (10 s)
    psql "$SEXTANT_DATABASE_URL" -qtAXF ' ' -c "
        SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables
        UNION ALL SELECT '(transactions)', xact_commit, 0, 0 FROM pg_stat_database
            WHERE datname = current_database()"
    curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
        sed -n 's/^sextant_db_notifications_total{channel="\([^"]*\)"} \([0-9]*\)$/(NOTIFY:\1) \2 0 0/p'
}
# pg_delta TAG BEFORE AFTER: prints what changed between two readings.
pg_delta() {
    awk -v tag="$1" '
        NR == FNR { a[$1] = $2; b[$1] = $3; c[$1] = $4; next }
        {
            i = $2 - a[$1]; u = $3 - b[$1]; d = $4 - c[$1]
            if (i || u || d) {
                if ($1 ~ /^\(/) printf "%s pg %s=%d\n", tag, $1, i
                else printf "%s pg table=%s inserted=%d updated=%d deleted=%d\n", tag, $1, i, u, d
            }
        }' "$2" "$3"
}

publish() { bench_publish bench "$1"; } # publish FILE: prints the new version

bench_machine
echo "# clients in their own process, one HTTP/2 connection per stream; types: cds$([ "$EDS" = 1 ] && echo ",eds (100 names)")"

# client_start TARGET STREAMS NODE_PREFIX TAG SERVER_PID: starts bench_xds_fanout with
# STREAMS streams against TARGET (CLIENT_PID; its stdin is fd 7) and waits until every
# stream holds the initial version.
client_start() {
    rm -f "$WORK/ctl" "$WORK/client.out"
    mkfifo "$WORK/ctl"
    "$BENCH_BIN" --target "$1" --streams "$2" --group bench \
        --node-prefix "$3" --timeout "$TIMEOUT" --max-rss-mb "${CLIENT_MAX_RSS_MB:-12000}" "${EDS_ARGS[@]}" --changed "$CHANGED" \
        <"$WORK/ctl" >"$WORK/client.out" 2>"$WORK/client.err" &
    CLIENT_PID=$!
    exec 7>"$WORK/ctl" || return 1
    if ! bench_wait_line "$WORK/client.out" '^(ready|error)' $((TIMEOUT + 30)) "$CLIENT_PID" ||
        ! grep -q '^ready' "$WORK/client.out"; then
        echo "$4 FAILED: streams did not all receive the initial version (server rss $(bench_rss_kb "$5" 2>/dev/null || echo gone) kB)"
        cat "$WORK/client.out" "$WORK/client.err" >&2
        return 1
    fi
}

# client_go T0 TAG SERVER_PID: tells the client the push started at T0 and waits for
# its report.
client_go() {
    echo "go $1" >&7 || return 1
    if ! bench_wait_line "$WORK/client.out" '^(done|error)' $((TIMEOUT + 30)) "$CLIENT_PID" ||
        ! grep -q '^done' "$WORK/client.out"; then
        echo "$2 FAILED: no report from the client: $(grep '^error' "$WORK/client.out" || echo "it did not answer") (server rss $(bench_rss_kb "$3" 2>/dev/null || echo gone) kB)"
        return 1
    fi
}

run_one() { # run_one STREAMS ENDPOINTS
    local n=$1 e=$2 tag="streams=$1 endpoints=$2"
    local http grpc v0 v1 before idle line t0 t1 per share ready_s rx_mb

    python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" "$e" 0 >"$WORK/snap0.json" || return 1
    python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" "$e" "$VARIANT" >"$WORK/snap1.json" || return 1
    v0=$(publish "$WORK/snap0.json") || return 1

    local i
    bench_serve xds_fanout bench "$WORK/serve.log" || return 1
    http=$SERVE_HTTP grpc=$SERVE_GRPC
    sleep 1
    before=$(bench_rss_kb "$SERVE_PID") || return 1

    client_start "127.0.0.1:$grpc" "$n" "bench-$n-$e" "$tag" "$SERVE_PID" || return 1
    line=$(grep '^ready' "$WORK/client.out")
    ready_s=$(cut -d' ' -f3 <<<"$line")
    rx_mb=$(cut -d' ' -f4 <<<"$line")
    sleep "$IDLE_S"
    idle=$(bench_rss_kb "$SERVE_PID") || { echo "$tag FAILED: sextant serve exited"; return 1; }
    per=$(awk -v a="$idle" -v b="$before" -v n="$n" 'BEGIN { printf "%.1f", (a - b) / n }')
    share=$(awk -v p="$per" -v f="$GRPC_FLOOR_KB" 'BEGIN { printf "%.1f", p - f }')
    echo "$tag connect_all=${ready_s}s initial_rx=${rx_mb}MB rss_before=$((before / 1024))MB rss_idle=$((idle / 1024))MB rss_per_stream_kb=$per sextant_share_kb=$share"

    if [ "$PG_LOAD" = 1 ]; then
        # One config change through the write path (validate, version, snapshot, audit,
        # NOTIFY) into a group no stream is in: what PostgreSQL does for the change alone.
        pg_reading "$http" >"$WORK/pg_idle"
        pg_reading "$http" >"$WORK/pg0"
        pg_delta "$tag idle_11s" "$WORK/pg_idle" "$WORK/pg0"
        "$SEXTANT_BIN" import --file "$ROOT/deploy/local/demo.json" --namespace bench --name "change-$n-$e" \
            --group "bench-other" --author bench >"$WORK/import.out" 2>&1 || { cat "$WORK/import.out" >&2; return 1; }
        pg_reading "$http" >"$WORK/pg1"
        pg_delta "$tag config_change" "$WORK/pg0" "$WORK/pg1"
    fi
    local s_cpu c_cpu
    s_cpu=$(bench_cpu_ticks "$SERVE_PID")
    c_cpu=$(bench_cpu_ticks "$CLIENT_PID")
    t0=$("$BENCH_BIN" --now)
    v1=$(publish "$WORK/snap1.json") || return 1
    t1=$("$BENCH_BIN" --now)
    client_go "$t0" "$tag" "$SERVE_PID" || return 1
    local peak cpeak logw
    # (xds.auth none warns once at start: not counted)
    logw=$(grep -E '"level": ?"(warn|error)"' "$WORK/serve.log" | grep -vc '"auth": ?"none"' || true)
    s_cpu=$(bench_cpu_s "$s_cpu" "$SERVE_PID")
    c_cpu=$(bench_cpu_s "$c_cpu" "$CLIENT_PID")
    peak=$(bench_peak_mb "$SERVE_PID")
    cpeak=$(bench_peak_mb "$CLIENT_PID")
    echo "$tag publish v$v0->v$v1 cli=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')s server_rss_peak=${peak}MB client_rss_peak=${cpeak}MB cpu_during_push server=${s_cpu}s client=${c_cpu}s server_log_warn_error=$logw $(grep '^stats' "$WORK/client.out" | cut -d' ' -f2-)"
    grep '^result' "$WORK/client.out" | while read -r _ type rest; do
        echo "$tag publish_to_all ${type#type=} $rest"
    done
    if [ "$PG_LOAD" = 1 ]; then
        # The push: the publish, then every stream's ACK persisted (debounced by
        # nodes.flush_interval).
        for ((i = 0; i < 600; i++)); do
            [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT count(*) FROM node_status
                WHERE acked_snapshot_version = $v1")" = "$n" ] && break
            sleep 0.1
        done
        pg_reading "$http" >"$WORK/pg2"
        pg_delta "$tag push_to_${n}_streams" "$WORK/pg1" "$WORK/pg2"
    fi
    # The summary: per stream, until it held the new version of every type.
    line=$(grep -E '^result type=(all|cds) ' "$WORK/client.out" | tail -n 1)
    echo "streams=$n endpoints=$e rss_per_stream_kb=$per sextant_share_kb=$share publish_to_all $(cut -d' ' -f4- <<<"$line")"
    S_P50=$(result_field p50) S_P99=$(result_field p99) S_CPU=$s_cpu S_CDF=$(cdf_field)
    S_RXB=$(stats_field rx_bytes_per_stream) S_MSGS=$(stats_field rx_msgs_per_stream)
    echo "streams=$n endpoints=$e change=$CHANGE per_stream_per_push bytes=$S_RXB messages=$S_MSGS"
    [ "$FLOOR" = 1 ] || write_json "$n" "$e" "" "" ""
}

# stats_field NAME: NAME's value on the client's stats line.
stats_field() {
    grep '^stats' "$WORK/client.out" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=\([0-9.]*\)$/\1/p"
}

# cdf_field: the client's 101 percentiles of the last push as a JSON array (or null).
cdf_field() {
    local c
    c=$(grep -E '^cdf ' "$WORK/client.out" | tail -n 1 | cut -d' ' -f2- | tr ' ' ',')
    if [ -n "$c" ]; then echo "[$c]"; else echo null; fi
}

# write_json STREAMS ENDPOINTS FLOOR_P50 FLOOR_P99 FLOOR_CPU FLOOR_CDF: appends the run's
# figures (Sextant's from S_*, the floor's as given, null when not run) to the JSON file
# and draws each run's latency distribution next to it (tests/bench/report_cdf.py).
write_json() {
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "null" }'; }
    mkdir -p "$(dirname "$JSON_OUT")"
    jq -cn --argjson streams "$1" --argjson endpoints "$2" --arg change "$CHANGE" \
        --argjson sp50 "${S_P50:-null}" --argjson sp99 "${S_P99:-null}" --argjson scpu "${S_CPU:-null}" \
        --argjson srxb "${S_RXB:-null}" --argjson smsgs "${S_MSGS:-null}" \
        --argjson scdf "${S_CDF:-null}" --argjson fcdf "${6:-null}" \
        --argjson fp50 "${3:-null}" --argjson fp99 "${4:-null}" --argjson fcpu "${5:-null}" \
        --argjson rp99 "$(ratio "$S_P99" "${4:-0}")" --argjson rcpu "$(ratio "$S_CPU" "${5:-0}")" \
        '{streams: $streams, endpoints: $endpoints, change: $change,
          sextant: {publish_to_all_p50_s: $sp50, publish_to_all_p99_s: $sp99, server_cpu_s: $scpu,
                    rx_bytes_per_stream_per_push: $srxb, rx_messages_per_stream_per_push: $smsgs,
                    publish_to_all_percentiles_s: $scdf},
          floor: {push_to_all_p50_s: $fp50, push_to_all_p99_s: $fp99, server_cpu_s: $fcpu,
                  push_to_all_percentiles_s: $fcdf},
          ratio: {p99: $rp99, server_cpu: $rcpu}}' >>"$JSON_OUT"
    python3 "$ROOT/tests/bench/report_cdf.py" "$JSON_OUT" ||
        echo "xds_fanout: could not draw the latency distribution" >&2
}

# result_field NAME: NAME's value (seconds, no unit) on the client's last summary line.
result_field() {
    grep -E '^result type=(all|cds) ' "$WORK/client.out" | tail -n 1 |
        tr ' ' '\n' | sed -n "s/^$1=\([0-9.]*\)s\{0,1\}$/\1/p"
}

# run_floor STREAMS ENDPOINTS: the same client against bench_xds_floor, a bare gRPC
# server pushing the same encoded CDS and EDS responses with no control-plane logic; the
# push is timed from the moment the floor is told to push. Prints its figures and
# Sextant's as ratios of them, and appends both to the JSON file.
run_floor() {
    local n=$1 e=$2 tag="streams=$1 endpoints=$2" port t0 f_cpu f_rxb
    port=$(svc_free_port)
    rm -f "$WORK/floor_ctl" "$WORK/floor.out"
    mkfifo "$WORK/floor_ctl"
    "$FLOOR_BIN" --listen "127.0.0.1:$port" "$WORK/snap0.json" "$WORK/snap1.json" \
        <"$WORK/floor_ctl" >"$WORK/floor.out" 2>"$WORK/floor.log" &
    SERVE_PID=$!
    exec 8>"$WORK/floor_ctl" || return 1
    bench_wait_line "$WORK/floor.out" '^listening' 120 "$SERVE_PID" || { echo "$tag floor FAILED: did not listen"; return 1; }
    client_start "127.0.0.1:$port" "$n" "floor-$n-$e" "$tag floor" "$SERVE_PID" || return 1
    sleep "$IDLE_S"
    f_cpu=$(bench_cpu_ticks "$SERVE_PID")
    t0=$("$BENCH_BIN" --now)
    echo push >&8
    client_go "$t0" "$tag floor" "$SERVE_PID" || return 1
    f_cpu=$(bench_cpu_s "$f_cpu" "$SERVE_PID")
    local f_p50 f_p99 f_cdf
    f_p50=$(result_field p50) f_p99=$(result_field p99) f_cdf=$(cdf_field)
    echo "$tag floor push_to_all p50=${f_p50}s p99=${f_p99}s cpu_during_push server=${f_cpu}s"
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "null" }'; }
    f_rxb=$(stats_field rx_bytes_per_stream)
    echo "$tag floor per_stream_per_push bytes=$f_rxb messages=$(stats_field rx_msgs_per_stream)"
    echo "$tag vs_floor p99_ratio=$(ratio "$S_P99" "$f_p99") server_cpu_ratio=$(ratio "$S_CPU" "$f_cpu") (targets: p99 <= 1.25, cpu <= 1.5)"
    write_json "$n" "$e" "$f_p50" "$f_p99" "$f_cpu" "$f_cdf"
}

# end_run: stops this run's client and server (also after a failed run).
end_run() {
    echo quit >&7 2>/dev/null || true
    { exec 7>&-; } 2>/dev/null || true
    echo quit >&8 2>/dev/null || true
    { exec 8>&-; } 2>/dev/null || true
    bench_stop_pid xds_fanout "$CLIENT_PID" 30
    CLIENT_PID=
    if [ -n "$SERVE_PID" ] && ! kill -0 "$SERVE_PID" 2>/dev/null; then
        local st=0
        wait "$SERVE_PID" 2>/dev/null || st=$?
        echo "xds_fanout: sextant serve had exited (status $st); its log ends:" >&2
        tail -n 15 "$WORK/serve.log" >&2
    fi
    bench_stop_pid xds_fanout "$SERVE_PID" 30
    SERVE_PID=
}

# A failed run (for example the client passing its memory cap) is reported and the
# next one runs; the exit status says whether any failed.
FAILED=0
for e in ${ENDPOINTS//,/ }; do
    for n in ${STREAMS//,/ }; do
        S_P50= S_P99= S_CPU= S_RXB= S_MSGS=
        run_one "$n" "$e" || FAILED=1
        end_run
        if [ "$FLOOR" = 1 ]; then
            run_floor "$n" "$e" || FAILED=1
            end_run
        fi
    done
done
exit "$FAILED"

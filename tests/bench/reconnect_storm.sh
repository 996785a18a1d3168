#!/usr/bin/env bash
# reconnect_storm.sh — reconnect storm benchmark: a replica holding N ADS streams is
# killed (SIGKILL) and all N reconnect to a second replica at once.
#
# Starts its own PostgreSQL (with pg_stat_statements) and Redis in a scratch folder,
# migrates, and for each variant: publishes the initial snapshot of the variant's group
# (xds_fanout_snapshot.py: 100 clusters, 1,000 endpoints), starts replicas A and B
# (`sextant serve`, replica ids storm-a and storm-b), connects N streams from
# bench_xds_fanout (one HTTP/2 connection each, CDS wildcard + EDS of the 100 clusters,
# every response ACKed) with the target "ipv4:127.0.0.1:A,127.0.0.1:B", so that every
# channel connects to A and, once A is gone, to B. Once every stream holds the version
# and sits on A, it takes a CLOCK_MONOTONIC time stamp and kills A; every stream starts
# its call again on B with the versions it holds (an Envoy reconnecting). Per stream,
# the client times from the kill until B accepted the new call (B's initial metadata
# arrived); the driver also times, from the kill, until B counts all N streams
# (sextant_xds_streams) and until proxy_nodes names B for all N nodes, and reports B's CPU
# and peak RSS (and the client's CPU: the streams' side of the reconnect), what the streams
# received after the kill, and the statements PostgreSQL ran from the kill until every
# node was recorded on B.
#
#   keep     (variant 1) nothing is published: the streams already hold the current
#            version, so B must send them nothing (responses after the kill: 0)
#   publish  (variant 2) a new version is published just after the kill, while the
#            streams are moving: per stream, the time until it holds the new version
#            of both types
#
#   tests/bench/reconnect_storm.sh                        # 10,000 streams, both variants
#   tests/bench/reconnect_storm.sh --streams 100          # smoke test
#
# Prints plain lines and writes one JSON object per variant (tests/out/bench/
# reconnect_storm.json). SEXTANT_BIN and BENCH_BIN name the binaries (default
# build-release/sextant and build-release/bench_xds_fanout, built with cmake when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STREAMS=10000
VARIANTS=keep,publish
TIMEOUT=300
IDLE_S=3
JSON_OUT=$ROOT/tests/out/bench/reconnect_storm.json

usage() {
    cat <<'TXT'
usage: tests/bench/reconnect_storm.sh [--streams N] [--variants keep,publish] [--timeout S]
                                      [--idle S] [--json FILE]
  --streams   ADS streams moving from replica A to replica B (default 10000; at most 19000)
  --variants  keep: nothing changes while they move; publish: a new version is published
              just after A is killed (default both)
  --timeout   longest wait for the streams to connect and to move (default 300)
  --idle      seconds to let both replicas settle before the kill (default 3)
  --json      where the figures go, one JSON object per variant
              (default tests/out/bench/reconnect_storm.json)
Environment: SEXTANT_BIN, BENCH_BIN (default build-release/sextant, build-release/bench_xds_fanout).
TXT
}

# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_options "--streams=STREAMS --variants=VARIANTS --timeout=TIMEOUT --idle=IDLE_S --json=JSON_OUT" "$@"
bench_numbers reconnect_storm "$STREAMS" "$TIMEOUT" "$IDLE_S"
for v in ${VARIANTS//,/ }; do
    case $v in keep | publish) ;; *) echo "reconnect_storm: unknown variant: $v" >&2; exit 2 ;; esac
done
bench_binaries reconnect_storm bench_xds_fanout
rm -f "$JSON_OUT"

WORK=$(bench_workdir storm)
bench_stream_traps reconnect_storm CLIENT_PID A_PID B_PID

# ---------------------------------------------------------------- services
bench_services --pg-statements
sql() { psql "$SEXTANT_DATABASE_URL" -qtAXc "$1"; }
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" 1000 0 >"$WORK/snap0.json"
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" 1000 1 >"$WORK/snap1.json"
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" --eds-names >"$WORK/eds.txt"

bench_machine
echo "# clients in their own process, one HTTP/2 connection per stream; types: cds,eds (100 names); 1,000 endpoints"

# streams_on HTTP_PORT: the ADS streams a replica counts (sextant_xds_streams).
streams_on() {
    curl -s --max-time 2 "http://127.0.0.1:$1/metrics" |
        awk '/^sextant_xds_streams\{protocol="ads-sotw"\}/ { n = $2 } END { print n + 0 }'
}
# nodes_on REPLICA PREFIX: the variant's nodes proxy_nodes records as connected to REPLICA.
nodes_on() {
    sql "SELECT count(*) FROM proxy_nodes WHERE connected AND replica_id = '$1' AND node_id LIKE '$2-%'"
}
# client_field NAME: NAME's value (no unit) on the client's last line of that kind.
client_field() {
    grep -E "$1" "$WORK/client.out" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$2=\([0-9.]*\)s\{0,1\}$/\1/p"
}
cdf_of() { # cdf_of N: the N-th "cdf" line of the client as a JSON array (or null)
    local c
    c=$(grep -E '^cdf ' "$WORK/client.out" | sed -n "${1}p" | cut -d' ' -f2- | tr ' ' ',')
    if [ -n "$c" ]; then echo "[$c]"; else echo null; fi
}
since() { awk -v a="$1" -v b="$("$BENCH_BIN" --now)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

run_variant() { # run_variant keep|publish
    local var=$1 group="storm-$1" prefix="storm-$1" tag="variant=$1 streams=$STREAMS"
    local v0 v1='' a_http b_http b_grpc i t0 b_cpu c_cpu srv_s='' db_s='' line

    v0=$(bench_publish "$group" "$WORK/snap0.json") || return 1
    bench_serve reconnect_storm storm-a "$WORK/a-$var.log" || return 1
    A_PID=$SERVE_PID a_http=$SERVE_HTTP
    local a_grpc=$SERVE_GRPC
    bench_serve reconnect_storm storm-b "$WORK/b-$var.log" || return 1
    B_PID=$SERVE_PID b_http=$SERVE_HTTP b_grpc=$SERVE_GRPC

    rm -f "$WORK/ctl" "$WORK/client.out"
    mkfifo "$WORK/ctl"
    local changed=none
    [ "$var" = publish ] && changed=cds,eds
    "$BENCH_BIN" --target "ipv4:127.0.0.1:$a_grpc,127.0.0.1:$b_grpc" --streams "$STREAMS" \
        --group "$group" --node-prefix "$prefix" --timeout "$TIMEOUT" --eds-names "$WORK/eds.txt" \
        --changed "$changed" --reconnect <"$WORK/ctl" >"$WORK/client.out" 2>"$WORK/client.err" &
    CLIENT_PID=$!
    exec 7>"$WORK/ctl"
    bench_wait_line "$WORK/client.out" '^(ready|error)' $((TIMEOUT + 30)) "$CLIENT_PID" && grep -q '^ready' "$WORK/client.out" ||
        { echo "$tag FAILED: the streams did not all receive version $v0" >&2; cat "$WORK/client.out" >&2; return 1; }
    # Every stream on A, recorded there, and both replicas idle.
    for ((i = 0; i < TIMEOUT * 10; i++)); do
        [ "$(nodes_on storm-a "$prefix")" = "$STREAMS" ] && break
        sleep 0.1
    done
    [ "$(streams_on "$a_http")" = "$STREAMS" ] && [ "$(streams_on "$b_http")" = 0 ] && [ "$i" -lt $((TIMEOUT * 10)) ] ||
        { echo "$tag FAILED: not every stream is on replica A" >&2; return 1; }
    sleep "$IDLE_S"
    echo "$tag on_replica_a connect_all=$(cut -d' ' -f3 <<<"$(grep '^ready' "$WORK/client.out")")s version=$v0"

    sql "SELECT pg_stat_statements_reset()" >/dev/null
    b_cpu=$(bench_cpu_ticks "$B_PID")
    c_cpu=$(bench_cpu_ticks "$CLIENT_PID")
    t0=$("$BENCH_BIN" --now)
    kill -KILL "$A_PID"
    wait "$A_PID" 2>/dev/null || true
    A_PID=
    [ "$var" = publish ] && { v1=$(bench_publish "$group" "$WORK/snap1.json") || return 1; }
    echo "go $t0" >&7
    # B's own view: all N streams counted, then all N nodes recorded on B.
    for ((i = 0; i < TIMEOUT * 20; i++)); do
        [ -z "$srv_s" ] && [ "$(streams_on "$b_http")" = "$STREAMS" ] && srv_s=$(since "$t0")
        [ -n "$srv_s" ] && [ "$(nodes_on storm-b "$prefix")" = "$STREAMS" ] && { db_s=$(since "$t0"); break; }
        sleep 0.05
    done
    [ -n "$db_s" ] || { echo "$tag FAILED: replica B did not take every stream (streams $(streams_on "$b_http"), nodes $(nodes_on storm-b "$prefix"))" >&2; return 1; }
    bench_wait_line "$WORK/client.out" '^(done|error)' $((TIMEOUT + 30)) "$CLIENT_PID" && grep -q '^done' "$WORK/client.out" ||
        { echo "$tag FAILED: no report from the client: $(grep '^error' "$WORK/client.out" || echo "it did not answer")" >&2; return 1; }
    b_cpu=$(bench_cpu_s "$b_cpu" "$B_PID")
    c_cpu=$(bench_cpu_s "$c_cpu" "$CLIENT_PID")
    # What the streams received since the kill, read once B has recorded every node (so
    # after it handled every stream's first requests).
    echo stats >&7
    for ((i = 0; i < 100; i++)); do
        [ "$(grep -c '^stats' "$WORK/client.out")" -ge 2 ] && break
        sleep 0.05
    done
    line=$(grep '^stats' "$WORK/client.out" | tail -n 1)
    local stmts writes
    stmts=$(sql "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements")
    writes=$(sql "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
        WHERE query ~* '(insert into|update)\s+(proxy_nodes|node_status|events)\M'")
    local rc_p50 rc_p99 rc_max new_p50='' new_p99='' new_max=''
    rc_p50=$(client_field '^result type=reconnect ' p50)
    rc_p99=$(client_field '^result type=reconnect ' p99)
    rc_max=$(client_field '^result type=reconnect ' max)
    echo "$tag kill_to_accepted_by_b p50=${rc_p50}s p99=${rc_p99}s max=${rc_max}s b_counts_all=${srv_s}s b_recorded_all=${db_s}s"
    if [ "$var" = publish ]; then
        new_p50=$(client_field '^result type=all ' p50)
        new_p99=$(client_field '^result type=all ' p99)
        new_max=$(client_field '^result type=all ' max)
        echo "$tag kill_to_new_version v$v0->v$v1 p50=${new_p50}s p99=${new_p99}s max=${new_max}s"
    fi
    local rxb rxm restarts
    rxb=$(tr ' ' '\n' <<<"$line" | sed -n 's/^rx_mb=//p')
    rxm=$(tr ' ' '\n' <<<"$line" | sed -n 's/^rx_msgs=//p')
    restarts=$(tr ' ' '\n' <<<"$line" | sed -n 's/^restarts=//p')
    echo "$tag after_kill received_mb=$rxb responses=$rxm calls_restarted=$restarts b_cpu=${b_cpu}s b_rss_peak=$(bench_peak_mb "$B_PID")MB client_cpu=${c_cpu}s statements=$stmts node_writes=$writes"

    mkdir -p "$(dirname "$JSON_OUT")"
    local rc_cdf new_cdf=null
    if [ "$var" = publish ]; then new_cdf=$(cdf_of 1) rc_cdf=$(cdf_of 2); else rc_cdf=$(cdf_of 1); fi
    jq -cn --arg variant "$var" --argjson streams "$STREAMS" \
        --argjson rp50 "$rc_p50" --argjson rp99 "$rc_p99" --argjson rmax "$rc_max" --argjson rcdf "$rc_cdf" \
        --argjson np50 "${new_p50:-null}" --argjson np99 "${new_p99:-null}" --argjson nmax "${new_max:-null}" --argjson ncdf "$new_cdf" \
        --argjson srv "$srv_s" --argjson db "$db_s" --argjson rxm "$rxm" --argjson rxb "$rxb" \
        --argjson restarts "$restarts" --argjson cpu "$b_cpu" --argjson ccpu "$c_cpu" --argjson peak "$(bench_peak_mb "$B_PID")" \
        --argjson stmts "$stmts" --argjson writes "$writes" \
        '{variant: $variant, streams: $streams,
          kill_to_accepted_by_b_s: {p50: $rp50, p99: $rp99, max: $rmax, percentiles: $rcdf},
          kill_to_new_version_s: {p50: $np50, p99: $np99, max: $nmax, percentiles: $ncdf},
          b_counts_all_streams_s: $srv, b_recorded_all_nodes_s: $db,
          after_kill: {responses: $rxm, received_mb: $rxb, calls_restarted: $restarts},
          replica_b: {cpu_s: $cpu, rss_peak_mb: $peak}, client_cpu_s: $ccpu,
          statements: {all: $stmts, proxy_nodes_node_status_events_writes: $writes}}' >>"$JSON_OUT"
}

end_variant() {
    echo quit >&7 2>/dev/null || true
    { exec 7>&-; } 2>/dev/null || true
    bench_stop_pid reconnect_storm "$CLIENT_PID" 30
    CLIENT_PID=
    bench_stop_pid reconnect_storm "$A_PID" 30
    A_PID=
    bench_stop_pid reconnect_storm "$B_PID" 30
    B_PID=
}

FAILED=0
for v in ${VARIANTS//,/ }; do
    run_variant "$v" || FAILED=1
    end_variant
done
exit "$FAILED"

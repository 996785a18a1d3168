#!/usr/bin/env bash
# k8s_translate.sh — Kubernetes Gateway API benchmark: from `sextant serve`'s start
# (its initial list of the API server) until every Gateway's proxy group has its
# snapshot written, and from one EndpointSlice change until the clients of the affected
# group hold the new endpoints.
#
# Starts its own PostgreSQL and Redis (tests/lib/services.sh) and, per run, the test
# Kubernetes API server (tests/lib/k8s.sh) with the Gateway API CRDs of tests/k8s/crds.
# Two runs, the same steps each:
#   floor  1 Gateway (its routes, Services and EndpointSlices): the cost of the pipeline
#          itself, which the full run is compared with;
#   full   N Gateways (default 1,000), each with R HTTPRoutes (default 5) to R Services of
#          one EndpointSlice each (three ready endpoints): 5,000 HTTPRoutes, 5,000
#          Services, 5,000 EndpointSlices, 100 Namespaces.
# Steps: create the objects (many parallel POSTs over keep-alive connections:
# k8s_translate.py load); list them all once the way Sextant does (a thread and a
# connection per kind, pages of 500), the floor of any initial list; start `sextant
# serve` with k8s.enabled on a fresh database and time, from its exec: the initial list
# (its log line "every watched kind is listed"), the first and the last group's snapshot
# written (snapshots.created_at), every status written (sextant_k8s_status_writes_total);
# read its peak RSS (VmHWM) and CPU time from /proc; then connect one ADS stream per
# sampled group (bench_k8s_translate: wildcard CDS + EDS of the group's clusters, every
# response ACKed) and, C times, patch one EndpointSlice of a sampled group (a fresh
# address) and time until that group's stream receives a ClusterLoadAssignment holding
# it; each change waits until Sextant's pass over every Gateway has ended, so changes
# never queue behind one another.
# Prints plain lines and writes them as JSON; never asserts a timing. Everything it
# started is stopped on exit.
#
#   tests/bench/k8s_translate.sh                          # 1,000 Gateways, 100 sampled groups, 100 changes
#   tests/bench/k8s_translate.sh --gateways 50 --changes 10   # smoke test
#
# SEXTANT_BIN and BENCH_BIN name the binaries (default build-release/sextant and
# build-release/bench_k8s_translate, built with cmake when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GATEWAYS=1000
ROUTES=5
SAMPLE=100
CHANGES=100
TIMEOUT=600
JSON_OUT=$ROOT/tests/out/bench/k8s_translate.json

usage() {
    cat <<'TXT'
usage: tests/bench/k8s_translate.sh [--gateways N] [--routes R] [--sample S] [--changes C]
                                    [--timeout S] [--json FILE]
  --gateways  Gateways of the full run (default 1000; 10 per Namespace)
  --routes    HTTPRoutes (and Services, EndpointSlices) per Gateway (default 5, at most 16)
  --sample    groups followed by an ADS stream in the full run (default 100)
  --changes   EndpointSlice changes timed per run (default 100)
  --timeout   longest wait for any one step (default 600)
  --json      where the figures go as JSON (default tests/out/bench/k8s_translate.json)
Environment: SEXTANT_BIN, BENCH_BIN (default build-release/sextant, build-release/bench_k8s_translate).
TXT
}

# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_options "--gateways=GATEWAYS --routes=ROUTES --sample=SAMPLE --changes=CHANGES --timeout=TIMEOUT --json=JSON_OUT" "$@"
for n in $GATEWAYS $ROUTES $SAMPLE $CHANGES $TIMEOUT; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "k8s_translate: not a positive number: $n" >&2; exit 2; }
done
[ "$ROUTES" -le 16 ] || { echo "k8s_translate: --routes takes at most 16" >&2; exit 2; }
[ "$SAMPLE" -le "$GATEWAYS" ] || SAMPLE=$GATEWAYS

# ---------------------------------------------------------------- binaries
bench_binaries k8s_translate bench_k8s_translate

# ---------------------------------------------------------------- cleanup
# shellcheck source=tests/lib/k8s.sh
source "$ROOT/tests/lib/k8s.sh"
PY=${K8S_PYTHON:-/usr/bin/python3}
TOOL=$ROOT/tests/bench/k8s_translate.py
WORK=$(bench_workdir k8s)
SERVE_PID=
K8S_DIR=

cleanup() {
    local rc=$?
    bench_stop_pid k8s_translate "$SERVE_PID" 30
    [ -n "$K8S_DIR" ] && k8s_stop "$K8S_DIR"
    svc_redis_stop "$WORK/redis" || true
    svc_pg_stop "$WORK/pg" || true
    if [ "$rc" -ne 0 ]; then
        for f in "$WORK"/*.log "$WORK"/*/apiserver.log "$WORK"/*.err; do
            [ -s "$f" ] && { echo "--- ${f#"$WORK"/} (tail)" >&2; tail -n 15 "$f" >&2; }
        done
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- services
PG_PORT=$(svc_free_port)
REDIS_PORT=$(svc_free_port)
svc_pg_start "$WORK/pg" "$PG_PORT"
svc_redis_start "$WORK/redis" "$REDIS_PORT"
PG_BASE="postgresql://sextant@127.0.0.1:$PG_PORT"
export SEXTANT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"

TICKS=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TICKS" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
now_s() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "n/a" }'; }
# metric NAME [LABEL=VALUE]: the sum of NAME's samples (with that label) on /metrics
metric() {
    curl -s --max-time 5 "http://127.0.0.1:$HTTP_PORT/metrics" |
        awk -v n="$1" -v l="${2:+${2%%=*}=\"${2#*=}\"}" '
            index($1, n) == 1 && (substr($1, length(n) + 1, 1) == "{" || length($1) == length(n)) &&
            (l == "" || index($1, l) > 0) { s += $2 } END { printf "%.17g", s + 0 }'
}
# log_time MESSAGE: the first log line of sextant serve with that msg, as Unix seconds
log_time() {
    local ts
    ts=$(jq -r --arg m "$1" 'select(.msg == $m) | .ts' "$WORK/serve.log" 2>/dev/null | head -n 1)
    [ -n "$ts" ] && date -d "$ts" +%s.%N
}
# percentiles: reads seconds (one per line), prints "p50 p99 max" (nearest rank)
percentiles() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "n/a n/a n/a"; exit }
        r50 = int(0.50 * NR + 0.999999); r99 = int(0.99 * NR + 0.999999)
        printf "%.3f %.3f %.3f\n", v[r50], v[r99], v[NR] }'
}

echo "# $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); $("$SEXTANT_BIN" version 2>/dev/null | head -n 1)"
echo "# settle delay: Sextant's default (k8s.settle_delay 100ms, k8s.settle_max 1s); a change is timed from just before its PATCH"

RESULTS=()

# run NAME GATEWAYS SAMPLE: one run (see the top of this file); appends its JSON to RESULTS.
run() {
    local name=$1 n=$2 sample=$3
    local dir="$WORK/$name" expect_status load list t0 t_listed t_first t_all t_status i st
    K8S_DIR="$dir/k8s"
    k8s_start "$K8S_DIR" >/dev/null
    k8s_crds "$K8S_DIR" >/dev/null
    load=$("$PY" "$TOOL" load "$K8S_DIR" --gateways "$n" --routes "$ROUTES")
    list=$("$PY" "$TOOL" list "$K8S_DIR")

    psql "$PG_BASE/postgres" -qc "CREATE DATABASE bench_$name" >/dev/null
    export SEXTANT_DATABASE_URL="$PG_BASE/bench_$name"
    "$SEXTANT_BIN" migrate >"$WORK/migrate.log" 2>&1
    HTTP_PORT=$(svc_free_port)
    GRPC_PORT=$(svc_free_port)
    t0=$(now_s)
    SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT" SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT" \
        SEXTANT_REPLICA_ID="bench-$name" SEXTANT_AUTH_ENABLED=false SEXTANT_HTTP_UI_DIR="" \
        SEXTANT_K8S_ENABLED=true SEXTANT_K8S_KUBECONFIG="$K8S_DIR/kubeconfig" \
        "$SEXTANT_BIN" serve >"$WORK/serve.log" 2>&1 &
    SERVE_PID=$!

    # Every group's snapshot written: one per Gateway in the (fresh) database.
    for ((i = 0; ; i++)); do
        st=$(psql "$SEXTANT_DATABASE_URL" -Atc "SELECT count(DISTINCT group_name) FROM snapshots" 2>/dev/null || echo 0)
        [ "${st:-0}" -ge "$n" ] && break
        kill -0 "$SERVE_PID" 2>/dev/null || { echo "k8s_translate: sextant serve exited" >&2; return 1; }
        [ "$i" -lt $((TIMEOUT * 10)) ] || { echo "k8s_translate: $name: only $st of $n groups have a snapshot after ${TIMEOUT}s" >&2; return 1; }
        sleep 0.1
    done
    read -r t_first t_all < <(psql "$SEXTANT_DATABASE_URL" -AtF' ' -c \
        "SELECT extract(epoch FROM min(created_at)), extract(epoch FROM max(created_at)) FROM snapshots")
    local hwm_snap cpu_snap
    hwm_snap=$(kb "$SERVE_PID" VmHWM)
    cpu_snap=$(cpu_s "$SERVE_PID")
    # Every status written: the GatewayClass, each Gateway and each HTTPRoute once.
    expect_status=$((1 + n + n * ROUTES))
    for ((i = 0; ; i++)); do
        st=$(metric sextant_k8s_status_writes_total result=written)
        [ "${st%.*}" -ge "$expect_status" ] && break
        [ "$i" -lt $((TIMEOUT * 20)) ] || { echo "k8s_translate: $name: $st of $expect_status statuses written after ${TIMEOUT}s" >&2; return 1; }
        sleep 0.05
    done
    t_status=$(now_s)
    t_listed=$(log_time "every watched kind is listed; translating") || t_listed=$t0
    local hwm_init cpu_init api_cpu tr_sum0 tr_count0 tr_sum tr_count rss_idle
    hwm_init=$(kb "$SERVE_PID" VmHWM)
    cpu_init=$(cpu_s "$SERVE_PID")
    api_cpu=$(cpu_s "$(cat "$K8S_DIR/apiserver.pid")")
    tr_sum0=$(metric sextant_k8s_translation_seconds_sum)
    tr_count0=$(metric sextant_k8s_translation_seconds_count)
    rss_idle=$(kb "$SERVE_PID" VmRSS)
    # The statuses come back as watch events, which start one more pass over every
    # Gateway (each unchanged): let it end before timing changes.
    for ((i = 0; ; i++)); do
        st=$(metric sextant_k8s_config_writes_total)
        [ "${st%.*}" -ge $((2 * n)) ] && break
        [ "$i" -lt $((TIMEOUT * 20)) ] || { echo "k8s_translate: $name: no second pass over the Gateways after ${TIMEOUT}s" >&2; return 1; }
        sleep 0.05
    done
    tr_sum=$(metric sextant_k8s_translation_seconds_sum)
    tr_count=$(metric sextant_k8s_translation_seconds_count)

    local ch
    ch=$("$PY" "$TOOL" changes "$K8S_DIR" --gateways "$n" --routes "$ROUTES" --sample "$sample" \
        --changes "$CHANGES" --metrics "http://127.0.0.1:$HTTP_PORT/metrics" --work "$dir" \
        --timeout "$TIMEOUT" --client "$BENCH_BIN" --target "127.0.0.1:$GRPC_PORT" 2>"$WORK/changes.err") ||
        { cat "$WORK/changes.err" >&2; return 1; }
    local lat pass hwm_end tr_sum2 tr_count2 warns
    lat=$(jq -r '.latency[]' <<<"$ch" | percentiles)
    pass=$(jq -r '.pass[]' <<<"$ch" | percentiles)
    hwm_end=$(kb "$SERVE_PID" VmHWM)
    tr_sum2=$(metric sextant_k8s_translation_seconds_sum)
    tr_count2=$(metric sextant_k8s_translation_seconds_count)
    # (auth.enabled=false and xds.auth none warn once at start: not counted)
    warns=$(grep -E '"level": ?"(warn|error)"' "$WORK/serve.log" | grep -Evc '"component": ?"auth"|"auth": ?"none"' || true)
    bench_stop_pid k8s_translate "$SERVE_PID" 30
    SERVE_PID=
    cp "$WORK/serve.log" "$WORK/serve-$name.log"
    k8s_stop "$K8S_DIR"
    K8S_DIR=

    local r
    r=$(jq -n --arg name "$name" --argjson gateways "$n" --argjson routes "$ROUTES" \
        --argjson load "$load" --argjson list "$list" \
        --argjson listed "$(sub "$t_listed" "$t0")" --argjson first "$(sub "$t_first" "$t0")" \
        --argjson all "$(sub "$t_all" "$t0")" --argjson status "$(sub "$t_status" "$t0")" \
        --argjson hwm_snap "$hwm_snap" --argjson hwm_init "$hwm_init" --argjson hwm_end "$hwm_end" \
        --argjson rss_idle "$rss_idle" --argjson cpu_snap "$cpu_snap" --argjson cpu_init "$cpu_init" \
        --argjson api_cpu "$api_cpu" --argjson tr_sum "$tr_sum" --argjson tr_count "$tr_count" \
        --argjson tr_sum0 "$tr_sum0" --argjson tr_count0 "$tr_count0" \
        --argjson tr_sum2 "$tr_sum2" --argjson tr_count2 "$tr_count2" --argjson warns "$warns" \
        --argjson changes "$ch" --arg lat "$lat" --arg pass "$pass" '
        ($lat | split(" ") | map(tonumber? // null)) as $l | ($pass | split(" ") | map(tonumber? // null)) as $p |
        {name: $name, gateways: $gateways, httproutes: ($gateways * $routes), services: ($gateways * $routes),
         endpointslices: ($gateways * $routes), objects_in_api_server: $list.objects,
         load_seconds: $load.seconds,
         list_floor: {seconds: $list.seconds, bytes: $list.bytes},
         initial: {listed_s: $listed, first_snapshot_s: $first, all_snapshots_s: $all, all_status_s: $status,
                   peak_rss_kb_at_snapshots: $hwm_snap, peak_rss_kb: $hwm_init, sextant_cpu_s_at_snapshots: $cpu_snap,
                   sextant_cpu_s: $cpu_init, apiserver_cpu_s: $api_cpu,
                   translations: $tr_count0, translation_s_mean: (if $tr_count0 > 0 then $tr_sum0 / $tr_count0 else null end)},
         change: {streams: $changes.streams, changes: $changes.changes, connect_s: $changes.connect_seconds,
                  to_client_s: {p50: $l[0], p99: $l[1], max: $l[2]}, pass_s: {p50: $p[0], p99: $p[1], max: $p[2]},
                  passes: ($tr_count2 - $tr_count),
                  translation_s_mean: (if $tr_count2 > $tr_count then ($tr_sum2 - $tr_sum) / ($tr_count2 - $tr_count) else null end),
                  latencies_s: $changes.latency, client: $changes.client},
         rss_kb_idle: $rss_idle, peak_rss_kb_end: $hwm_end, log_warn_error: $warns}')
    RESULTS+=("$r")
    jq -r '"\(.name): \(.gateways) Gateways, \(.httproutes) HTTPRoutes, \(.services) Services, \(.endpointslices) EndpointSlices (\(.objects_in_api_server) objects; created in \(.load_seconds)s)",
        "\(.name) list_floor=\(.list_floor.seconds)s (\(.list_floor.bytes / 1e6 | . * 10 | round / 10) MB, every watched kind at once, pages of 500)",
        "\(.name) from_start listed=\(.initial.listed_s)s first_snapshot=\(.initial.first_snapshot_s)s all_snapshots=\(.initial.all_snapshots_s)s all_status=\(.initial.all_status_s)s",
        "\(.name) sextant peak_rss=\(.initial.peak_rss_kb / 1024 | floor)MB (at all_snapshots \(.initial.peak_rss_kb_at_snapshots / 1024 | floor)MB, after the changes \(.peak_rss_kb_end / 1024 | floor)MB) cpu=\(.initial.sextant_cpu_s)s (apiserver \(.initial.apiserver_cpu_s)s) translations=\(.initial.translations) translation_mean=\(.initial.translation_s_mean * 1000 | round)ms",
        "\(.name) change->client streams=\(.change.streams) changes=\(.change.changes) (passes \(.change.passes)) p50=\(.change.to_client_s.p50)s p99=\(.change.to_client_s.p99)s max=\(.change.to_client_s.max)s; whole pass p50=\(.change.pass_s.p50)s p99=\(.change.pass_s.p99)s; translation_mean=\(.change.translation_s_mean * 1000 | round)ms; log warn/error lines: \(.log_warn_error)"' <<<"$r"
}

run floor 1 1
run full "$GATEWAYS" "$SAMPLE"

FLOOR=${RESULTS[0]}
FULL=${RESULTS[1]}
f() { jq -r "$2" <<<"$1"; }
echo "full/floor all_snapshots=$(ratio "$(f "$FULL" .initial.all_snapshots_s)" "$(f "$FLOOR" .initial.all_snapshots_s)")x" \
    "all_snapshots/list_floor=$(ratio "$(f "$FULL" .initial.all_snapshots_s)" "$(f "$FULL" .list_floor.seconds)")x" \
    "peak_rss=$(ratio "$(f "$FULL" .initial.peak_rss_kb)" "$(f "$FLOOR" .initial.peak_rss_kb)")x" \
    "change_p50=$(ratio "$(f "$FULL" .change.to_client_s.p50)" "$(f "$FLOOR" .change.to_client_s.p50)")x" \
    "change_p99=$(ratio "$(f "$FULL" .change.to_client_s.p99)" "$(f "$FLOOR" .change.to_client_s.p99)")x"

mkdir -p "$(dirname "$JSON_OUT")"
jq -n --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(nproc) cores, $(uname -sr)" \
    --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --arg version "$("$SEXTANT_BIN" version 2>/dev/null | head -n 1)" \
    --argjson floor "$FLOOR" --argjson full "$FULL" '
    {benchmark: "k8s_translate", at: $at, host: $host, loadavg_at_end: $load, sextant: $version,
     floor: $floor, full: $full,
     ratios: {all_snapshots_full_over_floor: ($full.initial.all_snapshots_s / $floor.initial.all_snapshots_s),
              all_snapshots_over_list_floor: ($full.initial.all_snapshots_s / $full.list_floor.seconds),
              peak_rss_full_over_floor: ($full.initial.peak_rss_kb / $floor.initial.peak_rss_kb),
              change_p50_full_over_floor: (if $floor.change.to_client_s.p50 > 0 then $full.change.to_client_s.p50 / $floor.change.to_client_s.p50 else null end),
              change_p99_full_over_floor: (if $floor.change.to_client_s.p99 > 0 then $full.change.to_client_s.p99 / $floor.change.to_client_s.p99 else null end)}}' >"$JSON_OUT"
echo "# JSON: $JSON_OUT"

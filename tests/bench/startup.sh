#!/usr/bin/env bash
# startup.sh — how long a replica takes to be ready with a large fleet in its database.
#
# Starts its own PostgreSQL and Redis (tests/lib/services.sh) in a scratch folder,
# migrates, and measures `sextant serve` from its start until GET /readyz answers 200
# (every component ready: snapshots loaded, gRPC serving, the database reachable), twice:
# first with the empty database (the floor: the process, the listeners, the migrations
# check), then with GROUPS proxy groups, each holding two snapshot versions of a
# 100-cluster, 1,000-endpoint snapshot (tests/bench/xds_fanout_snapshot.py), and NODES
# proxies known to the fleet, every one of them pinned by a deployment to the older
# version of its group (node_status.desired_snapshot_version). Redis is flushed before
# each start so the snapshots come from PostgreSQL. Also reports the replica's RSS once
# ready. Prints plain lines and writes JSON (tests/out/bench/startup.json).
#
#   tests/bench/startup.sh                        # 1,000 groups, 10,000 pinned nodes, 3 starts
#   tests/bench/startup.sh --groups 10 --nodes 100 --runs 1   # smoke test
#
# SEXTANT_BIN names the binary (default build-release/sextant, built when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NGROUPS=1000
NODES=10000
RUNS=3
JSON_OUT=$ROOT/tests/out/bench/startup.json

usage() {
    cat <<'TXT'
usage: tests/bench/startup.sh [--groups N] [--nodes N] [--runs N] [--json FILE]
  --groups  proxy groups with snapshots in the database (default 1000)
  --nodes   proxies in the fleet, each pinned to its group's older version (default 10000)
  --runs    starts measured per database (default 3; the figures are the median)
  --json    where the figures go (default tests/out/bench/startup.json)
Environment: SEXTANT_BIN (default build-release/sextant).
TXT
}
# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_options "--groups=NGROUPS --nodes=NODES --runs=RUNS --json=JSON_OUT" "$@"
bench_numbers startup "$NGROUPS" "$NODES" "$RUNS"
[ "$NGROUPS" -ge 1 ] && [ "$RUNS" -ge 1 ] || { usage >&2; exit 2; }
bench_binaries startup sextant

WORK=$(bench_workdir startup)
SERVE_PID=
cleanup() { bench_finish startup $? "$SERVE_PID"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_database "$WORK"
HTTP_PORT=$(svc_free_port)
GRPC_PORT=$(svc_free_port)
export SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT" SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT"
export SEXTANT_LOG_LEVEL=warn
"$SEXTANT_BIN" migrate >"$WORK/migrate.log" 2>&1
PSQL=(psql "$SEXTANT_DATABASE_URL" -qtAX -v ON_ERROR_STOP=1)

# start_once: one start of `sextant serve`; prints "SECONDS RSS_KB" once /readyz is 200.
start_once() {
    local t0 t1 code i
    redis-cli -u "$SEXTANT_REDIS_URL" flushall >/dev/null
    t0=$(date +%s%N)
    "$SEXTANT_BIN" serve >"$WORK/serve.log" 2>&1 &
    SERVE_PID=$!
    for ((i = 0; i < 12000; i++)); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/readyz" || true)
        [ "$code" = 200 ] && break
        kill -0 "$SERVE_PID" 2>/dev/null || { echo "startup: sextant serve exited" >&2; return 1; }
        sleep 0.005
    done
    [ "$code" = 200 ] || { echo "startup: not ready after 60 s" >&2; return 1; }
    t1=$(date +%s%N)
    local rss
    rss=$(bench_rss_kb "$SERVE_PID")
    bench_stop_pid startup "$SERVE_PID" 60
    SERVE_PID=
    awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN { printf "%.3f %d\n", (b - a) / 1e9, r }'
}

# measure LABEL: RUNS starts; prints each and sets MEDIAN_S and MEDIAN_RSS.
measure() {
    local label=$1 r out times=() rsss=()
    for ((r = 1; r <= RUNS; r++)); do
        out=$(start_once) || exit 1
        echo "$label start=$r ready_s=${out% *} rss_kb=${out#* }"
        times+=("${out% *}")
        rsss+=("${out#* }")
    done
    MEDIAN_S=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    MEDIAN_RSS=$(printf '%s\n' "${rsss[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
}

echo "# sextant startup benchmark: $(nproc) CPUs, $NGROUPS groups, $NODES pinned nodes, $RUNS starts each"
measure "empty"
FLOOR_S=$MEDIAN_S FLOOR_RSS=$MEDIAN_RSS

# The fleet: group g-0 gets two real snapshots through `sextant publish`; the other
# groups get copies of those rows (the same IR and encoded bytes under their own name),
# then the nodes, each pinned to version 1 of its group.
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" 1000 0 >"$WORK/snap0.json"
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" 1000 1 >"$WORK/snap1.json"
bench_publish g-0 "$WORK/snap0.json" >/dev/null
bench_publish g-0 "$WORK/snap1.json" >/dev/null
t_fill=$(date +%s)
"${PSQL[@]}" -v groups="$NGROUPS" -v nodes="$NODES" <<'SQL'
BEGIN;
INSERT INTO proxy_groups (name, latest_snapshot_version, current_snapshot_version)
SELECT 'g-' || g, 2, 2 FROM generate_series(1, :groups - 1) AS g;
INSERT INTO snapshots (group_name, version, ir, encoded, checksum, source_versions, reason, created_by)
SELECT 'g-' || g, s.version, s.ir, s.encoded, s.checksum, s.source_versions, s.reason, s.created_by
FROM generate_series(1, :groups - 1) AS g, snapshots s WHERE s.group_name = 'g-0';
INSERT INTO proxy_nodes (node_id, group_name, client, connected)
SELECT 'node-' || n, 'g-' || (n % :groups), 'envoy/1.30.1', false FROM generate_series(0, :nodes - 1) AS n;
INSERT INTO node_status (node_id, desired_snapshot_version, desired_group)
SELECT 'node-' || n, 1, 'g-' || (n % :groups) FROM generate_series(0, :nodes - 1) AS n;
COMMIT;
ANALYZE;
SQL
echo "# fleet written in $(($(date +%s) - t_fill)) s: $("${PSQL[@]}" -c 'SELECT count(*) FROM snapshots') snapshots, $("${PSQL[@]}" -c 'SELECT count(*) FROM node_status WHERE desired_snapshot_version IS NOT NULL') pinned nodes"
measure "groups=$NGROUPS pinned_nodes=$NODES"
ratio=$(awk -v a="$MEDIAN_S" -v b="$FLOOR_S" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "null" }')
echo "startup groups=$NGROUPS pinned_nodes=$NODES ready_s=$MEDIAN_S rss_kb=$MEDIAN_RSS empty_ready_s=$FLOOR_S ratio_to_empty=$ratio (target: < 2 s)"
mkdir -p "$(dirname "$JSON_OUT")"
jq -cn --argjson groups "$NGROUPS" --argjson nodes "$NODES" --argjson runs "$RUNS" \
    --argjson ready "$MEDIAN_S" --argjson rss "$MEDIAN_RSS" --argjson fready "$FLOOR_S" \
    --argjson frss "$FLOOR_RSS" --argjson ratio "$ratio" \
    '{groups: $groups, pinned_nodes: $nodes, runs: $runs,
      fleet: {ready_s: $ready, rss_kb: $rss}, empty: {ready_s: $fready, rss_kb: $frss},
      ratio_to_empty: $ratio}' >"$JSON_OUT"

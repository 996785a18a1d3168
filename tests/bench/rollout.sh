#!/usr/bin/env bash
# rollout.sh — rolling deployment benchmark: how long a rolling deployment over N ADS
# streams in W waves with no pause takes from its POST to `completed`, and how soon after
# each wave's last ACK the wave completes.
#
# Starts its own PostgreSQL (with pg_stat_statements, to count statements) and Redis in a
# scratch folder, migrates, starts `sextant serve` (REST with a token, rollouts.tick and
# nodes.flush_interval as configured), creates config "bench/rollout" in group "bench"
# (tests/bench/xds_fanout_snapshot.py, 100 clusters, 1,000 endpoints), connects N streams
# from bench_xds_fanout (one HTTP/2 connection each, CDS wildcard + EDS of the 100
# clusters, every response ACKed), waits until node_status holds every node's ACK, saves
# version 2 as a draft (the first cluster's endpoints moved), then takes the time and
# POSTs /apply with {"type": "rolling", "wave_percent": 100/W} and no pause. It polls the
# deployment until it is completed and reads, from the client, when each stream received
# the new version (its ACK leaves at once), so for each wave: last arrival → wave
# completed_at (the driver's and the node-status flush's share), and the statements
# PostgreSQL ran for the whole deployment, in all and those that write node_status or
# events. Prints plain lines and writes one JSON object (tests/out/bench/rollout.json).
#
#   tests/bench/rollout.sh                          # 10,000 streams, 10 waves
#   tests/bench/rollout.sh --streams 100 --waves 2  # smoke test
#   tests/bench/rollout.sh --perf perf.data         # and profile the server during the deployment
#
# SEXTANT_BIN and BENCH_BIN name the binaries (default build-release/sextant and
# build-release/bench_xds_fanout, built with cmake when missing). SEXTANT_ROLLOUTS_TICK and
# SEXTANT_NODES_FLUSH_INTERVAL, when set, reach the server (defaults 1s and 1s).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STREAMS=10000
WAVES=10
TIMEOUT=600
JSON_OUT=$ROOT/tests/out/bench/rollout.json
PERF_OUT=

usage() {
    cat <<'TXT'
usage: tests/bench/rollout.sh [--streams N] [--waves W] [--timeout S] [--json FILE] [--perf FILE]
  --streams   ADS streams, each a node of group "bench" (default 10000; at most 19000)
  --waves     waves of the rolling deployment, no pause between them (default 10)
  --timeout   longest wait for the streams to connect and for the deployment (default 600)
  --json      where the figures go (default tests/out/bench/rollout.json)
  --perf      record the server with `perf record -g --call-graph dwarf` from the POST
              until the deployment completed, into FILE (build with -fno-omit-frame-pointer -g)
Environment: SEXTANT_BIN, BENCH_BIN; SEXTANT_ROLLOUTS_TICK, SEXTANT_NODES_FLUSH_INTERVAL.
TXT
}

# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_options "--streams=STREAMS --waves=WAVES --timeout=TIMEOUT --json=JSON_OUT --perf=PERF_OUT" "$@"
bench_numbers rollout "$STREAMS" "$WAVES" "$TIMEOUT"
[ "$WAVES" -ge 1 ] && [ "$WAVES" -le 100 ] || { echo "rollout: --waves is 1..100" >&2; exit 2; }
bench_binaries rollout bench_xds_fanout

WORK=$(bench_workdir rollout)
bench_stream_traps rollout PERF_PID CLIENT_PID SERVE_PID

# ---------------------------------------------------------------- services
# pg_stat_statements counts what the deployment costs PostgreSQL, statement by statement.
bench_services --pg-statements
sql() { psql "$SEXTANT_DATABASE_URL" -qtAXc "$1"; }

export SEXTANT_AUTH_ENABLED=true SEXTANT_AUTH_HS256_SECRET="bench-rollout-secret-0123456789abcdef"
TOKEN=$("$SEXTANT_BIN" token --user bench --role admin --ttl 2h)
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" 1000 0 >"$WORK/v1.json"
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" 1000 2 >"$WORK/v2.json"
python3 "$ROOT/tests/bench/xds_fanout_snapshot.py" --eds-names >"$WORK/eds.txt"

bench_serve rollout bench "$WORK/serve.log" || exit 1
HTTP=$SERVE_HTTP GRPC=$SERVE_GRPC

# rest METHOD PATH [BODY_FILE]: the body goes to $WORK/body; prints the status.
rest() {
    local data=()
    [ $# -gt 2 ] && data=(-H 'Content-Type: application/json' --data-binary "@$3")
    curl -s -o "$WORK/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN" \
        "${data[@]}" "http://127.0.0.1:$HTTP$2"
}
jq -n --slurpfile s "$WORK/v1.json" '{namespace: "bench", name: "rollout", groups: ["bench"], spec: $s[0]}' >"$WORK/create.json"
st=$(rest POST /api/v1/configs "$WORK/create.json")
[ "$st" = 201 ] || { echo "rollout: creating the config answered $st: $(cat "$WORK/body")" >&2; exit 1; }
CONFIG=$(jq -r .id "$WORK/body")
V1=$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = 'bench'")


bench_machine
echo "# rollouts.tick=${SEXTANT_ROLLOUTS_TICK:-1s} nodes.flush_interval=${SEXTANT_NODES_FLUSH_INTERVAL:-1s}; clients in their own process, one HTTP/2 connection per stream"

# ---------------------------------------------------------------- streams
mkfifo "$WORK/ctl"
"$BENCH_BIN" --target "127.0.0.1:$GRPC" --streams "$STREAMS" --group bench --node-prefix node \
    --timeout "$TIMEOUT" --eds-names "$WORK/eds.txt" --changed eds --arrivals "$WORK/arrivals" \
    <"$WORK/ctl" >"$WORK/client.out" 2>"$WORK/client.err" &
CLIENT_PID=$!
exec 7>"$WORK/ctl"
bench_wait_line "$WORK/client.out" '^(ready|error)' $((TIMEOUT + 30)) "$CLIENT_PID" && grep -q '^ready' "$WORK/client.out" ||
    { echo "rollout: the streams did not all receive version $V1" >&2; cat "$WORK/client.out" >&2; exit 1; }
for ((i = 0; i < TIMEOUT * 10; i++)); do
    [ "$(sql "SELECT count(*) FROM node_status WHERE acked_snapshot_version = $V1")" = "$STREAMS" ] && break
    sleep 0.1
done
[ "$i" -lt $((TIMEOUT * 10)) ] || { echo "rollout: node_status did not record every ACK of $V1" >&2; exit 1; }
echo "streams=$STREAMS connected and recorded at version $V1 ($(grep '^ready' "$WORK/client.out" | cut -d' ' -f3)s to connect)"

jq -n --slurpfile s "$WORK/v2.json" '{spec: $s[0], draft: true, message: "one cluster moves"}' >"$WORK/draft.json"
st=$(rest PUT "/api/v1/configs/$CONFIG" "$WORK/draft.json")
[ "$st" = 200 ] || { echo "rollout: saving the draft answered $st: $(cat "$WORK/body")" >&2; exit 1; }
PCT=$(((100 + WAVES - 1) / WAVES))
jq -n --argjson p "$PCT" '{version: 2, strategy: {type: "rolling", wave_percent: $p}, reason: "bench"}' >"$WORK/apply.json"

# ---------------------------------------------------------------- the deployment
sql "SELECT pg_stat_statements_reset()" >/dev/null
if [ -n "$PERF_OUT" ]; then
    perf record -q -g --call-graph dwarf,16384 -F 199 -o "$PERF_OUT" -p "$SERVE_PID" 2>"$WORK/perf.log" &
    PERF_PID=$!
    sleep 1 # perf attaches to every thread before it counts
fi
T0_WALL=$(date +%s.%N)
T0=$("$BENCH_BIN" --now)
st=$(rest POST "/api/v1/configs/$CONFIG/apply" "$WORK/apply.json")
[ "$st" = 201 ] || { echo "rollout: apply answered $st: $(cat "$WORK/body")" >&2; exit 1; }
DEP=$(jq -r .id "$WORK/body")
echo "go $T0" >&7
STATE=
for ((i = 0; i < TIMEOUT * 10; i++)); do
    st=$(rest GET "/api/v1/deployments/$DEP")
    STATE=$(jq -r .state "$WORK/body")
    case "$STATE" in completed | failed | rolled_back | rollback_failed | canceled) break ;; esac
    sleep 0.1
done
cp "$WORK/body" "$WORK/deployment.json"
if [ -n "$PERF_PID" ]; then
    kill -INT "$PERF_PID" 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    PERF_PID=
    echo "perf: $PERF_OUT (perf report -i $PERF_OUT --no-children)"
fi
[ "$STATE" = completed ] || { echo "rollout: the deployment ended $STATE: $(jq -c '{state, state_reason}' "$WORK/deployment.json")" >&2; exit 1; }
bench_wait_line "$WORK/client.out" '^(done|error)' 60 "$CLIENT_PID" && grep -q '^done' "$WORK/client.out" ||
    { echo "rollout: the client did not see every stream move" >&2; exit 1; }

# Statements PostgreSQL ran from the POST until now, in all and those writing node_status
# or events (the flushes of the ACKs and the events they record).
STATEMENTS=$(sql "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements")
STATUS_WRITES=$(sql "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
    WHERE query ~* '^\s*(with\s.*)?(update|insert into)\s+(node_status|events)\M' OR query ~* 'update node_status|insert into events'")

# Per wave: its nodes' last arrival (wall clock: T0_WALL + seconds) and completed_at.
jq -r '.waves[] | "\(.index) \(.started_at) \(.completed_at) \(.node_ids | join(","))"' "$WORK/deployment.json" >"$WORK/waves"
jq -r '"\(.created_at) \(.started_at) \(.finished_at)"' "$WORK/deployment.json" >"$WORK/times"
python3 - "$WORK/waves" "$WORK/arrivals" "$T0_WALL" "$WORK/times" >"$WORK/summary" <<'PY'
import sys
from datetime import datetime
def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
waves_f, arrivals_f, t0, times_f = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
arr = {}
for line in open(arrivals_f):
    node, sec = line.split()
    arr[node] = t0 + float(sec)
lags = []
for line in open(waves_f):
    idx, started, completed, nodes = line.split(" ", 3)
    nodes = nodes.strip().split(",")
    last = max(arr[n] for n in nodes if n in arr)
    got = sum(1 for n in nodes if n in arr)
    lag = ts(completed) - last
    lags.append(lag)
    print("wave index=%s nodes=%d received=%d started=+%.2fs last_arrival=+%.2fs completed=+%.2fs completed_after_last_ack=%.2fs"
          % (idx, len(nodes), got, ts(started) - t0, last - t0, ts(completed) - t0, lag))
created, started, finished = open(times_f).read().split()
print("total start_to_completed=%.2f max_completed_after_last_ack=%.2f mean_completed_after_last_ack=%.2f"
      % (ts(finished) - t0, max(lags), sum(lags) / len(lags)))
PY
sed 's/^/rollout /' "$WORK/summary"
TOTAL=$(sed -n 's/^total start_to_completed=\([0-9.]*\) .*/\1/p' "$WORK/summary")
MAXLAG=$(sed -n 's/.* max_completed_after_last_ack=\([0-9.-]*\) .*/\1/p' "$WORK/summary")
MEANLAG=$(sed -n 's/.* mean_completed_after_last_ack=\([0-9.-]*\)$/\1/p' "$WORK/summary")
echo "rollout streams=$STREAMS waves=$WAVES start_to_completed=${TOTAL}s max_wave_completed_after_last_ack=${MAXLAG}s statements=$STATEMENTS node_status_and_event_writes=$STATUS_WRITES"

mkdir -p "$(dirname "$JSON_OUT")"
jq -n --argjson streams "$STREAMS" --argjson waves "$WAVES" --argjson total "$TOTAL" \
    --argjson maxlag "$MAXLAG" --argjson meanlag "$MEANLAG" --argjson stmts "$STATEMENTS" \
    --argjson writes "$STATUS_WRITES" --arg tick "${SEXTANT_ROLLOUTS_TICK:-1s}" \
    --arg flush "${SEXTANT_NODES_FLUSH_INTERVAL:-1s}" \
    --argjson per_wave "$(grep '^wave ' "$WORK/summary" | sed 's/.*completed_after_last_ack=\([0-9.-]*\)s$/\1/' | jq -s .)" \
    '{streams: $streams, waves: $waves, rollouts_tick: $tick, nodes_flush_interval: $flush,
      start_to_completed_s: $total, wave_completed_after_last_ack_s: {max: $maxlag, mean: $meanlag, per_wave: $per_wave},
      statements: {all: $stmts, node_status_and_events_writes: $writes}}' >"$JSON_OUT"

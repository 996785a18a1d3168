#!/usr/bin/env bash
# api.sh — REST API benchmark: sustained requests per second and
# p50/p90/p99 latency of GET /api/v1/configs/{id} and of PUT /api/v1/configs/{id} (each
# PUT a new version: validation against the group's other configs, the version, the
# group's snapshot recomposed and encoded, the audit row and the NOTIFY in one
# transaction, then the cache), with 1 and 8 concurrent clients.
#
# Starts its own PostgreSQL and Redis (tests/lib/services.sh) in a scratch folder,
# migrates, starts one `sextant serve` with JWT auth on and rate limits out of the way,
# mints a token with `sextant token`, and runs bench_api_load (tests/bench/api_load.c)
# for each (operation, clients) pair. The PUT clients each own one config of the same
# proxy group, so concurrent PUTs queue on the group's row lock as real writers do;
# then --groups clients write to as many groups side by side (each group with the same
# other configs). Prints one line per run and writes them as JSON lines
# (tests/out/bench/api.json); everything it started is stopped on exit.
#
#   tests/bench/api.sh                       # GET and PUT, 1 and 8 clients, 10 s each; 8 groups
#   tests/bench/api.sh --seconds 3 --clients 1,4 --groups 0
#
# SEXTANT_BIN and BENCH_BIN name the binaries (default build-release/sextant and
# build-release/bench_api_load, built with cmake when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_PER_RUN=10
CLIENTS="1,8"
CONFIGS=20 # other configs in the group, so composing is not trivially small
NGROUPS=8   # the run over several groups: one client per group (0: no such run)
JSON_OUT=$ROOT/tests/out/bench/api.json

usage() {
    cat <<'TXT'
usage: tests/bench/api.sh [--seconds S] [--clients N[,N...]] [--configs N] [--groups N]
                          [--json FILE]
  --seconds   length of each run (default 10)
  --clients   concurrent clients per run (default 1,8)
  --configs   other configs in the PUT clients' group (default 20)
  --groups    one more PUT run: N clients, each on a group of its own (default 8; 0: none)
  --json      where the figures go, one JSON object per run (default tests/out/bench/api.json)
Environment: SEXTANT_BIN, BENCH_BIN (default build-release/sextant, build-release/bench_api_load).
TXT
}
# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_options "--seconds=SECONDS_PER_RUN --clients=CLIENTS --configs=CONFIGS --groups=NGROUPS --json=JSON_OUT" "$@"
bench_numbers "api bench" "$SECONDS_PER_RUN" ${CLIENTS//,/ } "$CONFIGS" "$NGROUPS"
bench_binaries "api bench" bench_api_load

# ---------------------------------------------------------------- services
WORK=$(bench_workdir api)
SERVE_PID=
cleanup() { bench_finish "api bench" $? "$SERVE_PID"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_database "$WORK"
export SEXTANT_AUTH_ENABLED=true SEXTANT_AUTH_HS256_SECRET="bench-secret-0123456789abcdef-0123456789"
export SEXTANT_RATELIMIT_READ_RATE=1000000 SEXTANT_RATELIMIT_READ_BURST=1000000
export SEXTANT_RATELIMIT_AUTH_FAIL_RATE=1000000 SEXTANT_RATELIMIT_AUTH_FAIL_BURST=1000000
export SEXTANT_RATELIMIT_WRITE_RATE=1000000 SEXTANT_RATELIMIT_WRITE_BURST=1000000
export SEXTANT_LOG_LEVEL=warn
"$SEXTANT_BIN" migrate >"$WORK/migrate.log" 2>&1
bench_serve "api bench" api "$WORK/serve.log" || exit 1
HTTP_PORT=$SERVE_HTTP
TOKEN=$("$SEXTANT_BIN" token --user bench --role admin --ttl 2h)

# The group's other configs, and the config the GET runs read.
spec() { # spec I: a config of its own listener, host, route and backend
    printf '{"listeners":[{"name":"o%s","address":"0.0.0.0","port":%s,"protocol":"LISTENER_PROTOCOL_HTTP","hostnames":["o%s.example"],"attached_routes":["o%s"]}],"http_routes":[{"name":"o%s","namespace":"bench","hostnames":["o%s.example"],"rules":[{"matches":[{"path":"/","path_type":"PathPrefix"}],"backend_refs":[{"name":"o%s","namespace":"bench","port":8080}]}]}],"backends":[{"name":"o%s","namespace":"bench","protocol":"http","connect_timeout":"1s","endpoints":[{"address":"10.0.0.1","port":8080},{"address":"10.0.0.2","port":8080}]}]}' \
        "$1" $((32000 + $1)) "$1" "$1" "$1" "$1" "$1" "$1"
}
others() { # others GROUP: the group's CONFIGS other configs; prints the first one's id
    local first= id i
    for i in $(seq 1 "$CONFIGS"); do
        id=$(curl -s -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
            --data-binary "{\"namespace\":\"bench\",\"name\":\"other-$1-$i\",\"groups\":[\"$1\"],\"spec\":$(spec "$i")}" \
            "http://127.0.0.1:$HTTP_PORT/api/v1/configs" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
        [ -n "$id" ] || { echo "api bench: could not create config other-$1-$i" >&2; return 1; }
        first=${first:-$id}
    done
    echo "$first"
}
GET_ID=$(others bench)

# load LABEL ARGS...: one run of bench_api_load; prints its line and appends it as JSON.
mkdir -p "$(dirname "$JSON_OUT")"
rm -f "$JSON_OUT"
load() {
    local label=$1 line
    shift
    line=$("$BENCH_BIN" --port "$HTTP_PORT" --token "$TOKEN" --seconds "$SECONDS_PER_RUN" "$@")
    printf '%-34s %s\n' "$label" "$line"
    tr ' ' '\n' <<<"$line" | jq -R 'split("=") | {(.[0]): (.[1] | tonumber? // .)}' |
        jq -cs --arg run "$label" 'add + {run: $run}' >>"$JSON_OUT"
}

echo "# sextant REST API benchmark: $(nproc) CPUs, ${SECONDS_PER_RUN}s per run, group of $CONFIGS configs + the PUT clients'"
for c in ${CLIENTS//,/ }; do
    load 'GET /api/v1/configs/{id}' --mode get --config "$GET_ID" --clients "$c"
done
base=0
for c in ${CLIENTS//,/ }; do
    load 'PUT /api/v1/configs/{id} 1 group' --mode put --group bench --tag "c$c" --base "$base" --clients "$c"
    base=$((base + c))
done
if [ "$NGROUPS" -gt 0 ]; then
    for g in $(seq 0 $((NGROUPS - 1))); do others "bench-$g" >/dev/null; done
    load "PUT /api/v1/configs/{id} $NGROUPS groups" --mode put --group bench --groups "$NGROUPS" \
        --tag "g$NGROUPS" --base "$base" --clients "$NGROUPS"
fi
echo "# versions written: $(psql "$SEXTANT_DATABASE_URL" -qtAXc 'SELECT count(*) FROM config_versions'), snapshots of group bench: $(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT latest_snapshot_version FROM proxy_groups WHERE name = 'bench'")"

# lib.sh — what the tests of deploy/ share (sourced by tests/integration/deploy/test_*.sh):
# the defaults the binary itself reports, and `sextant serve` started with one of the
# configuration files deploy/ ships, with the environment a deployment would give it.
#
#   deploy_init NAME            WORK, a database (test_db) and Redis, free HTTP/gRPC ports
#   default_port KEY            the port of KEY's default (http.listen, grpc.listen), as
#                               `sextant serve --help` prints it
#   deploy_serve FILE [VAR=VALUE...]   `sextant serve --config FILE` with the database of
#                               deploy_init (SEXTANT_DATABASE_URL, as the deployment's secret
#                               gives it), the listen addresses moved to this test's ports,
#                               a JWT key file, and the given variables; waits for /readyz
#   deploy_serve_checked FILE WHAT KEYS [VAR=VALUE...]   deploy_serve as two checks: the
#                               daemon serving FILE (WHAT names it) becomes ready, and runs
#                               with every value of FILE but those of the keys matching the
#                               regex KEYS (config_matches)
#   effective_config            the daemon's configuration as it logged it (log.level debug),
#                               as JSON on stdout
#   file_keys FILE              every scalar of a configuration file as "key.path<TAB>value"

set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
# shellcheck source=tests/lib/shtest.sh
source "$SRC/tests/lib/shtest.sh"

PY=/usr/bin/python3 # Debian's, with python3-yaml and python3-kubernetes (tests/lib/deps.sh)
MANIFESTS="$SRC/tests/integration/deploy/manifests.py"
PID=

deploy_init() {
    work_init "deploy-$1" test_cleanup
    HTTP_PORT=$(free_port) || exit 1
    GRPC_PORT=$(free_port) || exit 1
    test_db "deploy_$1" || exit 1
    # the JWT key a deployment mounts from its secret
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/jwt-hs256"
}

default_port() {
    "$BIN" serve --help | awk -v k="$1" '$1 == k { sub(/\)$/, "", $4); n = split($4, a, ":"); print a[n] }'
}

# deploy_serve FILE [VAR=VALUE...]: `sextant serve --config FILE` as the deployment runs it:
# the file's own xds.auth, not the tests' default (tests/lib/shtest.sh).
deploy_serve() {
    local file=$1
    shift
    env -u SEXTANT_XDS_AUTH SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT" SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT" \
        SEXTANT_AUTH_HS256_SECRET_FILE="$WORK/jwt-hs256" SEXTANT_LOG_LEVEL=debug \
        SEXTANT_REPLICA_ID="deploy-test" "$@" \
        "${SX_ENV[@]}" "$BIN" serve --config "$file" >>"$WORK/serve.log" 2>&1 &
    PID=$!
    wait_for 20 listening "$HTTP_PORT" && wait_for 30 ready
}

deploy_serve_checked() {
    local file=$1 what=$2 keys=$3
    shift 3
    if deploy_serve "$file" "$@"; then
        pass "sextant serve with $what is ready"
    else
        fail "sextant serve with $what did not become ready: $(cat "$WORK/readyz.json" 2>/dev/null)"
    fi
    check "the daemon runs with every value of $what" config_matches "$file" "$keys"
}

effective_config() {
    "$PY" -c '
import json, sys
for line in open(sys.argv[1], errors="replace"):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("msg") == "effective configuration":
        print(json.dumps(j["config"]))
        break
' "$WORK/serve.log"
}

file_keys() {
    "$PY" -c '
import sys, yaml
def walk(prefix, v):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(prefix + [str(k)], x)
    else:
        print("%s\t%s" % (".".join(prefix), v if not isinstance(v, bool) else str(v).lower()))
walk([], yaml.safe_load(open(sys.argv[1])) or {})
' "$1"
}

# config_matches FILE SKIP_REGEX: every key FILE sets (not matching SKIP_REGEX, the ones the
# test overrides) has that value in the daemon's effective configuration.
config_matches() {
    local file=$1 skip=$2 eff key want got bad=0
    eff=$(effective_config)
    [ -n "$eff" ] || { echo "no effective configuration in the log" >&2; return 1; }
    while IFS=$'\t' read -r key want; do
        [[ $key =~ $skip ]] && continue
        got=$(jq -r --arg k "$key" 'getpath($k | split(".")) | if type == "array" then join(",") else tostring end' <<<"$eff")
        if [ "$got" != "$want" ]; then
            echo "$key: the file says $want, the daemon runs with $got" >&2
            bad=1
        fi
    done < <(file_keys "$file")
    return $bad
}

# probe PATH: the status of GET PATH on the running daemon.
probe() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$HTTP_PORT$1"
}

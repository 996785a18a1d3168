# harness.sh — what every browser test needs: a scratch folder, a database and Redis
# (the runner's, as tests/run.sh exports them, else private ones), `sextant serve` with
# JWT auth on, the built UI, real xDS clients in the background, REST calls for
# fixtures, and Chromium driven by playwright-core (tests/e2e/lib/browser.mjs). The
# cleanup stops everything it started, also on failure or Ctrl-C, and prints the tails
# of the logs when a check failed.
#
#   source "$SEXTANT_SOURCE_DIR/tests/e2e/lib/harness.sh"
#   e2e_init NAME                 # WORK, OUT (screenshots), node modules, UI build
#   e2e_services                  # database + Redis, migrated
#   SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve   # HTTP_PORT, GRPC_PORT, PID_serve
#   ADMIN=$(e2e_token alice admin)
#   st=$(e2e_rest "$ADMIN" POST /api/v1/configs "$json")   # status; body in $WORK/body
#   e2e_dataplane dp-1 GROUP      # a gateway.control.v1 data plane that ACKs
#   echo_backend A; e2e_grpc_client NODE GROUP LOG   # (tests/lib/shtest.sh: bg_run, jv, ...)
#   e2e_browser "$E2E/scenarios/viewer.mjs"   # runs the scenario; its checks count
#   finish
#
# Scenarios read SEXTANT_URL, E2E_OUT, CHROMIUM and whatever the test exports.

set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
E2E="$SRC/tests/e2e"
CONF="$SRC/tests/conformance"
export SEXTANT_BIN SEXTANT_SOURCE_DIR

# shellcheck source=tests/lib/shtest.sh
source "$SRC/tests/lib/shtest.sh"
# shellcheck source=tests/lib/ui.sh
source "$SRC/tests/lib/ui.sh"

WORK=
OUT=
E2E_NAME=

# e2e_init NAME: scratch folder, screenshot folder, cleanup trap, node modules, UI.
e2e_init() {
    E2E_NAME=$1
    work_init "e2e-$1" e2e_cleanup
    # Screenshots outlive the run: tests/out/e2e/<build>/ when tests/run.sh says so (it
    # runs the tests of two builds), else test-out/e2e/ in the build folder ctest runs in.
    if [ -n "${SEXTANT_TEST_OUT:-}" ]; then
        OUT="$SEXTANT_TEST_OUT/e2e/$(basename "$PWD")/$1"
    else
        OUT="$PWD/test-out/e2e/$1"
    fi
    rm -rf "$OUT"
    mkdir -p "$OUT"
    echo "screenshots and browser log: $OUT"
    npm_ready "$CONF" || exit 1
    npm_ready "$E2E" || exit 1
    ui_build "$SRC" || { echo "e2e: the web UI does not build" >&2; exit 1; }
    CHROMIUM=$(e2e_chromium) || exit 1
    export CHROMIUM
}

# e2e_chromium: the Chromium binary (Debian's package; `chromium` is a wrapper script).
e2e_chromium() {
    local c
    for c in "${CHROMIUM:-}" /usr/lib/chromium/chromium "$(command -v chromium 2>/dev/null)" \
        "$(command -v chromium-browser 2>/dev/null)"; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    echo "e2e: no Chromium found (apt-get install chromium; tests/lib/deps.sh lists it)" >&2
    return 1
}

e2e_cleanup() {
    local rc=$?
    if [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; then
        log_tails 20
        echo "screenshots and browser log: $OUT" >&2
    fi
    bg_stop_all
    test_db_drop
    [ -f "$WORK/browser.log" ] && cp "$WORK/browser.log" "$OUT/" 2>/dev/null
    # A failed run keeps every log (the daemons' too) beside its screenshots.
    if [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; then cp "$WORK"/*.log "$OUT/" 2>/dev/null; fi
    rm -rf "$WORK"
    exit "$rc"
}

# e2e_services: a fresh database (test_db: on the runner's PostgreSQL when tests/run.sh
# started one, else a private cluster), Redis, the environment of `sextant serve`,
# migrated.
e2e_services() {
    export SEXTANT_AUTH_ENABLED=true
    export SEXTANT_AUTH_HS256_SECRET="e2e-test-secret-0123456789abcdef-0123456789"
    export SEXTANT_REPLICA_ID="e2e-$E2E_NAME"
    # Browsers and xDS clients poll; the default per-user limits are not what is tested.
    export SEXTANT_RATELIMIT_READ_RATE=1000 SEXTANT_RATELIMIT_READ_BURST=1000
    export SEXTANT_RATELIMIT_WRITE_RATE=1000 SEXTANT_RATELIMIT_WRITE_BURST=1000
    export SEXTANT_RATELIMIT_AUTH_FAIL_RATE=1000 SEXTANT_RATELIMIT_AUTH_FAIL_BURST=1000
    test_db "e2e_$E2E_NAME"
}

# e2e_serve: `sextant serve` on fresh ports (HTTP_PORT, GRPC_PORT), waiting for
# /readyz; with UNREADY=1 only for the HTTP port (a daemon without its database).
e2e_serve() {
    HTTP_PORT=$(free_port) || return 1
    GRPC_PORT=$(free_port) || return 1
    SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT" SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT" \
        bg_run serve "${SX_ENV[@]}" "$BIN" serve
    if [ "${UNREADY:-0}" = 1 ]; then
        wait_for 20 listening "$HTTP_PORT" || { echo "sextant serve did not listen" >&2; return 1; }
    else
        wait_for 20 ready || { echo "sextant serve did not become ready" >&2; return 1; }
    fi
    export SEXTANT_URL="http://127.0.0.1:$HTTP_PORT"
}

# e2e_stop_serve: SIGTERM, and a check that it exits 0.
e2e_stop_serve() {
    stop_daemon "sextant serve" "$PID_serve" 15
}

# e2e_token USER ROLE: a bearer token from `sextant token`.
e2e_token() {
    token "$1" "$2"
}

# e2e_rest TOKEN METHOD PATH [JSON] [curl args...]: prints the status; body in $WORK/body.
e2e_rest() {
    local tok=$1 method=$2 path=$3 data=()
    shift 3
    if [ $# -gt 0 ]; then
        data=(-H 'Content-Type: application/json' --data-binary "$1")
        shift
    fi
    curl -s -o "$WORK/body" -w '%{http_code}' -X "$method" --max-time 20 \
        -H "Authorization: Bearer $tok" "${data[@]}" "$@" "http://127.0.0.1:$HTTP_PORT$path"
}

# e2e_dataplane NAME GROUP [--nack-matching TEXT]: a gateway.control.v1 data plane
# (tests/e2e/lib/dataplane.cjs) with node id NAME in GROUP that ACKs every snapshot
# (NACKs the ones whose JSON contains TEXT).
e2e_dataplane() {
    local name=$1 group=$2
    shift 2
    bg_run "$name" node "$E2E/lib/dataplane.cjs" --server "127.0.0.1:$GRPC_PORT" --node "$name" --group "$group" "$@"
}

# e2e_wait_acked TOKEN NODE VERSION [SECONDS]: the API says NODE acked VERSION.
e2e_wait_acked() {
    local tok=$1 node=$2 v=$3 secs=${4:-15}
    acked() { [ "$(e2e_rest "$tok" GET "/api/v1/proxies/$node")" = 200 ] && [ "$(jv .acked_version)" = "$v" ]; }
    wait_for "$secs" acked
}

# e2e_browser SCENARIO: runs a browser scenario; its failed checks count as ours.
e2e_browser() {
    local scenario=$1
    shift
    E2E_OUT="$OUT" node "$scenario" "$@" 2>&1 | tee -a "$WORK/browser.log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || fail "browser scenario $(basename "$scenario") (exit $rc; screenshots in $OUT)"
}

# e2e_spec HOST LISTEN_PORT BACKEND_PORT [ENDPOINT_ADDRESS]: a valid config spec: an
# HTTP listener on 0.0.0.0:LISTEN_PORT for HOST, one route, and a backend
# b-<host> with one endpoint ENDPOINT_ADDRESS:BACKEND_PORT (10.0.0.1 by default).
e2e_spec() {
    local slug=${1//./-}
    printf '{"listeners":[{"name":"l-%s","address":"0.0.0.0","port":%s,"protocol":"LISTENER_PROTOCOL_HTTP","hostnames":["%s"],"attached_routes":["r-%s"]}],"http_routes":[{"name":"r-%s","namespace":"team","hostnames":["%s"],"rules":[{"name":"all","matches":[{"path":"/","path_type":"PathPrefix"}],"backend_refs":[{"name":"b-%s","namespace":"team","port":%s}]}]}],"backends":[{"name":"b-%s","namespace":"team","protocol":"http","connect_timeout":"1s","endpoints":[{"address":"%s","port":%s,"healthy":true}]}]}' \
        "$slug" "$2" "$1" "$slug" "$slug" "$1" "$slug" "$3" "$slug" "${4:-10.0.0.1}" "$3"
}

# e2e_create_config TOKEN NAME GROUP SPEC MESSAGE: POST /api/v1/configs in namespace
# team; prints the config id (fails the test when refused).
e2e_create_config() {
    local st
    st=$(e2e_rest "$1" POST /api/v1/configs "{\"namespace\":\"team\",\"name\":\"$2\",\"groups\":[\"$3\"],\"spec\":$4,\"message\":\"$5\"}")
    [ "$st" = 201 ] || { echo "fixture: POST /api/v1/configs answered $st: $(head -c 400 "$WORK/body")" >&2; return 1; }
    jv .id
}

# e2e_web_fleet GROUP NODE...: an admin token (ADMIN), config web at version 1 in GROUP
# (CONFIG_ID; e2e_spec web.example), and a data plane for each NODE, checked to have
# acked version 1; exports ADMIN, CONFIG_ID, GROUP and NODES for the scenarios. (Not to
# be called in $(...): it sets variables.)
e2e_web_fleet() {
    local n
    GROUP=$1
    shift
    NODES="$*"
    ADMIN=$(e2e_token e2e-admin admin)
    CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || return 1
    for n in "$@"; do
        e2e_dataplane "$n" "$GROUP"
    done
    for n in "$@"; do
        check "$n acked v1" e2e_wait_acked "$ADMIN" "$n" 1
    done
    export ADMIN CONFIG_ID GROUP NODES
}

# e2e_rolled_fleet GROUP NODE...: e2e_web_fleet, then version 2 saved as a draft and
# rolled out by a deployment (all at once) that every node ACKs; the deployment is what
# brings version 2 to the proxies, so its wave's timeline shows their ACKs. Sets and
# exports DEPLOYMENT_ID besides e2e_web_fleet's variables.
e2e_rolled_fleet() {
    local st n
    e2e_web_fleet "$@" || return 1
    shift
    st=$(e2e_rest "$ADMIN" PUT "/api/v1/configs/$CONFIG_ID" "{\"spec\":$(e2e_spec web.example 10080 8081),\"message\":\"second version\",\"draft\":true}")
    check "version 2 is a draft (got $st)" test "$st" = 200
    st=$(e2e_rest "$ADMIN" POST "/api/v1/configs/$CONFIG_ID/apply" '{"version":2,"strategy":{"type":"all_at_once"},"reason":"e2e"}')
    check "a deployment of version 2 starts (got $st)" test "${st:0:2}" = 20
    DEPLOYMENT_ID=$(jv .id)
    for n in "$@"; do
        check "$n acked v2" e2e_wait_acked "$ADMIN" "$n" 2 30
    done
    export DEPLOYMENT_ID
}

# e2e_put_config TOKEN ID SPEC MESSAGE: a new version (fails the test when refused).
e2e_put_config() {
    local st
    st=$(e2e_rest "$1" PUT "/api/v1/configs/$2" "{\"spec\":$3,\"message\":\"$4\"}")
    [ "$st" = 200 ] || { echo "fixture: PUT /api/v1/configs/$2 answered $st: $(head -c 400 "$WORK/body")" >&2; return 1; }
}

# e2e_group_version TOKEN GROUP: the group's newest snapshot version.
e2e_group_version() {
    e2e_rest "$1" GET /api/v1/groups >/dev/null
    node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const g = j.items.find((g) => g.name === process.argv[2]); console.log(g ? g.latest_version : "");' \
        "$WORK/body" "$2"
}

# e2e_echo_spec PORT: the spec routing xds:///echo.test to the echo backend on PORT.
e2e_echo_spec() {
    node "$CONF/lib/snapshots.js" echo "$1"
}

# e2e_grpc_client NODE GROUP LOG: a proxyless gRPC client (@grpc/grpc-js-xds) calling
# xds:///echo.test through Sextant as NODE in GROUP; one line per call in LOG
# ("<ms> ok <backend>" or "<ms> err ...", read with last_result).
e2e_grpc_client() {
    GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "$1" "$2" "$GRPC_PORT") \
        bg_run "$1" node "$CONF/lib/xds_client.js" --target xds:///echo.test --out "$3" --interval-ms 100
}

# lib.sh — what the REST API tests share (sourced by tests/integration/api/test_*.sh
# and tests/bench/api.sh): a scratch folder, a fresh database and a Redis key prefix of
# their own, `sextant serve` with JWT auth on, tokens minted with `sextant token`, curl
# calls that keep the body and headers, JSON reading with node, and psql.
#
# The database: a new one on the runner's PostgreSQL (SEXTANT_TEST_DATABASE_URL, as
# tests/run.sh exports it) when there is one, else a private cluster started here. The
# same for Redis (SEXTANT_TEST_REDIS_URL). Everything started is stopped by the EXIT
# trap; on failure the tail of the daemon's log is printed.
#
#   source "$SEXTANT_SOURCE_DIR/tests/integration/api/lib.sh"
#   api_init NAME          # WORK, database, redis, environment for sextant
#   api_serve              # starts sextant serve (PID, HTTP_PORT, GRPC_PORT), waits for /readyz
#   ADMIN=$(api_token alice admin)
#   st=$(api_call "$ADMIN" POST /api/v1/configs -d @file)   # status; body in $WORK/body
#   jv .error.code         # a value of $WORK/body
#   finish

set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
# shellcheck source=tests/lib/shtest.sh
source "$SRC/tests/lib/shtest.sh"
# shellcheck source=tests/lib/services.sh
source "$SRC/tests/lib/services.sh"

WORK=
PID=
API_DB_ADMIN_URL= # superuser URL of the server holding our database (to drop it)
API_DB_NAME=
API_OWN_PG=0
API_OWN_REDIS=0

api_cleanup() {
    local rc=$?
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -KILL "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
    fi
    if { [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; } && [ -f "$WORK/serve.log" ]; then
        echo "--- serve log (tail)" >&2
        tail -n 30 "$WORK/serve.log" >&2
    fi
    if [ "$API_OWN_PG" = 1 ]; then
        svc_pg_stop "$WORK/pg"
    elif [ -n "$API_DB_NAME" ]; then
        psql "$API_DB_ADMIN_URL" -qXc "DROP DATABASE IF EXISTS \"$API_DB_NAME\" WITH (FORCE)" \
            >/dev/null 2>&1 || true
    fi
    [ "$API_OWN_REDIS" = 1 ] && svc_redis_stop "$WORK/redis"
    rm -rf "$WORK"
    exit "$rc"
}

# api_init NAME: scratch folder, database (migrated), Redis, and the environment
# `sextant serve` and `sextant token` read.
api_init() {
    WORK=$(mktemp -d "/tmp/sextant-api-$1-XXXXXX")
    chmod 755 "$WORK"
    trap api_cleanup EXIT
    trap 'exit 1' INT TERM
    API_DB_NAME="sextant_api_$1_$$_$RANDOM"
    API_DB_NAME=${API_DB_NAME//-/_}
    if [ -n "${SEXTANT_TEST_DATABASE_URL:-}" ]; then
        API_DB_ADMIN_URL=$SEXTANT_TEST_DATABASE_URL
    else
        local port
        port=$(free_port) || exit 1
        svc_pg_start "$WORK/pg" "$port" || exit 1
        API_OWN_PG=1
        API_DB_ADMIN_URL="postgresql://sextant@127.0.0.1:$port/postgres"
    fi
    psql "$API_DB_ADMIN_URL" -qXc "CREATE DATABASE \"$API_DB_NAME\"" >/dev/null || exit 1
    export SEXTANT_DATABASE_URL="${API_DB_ADMIN_URL%/*}/$API_DB_NAME"
    if [ -n "${SEXTANT_TEST_REDIS_URL:-}" ]; then
        export SEXTANT_REDIS_URL=$SEXTANT_TEST_REDIS_URL
    else
        local rport
        rport=$(free_port) || exit 1
        svc_redis_start "$WORK/redis" "$rport" || exit 1
        API_OWN_REDIS=1
        export SEXTANT_REDIS_URL="redis://127.0.0.1:$rport"
    fi
    export SEXTANT_REDIS_KEY_PREFIX="sx-$API_DB_NAME:"
    HTTP_PORT=$(free_port) || exit 1
    GRPC_PORT=$(free_port) || exit 1
    export SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT"
    export SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT"
    export SEXTANT_REPLICA_ID="api-$1"
    export SEXTANT_AUTH_ENABLED=true
    export SEXTANT_AUTH_HS256_SECRET="api-test-secret-0123456789abcdef-0123456789"
    export SEXTANT_RATELIMIT_WRITE_RATE=${SEXTANT_RATELIMIT_WRITE_RATE:-1000}
    export SEXTANT_RATELIMIT_WRITE_BURST=${SEXTANT_RATELIMIT_WRITE_BURST:-1000}
    export SEXTANT_RATELIMIT_READ_RATE=${SEXTANT_RATELIMIT_READ_RATE:-1000}
    export SEXTANT_RATELIMIT_READ_BURST=${SEXTANT_RATELIMIT_READ_BURST:-1000}
    "$BIN" migrate >"$WORK/migrate.log" 2>&1 || {
        echo "sextant migrate failed:" >&2
        cat "$WORK/migrate.log" >&2
        exit 1
    }
}

api_ready() {
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$HTTP_PORT/readyz")" = 200 ]
}

# api_serve: starts `sextant serve` in the background and waits until it is ready.
api_serve() {
    env -u SEXTANT_BIN -u SEXTANT_SOURCE_DIR -u SEXTANT_TEST_DATABASE_URL -u SEXTANT_TEST_REDIS_URL \
        -u SEXTANT_TEST_REDIS_SERVER -u SEXTANT_TEST_PG_BIN -u SEXTANT_TEST_OUT "$BIN" serve >>"$WORK/serve.log" 2>&1 &
    PID=$!
    if ! wait_for 20 api_ready; then
        echo "sextant serve did not become ready" >&2
        exit 1
    fi
}

# api_serve_unready: starts `sextant serve` and waits only for its HTTP port (for a
# daemon that cannot become ready, such as one without its database).
api_serve_unready() {
    env -u SEXTANT_BIN -u SEXTANT_SOURCE_DIR -u SEXTANT_TEST_DATABASE_URL -u SEXTANT_TEST_REDIS_URL \
        -u SEXTANT_TEST_REDIS_SERVER -u SEXTANT_TEST_PG_BIN -u SEXTANT_TEST_OUT "$BIN" serve >>"$WORK/serve.log" 2>&1 &
    PID=$!
    if ! wait_for 20 listening "$HTTP_PORT"; then
        echo "sextant serve did not listen" >&2
        exit 1
    fi
}

# api_stop: SIGTERM; checks it exits 0 (under the sanitizer build: no leak).
api_stop() {
    kill -TERM "$PID"
    local i rc
    for i in $(seq 1 150); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$PID" 2>/dev/null; then
        fail "sextant did not exit within 15 s of SIGTERM"
        kill -KILL "$PID"
    fi
    wait "$PID"
    rc=$?
    PID=
    check "sextant exits 0 on SIGTERM (got $rc)" [ "$rc" = 0 ]
}

# api_token USER ROLE [TTL]: a bearer token from `sextant token`.
api_token() {
    env -u SEXTANT_BIN "$BIN" token --user "$1" --role "$2" --ttl "${3:-1h}"
}

# api_call TOKEN METHOD PATH [curl args...]: prints the status; the body goes to
# $WORK/body and the headers to $WORK/headers. TOKEN "" sends no Authorization.
api_call() {
    local tok=$1 method=$2 path=$3
    shift 3
    local auth=()
    [ -n "$tok" ] && auth=(-H "Authorization: Bearer $tok")
    curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' -X "$method" --max-time 20 \
        "${auth[@]}" "$@" "http://127.0.0.1:$HTTP_PORT$path"
}

# api_json TOKEN METHOD PATH JSON [curl args...]: api_call with a JSON body.
api_json() {
    local tok=$1 method=$2 path=$3 body=$4
    shift 4
    api_call "$tok" "$method" "$path" -H 'Content-Type: application/json' --data-binary "$body" "$@"
}

# jv EXPR [FILE]: the value at EXPR (a JavaScript accessor such as .error.code or
# .items.length) of the JSON in FILE ($WORK/body): strings raw, others as JSON,
# "undefined" when absent.
jv() {
    node -e '
        const fs = require("fs");
        let j;
        try { j = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); } catch (e) { console.log("not-json"); process.exit(0); }
        let v;
        try { v = eval("j" + process.argv[2]); } catch (e) { v = undefined; }
        console.log(typeof v === "string" ? v : v === undefined ? "undefined" : JSON.stringify(v));
    ' "${2:-$WORK/body}" "$1"
}

# jtrue EXPR [FILE]: the JavaScript expression (with the body as j) is true.
jtrue() {
    node -e '
        const fs = require("fs");
        const j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        process.exit(eval(process.argv[2]) ? 0 : 1);
    ' "${2:-$WORK/body}" "$1" 2>/dev/null
}

# header NAME: a response header of the last call (value only, no CR).
header() {
    awk -v n="$(echo "$1" | tr '[:upper:]' '[:lower:]')" -F': ' \
        'tolower($1) == n { sub(/\r$/, "", $2); print $2 }' "$WORK/headers" | tail -n 1
}

# sql QUERY: one value (or rows) from our database.
sql() {
    psql "$SEXTANT_DATABASE_URL" -qtAXc "$1"
}

# expect_status WHAT WANT GOT: a check on a status code that prints the body on failure.
expect_status() {
    if [ "$3" = "$2" ]; then
        pass "$1 ($3)"
    else
        fail "$1: want $2, got $3: $(head -c 600 "$WORK/body" 2>/dev/null)"
    fi
}

# expect_error WHAT STATUS CODE GOT: the status and the error shape with that code.
expect_error() {
    expect_status "$1" "$2" "$4"
    if [ "$4" = "$2" ]; then
        check "$1: error code $3" [ "$(jv .error.code)" = "$3" ]
        check "$1: error has a message and details" \
            jtrue 'typeof j.error.message === "string" && j.error.message.length > 0 && Array.isArray(j.error.details)'
    fi
}

# api_spec PORT HOST [ENDPOINT_ADDRESS]: a valid config spec: an HTTP listener on
# 0.0.0.0:PORT for HOST, a route for it and a backend at ENDPOINT_ADDRESS:8080. Names
# derive from HOST (a.example: listener l-a-example, route r-a-example, backend
# team/b-a-example), so configs of one group need distinct hosts (and ports).
api_spec() {
    local slug=${2//./-}
    printf '{"listeners":[{"name":"l-%s","address":"0.0.0.0","port":%s,"protocol":"LISTENER_PROTOCOL_HTTP","hostnames":["%s"],"attached_routes":["r-%s"]}],"http_routes":[{"name":"r-%s","namespace":"team","hostnames":["%s"],"rules":[{"name":"all","matches":[{"path":"/","path_type":"PathPrefix"}],"backend_refs":[{"name":"b-%s","namespace":"team","port":8080}]}]}],"backends":[{"name":"b-%s","namespace":"team","protocol":"http","connect_timeout":"1s","endpoints":[{"address":"%s","port":8080,"healthy":true}]}]}' \
        "$slug" "$1" "$2" "$slug" "$slug" "$2" "$slug" "$slug" "${3:-10.0.0.1}"
}

# api_config_body NAME GROUP SPEC [EXTRA]: a POST /api/v1/configs body in namespace team.
api_config_body() {
    printf '{"namespace":"team","name":"%s","groups":["%s"],"spec":%s%s}' "$1" "$2" "$3" "${4:+,$4}"
}

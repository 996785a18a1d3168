# lib.sh — what the REST API tests share (sourced by tests/integration/api/test_*.sh): a
# scratch folder, a fresh database and a Redis key prefix of their own, `sextant serve`
# with JWT auth on, tokens minted with `sextant token`, curl calls that keep the body
# and headers. JSON reading with node (jv, jtrue, header), psql (sql) and the daemon's
# start and stop come from tests/lib/shtest.sh.
#
# The database: test_db (tests/lib/shtest.sh), a new one on the runner's PostgreSQL when
# there is one, else a private cluster started here. Everything started is stopped by
# the EXIT trap; on failure the tail of the daemon's log is printed.
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

WORK=
PID=

# api_init NAME: scratch folder, database (migrated), Redis, and the environment
# `sextant serve` and `sextant token` read; test_cleanup (tests/lib/shtest.sh) on exit.
api_init() {
    work_init "api-$1" test_cleanup
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
    export SEXTANT_RATELIMIT_AUTH_FAIL_RATE=${SEXTANT_RATELIMIT_AUTH_FAIL_RATE:-1000}
    export SEXTANT_RATELIMIT_AUTH_FAIL_BURST=${SEXTANT_RATELIMIT_AUTH_FAIL_BURST:-1000}
    test_db "api_$1" || exit 1
}

# api_policy PERMISSION...: the RBAC policy of rbac_policy (tests/lib/shtest.sh) in
# $WORK/rbac.yaml, the policy file of the daemons started next.
api_policy() {
    rbac_policy "$WORK/rbac.yaml" "$@"
    export SEXTANT_AUTH_POLICY_FILE="$WORK/rbac.yaml"
}

# api_ready: the daemon's /readyz answers 200.
api_ready() {
    ready "$HTTP_PORT"
}

# api_serve: starts `sextant serve` in the background and waits until it is ready.
api_serve() {
    serve_start 20 || true
    if ! wait_for 20 ready; then
        echo "sextant serve did not become ready" >&2
        exit 1
    fi
}

# api_serve_unready: starts `sextant serve` and waits only for its HTTP port (for a
# daemon that cannot become ready, such as one without its database).
api_serve_unready() {
    if ! serve_start 20; then
        echo "sextant serve did not listen" >&2
        exit 1
    fi
}

# api_stop: SIGTERM; checks it exits 0 (under the sanitizer build: no leak).
api_stop() {
    serve_stop 15
}

# api_token USER ROLE [TTL]: a bearer token from `sextant token`.
api_token() {
    token "$@"
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

# api_next_page TOKEN PATH: api_call GET of PATH (which has a query) at the cursor of the
# last answer (the next_cursor of $WORK/body).
api_next_page() {
    api_call "$1" GET "$2&cursor=$(jv .next_cursor)"
}

# api_json TOKEN METHOD PATH JSON [curl args...]: api_call with a JSON body.
api_json() {
    local tok=$1 method=$2 path=$3 body=$4
    shift 4
    api_call "$tok" "$method" "$path" -H 'Content-Type: application/json' --data-binary "$body" "$@"
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

# call_status WHAT STATUS COMMAND...: runs a call (api_call, api_json) and checks its
# status with expect_status.
call_status() {
    local what=$1 want=$2 st
    shift 2
    st=$("$@")
    expect_status "$what" "$want" "$st"
}

# call_error WHAT STATUS CODE COMMAND...: runs a call (api_call, api_json) and checks the
# status and the error shape with expect_error.
call_error() {
    local what=$1 want=$2 code=$3 st
    shift 3
    st=$("$@")
    expect_error "$what" "$want" "$code" "$st"
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

# ------------------------------------------------------------------ event streams
# stream NAME PORT TOKEN [curl args...]: GET /api/v1/events on PORT in the background
# (bg_run), body to $WORK/NAME.sse, headers to $WORK/NAME.h; its pid in PID_NAME.
stream() {
    local name=$1 port=$2 tok=$3
    shift 3
    bg_run "$name" curl -sN -D "$WORK/$name.h" -o "$WORK/$name.sse" -H "Authorization: Bearer $tok" "$@" \
        "http://127.0.0.1:$port/api/v1/events"
}
# sse NAME EXPR: EXPR (over e, the events, and comments; tests/integration/api/sse.js)
# is true for stream NAME; ssep NAME EXPR prints its value.
sse() { node "$SRC/tests/integration/api/sse.js" "$WORK/$1.sse" "$2"; }
ssep() { node "$SRC/tests/integration/api/sse.js" "$WORK/$1.sse" -p "$2"; }
# connected NAME: stream NAME has been told ": connected".
connected() { sse "$1" 'comments.includes(": connected")'; }

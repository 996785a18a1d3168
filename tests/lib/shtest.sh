# shtest.sh — what every shell test shares: checks that record failures and keep going,
# free ports, HTTP calls, waiting with a deadline; `sextant serve` started, stopped and
# checked to exit 0; tokens; the test's database and Redis (its own cluster, or a fresh
# database on the runner's); background processes and their cleanup; echo backends and
# xDS bootstraps for the gRPC clients; JSON, headers, SQL and metrics read back.
#
# A test sources it (directly or through tests/integration/api/lib.sh,
# tests/conformance/lib/harness.sh, tests/e2e/lib/harness.sh), gets WORK (a scratch
# folder) from work_init or its harness, and calls `finish` at the end, which exits 1
# when any check failed.

FAILS=0

fail() {
    echo "FAIL: $*" >&2
    FAILS=$((FAILS + 1))
}
pass() {
    echo "ok: $*"
}
# check DESCRIPTION COMMAND...: runs the command, records a failure when it fails.
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
contains() { # contains FILE TEXT
    grep -qF -- "$2" "$1"
}
finish() {
    if [ "$FAILS" -gt 0 ]; then
        echo "$FAILS check(s) failed" >&2
        exit 1
    fi
    echo "all checks passed"
    exit 0
}

# shellcheck source=tests/lib/services.sh
source "$(dirname "${BASH_SOURCE[0]}")/services.sh"

# A loopback port nobody listens on and no parallel test has taken (see services.sh).
free_port() {
    svc_free_port
}
listening() { # listening PORT
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null
}

# http METHOD PATH [curl args...]: body to $WORK/body, headers to $WORK/headers, prints
# the status code. Needs HTTP_PORT.
http() {
    local method=$1 path=$2
    shift 2
    curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' -X "$method" \
        --max-time 10 "$@" "http://127.0.0.1:$HTTP_PORT$path"
}

# wait_for SECONDS COMMAND...: retries the command every 0.1 s until it succeeds or the
# time is up; returns its last status.
wait_for() {
    local secs=$1 i
    shift
    for i in $(seq 1 $((secs * 10))); do
        "$@" && return 0
        sleep 0.1
    done
    "$@"
}

# ------------------------------------------------------------------ the daemon
# The harnesses (tests/integration/api/lib.sh, tests/conformance/lib/harness.sh,
# tests/e2e/lib/harness.sh) and the tests that run `sextant serve` themselves build on
# what follows. They need BIN (the sextant binary) and WORK.

# SX_ENV: the prefix that runs sextant without the runner's own variables, so the
# daemon sees only the SEXTANT_* settings a test means for it.
SX_ENV=(env -u SEXTANT_BIN -u SEXTANT_SOURCE_DIR -u SEXTANT_TEST_DATABASE_URL -u SEXTANT_TEST_REDIS_URL
    -u SEXTANT_TEST_REDIS_SERVER -u SEXTANT_TEST_PG_BIN -u SEXTANT_TEST_OUT -u SEXTANT_TEST_TOOLS)
# The daemons of the tests serve xDS without authentication (xds.auth must be set
# explicitly), unless a test sets SEXTANT_XDS_AUTH itself (tests/conformance/test_xds_auth.sh).
export SEXTANT_XDS_AUTH=${SEXTANT_XDS_AUTH:-none}

# ready [PORT]: /readyz on 127.0.0.1:PORT (HTTP_PORT by default) answers 200; the
# answer's body is kept in $WORK/readyz.json.
ready() {
    [ "$(curl -s -o "$WORK/readyz.json" -w '%{http_code}' --max-time 2 "http://127.0.0.1:${1:-$HTTP_PORT}/readyz")" = 200 ]
}

# gone PID TENTHS: true once PID has exited (within TENTHS × 0.1 s).
gone() {
    local pid=$1 n=$2 i
    for i in $(seq 1 "$n"); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    ! kill -0 "$pid" 2>/dev/null
}

# stop_daemon WHAT PID SECONDS: SIGTERM, then a check that it exits 0 within SECONDS
# (under the sanitizer build that also means no leak and no memory error). One that
# does not exit in time is a failure and gets SIGKILL.
stop_daemon() {
    local what=$1 pid=$2 secs=$3 rc
    kill -TERM "$pid" 2>/dev/null
    if ! gone "$pid" $((secs * 10)); then
        fail "$what did not exit within $secs s of SIGTERM"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 1
    fi
    wait "$pid"
    rc=$?
    check "$what exits 0 on SIGTERM (got $rc)" [ "$rc" = 0 ]
}

# serve_start [SECONDS]: `sextant serve` in the background (log $WORK/serve.log, pid
# PID); waits until its HTTP port (HTTP_PORT) listens.
serve_start() {
    "${SX_ENV[@]}" "$BIN" serve >>"$WORK/serve.log" 2>&1 &
    PID=$!
    wait_for "${1:-10}" listening "$HTTP_PORT"
}

# serve_stop [SECONDS]: stop_daemon for PID (10 s by default), which is cleared.
serve_stop() {
    stop_daemon sextant "$PID" "${1:-10}"
    PID=
}

# serve_kill: SIGKILL to PID when it runs (for cleanups).
serve_kill() {
    if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then
        kill -KILL "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
    fi
    PID=
}

# token USER ROLE [TTL]: a bearer token from `sextant token` (1 h by default).
token() {
    "${SX_ENV[@]}" "$BIN" token --user "$1" --role "$2" --ttl "${3:-1h}"
}

# hs256_token KEY PAYLOAD-JSON [HEADER-JSON]: a JWT signed by hand with openssl (HS256
# with KEY), for tokens `sextant token` would not mint.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
hs256_token() {
    local header=${3:-'{"alg":"HS256","typ":"JWT"}'} h p s
    h=$(printf '%s' "$header" | b64url)
    p=$(printf '%s' "$2" | b64url)
    s=$(printf '%s' "$h.$p" | openssl dgst -sha256 -hmac "$1" -binary | b64url)
    printf '%s.%s.%s' "$h" "$p" "$s"
}

# metric NAME [PORT]: the value of the /metrics line NAME (with its labels) on PORT
# (HTTP_PORT by default), or nothing.
metric() {
    curl -s --max-time 5 "http://127.0.0.1:${2:-$HTTP_PORT}/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
metric_is() { # metric_is NAME VALUE
    [ "$(metric "$1")" = "$2" ]
}

# work_init NAME CLEANUP: WORK, a fresh scratch folder /tmp/sextant-NAME-*, readable by
# the postgres account; CLEANUP runs on exit, and Ctrl-C or SIGTERM exit 1.
work_init() {
    WORK=$(mktemp -d "/tmp/sextant-$1-XXXXXX")
    chmod 755 "$WORK"
    trap "$2" EXIT
    trap 'exit 1' INT TERM
}

# secrets_keyring FILE: writes a keyring of one random key "test" (secrets.key_file) and
# exports SEXTANT_SECRETS_KEY_FILE, so the daemons started next store private keys
# (Kubernetes TLS Secrets, configs with TLS) encrypted instead of refusing them.
secrets_keyring() {
    (umask 077 && printf 'test %s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$1")
    export SEXTANT_SECRETS_KEY_FILE="$1"
}

# rbac_policy FILE PERMISSION...: writes an RBAC policy file (auth.policy_file); each
# PERMISSION is "ROLE RESOURCE=ACTION[,ACTION...][@GROUP[,GROUP...]]" (with groups: only
# on those groups), roles in the order first named:
#   rbac_policy "$WORK/rbac.yaml" 'admin *=*' 'viewer configs=read' 'edge proxies=read@edge-*'
rbac_policy() {
    local file=$1
    shift
    printf '%s\n' "$@" | awk '
        function quoted(list,    n, a, i, out) {
            n = split(list, a, ",")
            for (i = 1; i <= n; i++) out = out (i > 1 ? ", " : "") "\"" a[i] "\""
            return out
        }
        BEGIN { print "roles:" }
        {
            split($2, g, "@")
            split(g[1], p, "=")
            if (!($1 in seen)) { seen[$1] = ++nroles; order[nroles] = $1 }
            perms[$1] = perms[$1] "      - resource: \"" p[1] "\"\n        actions: [" quoted(p[2]) "]\n"
            if (g[2] != "") perms[$1] = perms[$1] "        groups: [" quoted(g[2]) "]\n"
        }
        END {
            for (r = 1; r <= nroles; r++)
                printf "  - name: %s\n    permissions:\n%s", order[r], perms[order[r]]
        }' >"$file"
}

# own_init NAME: for a test that runs its own PostgreSQL, Redis and daemon: WORK, free
# ports PG_PORT, REDIS_PORT, HTTP_PORT and GRPC_PORT, the environment of sextant on them
# (replica id NAME-test), and test_cleanup on exit. Starts nothing.
own_init() {
    work_init "$1" test_cleanup
    PID=
    PG_PORT=$(free_port) || exit 1
    REDIS_PORT=$(free_port) || exit 1
    HTTP_PORT=$(free_port) || exit 1
    GRPC_PORT=$(free_port) || exit 1
    export SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$PG_PORT/sextant"
    export SEXTANT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
    export SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_PORT"
    export SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_PORT"
    export SEXTANT_REPLICA_ID="$1-test"
}
# test_cleanup: the EXIT trap of own_init and api_init: kills the daemon (PID), prints
# the tails of the logs when the test failed, stops the background processes (bg_run)
# and what own_services or test_db started, and removes WORK.
test_cleanup() {
    local rc=$?
    serve_kill
    [ "$rc" -eq 0 ] && [ "$FAILS" -eq 0 ] || log_tails 40
    bg_stop_all
    own_services_stop
    test_db_drop
    rm -rf "$WORK"
    exit "$rc"
}

# own_services: a private PostgreSQL (database "sextant") and Redis in $WORK on free
# ports (PG_PORT and REDIS_PORT when set), exported as SEXTANT_DATABASE_URL and
# SEXTANT_REDIS_URL; `sextant migrate` unless NO_MIGRATE=1. Stopped by own_services_stop.
own_services() {
    [ -n "${PG_PORT:-}" ] || PG_PORT=$(free_port) || return 1
    [ -n "${REDIS_PORT:-}" ] || REDIS_PORT=$(free_port) || return 1
    export SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$PG_PORT/sextant"
    export SEXTANT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
    own_pg_start || return 1
    svc_redis_start "$WORK/redis" "$REDIS_PORT" || return 1
    [ "${NO_MIGRATE:-0}" = 1 ] || migrate
}
# own_pg_start: the private cluster of own_services on PG_PORT, with database sextant.
own_pg_start() {
    svc_pg_start "$WORK/pg" "$PG_PORT" || return 1
    psql "postgresql://sextant@127.0.0.1:$PG_PORT/postgres" -qXc "CREATE DATABASE sextant" >/dev/null
}
own_services_stop() {
    svc_redis_stop "$WORK/redis"
    svc_pg_stop "$WORK/pg"
}

# migrate: `sextant migrate` on SEXTANT_DATABASE_URL; its output is shown when it fails.
migrate() {
    "${SX_ENV[@]}" "$BIN" migrate >"$WORK/migrate.log" 2>&1 && return 0
    echo "sextant migrate failed:" >&2
    cat "$WORK/migrate.log" >&2
    return 1
}

# test_db NAME: a fresh database for one test, with a Redis key prefix of its own: on the
# runner's PostgreSQL and Redis (SEXTANT_TEST_DATABASE_URL, SEXTANT_TEST_REDIS_URL, as
# tests/run.sh exports them) when there are, else on private ones in $WORK; migrated.
# Exports SEXTANT_DATABASE_URL (the owner's), TEST_RUNTIME_DB_URL (the runtime
# role's, see runtime_role), SEXTANT_REDIS_URL, SEXTANT_REDIS_KEY_PREFIX; test_db_drop
# undoes it.
TEST_DB_ADMIN_URL= # superuser URL of the server holding the database (to drop it)
TEST_DB_NAME=
TEST_OWN_PG=0
TEST_OWN_REDIS=0
test_db() {
    TEST_DB_NAME="sextant_$1_$$_$RANDOM"
    TEST_DB_NAME=${TEST_DB_NAME//-/_}
    if [ -n "${SEXTANT_TEST_DATABASE_URL:-}" ]; then
        TEST_DB_ADMIN_URL=$SEXTANT_TEST_DATABASE_URL
    else
        local port
        port=$(free_port) || return 1
        svc_pg_start "$WORK/pg" "$port" || return 1
        TEST_OWN_PG=1
        TEST_DB_ADMIN_URL="postgresql://sextant@127.0.0.1:$port/postgres"
    fi
    psql "$TEST_DB_ADMIN_URL" -qXc "CREATE DATABASE \"$TEST_DB_NAME\"" >/dev/null || return 1
    export SEXTANT_DATABASE_URL="${TEST_DB_ADMIN_URL%/*}/$TEST_DB_NAME"
    if [ -n "${SEXTANT_TEST_REDIS_URL:-}" ]; then
        export SEXTANT_REDIS_URL=$SEXTANT_TEST_REDIS_URL
    else
        local rport
        rport=$(free_port) || return 1
        svc_redis_start "$WORK/redis" "$rport" || return 1
        TEST_OWN_REDIS=1
        export SEXTANT_REDIS_URL="redis://127.0.0.1:$rport"
    fi
    export SEXTANT_REDIS_KEY_PREFIX="sx-$TEST_DB_NAME:"
    runtime_role "$TEST_DB_ADMIN_URL" || return 1
    export TEST_RUNTIME_DB_URL="${TEST_DB_ADMIN_URL%%://*}://sextant_app@${TEST_DB_ADMIN_URL#*@}"
    TEST_RUNTIME_DB_URL="${TEST_RUNTIME_DB_URL%/*}/$TEST_DB_NAME"
    migrate
}
# runtime_role ADMIN_URL: the login role sextant_app on that cluster (roles are the
# cluster's, so every test shares it; `sextant migrate` grants it its rights in each
# database). Tests that run serve as the runtime role, as production does, give
# TEST_RUNTIME_DB_URL (exported by test_db) to serve as database.url and the
# owner's URL as database.migrate_url.
runtime_role() {
    psql "$1" -qX >/dev/null 2>&1 <<'SQL'
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sextant_app') THEN
        CREATE ROLE sextant_app LOGIN;
    ELSIF NOT (SELECT rolcanlogin FROM pg_roles WHERE rolname = 'sextant_app') THEN
        ALTER ROLE sextant_app LOGIN;
    END IF;
EXCEPTION WHEN OTHERS THEN
    NULL; -- made or altered by a test beside this one at the same moment
END;
$$;
SQL
    [ "$(psql "$1" -qtAXc "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'sextant_app'")" = t ] || {
        echo "could not create the login role sextant_app" >&2
        return 1
    }
}
test_db_drop() {
    if [ "$TEST_OWN_PG" = 1 ]; then
        svc_pg_stop "$WORK/pg"
    elif [ -n "$TEST_DB_NAME" ]; then
        psql "$TEST_DB_ADMIN_URL" -qXc "DROP DATABASE IF EXISTS \"$TEST_DB_NAME\" WITH (FORCE)" \
            >/dev/null 2>&1 || true
    fi
    [ "$TEST_OWN_REDIS" = 1 ] && svc_redis_stop "$WORK/redis"
    return 0
}

# ------------------------------------------------------------------ background processes

BG_PIDS=()
# bg_run NAME COMMAND...: runs COMMAND in the background, output to $WORK/NAME.log; its pid
# goes to BG_PIDS (for bg_stop_all) and to the variable PID_NAME (dashes as _).
bg_run() {
    local name=$1
    shift
    "$@" >>"$WORK/$name.log" 2>&1 &
    BG_PIDS+=("$!")
    printf -v "PID_${name//-/_}" '%s' "$!"
}

# bg_stop NAME [SIGNAL]: signals a background process (default TERM) and waits for it
# to exit (3 s, then SIGKILL).
bg_stop() {
    local var="PID_${1//-/_}" sig=${2:-TERM}
    local pid=${!var}
    # bash reports a job killed by a signal ("Killed") on stderr when it reaps it;
    # that is what we asked for, so keep it out of the test output.
    exec 3>&2 2>/dev/null
    kill "-$sig" "$pid"
    gone "$pid" 30 || kill -KILL "$pid"
    wait "$pid"
    exec 2>&3 3>&-
    return 0
}

# bg_stop_all: SIGTERM to every background process, SIGKILL to those still running 3 s
# later.
bg_stop_all() {
    local pid
    for pid in "${BG_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${BG_PIDS[@]}"; do
        gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    return 0
}

# log_tails LINES: the last LINES of every $WORK/*.log, for a failed test's output.
log_tails() {
    local f
    for f in "$WORK"/*.log; do
        [ -f "$f" ] || continue
        echo "--- $(basename "$f") (tail)" >&2
        tail -n "$1" "$f" >&2
    done
}

# ------------------------------------------------------------------ node, xDS clients

# npm_ready DIR: `npm ci` in DIR when node_modules was built from another
# package-lock.json (a stamp holds the lock it was built from; tests/run.sh writes it
# too). Serialised per folder with flock, since ctest -j may start several tests at once.
npm_ready() {
    local dir=$1
    local stamp="$dir/node_modules/.sextant-lock-stamp"
    cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null && return 0
    command -v npm >/dev/null || { echo "npm is missing (tests/run.sh installs it)" >&2; return 1; }
    (
        flock -w 300 9 || exit 1
        cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null && exit 0
        echo "npm ci in $dir" >&2
        cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2 &&
            cp package-lock.json "$stamp"
    ) 9>"/tmp/sextant-npm-$(basename "$dir").lock"
}

SX_TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# echo_backend NAME [HOST [PORT]]: a test gRPC backend (tests/conformance/lib/echo_server.js)
# answering with NAME on HOST (a loopback address, 127.0.0.1 by default) and PORT (a free
# one by default), through bg_run; sets ECHO_NAME to its port.
echo_backend() {
    local name=$1 host=${2:-127.0.0.1} port=${3:-0}
    bg_run "echo_$name" node "$SX_TESTS_DIR/conformance/lib/echo_server.js" --name "$name" \
        --host "$host" --port "$port" --port-file "$WORK/echo_$name.port"
    wait_for 10 test -s "$WORK/echo_$name.port" || { echo "echo backend $name did not start" >&2; return 1; }
    printf -v "ECHO_$name" '%s' "$(cat "$WORK/echo_$name.port")"
}

# xds_bootstrap NODE_ID GROUP SERVER_PORT: the xDS bootstrap JSON for the gRPC clients.
# grpc-js needs node.id and node.locality; node.cluster is the proxy group.
xds_bootstrap() {
    printf '{"xds_servers":[{"server_uri":"127.0.0.1:%s","channel_creds":[{"type":"insecure"}]}],"node":{"id":"%s","cluster":"%s","locality":{}}}' \
        "$3" "$1" "$2"
}

# last_result LOG: the last outcome an xds_client logged, without its time stamp.
last_result() {
    tail -n 1 "$1" 2>/dev/null | cut -d' ' -f2-
}

# ------------------------------------------------------------------ JSON and SQL

# jv EXPR [FILE]: the value at EXPR (a JavaScript accessor such as .error.code or
# .items.length) of the JSON in FILE ($WORK/body): strings raw, others as JSON,
# "undefined" when absent, "not-json" when the file is not JSON.
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

# header NAME: a response header of the last call ($WORK/headers; value only, no CR).
header() {
    awk -v n="$(echo "$1" | tr '[:upper:]' '[:lower:]')" -F': ' \
        'tolower($1) == n { sub(/\r$/, "", $2); print $2 }' "$WORK/headers" | tail -n 1
}

# sql QUERY: one value (or rows) from SEXTANT_DATABASE_URL.
sql() {
    psql "$SEXTANT_DATABASE_URL" -qtAXc "$1"
}

# expect_status WHAT WANT GOT: a check on a status code that prints the body on failure.
expect_status() {
    if [ "$3" = "$2" ]; then
        pass "$1 ($3)"
    else
        fail "$1: want $2, got $3: $(head -c 800 "$WORK/body" 2>/dev/null)"
    fi
}

# cert_valid_for DIR SECS: DIR/cert.pem and DIR/key.pem, a self-signed certificate for
# s.example valid from a minute ago until SECS seconds from now (openssl ca sets an end
# date to the second), for tests of what a certificate's expiry changes.
cert_valid_for() {
    local d=$1 secs=$2
    mkdir -p "$d" && : >"$d/index.txt" && echo 01 >"$d/serial"
    printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s/index.txt\nnew_certs_dir = %s\nserial = %s/serial\ndefault_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n' \
        "$d" "$d" "$d" >"$d/ca.cnf"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=s.example \
        -keyout "$d/key.pem" -out "$d/csr.pem" 2>/dev/null &&
        openssl ca -batch -selfsign -notext -config "$d/ca.cnf" -keyfile "$d/key.pem" -in "$d/csr.pem" \
            -out "$d/cert.pem" -startdate "$(date -u -d '-1 min' +%y%m%d%H%M%SZ)" \
            -enddate "$(date -u -d "+$secs sec" +%y%m%d%H%M%SZ)" 2>/dev/null
}

# cert_expired DIR: DIR/cert.pem's notAfter is in the past (validation's test).
cert_expired() {
    local end
    end=$(date -u -d "$(openssl x509 -in "$1/cert.pem" -noout -enddate | cut -d= -f2)" +%s) &&
        [ "$(date -u +%s)" -gt "$end" ]
}

# https_spec CERT_DIR: a config spec with an HTTPS listener for s.example (port 8443)
# whose certificate and key are CERT_DIR's (secret team/cert), a route and a backend.
https_spec() {
    node -e '
        const fs = require("fs"), d = process.argv[1];
        process.stdout.write(JSON.stringify({
            listeners: [{name: "l", address: "0.0.0.0", port: 8443, protocol: "LISTENER_PROTOCOL_HTTPS",
                hostnames: ["s.example"], attached_routes: ["r"], tls: {enabled: true, secret_refs: ["team/cert"]}}],
            http_routes: [{name: "r", namespace: "team", hostnames: ["s.example"],
                rules: [{name: "all", matches: [{path: "/", path_type: "PathPrefix"}],
                    backend_refs: [{name: "b", namespace: "team", port: 8080}]}]}],
            backends: [{name: "b", namespace: "team", protocol: "http", connect_timeout: "1s",
                endpoints: [{address: "10.0.0.1", port: 8080, healthy: true}]}],
            secrets: [{namespace: "team", name: "cert", cert_pem: fs.readFileSync(d + "/cert.pem", "utf8"),
                key_pem: fs.readFileSync(d + "/key.pem", "utf8")}],
        }));' "$1"
}

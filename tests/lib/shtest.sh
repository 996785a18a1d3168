# shtest.sh — helpers for the shell integration tests: checks that record failures and
# keep going, free ports, HTTP calls, waiting with a deadline.
#
# A test sources it, sets WORK (a scratch folder) and calls `finish` at the end, which
# exits 1 when any check failed.

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

#!/usr/bin/env bash
# test_valgrind_memcheck.sh — `sextant serve` under valgrind's memcheck through a whole
# conformance run: the gateway.control.v1 client checks (lib/control_v1.js: streams,
# ACKs and NACKs, status reports, snapshots published meanwhile), some REST reads and
# refused requests, then SIGTERM. memcheck must report no error (invalid reads or
# writes, uses of uninitialised values, bad frees, leaks definitely or indirectly lost)
# and the daemon must exit 0 on its own. Suppressions (tests/valgrind.supp) cover only
# third-party libraries, each with its reason.
#
# The sanitizer build cannot run under valgrind (both replace malloc); there the same
# run is made without valgrind, and ASan and LSan make the same checks at exit.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init valgrind
if ! command -v valgrind >/dev/null; then
    fail "valgrind is not installed (tests/lib/deps.sh installs it)"
    finish
fi
conf_services || exit 1

sanitized() {
    { nm "$BIN" 2>/dev/null; nm -D "$BIN" 2>/dev/null; } | grep -q '__asan_init'
}
WRAP=()
if sanitized; then
    echo "the sanitizer build: the run is checked by ASan and LSan, not valgrind"
else
    # --error-exitcode: any error memcheck finds (leaks included, with
    # --errors-for-leak-kinds) makes the exit status 99 rather than the daemon's.
    WRAP=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
        --track-fds=no --num-callers=40 --child-silent-after-fork=yes
        --suppressions="$SRC/tests/valgrind.supp" --gen-suppressions=all
        --log-file="$WORK/memcheck.log")
fi

HTTP=$(free_port) || exit 1
GRPC=$(free_port) || exit 1
# valgrind slows start-up many times over: wait for readiness, however long it takes
# within reason.
SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP" SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC" \
    SEXTANT_REPLICA_ID=memcheck SEXTANT_LOG_LEVEL=info \
    bg_run r1 "${SX_ENV[@]}" "${WRAP[@]}" "$BIN" serve
check "the daemon becomes ready" wait_for 180 ready "$HTTP"
check "its gRPC port listens" wait_for 30 listening "$GRPC"

XDS_SERVER="127.0.0.1:$GRPC" HTTP_PORT=$HTTP node "$CONF/lib/control_v1.js" | tee "$WORK/control_v1.out"
check "every gateway.control.v1 check passed under memcheck" [ "${PIPESTATUS[0]}" = 0 ]

# A few REST requests: reads, a refused token, a bad body (the refusals' aggregate is
# written at shutdown, under memcheck too).
rest() { curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$@"; }
check "GET /metrics answers" [ "$(rest "http://127.0.0.1:$HTTP/metrics")" = 200 ]
check "a bad token is refused" [ "$(rest -H 'Authorization: Bearer x.y.z' "http://127.0.0.1:$HTTP/api/v1/configs")" = 401 ]
check "a malformed body is refused" [ "$(rest -X POST -H 'Content-Type: application/json' --data-binary '{"spec":' "http://127.0.0.1:$HTTP/api/v1/configs/validate")" -lt 500 ]

# SIGTERM; the daemon (and valgrind's leak check after it) must end cleanly.
kill -TERM "$PID_r1"
if ! gone "$PID_r1" 1800; then
    fail "the daemon did not exit within 180 s of SIGTERM"
    kill -KILL "$PID_r1" 2>/dev/null
fi
wait "$PID_r1"
rc=$?
check "the daemon exits 0 (99: memcheck found errors; got $rc)" [ "$rc" = 0 ]
if [ ${#WRAP[@]} -gt 0 ]; then
    check "the daemon ran under memcheck" grep -q "Command: $BIN serve" "$WORK/memcheck.log"
    check "memcheck ran to its summary" grep -q 'ERROR SUMMARY:' "$WORK/memcheck.log"
    sed -n '/HEAP SUMMARY/,$p' "$WORK/memcheck.log" | grep -E 'in use at exit|lost:|reachable:|suppressed:|ERROR SUMMARY'
    check "memcheck: no error" grep -q 'ERROR SUMMARY: 0 errors' "$WORK/memcheck.log"
    check "memcheck: nothing definitely lost" bash -c "! grep -q 'definitely lost: [1-9]' '$WORK/memcheck.log'"
    if [ "$FAILS" -gt 0 ]; then
        echo "--- memcheck" >&2
        grep -v '^==[0-9]*== *$' "$WORK/memcheck.log" | head -n 300 >&2
    fi
fi
finish

#!/usr/bin/env bash
# tests/run.sh — the whole test suite, from a fresh Debian machine.
#
# Installs the missing Debian packages, checks formatting and the architecture's rules
# (tests/arch: includes point down the floors, no C file past 1,000 lines), builds the
# tested trees (a Release build, the one users deploy and benchmarks measure, and an
# AddressSanitizer + UndefinedBehaviorSanitizer build), builds every other CMake build
# type with GCC and clang (tests/build_matrix.sh), starts a private PostgreSQL and Redis
# on free loopback ports, runs every ctest label in both tested builds, runs each
# libFuzzer target a few seconds on its corpus (tests/fuzz/run.sh, clang), stops what it
# started (also on failure or Ctrl-C) and ends with ctest's summary.
#
#   tests/run.sh                 everything
#   tests/run.sh --no-asan       skip the sanitizer build
#   tests/run.sh --no-matrix     skip the other build types and compilers
#   tests/run.sh --no-fuzz       skip the fuzz targets (skipped too with -L or -R unless
#                                --fuzz is given); SEXTANT_FUZZ_SECONDS=N runs each N s
#   tests/run.sh -L unit         one label (unit, integration, conformance, e2e)
#   tests/run.sh -R regex        tests whose name matches
#   tests/run.sh --repeat N      run the tests N times over one build (flake hunting);
#                                every run's failures are listed at the end
#   tests/run.sh --cpu-hog       keep every core busy with a spinning process while the
#                                tests run (flakes that only show on a loaded machine)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=tests/lib/deps.sh
source tests/lib/deps.sh
# shellcheck source=tests/lib/services.sh
source tests/lib/services.sh
# shellcheck source=tests/lib/ui.sh
source tests/lib/ui.sh

ASAN=1
MATRIX=1
FUZZ=
REPEAT=1
HOG=0
CTEST_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --no-asan) ASAN=0 ;;
    --no-matrix) MATRIX=0 ;;
    --no-fuzz) FUZZ=0 ;;
    --fuzz) FUZZ=1 ;;
    --cpu-hog) HOG=1 ;;
    --repeat)
        [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "tests/run.sh: --repeat takes a count" >&2; exit 2; }
        REPEAT=$2
        shift
        ;;
    -L | -R) CTEST_ARGS+=("$1" "$2"); shift ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "tests/run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
# A run narrowed to some tests leaves the fuzz targets out unless asked for.
[ -n "$FUZZ" ] || { [ ${#CTEST_ARGS[@]} -gt 0 ] && FUZZ=0 || FUZZ=1; }
[ ${#CTEST_ARGS[@]} -gt 0 ] || CTEST_ARGS=(-L 'unit|integration|conformance|e2e')

deps_install

# The conformance tests' real xDS clients and helpers (tests/conformance/package.json)
# and the browser tests' playwright-core (tests/e2e/package.json): `npm ci` when
# node_modules is missing or was built from another package-lock.json. The stamp is
# the lock it was built from; the tests' harnesses read it too.
echo "== node modules"
for d in tests/conformance tests/e2e; do
    if ! cmp -s "$d/package-lock.json" "$d/node_modules/.sextant-lock-stamp" 2>/dev/null; then
        (cd "$d" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error &&
            cp package-lock.json node_modules/.sextant-lock-stamp)
    fi
done

# The web UI (ui/ -> ui/dist, served by `sextant serve` at /; the browser tests use it).
echo "== web UI"
ui_build "$ROOT"

echo "== format"
mapfile -t CFILES < <(git ls-files '*.c' '*.h' 2>/dev/null || find server storage api tests -name '*.[ch]')
clang-format --dry-run -Werror "${CFILES[@]}"

# The architecture checks itself: includes point down the floors, files stay readable.
echo "== architecture"
tests/arch/floors.sh
tests/arch/file_size.sh

JOBS=$(nproc 2>/dev/null || echo 2)
build() {
    local dir=$1 type=$2
    shift 2
    echo "== build $dir ($type)"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
    # A failed build stops here: stale test binaries from an earlier build must not run
    # as if they were this one's.
    cmake --build "$dir" -j"$JOBS" 2>&1 | { grep -Ev '^\[ *[0-9]+%\]|^-- ' || true; } ||
        { echo "build in $dir failed" >&2; exit 1; }
}
build build-release Release
[ $ASAN = 0 ] || build build-asan RelWithDebInfo -DSEXTANT_SANITIZE=ON
if [ $MATRIX = 1 ]; then
    echo "== build matrix"
    # build-release is the default compiler's Release cell.
    skip=()
    [ -n "${CC:-}" ] || skip=(--skip gcc-Release)
    tests/build_matrix.sh "${skip[@]}"
fi

WORK=$(mktemp -d /tmp/sextant-test.XXXXXX)
chmod 755 "$WORK"
HOG_PIDS=()
cleanup() {
    [ ${#HOG_PIDS[@]} -eq 0 ] || kill "${HOG_PIDS[@]}" 2>/dev/null || true
    svc_redis_stop "$WORK/redis" || true
    svc_pg_stop "$WORK/pg" || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PG_PORT=$(svc_free_port)
svc_pg_start "$WORK/pg" "$PG_PORT"
REDIS_PORT=$(svc_free_port)
svc_redis_start "$WORK/redis" "$REDIS_PORT"

export SEXTANT_TEST_DATABASE_URL="postgresql://sextant@127.0.0.1:$PG_PORT/postgres"
export SEXTANT_TEST_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export SEXTANT_TEST_REDIS_SERVER
SEXTANT_TEST_REDIS_SERVER=$(command -v redis-server)
export SEXTANT_TEST_PG_BIN
SEXTANT_TEST_PG_BIN=$(svc_pg_bin)
export SEXTANT_TEST_OUT="$ROOT/tests/out"
mkdir -p "$SEXTANT_TEST_OUT"

if [ $HOG = 1 ]; then
    for _ in $(seq "$JOBS"); do
        yes >/dev/null &
        HOG_PIDS+=($!)
    done
    echo "== cpu hog: ${#HOG_PIDS[@]} spinning processes"
fi

status=0
FAILED_RUNS=()
run_ctest() {
    local dir=$1 run=$2
    echo "== ctest $dir (run $run of $REPEAT)"
    local log="$WORK/ctest-$run-$(basename "$dir").log"
    if ! ctest --test-dir "$dir" "${CTEST_ARGS[@]}" -j"$JOBS" --output-on-failure \
        --timeout 300 2>&1 | tee "$log"; then
        status=1
        FAILED_RUNS+=("run $run, $dir: $(grep -E '^[[:space:]]*[0-9]+ - ' "$log" | sed -E 's/^[[:space:]]*[0-9]+ - //' |
            tr '\n' ' ')")
    fi
}
# glibc writes its fatal messages (a double free, a failed malloc check) to the terminal
# unless told otherwise; under ctest there is none, and the reason for an abort would be
# lost. Into each process's stderr, the test's logs, they go.
export LIBC_FATAL_STDERR_=1
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
for run in $(seq "$REPEAT"); do
    run_ctest build-release "$run"
    [ $ASAN = 0 ] || run_ctest build-asan "$run"
done
# The fuzz targets, each on its committed corpus (past findings) and then for
# SEXTANT_FUZZ_SECONDS more (tests/fuzz/README.md runs them for longer).
if [ "$FUZZ" = 1 ]; then
    echo "== fuzz"
    if ! tests/fuzz/run.sh; then
        status=1
        FAILED_RUNS+=("fuzz: a target found a problem (== fuzz above)")
    fi
fi
if [ $status = 0 ]; then
    echo "== all tests passed ($REPEAT run(s))"
else
    echo "== some tests FAILED in ${#FAILED_RUNS[@]} of $REPEAT run(s):"
    printf '   %s\n' "${FAILED_RUNS[@]}"
fi
exit $status

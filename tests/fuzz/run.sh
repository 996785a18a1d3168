#!/usr/bin/env bash
# tests/fuzz/run.sh — builds the libFuzzer targets with clang (build-fuzz) and runs each
# for a while on its committed corpus (tests/fuzz/corpus/<target>, read-only: new inputs
# go to build-fuzz/corpus/<target>). Every committed input runs first, so a past finding
# kept there fails again if its bug comes back. Crashes are written to
# build-fuzz/artifacts/. Exits non-zero when a target found something.
#
#   tests/fuzz/run.sh                    every target, SEXTANT_FUZZ_SECONDS (10) each
#   tests/fuzz/run.sh -t 3600 pbjson     one target for an hour
#   SEXTANT_FUZZ_JOBS=2 tests/fuzz/run.sh -t 600 xds   two processes for one target
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SECONDS_EACH=${SEXTANT_FUZZ_SECONDS:-10}
FUZZ_JOBS=${SEXTANT_FUZZ_JOBS:-1}
BUILD=${SEXTANT_FUZZ_BUILD:-build-fuzz}
while [ $# -gt 0 ]; do
    case "$1" in
    -t) SECONDS_EACH=$2; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "tests/fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
[[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ ]] || { echo "tests/fuzz/run.sh: seconds must be a positive count" >&2; exit 2; }
command -v clang >/dev/null || { echo "tests/fuzz/run.sh: clang not found" >&2; exit 1; }

echo "== build $BUILD (clang, libFuzzer + ASan + UBSan)"
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEXTANT_FUZZ=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 2)" --target fuzzers 2>&1 |
    { grep -Ev '^\[ *[0-9]+%\]|^-- ' || true; }

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for d in tests/fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
mkdir -p "$BUILD/artifacts"
failed=()
# Leaks are findings too; the daemon's known library leaks are suppressed as in the suite.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for t in "${targets[@]}"; do
    bin="$BUILD/fuzz/fuzz_$t"
    [ -x "$bin" ] || { echo "tests/fuzz/run.sh: no target $t" >&2; exit 2; }
    work="$BUILD/corpus/$t"
    mkdir -p "$work"
    args=(-max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$BUILD/artifacts/$t-")
    dict=tests/fuzz/$t.dict
    case $t in pbjson | validate) dict=tests/fuzz/ir.dict ;; esac
    [ ! -f "$dict" ] || args+=(-dict="$dict")
    [ "$FUZZ_JOBS" = 1 ] || args+=(-fork="$FUZZ_JOBS")
    log="$BUILD/fuzz-$t.log"
    start=$(date +%s)
    if "$bin" "${args[@]}" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
        runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
        echo "fuzz $t: ok ($(($(date +%s) - start)) s, ${runs:-?} runs)"
    else
        echo "fuzz $t: FAILED, $log:"
        grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$log" | head -10 | sed 's/^/    /'
        failed+=("$t")
    fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: ${#failed[@]} target(s) found a problem: ${failed[*]}" >&2; exit 1; }

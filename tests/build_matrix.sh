#!/usr/bin/env bash
# tests/build_matrix.sh — every standard CMake build type with every supported compiler.
#
# Builds Debug, Release, RelWithDebInfo and MinSizeRel with GCC and with clang, each in
# its own tree under build-matrix/<compiler>-<type>, all targets (daemon, tests,
# benches), with the project's -Wall -Wextra -Werror. Warnings differ by optimisation
# level (GCC's -O3 flow analysis finds "may be used uninitialized" that -O0 does not),
# so a change is only known to build once every cell has built. Prints one line per
# cell and exits non-zero when any failed, after showing its first errors.
#
#   tests/build_matrix.sh                       all eight cells
#   tests/build_matrix.sh --skip gcc-Release    leave out cells built elsewhere (repeatable)
#   CCS="clang" TYPES="Debug" tests/build_matrix.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CCS=${CCS:-gcc clang}
TYPES=${TYPES:-Debug Release RelWithDebInfo MinSizeRel}
SKIP=" "
while [ $# -gt 0 ]; do
    case "$1" in
    --skip) SKIP+="$2 "; shift ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "tests/build_matrix.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

JOBS=$(nproc 2>/dev/null || echo 2)
failed=()
for cc in $CCS; do
    command -v "$cc" >/dev/null || { echo "build_matrix: compiler $cc not found" >&2; exit 1; }
    # The C++ compiler of the same family (the RE2 shim): gcc -> g++, clang -> clang++.
    cxx=${cc/gcc/g++}
    [ "$cxx" != "$cc" ] || cxx=${cc/clang/clang++}
    command -v "$cxx" >/dev/null || { echo "build_matrix: compiler $cxx not found" >&2; exit 1; }
    for type in $TYPES; do
        cell="$cc-$type"
        case "$SKIP" in *" $cell "*) continue ;; esac
        dir="build-matrix/$cell"
        log="$dir.log"
        mkdir -p build-matrix
        start=$(date +%s)
        if CC=$cc CXX=$cxx cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" >"$log" 2>&1 &&
            cmake --build "$dir" -j"$JOBS" >>"$log" 2>&1; then
            echo "build $cell: ok ($(($(date +%s) - start)) s)"
        else
            echo "build $cell: FAILED ($(($(date +%s) - start)) s), $log:"
            grep -E 'error|Error' "$log" | head -20 | sed 's/^/    /'
            failed+=("$cell")
        fi
    done
done
[ ${#failed[@]} -eq 0 ] || { echo "build matrix: ${#failed[@]} cell(s) failed: ${failed[*]}" >&2; exit 1; }

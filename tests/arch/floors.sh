#!/usr/bin/env bash
# tests/arch/floors.sh — the architecture, as rules over #include lines.
#
# Sextant's C code stands on four floors, and an include may only point to the same
# floor or one below it:
#
#   api/          HTTP, REST, SSE, OpenAPI, the UI's files: parses requests into C structs
#   server/       the domain: configs, validation, translation, snapshots, xDS, rollouts
#   storage/      the only code that speaks SQL (libpq) or RESP (hiredis)
#   server/base/  arena, errors, log, metrics, clocks: the runtime under everything
#
# server/main.c is the composition root: the one file that knows every floor. Inside
# the domain floor some rooms must not lean on others; those rules follow the floors.
# Generated protobuf headers (gateway/…, envoy/…, google/…) and system headers are
# below every floor. Exits 1 and names every include that breaks a rule.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# Floors, highest first: "floor prefix". The longest matching prefix names a file's floor.
FLOORS='
4 api/
3 server/
2 storage/
1 server/base/
'
# Files that may include any floor.
ROOTS='
server/main.c
'
# Rooms of one floor that must not include another room: "from-prefix to-prefix why".
DENY='
server/validate/ server/xds/ validation checks the IR and the translator, never the wire engine
server/translate/ server/xds/ the translator serves the xDS engine, not the other way round
server/ir/ server/validate/ the IR depends on nothing but jansson, protobuf-c and base
server/ir/ server/xds/ the IR depends on nothing but jansson, protobuf-c and base
server/ir/ server/translate/ the IR depends on nothing but jansson, protobuf-c and base
server/ir/ server/snapshot/ the IR depends on nothing but jansson, protobuf-c and base
server/k8s/ server/xds/ Gateway API objects become IR, never xDS resources directly
api/ storage/pg_pool.h handlers call the domain; no request holds a database connection
'

floor_of() {
    local path=$1 best=0 bestlen=0 n prefix
    while read -r n prefix; do
        [ -n "$n" ] || continue
        if [[ $path == "$prefix"* ]] && [ ${#prefix} -gt $bestlen ]; then
            best=$n
            bestlen=${#prefix}
        fi
    done <<<"$FLOORS"
    echo "$best"
}

bad=0
while IFS= read -r file; do
    grep -qxF "$file" <<<"$ROOTS" && continue
    from=$(floor_of "$file")
    [ "$from" -gt 0 ] || continue
    while IFS= read -r line; do
        num=${line%%:*}
        inc=$(sed -E 's/^[0-9]+:#include "([^"]+)".*/\1/' <<<"$line")
        to=$(floor_of "$inc")
        if [ "$to" -gt "$from" ]; then
            echo "$file:$num: includes $inc, a floor above its own" >&2
            bad=1
        fi
        while read -r dfrom dto why; do
            [ -n "$dfrom" ] || continue
            if [[ $file == "$dfrom"* && $inc == "$dto"* ]]; then
                echo "$file:$num: includes $inc: $why" >&2
                bad=1
            fi
        done <<<"$DENY"
    done < <(grep -n '^#include "' "$file" || true)
done < <(git ls-files 'api/*.[ch]' 'server/*.[ch]' 'server/*.cc' 'storage/*.[ch]' 2>/dev/null ||
    find api server storage -name '*.[ch]' -o -name '*.cc')
[ $bad = 0 ] && echo "floors: every include points down"
exit $bad

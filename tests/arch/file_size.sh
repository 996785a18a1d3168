#!/usr/bin/env bash
# tests/arch/file_size.sh — no C file in api/, server/ or storage/ passes 1,000 lines.
#
# A module is one job a reader can hold in one sitting; a file that grows past the
# limit is split along the seams it already has (see README, "Architecture").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LIMIT=${LIMIT:-1000}
bad=0
while IFS= read -r f; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$LIMIT" ]; then
        echo "$f: $n lines, more than $LIMIT" >&2
        bad=1
    fi
done < <(git ls-files 'api/*.[ch]' 'server/*.[ch]' 'storage/*.[ch]' 2>/dev/null ||
    find api server storage -name '*.[ch]')
[ $bad = 0 ] && echo "file size: every C file in api/, server/, storage/ is at most $LIMIT lines"
exit $bad

#!/usr/bin/env bash
# deploy/lb/render.sh — writes deploy/lb/haproxy.cfg for a given set of replicas to stdout:
# the listening addresses and the stats socket filled in, one server line per replica in
# the xDS pool (its gRPC port, checked on its HTTP port) and in the REST pool.
#
#   deploy/lb/render.sh --grpc-bind HOST:PORT --http-bind HOST:PORT --stats-socket PATH \
#       --replica NAME=HOST:GRPC_PORT:HTTP_PORT [--replica ...] [--template FILE]
#
# Check the result with `haproxy -c -f FILE`.
set -euo pipefail

usage() {
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
die() {
    echo "render.sh: $*" >&2
    exit 2
}

TEMPLATE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/haproxy.cfg
GRPC_BIND='' HTTP_BIND='' STATS_SOCKET=''
REPLICAS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --grpc-bind) GRPC_BIND=${2:-} && shift 2 ;;
    --http-bind) HTTP_BIND=${2:-} && shift 2 ;;
    --stats-socket) STATS_SOCKET=${2:-} && shift 2 ;;
    --replica) REPLICAS+=("${2:-}") && shift 2 ;;
    --template) TEMPLATE=${2:-} && shift 2 ;;
    -h | --help) usage ;;
    *) die "unknown argument $1 (--help lists them)" ;;
    esac
done
[ -n "$GRPC_BIND" ] || die "--grpc-bind is required"
[ -n "$HTTP_BIND" ] || die "--http-bind is required"
[ -n "$STATS_SOCKET" ] || die "--stats-socket is required"
[ ${#REPLICAS[@]} -gt 0 ] || die "at least one --replica NAME=HOST:GRPC_PORT:HTTP_PORT is required"
[ -r "$TEMPLATE" ] || die "cannot read the template $TEMPLATE"

grpc_lines='' http_lines=''
declare -A seen=()
for r in "${REPLICAS[@]}"; do
    # NAME=HOST:GRPC:HTTP; HOST may be [v6].
    [[ "$r" =~ ^([A-Za-z0-9._-]+)=(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5}):([0-9]{1,5})$ ]] ||
        die "--replica $r: want NAME=HOST:GRPC_PORT:HTTP_PORT"
    name=${BASH_REMATCH[1]} host=${BASH_REMATCH[2]} grpc=${BASH_REMATCH[3]} http=${BASH_REMATCH[4]}
    [ -z "${seen[$name]:-}" ] || die "--replica $name is named twice"
    seen[$name]=1
    grpc_lines+="    server $name $host:$grpc port $http"$'\n'
    http_lines+="    server $name $host:$http"$'\n'
done

while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
    *"# @GRPC_SERVERS@"*) printf '%s' "$grpc_lines" ;;
    *"# @HTTP_SERVERS@"*) printf '%s' "$http_lines" ;;
    *)
        line=${line//@GRPC_BIND@/$GRPC_BIND}
        line=${line//@HTTP_BIND@/$HTTP_BIND}
        line=${line//@STATS_SOCKET@/$STATS_SOCKET}
        printf '%s\n' "$line"
        ;;
    esac
done <"$TEMPLATE"

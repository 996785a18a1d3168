#!/usr/bin/env bash
# deploy/local/down.sh — stops what deploy/local/up.sh started (the replicas and HAProxy
# of --replicas N too). With --purge it also deletes .local/ (the database, Redis
# folder, logs and chosen ports).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
source tests/lib/services.sh
LOCAL=$ROOT/.local

# stop PIDFILE WHAT: SIGTERM, SIGKILL after 15 s; the pid file is removed.
stop() { svc_stop_pid "$1" 150 "$2"; }
# HAProxy first, so no request is sent to a replica that is stopping.
stop "$LOCAL/haproxy.pid" haproxy
stop "$LOCAL/sextant.pid" sextant
for f in "$LOCAL"/replicas/*.pid; do
    [ -f "$f" ] || continue
    stop "$f" "sextant $(basename "$f" .pid)"
done
for f in "$LOCAL"/clients/*.pid; do
    [ -f "$f" ] || continue
    kill -TERM "$(cat "$f")" 2>/dev/null && echo "stopped client $(basename "$f" .pid)"
    rm -f "$f"
done
if [ -d "$LOCAL/redis" ]; then svc_redis_stop "$LOCAL/redis" && echo "stopped redis"; fi
if [ -d "$LOCAL/pg/data" ]; then svc_pg_stop "$LOCAL/pg" && echo "stopped postgresql"; fi
if [ "${1:-}" = "--purge" ]; then
    rm -rf "$LOCAL"
    echo "removed $LOCAL"
fi

#!/usr/bin/env bash
# deploy/local/clients.sh [N] — starts N proxyless gRPC clients (gRPC C core through
# Debian's python3-grpcio) in the demo group against the Sextant that up.sh started:
# node ids demo-client-1 .. demo-client-N (5 by default), each dialing
# xds:///echo.test. Their ACKs and NACKs are what rollouts wait for; they show up in
# the web UI's Proxies page. Running it again restarts them; down.sh stops them.
# Logs (one line per call) are in .local/clients/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
LOCAL=$ROOT/.local
N=${1:-5}
case "$N" in '' | *[!0-9]*) echo "usage: $0 [N]" >&2; exit 2 ;; esac
[ -f "$LOCAL/ports.env" ] || { echo "clients.sh: run deploy/local/up.sh first" >&2; exit 1; }
# shellcheck source=/dev/null
source "$LOCAL/ports.env"
/usr/bin/python3 -c 'import grpc' 2>/dev/null ||
    { echo "clients.sh: /usr/bin/python3 cannot import grpc (apt-get install python3-grpcio)" >&2; exit 1; }

stop_clients() {
    local f pid
    for f in "$LOCAL"/clients/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill -TERM "$pid" 2>/dev/null || true
        rm -f "$f"
    done
}
mkdir -p "$LOCAL/clients"
stop_clients
for i in $(seq 1 "$N"); do
    id="demo-client-$i"
    GRPC_XDS_BOOTSTRAP_CONFIG=$(printf '{"xds_servers":[{"server_uri":"127.0.0.1:%s","channel_creds":[{"type":"insecure"}]}],"node":{"id":"%s","cluster":"demo","locality":{},"metadata":{"labels":{"zone":"%s"}}}}' \
        "$GRPC_PORT" "$id" "$([ $((i % 2)) = 1 ] && echo local-a || echo local-b)") \
        GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=1000 \
        nohup /usr/bin/python3 tests/conformance/lib/xds_client.py --target xds:///echo.test \
        --out "$LOCAL/clients/$id.log" --interval-ms 1000 >"$LOCAL/clients/$id.stderr" 2>&1 &
    echo $! >"$LOCAL/clients/$id.pid"
done
echo "started $N clients (demo-client-1 .. demo-client-$N) in group demo; logs in $LOCAL/clients/"

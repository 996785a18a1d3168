#!/usr/bin/env bash
# deploy/local/up.sh — one command to a running Sextant on this machine.
#
# Installs the missing Debian packages, builds, creates a private PostgreSQL cluster
# and a Redis under .local/ (loopback only; no system service is touched), migrates,
# loads the demo configuration in deploy/local/demo.json, builds the web UI (ui/dist,
# served at /, with the one-click dev sign-in on), starts `sextant serve` and prints
# the URLs. Running it again is safe: what runs keeps running (Sextant itself
# is restarted so a new build takes effect). deploy/local/down.sh stops it all.
#
# Ports are chosen on the first run (the usual ones when free) and kept in
# .local/ports.env; SEXTANT_HTTP_LISTEN / SEXTANT_GRPC_LISTEN override them.
#
# --replicas N (N > 1) starts N replicas (local-1 .. local-N, each on ports of its own)
# behind HAProxy, which takes the usual ports: deploy/lb/haproxy.cfg rendered by
# deploy/lb/render.sh into .local/haproxy.cfg (xDS pool checked on /readyz/xds, REST
# pool on /readyz; README "Running several replicas").
set -euo pipefail

REPLICAS=1
while [ $# -gt 0 ]; do
    case "$1" in
    --replicas)
        REPLICAS=${2:-}
        shift 2 || true
        ;;
    -h | --help)
        sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "up.sh: unknown argument $1 (try --help)" >&2
        exit 2
        ;;
    esac
done
[[ "$REPLICAS" =~ ^[1-9][0-9]?$ ]] || { echo "up.sh: --replicas wants a number from 1 to 99" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
source tests/lib/deps.sh
source tests/lib/services.sh
source tests/lib/ui.sh
LOCAL=$ROOT/.local

deps_install

echo "building..."
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$(nproc 2>/dev/null || echo 2)" --target sextant 2>&1 |
    grep -Ev '^\[ *[0-9]+%\]' || true
BIN=$ROOT/build-release/sextant
[ -x "$BIN" ] || { echo "up.sh: build failed" >&2; exit 1; }
echo "building the web UI..."
ui_build "$ROOT" || { echo "up.sh: the web UI did not build" >&2; exit 1; }

mkdir -p "$LOCAL"
chmod 755 "$LOCAL"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick() { if port_free "$1"; then echo "$1"; else svc_free_port; fi; }
if [ ! -f "$LOCAL/ports.env" ]; then
    {
        echo "PG_PORT=$(pick 55432)"
        echo "REDIS_PORT=$(pick 56379)"
        echo "HTTP_PORT=$(pick 8080)"
        echo "GRPC_PORT=$(pick 18000)"
    } >"$LOCAL/ports.env"
fi
source "$LOCAL/ports.env"

# PostgreSQL: keep it when it already runs from .local/pg.
if ! svc_as_pg "$(svc_pg_bin)/pg_ctl" -D "$LOCAL/pg/data" status >/dev/null 2>&1; then
    echo "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    svc_pg_start "$LOCAL/pg" "$PG_PORT"
fi
ADMIN_URL="postgresql://sextant@127.0.0.1:$PG_PORT/postgres"
if [ "$(psql "$ADMIN_URL" -tAc "SELECT 1 FROM pg_database WHERE datname = 'sextant'")" != 1 ]; then
    psql "$ADMIN_URL" -qc "CREATE DATABASE sextant" >/dev/null
fi

# Redis: keep it when its pid is alive.
if ! { [ -f "$LOCAL/redis/redis.pid" ] && kill -0 "$(cat "$LOCAL/redis/redis.pid")" 2>/dev/null; }; then
    echo "starting Redis on 127.0.0.1:$REDIS_PORT"
    svc_redis_start "$LOCAL/redis" "$REDIS_PORT"
fi

export SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$PG_PORT/sextant"
export SEXTANT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export SEXTANT_HTTP_LISTEN="${SEXTANT_HTTP_LISTEN:-127.0.0.1:$HTTP_PORT}"
export SEXTANT_GRPC_LISTEN="${SEXTANT_GRPC_LISTEN:-127.0.0.1:$GRPC_PORT}"
export SEXTANT_REPLICA_ID="${SEXTANT_REPLICA_ID:-local-1}"
# The REST API needs a JWT signing key: a random one for this machine, kept in .local/.
if [ ! -s "$LOCAL/hs256.secret" ]; then
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$LOCAL/hs256.secret")
fi
export SEXTANT_AUTH_HS256_SECRET_FILE="$LOCAL/hs256.secret"
# Private keys in configs are stored encrypted: a random keyring for this machine, in .local/.
if [ ! -s "$LOCAL/secrets.keys" ]; then
    (umask 077 && printf 'local %s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$LOCAL/secrets.keys")
fi
export SEXTANT_SECRETS_KEY_FILE="$LOCAL/secrets.keys"
# The web UI from this tree, and its one-click sign-in (local demo only: anyone who
# reaches the port may sign in as any role).
export SEXTANT_HTTP_UI_DIR="$ROOT/ui/dist"
export SEXTANT_AUTH_DEV_SIGN_IN="${SEXTANT_AUTH_DEV_SIGN_IN:-true}"
# The demo's proxies (deploy/local/clients.sh) connect without credentials: any client
# that reaches the gRPC port may claim any node id (README "Proxy authentication").
export SEXTANT_XDS_AUTH="${SEXTANT_XDS_AUTH:-none}"

"$BIN" migrate
"$BIN" import --file deploy/local/demo.json --namespace demo --name echo --group demo \
    --author up.sh --message "demo configuration"

# Sextant: restart so the newest build serves. Whatever ran before stops first: the
# single replica, the replicas of --replicas and their HAProxy.
stop_pid() { svc_stop_pid "$1" 100; } # stop_pid FILE: SIGTERM, waits up to 10 s
stop_pid "$LOCAL/sextant.pid"
for f in "$LOCAL"/replicas/*.pid; do stop_pid "$f"; done
stop_pid "$LOCAL/haproxy.pid"

# wait_ready URL PIDFILE LOG: waits until URL/readyz answers 200; fails with the log's
# tail when the process exits or is not ready within a minute.
wait_ready() {
    for _ in $(seq 1 300); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz" || true)" = 200 ] && return 0
        kill -0 "$(cat "$2")" 2>/dev/null || { tail -n 20 "$3" >&2; echo "up.sh: sextant exited" >&2; exit 1; }
        sleep 0.2
    done
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz")" = 200 ] ||
        { tail -n 20 "$3" >&2; echo "up.sh: sextant did not become ready" >&2; exit 1; }
}

URL="http://$SEXTANT_HTTP_LISTEN"
if [ "$REPLICAS" = 1 ]; then
    setsid nohup "$BIN" serve >>"$LOCAL/sextant.log" 2>&1 </dev/null &
    echo $! >"$LOCAL/sextant.pid"
    wait_ready "$URL" "$LOCAL/sextant.pid" "$LOCAL/sextant.log"
    RUNNING="pid $(cat "$LOCAL/sextant.pid"), replica $SEXTANT_REPLICA_ID"
    LOGS="$LOCAL/sextant.log"
else
    # N replicas on ports of their own (new ones each run), HAProxy on the usual ones.
    mkdir -p "$LOCAL/replicas"
    lb_args=() listing=""
    for i in $(seq 1 "$REPLICAS"); do
        name=local-$i
        http=$(svc_free_port)
        grpc=$(svc_free_port)
        SEXTANT_REPLICA_ID=$name SEXTANT_HTTP_LISTEN=127.0.0.1:$http SEXTANT_GRPC_LISTEN=127.0.0.1:$grpc \
            setsid nohup "$BIN" serve >>"$LOCAL/replicas/$name.log" 2>&1 </dev/null &
        echo $! >"$LOCAL/replicas/$name.pid"
        lb_args+=(--replica "$name=127.0.0.1:$grpc:$http")
        listing+="  $name        http://127.0.0.1:$http   xDS 127.0.0.1:$grpc   pid $!"$'\n'
        wait_ready "http://127.0.0.1:$http" "$LOCAL/replicas/$name.pid" "$LOCAL/replicas/$name.log"
    done
    deploy/lb/render.sh --grpc-bind "$SEXTANT_GRPC_LISTEN" --http-bind "$SEXTANT_HTTP_LISTEN" \
        --stats-socket "$LOCAL/haproxy.sock" "${lb_args[@]}" >"$LOCAL/haproxy.cfg"
    haproxy -c -q -f "$LOCAL/haproxy.cfg" || { echo "up.sh: haproxy refused $LOCAL/haproxy.cfg" >&2; exit 1; }
    setsid nohup haproxy -db -f "$LOCAL/haproxy.cfg" >>"$LOCAL/haproxy.log" 2>&1 </dev/null &
    echo $! >"$LOCAL/haproxy.pid"
    wait_ready "$URL" "$LOCAL/haproxy.pid" "$LOCAL/haproxy.log"
    RUNNING="$REPLICAS replicas, local-1 .. local-$REPLICAS, behind HAProxy, pid $(cat "$LOCAL/haproxy.pid")"
    LOGS="$LOCAL/replicas/local-*.log, $LOCAL/haproxy.log"
fi

cat <<TXT

Sextant is running ($RUNNING).
  web UI         $URL/   (sign in with one click as admin, operator or viewer)
  REST API       $URL/api/v1   (OpenAPI document: $URL/api/v1/openapi.json)
  health         $URL/healthz   $URL/readyz
  metrics        $URL/metrics
  xDS (gRPC)     $SEXTANT_GRPC_LISTEN
  database       psql $SEXTANT_DATABASE_URL
  redis          redis-cli -p $REDIS_PORT
  log            $LOGS

The REST API takes JWTs signed with the key in $LOCAL/hs256.secret. Mint one (roles
admin, operator, viewer) and call the API:
  export TOKEN=\$(SEXTANT_AUTH_HS256_SECRET_FILE=$LOCAL/hs256.secret $BIN token --user you --role admin --ttl 12h)
  curl -H "Authorization: Bearer \$TOKEN" $URL/api/v1/configs
Start a few proxyless gRPC clients in the demo group (rollouts wait for their ACKs):
  deploy/local/clients.sh 5
Stop everything with deploy/local/down.sh
TXT
if [ "$REPLICAS" != 1 ]; then
    cat <<TXT

The addresses above are HAProxy's (balanced over the replicas). Each replica directly:
$listing  HAProxy: $LOCAL/haproxy.cfg; stats socket $LOCAL/haproxy.sock, e.g.
  echo 'show servers state' | python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect("$LOCAL/haproxy.sock"); s.sendall(sys.stdin.buffer.read()); print(s.makefile().read())'
TXT
fi

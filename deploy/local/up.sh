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
set -euo pipefail

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
# The web UI from this tree, and its one-click sign-in (local demo only: anyone who
# reaches the port may sign in as any role).
export SEXTANT_HTTP_UI_DIR="$ROOT/ui/dist"
export SEXTANT_AUTH_DEV_SIGN_IN="${SEXTANT_AUTH_DEV_SIGN_IN:-true}"

"$BIN" migrate
"$BIN" import --file deploy/local/demo.json --namespace demo --name echo --group demo \
    --author up.sh --message "demo configuration"

# Sextant: restart so the newest build serves.
if [ -f "$LOCAL/sextant.pid" ] && kill -0 "$(cat "$LOCAL/sextant.pid")" 2>/dev/null; then
    pid=$(cat "$LOCAL/sextant.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fi
setsid nohup "$BIN" serve >>"$LOCAL/sextant.log" 2>&1 </dev/null &
echo $! >"$LOCAL/sextant.pid"

URL="http://$SEXTANT_HTTP_LISTEN"
for _ in $(seq 1 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz" || true)" = 200 ] && break
    kill -0 "$(cat "$LOCAL/sextant.pid")" 2>/dev/null || { tail -n 20 "$LOCAL/sextant.log" >&2; echo "up.sh: sextant exited" >&2; exit 1; }
    sleep 0.2
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ] ||
    { tail -n 20 "$LOCAL/sextant.log" >&2; echo "up.sh: sextant did not become ready" >&2; exit 1; }

cat <<TXT

Sextant is running (pid $(cat "$LOCAL/sextant.pid"), replica $SEXTANT_REPLICA_ID).
  web UI         $URL/   (sign in with one click as admin, operator or viewer)
  REST API       $URL/api/v1   (OpenAPI document: $URL/api/v1/openapi.json)
  health         $URL/healthz   $URL/readyz
  metrics        $URL/metrics
  xDS (gRPC)     $SEXTANT_GRPC_LISTEN
  database       psql $SEXTANT_DATABASE_URL
  redis          redis-cli -p $REDIS_PORT
  log            $LOCAL/sextant.log

The REST API takes JWTs signed with the key in $LOCAL/hs256.secret. Mint one (roles
admin, operator, viewer) and call the API:
  export TOKEN=\$(SEXTANT_AUTH_HS256_SECRET_FILE=$LOCAL/hs256.secret $BIN token --user you --role admin --ttl 12h)
  curl -H "Authorization: Bearer \$TOKEN" $URL/api/v1/configs
Start a few proxyless gRPC clients in the demo group (rollouts wait for their ACKs):
  deploy/local/clients.sh 5
Stop everything with deploy/local/down.sh
TXT

#!/usr/bin/env bash
# test_daemon_storage.sh — the daemon against a real PostgreSQL and Redis, as an
# operator meets it: /readyz stays 503 while the database is unreachable or not
# migrated and turns 200 once it is; a config imported with `sextant import` reaches
# the running replica through NOTIFY; bad input changes nothing; Redis going away
# does not break reads; a restarted replica loads the snapshots before it is ready;
# `sextant publish` writes whole snapshots the same way; SIGTERM exits 0 (under the
# sanitizer build that also means no leak).
#
# It runs its own PostgreSQL cluster (started only after sextant, to see the
# database come up late) and its own Redis.
set -u

BIN=${SEXTANT_BIN:?SEXTANT_BIN must name the sextant binary}
SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
source "$SRC/tests/lib/shtest.sh"

own_init storage
export SEXTANT_DATABASE_CONNECT_TIMEOUT=2s

not_ready() { ! ready; }

snapshot_count() {
    psql "$SEXTANT_DATABASE_URL" -tAc "SELECT count(*) FROM snapshots"
}

# ------------------------------------------------------------------ database down
serve_start
check "sextant listens while the database is down" listening "$HTTP_PORT"
check "/healthz is 200 while the database is down" [ "$(http GET /healthz)" = 200 ]
check "/readyz is 503 while the database is down" [ "$(http GET /readyz)" = 503 ]
check "/readyz names the database as not ready" contains "$WORK/body" '"database":false'
check "/readyz/xds is 503 before any snapshot was loaded" [ "$(http GET /readyz/xds)" = 503 ]
check "/readyz/xds names the snapshots as not loaded" contains "$WORK/body" '"snapshots":false'

# ------------------------------------------------------------------ database up, not migrated
own_pg_start || exit 1
check "the log says migrations are pending" wait_for 15 grep -qE "migrations? (is|are) pending" "$WORK/serve.log"
check "/readyz stays 503 while migrations are pending" [ "$(http GET /readyz)" = 503 ]

"$BIN" migrate >"$WORK/migrate.out" 2>&1
check "sextant migrate exits 0" [ $? -eq 0 ]
check "/readyz turns 200 once the database is migrated" wait_for 15 ready
check "/readyz reports every component ready" \
    bash -c "grep -q '\"database\":true' '$WORK/readyz.json' && grep -q '\"snapshots\":true' '$WORK/readyz.json'"
check "the tables are there for psql" \
    bash -c "psql '$SEXTANT_DATABASE_URL' -tAc '\\dt' | grep -q audit_log"

# ------------------------------------------------------------------ a config arrives by NOTIFY
svc_redis_start "$WORK/redis" "$REDIS_PORT" || exit 1
"$BIN" import --file "$SRC/deploy/local/demo.json" --namespace demo --name echo --group demo \
    --author tester --message first >"$WORK/import.out" 2>&1
check "sextant import exits 0" [ $? -eq 0 ]
check "import reports snapshot demo v1" bash -c "tr -d ' \n' <'$WORK/import.out' | grep -q '\"group\":\"demo\",\"version\":1'"
check "the running replica takes the snapshot from NOTIFY" \
    wait_for 10 metric_is 'sextant_snapshot_updates_total{source="notify"}' 1
check "the replica holds one group" metric_is sextant_snapshot_groups 1
check "the encoded snapshot is in Redis after the commit" \
    bash -c "redis-cli -p $REDIS_PORT --scan --pattern 'sextant:snapshot:demo:*' | grep -q ."

# The same content again writes nothing new.
"$BIN" import --file "$SRC/deploy/local/demo.json" --namespace demo --name echo --group demo \
    --author tester >"$WORK/import2.out" 2>&1
check "re-importing the same content exits 0" [ $? -eq 0 ]
check "re-importing the same content writes no snapshot" [ "$(snapshot_count)" = 1 ]

# ------------------------------------------------------------------ bad input changes nothing
cat >"$WORK/bad.json" <<'JSON'
{"listeners":[{"name":"l","port":70000,"protocol":"LISTENER_PROTOCOL_HTTPX"}],
 "backends":[{"name":"b","endpoints":[{"address":"10.0.0.1","port":0}]}],
 "surprise":true}
JSON
"$BIN" import --file "$WORK/bad.json" --namespace demo --name echo --group demo \
    --author tester >"$WORK/bad.out" 2>&1
check "an invalid config exits 1" [ $? -eq 1 ]
check "the error names the unknown field" contains "$WORK/bad.out" 'unknown field "surprise"'
check "the error names the bad enum with its path" contains "$WORK/bad.out" "spec.listeners[0].protocol"
check "the error names the bad port with its path" \
    contains "$WORK/bad.out" "spec.backends[0].endpoints[0].port: must be between 1 and 65535"
check "an invalid config writes no snapshot" [ "$(snapshot_count)" = 1 ]
check "an invalid config writes no version" \
    [ "$(psql "$SEXTANT_DATABASE_URL" -tAc 'SELECT count(*) FROM config_versions')" = 1 ]
echo '{"listeners": [' >"$WORK/broken.json"
"$BIN" import --file "$WORK/broken.json" --name x --group demo >"$WORK/broken.out" 2>&1
check "malformed JSON exits 1" [ $? -eq 1 ]
check "malformed JSON is reported with its line" contains "$WORK/broken.out" "broken.json:2:"

# ------------------------------------------------------------------ Redis away: reads fall back
svc_redis_stop "$WORK/redis"
sed 's/"port": 50052/"port": 50053/' "$SRC/deploy/local/demo.json" >"$WORK/v2.json"
"$BIN" import --file "$WORK/v2.json" --namespace demo --name echo --group demo \
    --author tester --message "second" >"$WORK/import3.out" 2>&1
check "import works with Redis down" [ $? -eq 0 ]
check "the replica takes v2 from PostgreSQL with Redis down" \
    wait_for 10 metric_is 'sextant_snapshot_updates_total{source="notify"}' 2
check "the replica counts the cache as down" wait_for 5 metric_is sextant_cache_up 0
check "/readyz stays 200 without Redis" ready

# ------------------------------------------------------------------ sextant publish
"$BIN" publish --group edge --author tester --message "whole snapshot" \
    "$SRC/deploy/local/demo.json" >"$WORK/publish.out" 2>&1
check "sextant publish exits 0" [ $? -eq 0 ]
check "publish reports edge v1" bash -c "tr -d ' \n' <'$WORK/publish.out' | grep -q '\"group\":\"edge\",\"changed\":true,\"version\":1'"
check "the replica takes the published snapshot" \
    wait_for 10 metric_is 'sextant_snapshot_updates_total{source="notify"}' 3
check "the published snapshot is named after its group and version" \
    [ "$(psql "$SEXTANT_DATABASE_URL" -tAc "SELECT ir->>'id' FROM snapshots WHERE group_name = 'edge'")" = "edge:1" ]
"$BIN" publish --group edge --author tester "$SRC/deploy/local/demo.json" >"$WORK/publish2.out" 2>&1
check "publishing the same content again writes no version" \
    bash -c "tr -d ' \n' <'$WORK/publish2.out' | grep -q '\"changed\":false'"
"$BIN" publish --group edge --author tester "$WORK/bad.json" >"$WORK/publish3.out" 2>&1
check "publishing an invalid snapshot exits 1" [ $? -eq 1 ]
check "the publish error has the path" \
    contains "$WORK/publish3.out" "snapshot.backends[0].endpoints[0].port: must be between 1 and 65535"
check "an invalid publish writes nothing" \
    [ "$(psql "$SEXTANT_DATABASE_URL" -tAc "SELECT count(*) FROM snapshots WHERE group_name = 'edge'")" = 1 ]

# ------------------------------------------------------------------ restart loads snapshots
serve_stop
check "the last log line says sextant stopped" \
    bash -c "tail -n 1 '$WORK/serve.log' | grep -q '\"msg\":\"sextant stopped\"'"
svc_redis_start "$WORK/redis" "$REDIS_PORT" || exit 1
serve_start
check "a restarted replica becomes ready" wait_for 15 ready
check "a restarted replica loaded the snapshot at start-up" \
    metric_is 'sextant_snapshot_updates_total{source="load"}' 2
check "/readyz/xds is 200 on a ready replica" [ "$(http GET /readyz/xds)" = 200 ]
check "/readyz/xds names only the xDS side" \
    bash -c "tr -d ' \n' <'$WORK/body' | grep -qx '{\"status\":\"ready\",\"components\":{\"snapshots\":true,\"xds\":true}}'"

# ------------------------------------------------------------------ database lost after start
svc_pg_stop "$WORK/pg"
check "/readyz turns 503 once the database is gone" wait_for 15 not_ready
check "/readyz/xds stays 200 without the database: the snapshots are held" \
    [ "$(http GET /readyz/xds)" = 200 ]
svc_pg_start "$WORK/pg" "$PG_PORT" || exit 1
check "/readyz is 200 again once the database is back" wait_for 15 ready
check "audit_log holds every import" \
    [ "$(psql "$SEXTANT_DATABASE_URL" -tAc "SELECT count(*) FROM audit_log WHERE action = 'config.import'")" = 3 ]
serve_stop

finish

#!/usr/bin/env bash
# test_rest_crash.sh — the daemon is killed with SIGKILL in the middle of a burst of
# REST writes (creates and updates from concurrent clients, tests/integration/api/burst.js).
# After a restart, every write the daemon acknowledged (2xx) is there with the version
# and checksum it answered, and nothing is half-written: every config version is live
# in a snapshot of its group, every snapshot and every version has its audit row, and
# versions of configs and snapshots of groups have no gaps. Then the restarted replica
# serves and takes writes again.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init crash
# The burst must not be throttled.
export SEXTANT_RATELIMIT_WRITE_RATE=100000 SEXTANT_RATELIMIT_WRITE_BURST=100000
api_serve
OPER=$(api_token burst operator)

node "$SRC/tests/integration/api/burst.js" --port "$HTTP_PORT" --token "$OPER" --group burst \
    --workers 6 --ms 6000 --out "$WORK/acks.log" &
BURST=$!
# Kill once the burst is well under way.
wait_for 20 bash -c "[ \$(grep -c '^ok' '$WORK/acks.log' 2>/dev/null || echo 0) -ge 60 ]"
kill -KILL "$PID"
wait "$PID" 2>/dev/null
PID=
killed_at=$(grep -c '^ok' "$WORK/acks.log")
wait "$BURST"

acked=$(grep -c '^ok' "$WORK/acks.log")
cut_off=$(grep -c '^fail .* [A-Z]' "$WORK/acks.log" || true)
echo "burst: $acked writes acknowledged ($killed_at when the daemon was killed), $cut_off cut off"
check "the burst had acknowledged writes before the kill" [ "$acked" -ge 60 ]
check "writes were refused while the daemon was down" [ "$cut_off" -gt 0 ]

# ------------------------------------------------------------------ after the restart
api_serve
check "the restarted replica is ready" api_ready

# Every acknowledged write: the config version it answered, with that checksum.
missing=0
while read -r _ op status id version checksum; do
    got=$(sql "SELECT checksum FROM config_versions WHERE config_id = '$id' AND version = $version")
    if [ "$got" != "$checksum" ]; then
        missing=$((missing + 1))
        echo "acknowledged $op of $id v$version ($status) is missing or different: '$got'" >&2
    fi
done < <(grep '^ok' "$WORK/acks.log")
check "every acknowledged write is there with its version and checksum ($acked)" [ "$missing" = 0 ]

q() { sql "$1"; }
check "every config version is part of a snapshot of its group" \
    [ "$(q "SELECT count(*) FROM config_versions v JOIN configs c ON c.id = v.config_id, unnest(c.groups) g
            WHERE NOT v.draft AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.group_name = g
              AND s.source_versions @> jsonb_build_array(jsonb_build_object('config_id', v.config_id, 'version', v.version)))")" = 0 ]
check "every config version has its audit row" \
    [ "$(q "SELECT count(*) FROM config_versions v WHERE NOT EXISTS (SELECT 1 FROM audit_log a
              WHERE a.resource_type = 'config' AND a.resource_id = v.config_id::text AND a.result = 'success'
              AND (a.details->>'after_version')::int = v.version)")" = 0 ]
check "every snapshot has its audit row" \
    [ "$(q "SELECT count(*) FROM snapshots s WHERE NOT EXISTS (SELECT 1 FROM audit_log a
              WHERE a.result = 'success' AND a.details->'snapshots' @> jsonb_build_array(jsonb_build_object('group', s.group_name, 'version', s.version)))")" = 0 ]
check "every config's versions are 1..latest without a gap" \
    [ "$(q "SELECT count(*) FROM configs c WHERE c.latest_version <> (SELECT count(*) FROM config_versions v WHERE v.config_id = c.id)")" = 0 ]
check "every group's snapshots are 1..latest without a gap" \
    [ "$(q "SELECT count(*) FROM proxy_groups g WHERE g.latest_snapshot_version <> (SELECT count(*) FROM snapshots s WHERE s.group_name = g.name)")" = 0 ]
check "the group's newest snapshot holds the live version of every config" \
    [ "$(q "SELECT count(*) FROM configs c WHERE c.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM snapshots s JOIN proxy_groups g ON g.name = s.group_name AND g.latest_snapshot_version = s.version
              WHERE s.group_name = 'burst' AND s.source_versions @> jsonb_build_array(jsonb_build_object('config_id', c.id, 'version', c.live_version)))")" = 0 ]
echo "after the restart: $(q "SELECT count(*) FROM configs") configs, $(q "SELECT count(*) FROM config_versions") versions, $(q "SELECT latest_snapshot_version FROM proxy_groups WHERE name = 'burst'") snapshots of group burst"

# The restarted replica loaded the newest snapshot and takes writes again.
newest=$(q "SELECT latest_snapshot_version FROM proxy_groups WHERE name = 'burst'")
check "the restarted replica loaded snapshot burst v$newest" \
    grep -q "\"msg\":\"snapshot burst v$newest in force\"" "$WORK/serve.log"
ID=$(q "SELECT id FROM configs ORDER BY created_at LIMIT 1")
call_status "GET a config after the restart" 200 api_call "$OPER" GET "/api/v1/configs/$ID"
V=$(jv .version)
call_status "PUT after the restart" 200 api_json "$OPER" PUT "/api/v1/configs/$ID" "{\"spec\":$(api_spec 30000 after.example)}" -H "If-Match: \"$V\""
check "and it writes the next version" jtrue "j.version === $((V + 1)) && j.snapshots.length === 1"

api_stop
finish

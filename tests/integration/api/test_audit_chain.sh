#!/usr/bin/env bash
# test_audit_chain.sh — the tamper-evident audit log, with serve running as the runtime
# role (database.url) and migrate and archive as the owner (database.migrate_url).
#
# Writes made through the API (some concurrently, some cut short by SIGKILL) leave
# chains `sextant audit verify` accepts. The runtime role cannot update, delete,
# truncate or disable triggers on audit rows, nor move a chain head (psql as that
# role). A superuser who rewrites a row with the trigger disabled, deletes a row from
# the middle of a chain or the last row of one is named by verify (exit 1), and verify
# passes again once the row is put back. A flood of unauthenticated requests grows the
# audit table by a bounded number of rows, and a path of 4 KiB is stored cut to 1 KiB
# and marked truncated. `sextant audit archive` exports two old months as JSON lines
# with their chain heads, detaches them, and verify still passes over what remains;
# the runtime role cannot archive.
set -u

SRC=${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}
export SEXTANT_RATELIMIT_AUTH_FAIL_BURST=5
export SEXTANT_RATELIMIT_AUTH_FAIL_RATE=1
export SEXTANT_API_REFUSAL_INTERVAL=1s
# shellcheck source=tests/integration/api/lib.sh
source "$SRC/tests/integration/api/lib.sh"

api_init audit-chain
OWNER_URL=$SEXTANT_DATABASE_URL
APP_URL=$TEST_RUNTIME_DB_URL
export SEXTANT_DATABASE_MIGRATE_URL=$OWNER_URL
export SEXTANT_DATABASE_URL=$APP_URL

as_owner() { psql "$OWNER_URL" -qtAXc "$1"; }
as_app() { psql "$APP_URL" -qtAXc "$1" 2>&1; }
verify() { # verify: `sextant audit verify` as the runtime role; output in $WORK/verify
    "${SX_ENV[@]}" "$BIN" audit verify >"$WORK/verify" 2>>"$WORK/verify.log"
}

check "the runtime role is not the owner of audit_log" \
    [ "$(as_owner "SELECT pg_has_role('sextant_app', relowner, 'USAGE') FROM pg_class WHERE oid = 'audit_log'::regclass")" = f ]

api_serve
ADMIN=$(api_token alice admin)

# post_configs FIRST LAST: configs cFIRST..cLAST created at the same time, in the
# background (their pids in PIDS).
post_configs() {
    local i
    PIDS=()
    for i in $(seq "$1" "$2"); do
        curl -s -o /dev/null --max-time 20 -H "Authorization: Bearer $ADMIN" \
            -H 'Content-Type: application/json' -X POST "http://127.0.0.1:$HTTP_PORT/api/v1/configs" \
            --data-binary "$(api_config_body "c$i" edge "$(api_spec $((8000 + i)) "c$i.example")")" &
        PIDS+=($!)
    done
}

# ------------------------------------------------------------------ chained writes
for i in 1 2 3; do
    call_status "config $i created" 201 api_json "$ADMIN" POST /api/v1/configs \
        "$(api_config_body "c$i" edge "$(api_spec $((8000 + i)) "c$i.example")")"
done
# Concurrent writers in one replica share one chain, one after the other.
post_configs 4 13
wait "${PIDS[@]}"
check "the concurrent writes were audited" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'config.create' AND result = 'success'")" = 13 ]
check "serve does not warn that it owns the audit log" \
    bash -c "! grep -q 'connects as the owner' '$WORK/serve.log'"
check "the replica's rows are one chain, seq 1.. without gaps" \
    [ "$(sql "SELECT count(*) = max(seq) AND min(seq) = 1 FROM audit_log WHERE writer = 'api-audit-chain'")" = t ]

verify
check "verify passes on an untouched database (exit 0)" [ $? = 0 ]
check "verify says how much it checked" grep -Eq '^audit log verified: [0-9]+ rows? in [0-9]+ chains?$' "$WORK/verify"

# A replica killed mid-writes continues its chain where the committed rows end.
post_configs 14 23
serve_kill
wait "${PIDS[@]}"
api_serve
call_status "a write after the restart" 201 api_json "$ADMIN" POST /api/v1/configs \
    "$(api_config_body c99 edge "$(api_spec 8099 c99.example)")"
verify
check "verify passes after a SIGKILL amid writes" [ $? = 0 ]

# ------------------------------------------------------------------ the runtime role
ROWS=$(sql "SELECT count(*) FROM audit_log")
check "the runtime role reads audit rows" [ "$(as_app "SELECT count(*) FROM audit_log")" = "$ROWS" ]
check "the runtime role cannot update a row" \
    bash -c "psql '$APP_URL' -qtAXc \"UPDATE audit_log SET actor = 'mallory'\" 2>&1 | grep -q 'permission denied'"
check "the runtime role cannot delete a row" \
    bash -c "psql '$APP_URL' -qtAXc 'DELETE FROM audit_log' 2>&1 | grep -q 'permission denied'"
check "the runtime role cannot truncate" \
    bash -c "psql '$APP_URL' -qtAXc 'TRUNCATE audit_log' 2>&1 | grep -q 'permission denied'"
check "the runtime role cannot disable the triggers" \
    bash -c "psql '$APP_URL' -qtAXc 'ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only' 2>&1 | grep -q 'must be owner'"
check "the runtime role cannot disable triggers by replication role" \
    bash -c "psql '$APP_URL' -qtAXc 'SET session_replication_role = replica' 2>&1 | grep -q 'permission denied'"
PART=$(as_owner "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_log'::regclass ORDER BY 1 LIMIT 1")
check "the runtime role cannot change a partition directly" \
    bash -c "psql '$APP_URL' -qtAXc \"DELETE FROM $PART\" 2>&1 | grep -q 'permission denied'"
check "the runtime role cannot move a chain head" \
    bash -c "psql '$APP_URL' -qtAXc 'UPDATE audit_chain_heads SET seq = 1' 2>&1 | grep -q 'permission denied'"
check "nothing changed" [ "$(sql "SELECT count(*) FROM audit_log WHERE actor = 'mallory'")/$(sql "SELECT count(*) FROM audit_log")" = "0/$ROWS" ]
check "the runtime role still has its other rights (updates configs)" \
    [ "$(as_app "UPDATE configs SET updated_at = updated_at WHERE name = 'c1' RETURNING name")" = c1 ]

# ------------------------------------------------------------------ a superuser's tampering
W=api-audit-chain
ID5=$(sql "SELECT id FROM audit_log WHERE writer = '$W' AND seq = 5")
as_owner "ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only;
          UPDATE audit_log SET actor = 'mallory' WHERE id = $ID5;
          ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;"
verify
check "verify fails after a row is rewritten (exit 1)" [ $? = 1 ]
check "verify names the rewritten row" \
    grep -q "^broken: writer $W: row $ID5 (seq 5): hash does not match the row's contents$" "$WORK/verify"
as_owner "ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only;
          UPDATE audit_log SET actor = 'alice' WHERE id = $ID5;
          ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;"
verify
check "verify passes once the row reads as it was" [ $? = 0 ]

# delete_row SEQ: deletes the row of seq SEQ, keeping it in $WORK/row.csv to put back.
delete_row() {
    as_owner "COPY (SELECT * FROM audit_log WHERE writer = '$W' AND seq = $1) TO STDOUT" >"$WORK/row.tsv"
    as_owner "ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only;
              DELETE FROM audit_log WHERE writer = '$W' AND seq = $1;
              ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;"
}
put_back() {
    psql "$OWNER_URL" -qX -c 'ALTER TABLE audit_log DISABLE TRIGGER audit_log_chain' \
        -c '\copy audit_log FROM '"'$WORK/row.tsv'" \
        -c 'ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_chain' >/dev/null
}
ID7=$(sql "SELECT id FROM audit_log WHERE writer = '$W' AND seq = 7")
delete_row 7
verify
check "verify fails after a row is deleted (exit 1)" [ $? = 1 ]
check "verify names the missing row" \
    grep -q "^broken: writer $W: row seq 7 is missing (before row [0-9]*, seq 8)$" "$WORK/verify"
put_back
check "the row is back" [ "$(sql "SELECT id FROM audit_log WHERE writer = '$W' AND seq = 7")" = "$ID7" ]
verify
check "verify passes with the row back" [ $? = 0 ]

LAST=$(sql "SELECT max(seq) FROM audit_log WHERE writer = '$W'")
delete_row "$LAST"
verify
check "verify fails after the last row is deleted (exit 1)" [ $? = 1 ]
check "verify names the missing last row" \
    grep -q "^broken: writer $W: row seq $LAST is missing (the head is at seq $LAST" "$WORK/verify"
put_back
verify
check "verify passes with the last row back" [ $? = 0 ]

# ------------------------------------------------------------------ bounded refusals
LONG=$(head -c 4096 /dev/zero | tr '\0' 'a')
VIEWER=$(api_token vic viewer)
call_status "a viewer's write on a 4 KiB path" 403 api_json "$VIEWER" PUT "/api/v1/configs/$LONG" '{}'
RID=$(grep -i '^X-Request-Id:' "$WORK/headers" | tr -d '\r' | awk '{print $2}')
check "its path is stored cut to 1 KiB" \
    [ "$(sql "SELECT length(details->>'path') FROM audit_log WHERE request_id = '$RID'")" = 1024 ]
CUT=$(sql "SELECT details->'truncated' FROM audit_log WHERE request_id = '$RID'")
check "its row says what was cut ($CUT)" [ "$CUT" = '["path", "resource_id"]' ]
check "its resource id is capped as well" \
    [ "$(sql "SELECT length(resource_id) <= 1024 FROM audit_log WHERE request_id = '$RID'")" = t ]

BEFORE=$(sql "SELECT count(*) FROM audit_log")
T0=$(date +%s)
urls=()
for _ in $(seq 300); do urls+=(-o /dev/null "http://127.0.0.1:$HTTP_PORT/api/v1/configs"); done
curl -s -w '%{http_code}\n' --max-time 60 -X POST "${urls[@]}" >"$WORK/flood"
T1=$(date +%s)
check "the flood was refused ($(sort "$WORK/flood" | uniq -c | xargs))" \
    [ "$(grep -c -E '^(401|429)$' "$WORK/flood")" = 300 ]
# Audited in aggregate: a row per status (401, then 429) and second of api.refusal_interval,
# written once its second is over, whose counts add up to the flood.
counted() { [ "$(sql "SELECT coalesce(sum((details->>'count')::int), 0) FROM audit_log WHERE action = 'api.authenticate'")" = 300 ]; }
check "the rows of the flood count all 300 refusals" wait_for 20 counted
AFTER=$(sql "SELECT count(*) FROM audit_log")
BOUND=$((2 * (T1 - T0 + 2)))
check "300 refusals grew the audit log by at most $BOUND rows (grew $((AFTER - BEFORE)))" \
    [ $((AFTER - BEFORE)) -le "$BOUND" ]
verify
check "verify passes after the flood" [ $? = 0 ]

# ------------------------------------------------------------------ archive
# An old writer whose first rows are three and two months old, and a row this month.
M3=$(as_owner "SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '3 months', 'YYYY-MM-DD')")
M2=$(as_owner "SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '2 months', 'YYYY-MM-DD')")
M1=$(as_owner "SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month', 'YYYY-MM-DD')")
as_owner "SELECT sextant_audit_partition_create('$M3'), sextant_audit_partition_create('$M2')" >/dev/null
for d in "$M3 01:00" "$M3 02:00" "$M3 03:00" "$M2 01:00" "$M2 02:00"; do
    as_owner "INSERT INTO audit_log (at, actor, action, resource_type, result, writer)
              VALUES ('$d+00', 'old', 'config.create', 'config', 'success', 'old-replica')"
done
as_owner "INSERT INTO audit_log (actor, action, resource_type, result, writer)
          VALUES ('old', 'config.create', 'config', 'success', 'old-replica')"
verify
check "verify passes with the old months" [ $? = 0 ]
P3=audit_log_${M3:0:4}_${M3:5:2}
P2=audit_log_${M2:0:4}_${M2:5:2}

SEXTANT_DATABASE_MIGRATE_URL=$APP_URL "${SX_ENV[@]}" "$BIN" audit archive --before "$M1" \
    --output "$WORK/denied.jsonl" >/dev/null 2>"$WORK/archive-app.log"
check "the runtime role cannot archive (exit 1)" [ $? = 1 ]
check "nothing was detached by it" \
    [ "$(as_owner "SELECT count(*) FROM pg_inherits WHERE inhrelid IN ('$P3'::regclass, '$P2'::regclass)")" = 2 ]

"${SX_ENV[@]}" "$BIN" audit archive --before "$M1" --output "$WORK/archive.jsonl" \
    2>"$WORK/archive.log"
check "the owner archives (exit 0)" [ $? = 0 ]
check "both old months are detached" \
    [ "$(as_owner "SELECT count(*) FROM pg_inherits WHERE inhrelid IN ('$P3'::regclass, '$P2'::regclass)")" = 0 ]
check "the detached months are kept as tables for the owner" \
    [ "$(as_owner "SELECT count(*) FROM $P3")/$(as_owner "SELECT count(*) FROM $P2")" = 3/2 ]
check "the export has both months" \
    [ "$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
                  console.log(l.filter(x=>x.type==="partition").map(x=>x.name).join(","))' "$WORK/archive.jsonl")" = "$P3,$P2" ]
check "the export has the five rows in chain order" \
    [ "$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
                  console.log(l.filter(x=>x.type==="row").map(x=>x.writer+":"+x.seq).join(","))' "$WORK/archive.jsonl")" = \
      "old-replica:1,old-replica:2,old-replica:3,old-replica:4,old-replica:5" ]
check "the export carries each month's chain head" \
    [ "$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
                  const rows=l.filter(x=>x.type==="row");
                  console.log(l.filter(x=>x.type==="head").map(x=>x.seq+"="+(rows.find(r=>r.seq===x.seq).hash===x.hash)).join(","))' "$WORK/archive.jsonl")" = "3=true,5=true" ]
check "the chain goes on from the archived head" \
    [ "$(sql "SELECT seq || ':' || (prev_hash = (SELECT hash FROM audit_chain_anchors WHERE writer = 'old-replica')) FROM audit_log WHERE writer = 'old-replica'")" = "6:true" ]
verify
check "verify passes over what remains" [ $? = 0 ]
"${SX_ENV[@]}" "$BIN" audit archive --before 2999-01-01 --output "$WORK/none.jsonl" 2>/dev/null
check "archiving before a far date exits 0 (got $?)" [ $? = 0 ]
check "the current month is never archived" [ ! -s "$WORK/none.jsonl" ]
check "the current month's partition stays attached" \
    [ "$(as_owner "SELECT count(*) FROM pg_inherits WHERE inhparent = 'audit_log'::regclass AND inhrelid = ('audit_log_' || to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM'))::regclass")" = 1 ]
"${SX_ENV[@]}" "$BIN" audit archive --before yesterday-ish --output "$WORK/bad.jsonl" >/dev/null 2>"$WORK/bad.log"
check "a bad date is refused (exit 1)" [ $? = 1 ]
check "the refusal names the date" grep -q 'yesterday-ish" is not a date or time' "$WORK/bad.log"
"${SX_ENV[@]}" "$BIN" audit archive >/dev/null 2>&1
check "archive without --before is a usage error (exit 2)" [ $? = 2 ]

api_stop
finish

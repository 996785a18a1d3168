#!/usr/bin/env bash
# test_pg_failover.sh — a PostgreSQL failover drill: two `sextant serve` replicas on a
# primary and a streaming-replication hot standby (pg_basebackup -R, synchronous
# replication), reached through one multi-host URL with target_session_attrs=read-write.
# Each replica has an ADS client following one proxy group; a REST writer (curl, a
# token from `sextant token`) changes a config of another group through both replicas
# all along. Then the primary is stopped hard (pg_ctl -m immediate) and the standby
# promoted (pg_ctl promote); the old primary is rebuilt as the new one's standby and the
# drill runs again the other way.
#
# Each round checks what an operator needs from a failover:
#   - the replicas' logs name the standby's refusal (read-only) during the outage, and
#     the new server after it;
#   - one change committed right after the promotion (round 1) or 2 s after it (round 2),
#     with no write following it in its group, reaches both ADS clients within 2 s of
#     its commit;
#   - every write answered 2xx is in the promoted database; every write sent 1.5 s or
#     more after the promotion answers 2xx; during the outage writes answer 503 with
#     Retry-After, none hangs;
#   - both clients end on the database's latest version, in_sync in the API's view;
#   - /readyz/xds of both replicas answers 200 at every poll of the whole drill.
# It prints the times: first 2xx write and last client converged, in seconds after the
# promotion.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init pgfailover
G=drill        # the group the ADS clients follow
W=drill-writes # the group the REST writer changes
A="$WORK/pg-a"
B="$WORK/pg-b"
PA=$(free_port) || exit 1
PB=$(free_port) || exit 1
REDIS_PORT=$(free_port) || exit 1

# Cleanup stops both clusters and Redis (the harness's own_services_stop, redefined).
own_services_stop() {
    svc_redis_stop "$WORK/redis"
    svc_pg_stop "$A"
    svc_pg_stop "$B"
}

admin() { # admin PORT SQL...: statements on the cluster on PORT, one at a time
    local port=$1 s
    shift
    for s in "$@"; do
        psql "postgresql://sextant@127.0.0.1:$port/sextant" -qtAXc "$s" || return 1
    done
}
sync_standby() { # sync_standby PORT: the primary on PORT has its synchronous standby
    [ "$(admin "$1" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ]
}
# replicate STANDBY_DIR STANDBY_PORT PRIMARY_PORT: a hot standby of the primary, whose
# commits then wait for it (synchronous replication: no acknowledged write is lost).
# The setting goes in after the base backup, so the standby, once promoted, does not
# wait for a standby of its own.
replicate() {
    svc_pg_standby "$1" "$2" "$3" || return 1
    admin "$3" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
    wait_for 30 sync_standby "$3"
}

# ---------------------------------------------------------------- the clusters
svc_pg_start "$A" "$PA" || exit 1
svc_pg_allow_replication "$A" || exit 1
psql "postgresql://sextant@127.0.0.1:$PA/postgres" -qXc "CREATE DATABASE sextant" >/dev/null || exit 1
svc_redis_start "$WORK/redis" "$REDIS_PORT" || exit 1
export SEXTANT_DATABASE_URL="postgresql://sextant@127.0.0.1:$PA,127.0.0.1:$PB/sextant?target_session_attrs=read-write"
export SEXTANT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export SEXTANT_DATABASE_CONNECT_TIMEOUT=2s
# The writer sends about ten writes a second over both replicas, which share one rate
# limit through Redis: the limit is raised so that every refusal the drill sees is the
# failover's.
export SEXTANT_RATELIMIT_WRITE_RATE=1000 SEXTANT_RATELIMIT_WRITE_BURST=1000
migrate || exit 1
check "the standby streams from the primary, synchronously" replicate "$B" "$PB" "$PA"

conf_echo_snapshot "$WORK/g0.json" 41000
conf_publish "$G" "$WORK/g0.json" >/dev/null || exit 1
conf_rest_auth "drill-secret-drill-secret-drill-secret"
conf_serve r1 || exit 1
conf_serve r2 || exit 1

spec() { # spec PORT: the demo config with its second endpoint on PORT (one per write)
    sed "s/50052/$1/" "$SRC/deploy/local/demo.json"
}
HTTP_PORT=$R1_HTTP
st=$(conf_rest POST /api/v1/configs "{\"namespace\":\"drill\",\"name\":\"writer\",\"groups\":[\"$W\"],\"spec\":$(spec 20000)}")
expect_status "the writer's config is created" 201 "$st"
ID=$(jv .id)

# ---------------------------------------------------------------- clients and pollers
for n in 1 2; do
    port_var="R${n}_GRPC"
    bg_run "follow$n" node "$CONF/lib/ads_follow.js" --server "127.0.0.1:${!port_var}" --group "$G" \
        --node "drill-n$n" --out "$WORK/n$n.json" --log "$WORK/n$n.versions"
done
client_at() { # client_at N VERSION: ADS client N holds VERSION (its newest of any type)
    [ "$(jq -r '.newest // ""' "$WORK/n$1.json" 2>/dev/null)" = "$2" ]
}
both_at() { client_at 1 "$1" && client_at 2 "$1"; }
current() { # current PORT: the group's current version in the database on PORT
    admin "$1" "SELECT current_snapshot_version FROM proxy_groups WHERE name = '$G'"
}
check "both ADS clients hold the group's snapshot" wait_for 20 both_at "$(current "$PA")"

# /readyz/xds of each replica, polled all along: "unix-ms status" per poll.
poll_xds() {
    while :; do
        echo "$(date +%s%3N) $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/readyz/xds")"
        sleep 0.05
    done
}
bg_run xds1 poll_xds "$R1_HTTP"
bg_run xds2 poll_xds "$R2_HTTP"

# writer N STOPFILE: PUTs a new version of the writer's config, alternately through r1
# and r2, until STOPFILE exists; "sent-ms answered-ms status endpoint-port retry-after"
# per write in $WORK/writes-N.txt.
writer() {
    local i=0 port hp status t0 t1 ra
    while [ ! -e "$2" ]; do
        i=$((i + 1))
        port=$((20000 + $1 * 5000 + i))
        hp=$R1_HTTP
        [ $((i % 2)) = 0 ] && hp=$R2_HTTP
        t0=$(date +%s%3N)
        status=$(curl -s -o /dev/null -D "$WORK/writer.headers" -w '%{http_code}' --max-time 8 \
            -X PUT "http://127.0.0.1:$hp/api/v1/configs/$ID" -H "Authorization: Bearer $TOKEN" \
            -H 'Content-Type: application/json' --data-binary "{\"spec\":$(spec "$port")}")
        t1=$(date +%s%3N)
        ra=$(grep -ci '^retry-after:' "$WORK/writer.headers")
        echo "$t0 $t1 $status $port $ra" >>"$WORK/writes-$1.txt"
        sleep 0.05
    done
}
writes_ok() { # writes_ok N COUNT: round N's writer has had COUNT writes answered 2xx
    [ "$(awk '$3 ~ /^2/' "$WORK/writes-$1.txt" 2>/dev/null | wc -l)" -ge "$2" ]
}
until_ms() { # until_ms DEADLINE COMMAND...: retries COMMAND until it succeeds or DEADLINE
    local deadline=$1
    shift
    while [ "$(now_ms)" -le "$deadline" ]; do
        "$@" && return 0
        sleep 0.02
    done
    "$@"
}
sleep_until() { # sleep_until MS
    local left=$(($1 - $(now_ms)))
    [ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
    return 0
}
arrival() { # arrival N VERSION: when ADS client N received VERSION (unix ms)
    awk -v v="$2" '$2 == v { print $1; exit }' "$WORK/n$1.versions"
}
secs() { # secs MS: milliseconds as seconds with two decimals
    awk -v m="$1" 'BEGIN { printf "%.2f", m / 1000 }'
}
in_sync() { # in_sync NODE VERSION: the API's view of NODE: in sync on VERSION
    [ "$(conf_rest GET "/api/v1/proxies/$1/config")" = 200 ] &&
        jtrue "j.in_sync === true && String(j.acked_version) === '$2'"
}
both_in_sync() { in_sync drill-n1 "$1" && in_sync drill-n2 "$1"; }

TIMES=()
# round N OLD_DIR OLD_PORT NEW_DIR NEW_PORT DELAY_MS: the failover from OLD to NEW.
round() {
    local n=$1 old=$2 oldport=$3 new=$4 newport=$5 delay=$6 r
    local stop="$WORK/stop-$n"
    writer "$n" "$stop" &
    local wpid=$!
    BG_PIDS+=("$wpid")
    check "round $n: writes succeed before the failover" wait_for 20 writes_ok "$n" 5

    svc_pg_kill "$old" || fail "round $n: the primary stops"
    local t_kill
    t_kill=$(now_ms)
    for r in r1 r2; do
        check "round $n: $r's log names the standby's refusal during the outage" \
            wait_for 20 grep -q "port $newport failed: session is read-only" "$WORK/$r.log"
    done
    svc_pg_promote "$new" || fail "round $n: the standby is promoted"
    local t_promote
    t_promote=$(now_ms)

    # One change right after the promotion (or DELAY_MS after it), and no other in its group.
    sleep_until $((t_promote + delay))
    conf_echo_snapshot "$WORK/g$n.json" $((41000 + n))
    local v
    v=$(conf_publish "$G" "$WORK/g$n.json")
    local t_commit
    t_commit=$(now_ms)
    check "round $n: the change committed $((t_commit - t_promote)) ms after the promotion (v$v) reaches both clients within 2 s" \
        until_ms $((t_commit + 2000)) both_at "$v"

    sleep_until $((t_promote + 3500))
    touch "$stop"
    wait "$wpid"

    local log="$WORK/writes-$n.txt" newurl="postgresql://sextant@127.0.0.1:$newport/sextant"
    check "round $n: every write sent 1.5 s or more after the promotion answers 2xx" \
        awk -v t=$((t_promote + 1500)) '$1 >= t && $3 !~ /^2/ { bad = 1 } END { exit bad }' "$log"
    check "round $n: writes were sent 1.5 s or more after the promotion" \
        awk -v t=$((t_promote + 1500)) '$1 >= t { n++ } END { exit !(n > 0) }' "$log"
    check "round $n: every refused write answers 503 with Retry-After (none hangs, none fails otherwise)" \
        awk '$3 !~ /^2/ && ($3 != 503 || $5 < 1) { bad = 1 } END { exit bad }' "$log"
    awk '$3 ~ /^2/ { print $4 }' "$log" | sort -u >"$WORK/acked-$n.txt"
    psql "$newurl" -qtAXc "SELECT DISTINCT e->>'port' FROM config_versions cv,
            jsonb_array_elements(cv.spec->'backends'->0->'endpoints') e
          WHERE cv.config_id = '$ID'" | sort -u >"$WORK/stored-$n.txt"
    check "round $n: every write answered 2xx ($(wc -l <"$WORK/acked-$n.txt")) is in the promoted database" \
        bash -c "[ -z \"\$(comm -23 '$WORK/acked-$n.txt' '$WORK/stored-$n.txt')\" ]"
    for r in r1 r2; do
        check "round $n: $r's log names the new server" grep -qF \
            "to postgresql at 127.0.0.1:$newport, a different server than before (127.0.0.1:$oldport)" \
            "$WORK/$r.log"
    done

    local latest
    latest=$(current "$newport")
    check "round $n: both clients end on the database's latest version ($latest)" wait_for 10 both_at "$latest"
    check "round $n: the API shows both clients in sync on it" wait_for 15 both_in_sync "$latest"

    local first a1 a2 last
    first=$(awk -v t="$t_kill" '$1 >= t && $3 ~ /^2/ { print $2; exit }' "$log")
    a1=$(arrival 1 "$v")
    a2=$(arrival 2 "$v")
    last=$((a1 > a2 ? a1 : a2))
    TIMES+=("round $n: first 2xx write $(secs $((first - t_promote))) s, last client converged $(secs $((last - t_promote))) s after the promotion (commit at $(secs $((t_commit - t_promote))) s; outage from the primary's stop to the promotion $(secs $((t_promote - t_kill))) s)")
}

round 1 "$A" "$PA" "$B" "$PB" 0
check "the old primary is rebuilt as the new one's standby" replicate "$A" "$PA" "$PB"
round 2 "$B" "$PB" "$A" "$PA" 2000

bg_stop xds1
bg_stop xds2
for n in 1 2; do
    check "/readyz/xds of r$n answered 200 at every poll of the drill ($(wc -l <"$WORK/xds$n.log") polls)" \
        awk '$2 != 200 { bad = 1 } END { exit bad || NR < 100 }' "$WORK/xds$n.log"
done
check "the replicas count their reconnections" bash -c "curl -s http://127.0.0.1:$R1_HTTP/metrics | grep -q 'sextant_db_reconnects_total{connection=\"listener\"}'"
check "the replicas name their server in metrics" bash -c "curl -s http://127.0.0.1:$R1_HTTP/metrics | grep -q 'sextant_db_server_info{host=\"127.0.0.1\",port=\"$PA\"} 1'"

conf_stop_serve r1
conf_stop_serve r2
printf 'drill times: %s\n' "${TIMES[@]}"
finish

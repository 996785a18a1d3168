#!/usr/bin/env bash
# test_rollout_events.sh — the events of a rollout, streamed by a replica that does not
# drive it. Two replicas: r1 drives deployments (rollouts.tick 200ms), r2 never does
# (its driver ticks once an hour) and only serves GET /api/v1/events to a server-sent
# events client. 6 real xDS clients on r1, a rolling deployment of 3 waves (2 s
# pauses):
#   - the client on r2 receives the deployment's events as r1 writes them
#     (wave_started / wave_completed per wave, rollout_completed), each with its id,
#     its type as the event name and JSON data naming the deployment;
#   - it disconnects after wave 0 completed, events happen meanwhile, it reconnects
#     with Last-Event-ID: the two connections together deliver every event the
#     database holds from the first one seen to the last, in the stream's order
#     (txid, id), none lost, none repeated.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init events
rt_serve r1 || exit 1
SEXTANT_ROLLOUTS_TICK=1h rt_serve r2 || exit 1
G=rt-events

rt_use r2
if ! rt_events_route; then
    fail "GET /api/v1/events is not served by r2"
    rt_finish r1 r2
fi
rt_sse_start b1
rt_use r1
rt_old_config
rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix ev- --kinds grpcjs:2,ads:4
# The capture is live once it has the clients' proxy_connected events.
sse_count() { # sse_count FILE EXPR: events of the capture for which EXPR (over e) holds
    jq_ "sse('$1').filter(e => $2).length" /dev/null
}
sse_has() { [ "$(sse_count "$1" "$2")" -ge "${3:-1}" ]; }
check "the events client on r2 receives the proxies' connections" \
    wait_for 10 sse_has "$WORK/sse_b1.log" "e.event === 'proxy_connected'" 6
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")") || exit 1

rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"rolling\",\"wave_size\":2,\"pause\":\"2s\"},\"wave_timeout\":\"30s\"}"
expect_status "the deployment is created (through r1)" 201 "$ST"
[ "$ST" = 201 ] || rt_finish r1 r2
check "r1 drives it" wait_for 10 rt_deploy_true "$DEPLOY" 'j.owner_replica === "r1"'
check "r2's events client sees wave 0 start and complete" \
    wait_for 20 sse_has "$WORK/sse_b1.log" "e.event === 'wave_completed' && e.data.deployment_id === '$DEPLOY' && e.data.wave === 0"
bg_stop sse_b1
LAST=$(jq_ "sse('$WORK/sse_b1.log').slice(-1)[0].id" /dev/null)
IN_B1=$(sse_count "$WORK/sse_b1.log" "e.data.deployment_id === '$DEPLOY'")
echo "disconnected after event $LAST ($IN_B1 events of the deployment so far)"
more_happened() { [ "$(sql "SELECT count(*) FROM events WHERE deployment_id = '$DEPLOY'")" -gt "$IN_B1" ]; }
check "the rollout goes on while the client is away" wait_for 20 more_happened
# The first of the deployment's events the first connection did not get (which one it is
# depends on when the capture stopped: under load, after wave 1 started).
AWAY=$(sql "SELECT id FROM events WHERE deployment_id = '$DEPLOY' ORDER BY txid, id OFFSET $IN_B1 LIMIT 1")

rt_use r2
rt_sse_start b2 "$LAST"
rt_use r1
check "the deployment completes" wait_for 40 rt_deploy_in "$DEPLOY" completed
check "the reconnected client receives rollout_completed" \
    wait_for 10 sse_has "$WORK/sse_b2.log" "e.event === 'rollout_completed' && e.data.deployment_id === '$DEPLOY'"
bg_stop sse_b2

# ---------------------------------------------------------------- none lost, none repeated
sql "SELECT json_agg(json_build_object('id', id, 'type', type, 'deployment_id', deployment_id, 'replica', replica_id) ORDER BY txid, id) FROM events" >"$WORK/db_events.json"
jq_ "JSON.stringify({b1: sse('$WORK/sse_b1.log'), b2: sse('$WORK/sse_b2.log')})" /dev/null >"$WORK/captured.json"
check "every event streamed has its id, its type as the event name, and JSON data with both" \
    jtrue '[...j.b1, ...j.b2].every(e => e.id && e.data && String(e.data.id) === e.id && e.data.type === e.event && e.data.at)' "$WORK/captured.json"
check "the deployment's events name it and carry the wave" \
    jtrue "[...j.b1, ...j.b2].filter(e => e.event.startsWith('wave_')).every(e => e.data.deployment_id === '$DEPLOY' && Number.isInteger(e.data.wave))" "$WORK/captured.json"
check "no event is repeated (within or across the two connections)" \
    jtrue 'const ids = [...j.b1, ...j.b2].map(e => e.id); new Set(ids).size === ids.length' "$WORK/captured.json"
check "the second connection resumed after the last event seen (nothing older replayed)" \
    jtrue "j.b2.length > 0 && !j.b1.some(e => e.id === j.b2[0].id) && j.b2.every(e => !j.b1.some(f => f.id === e.id))" "$WORK/captured.json"
check "none lost: from the first event seen to the last, the two connections delivered exactly the database's events, in order" \
    jtrue 'const seen = [...j.b1, ...j.b2].map(e => Number(e.id)); const db = j2.map(e => e.id); const from = db.indexOf(seen[0]), to = db.indexOf(seen[seen.length - 1]); from >= 0 && to >= from && JSON.stringify(db.slice(from, to + 1)) === JSON.stringify(seen)' \
    "$WORK/captured.json" "$WORK/db_events.json"
# The driver's events (the deployment_started and snapshot_generated written when the
# deployment was created come before the capture or not, depending on timing).
check "the deployment's events, all written by r1, all reached r2's client" \
    jtrue "const mine = j2.filter(e => e.deployment_id === '$DEPLOY'); const got = [...j.b1, ...j.b2].filter(e => e.data.deployment_id === '$DEPLOY' && /^(wave|rollout)_/.test(e.event)).map(e => e.event + ':' + (e.data.wave ?? '')); mine.every(e => e.replica === 'r1') && got.join(' ') === 'wave_started:0 wave_completed:0 wave_started:1 wave_completed:1 wave_started:2 wave_completed:2 rollout_completed:'" \
    "$WORK/captured.json" "$WORK/db_events.json"
check "the first event the client missed while away (id $AWAY) came with the resume" \
    jtrue "'$AWAY' !== '' && j.b2.some(e => e.id === '$AWAY')" "$WORK/captured.json"

rt_finish r1 r2

#!/usr/bin/env bash
# test_rollout_replicas.sh — the replica driving a rollout dies mid-way: two replicas
# (rollouts.lease 2s, tick 200ms), 12 real xDS clients (3 @grpc/grpc-js-xds, 9 ADS)
# spread over both, each able to fail over to the other. A rolling deployment (waves
# of 4, 15 s pause: long enough for the kill to land in it on a loaded machine) is
# driven by whichever replica takes its lease; right after its first wave completed (in
# the pause) that replica is SIGKILLed. Then:
#   - the other replica takes the lease over within the lease time and finishes the
#     rollout; the clients of the dead replica fail over to it;
#   - at every moment (watch.js, through the surviving replica) nodes of waves not
#     started yet run the old version and reach the old backend, failover included;
#   - each wave ran exactly once: wave 0's started_at and completed_at did not change,
#     the events table has one wave_started and one wave_completed per wave (wave 0's
#     written by the dead replica, the later ones by the survivor) and one
#     rollout_completed; the audit log has one deployment.complete, by the survivor;
#   - wave 1 started after the pause, not later than pause + lease + slack;
#   - every client runs the new version and reaches the new backend; the group's
#     current snapshot is the target.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

export SEXTANT_ROLLOUTS_LEASE=2s SEXTANT_ROLLOUTS_TICK=200ms
LEASE_MS=2000
PAUSE_MS=15000
rt_init replicas
rt_serve r1 || exit 1
rt_serve r2 || exit 1
G=rt-repl

rt_old_config
rt_fleet_up --servers "127.0.0.1:$R1_GRPC,127.0.0.1:$R2_GRPC" --spread --prefix repl- \
    --kinds grpcjs:3,ads:6,envoy:3
spread() { [ "$(sql "SELECT count(DISTINCT replica_id) FROM proxy_nodes WHERE group_name = '$G' AND connected")" = 2 ]; }
check "the clients are connected to both replicas" wait_for 10 spread
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")") || exit 1

rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"rolling\",\"wave_size\":4,\"pause\":\"15s\"},\"wave_timeout\":\"30s\",\"reason\":\"replica test\"}"
expect_status "the deployment is created (through r1)" 201 "$ST"
[ "$ST" = 201 ] || rt_finish r1 r2
T=$(jv ".target_snapshots[\"$G\"]")
check "3 waves of 4" jtrue 'j.waves.map(w => w.node_ids.length).join() === "4,4,4"'
check "a replica takes the lease" wait_for 10 rt_deploy_true "$DEPLOY" 'j.owner_replica === "r1" || j.owner_replica === "r2"'
OWNER=$(jv .owner_replica "$WORK/deploy.json")
if [ "$OWNER" = r1 ]; then SURVIVOR=r2; else SURVIVOR=r1; fi
echo "the deployment is driven by $OWNER; $SURVIVOR survives"
rt_use "$SURVIVOR"
rt_watch_start "$DEPLOY" "$V1" OLD

check "wave 0 completes" wait_for 20 rt_deploy_true "$DEPLOY" 'j.waves[0].state === "completed"'
cp "$WORK/deploy.json" "$WORK/before_kill.json"
check "... and wave 1 is still pending (in the pause)" jtrue 'j.waves[1].state === "pending" && j.owner_replica' "$WORK/before_kill.json"
KILL_MS=$(now_ms)
bg_stop "$OWNER" KILL
echo "SIGKILLed $OWNER"
# What the owner wrote before it died: normally wave 0 only, but a loaded machine can
# see the pause end between the check above and the kill, and then it started wave 1.
OWNER_WROTE=$(sql "SELECT count(*) FROM events WHERE deployment_id = '$DEPLOY' AND replica_id = '$OWNER' AND type IN ('wave_started', 'rollout_completed')")

check "$SURVIVOR takes the deployment over within the lease (+ slack)" \
    wait_for $(((LEASE_MS + 3000) / 1000)) rt_deploy_true "$DEPLOY" "j.owner_replica === '$SURVIVOR'"
echo "taken over $(($(now_ms) - KILL_MS)) ms after the kill"
check "the deployment completes" wait_for 60 rt_deploy_in "$DEPLOY" completed
cp "$WORK/deploy.json" "$WORK/final.json"
check "every wave completed with 4 ACKs" \
    jtrue 'j.waves.every(w => w.state === "completed" && w.acks === 4 && w.nacks === 0)' "$WORK/final.json"
check "wave 0 ran once: its started_at and completed_at are what they were before the kill" \
    jtrue 'j.waves[0].started_at === j2.waves[0].started_at && j.waves[0].completed_at === j2.waves[0].completed_at' \
    "$WORK/final.json" "$WORK/before_kill.json"
check "wave 1 started after the pause and within pause + lease + 3 s of wave 0's completion" \
    jtrue "const d = ms(j.waves[1].started_at) - ms(j.waves[0].completed_at); d >= $PAUSE_MS - 1 && d <= $PAUSE_MS + $LEASE_MS + 3000" "$WORK/final.json"
check "waves in order: each started after the previous completed and its pause" \
    jtrue "j.waves.every((w, k) => k === 0 || ms(w.started_at) - ms(j.waves[k - 1].completed_at) >= $PAUSE_MS - 1)" "$WORK/final.json"

check "the watcher saw the end" wait_for 10 jtrue 'j.final_state === "completed"' "$WORK/watch.json"
if ! rt_check "at every moment, failover included: pending waves' nodes on v$V1 and the old backend, completed waves' on v$T ($(jv .samples "$WORK/watch.json") samples)" \
    jtrue 'j.violation_count === 0 && j.samples >= 10' "$WORK/watch.json"; then
    jq_ 'j.violations.slice(0, 10).map(v => JSON.stringify(v)).join("\n")' "$WORK/watch.json" >&2
fi

check "events: one wave_started and one wave_completed per wave, one rollout_completed" \
    [ "$(sql "SELECT string_agg(type || coalesce(':' || (data->>'wave'), ''), ' ' ORDER BY txid, id) FROM events WHERE deployment_id = '$DEPLOY' AND type <> 'snapshot_generated'")" = \
      "deployment_started wave_started:0 wave_completed:0 wave_started:1 wave_completed:1 wave_started:2 wave_completed:2 rollout_completed" ]
WRITERS=$(sql "SELECT string_agg(replica_id, ' ' ORDER BY txid, id) FROM events WHERE deployment_id = '$DEPLOY' AND type IN ('wave_started', 'rollout_completed')")
WANT=$(for i in 1 2 3 4; do if [ "$i" -le "$OWNER_WROTE" ]; then echo -n "$OWNER "; else echo -n "$SURVIVOR "; fi; done)
check "events: what $OWNER started before the kill ($OWNER_WROTE of wave 0-1), the rest and the completion by $SURVIVOR (got: $WRITERS)" \
    [ "$OWNER_WROTE" -ge 1 ] && [ "$OWNER_WROTE" -le 2 ] && [ "$WRITERS " = "$WANT" ]
check "audit: one deployment.complete, by $SURVIVOR's driver" \
    [ "$(rt_audit_count deployment.complete "$DEPLOY")/$(rt_audit_count deployment.complete "$DEPLOY" "details->>'replica' = '$SURVIVOR'")" = "1/1" ]

check "every client runs v$T" wait_for 20 rt_fleet_all "x.version === '$T'"
check "every client is connected to $SURVIVOR now" rt_fleet_all "x.connected && x.server === '127.0.0.1:$(eval echo "\$$(echo "$SURVIVOR" | tr '[:lower:]' '[:upper:]')_GRPC")'"
# shellcheck disable=SC2086
check "the grpc-js clients reach the new backend" wait_for 10 rt_fleet_all "x.backend === 'NEW'" $GRPCJS
rt_fleet_state "$WORK/fleet_after.json"
check "each client first received v$T after its wave started" \
    jtrue "j.waves.every(w => w.node_ids.every(id => { const x = c(id, j2); return x.versions['$T'] && x.versions['$T'].first_response_at >= ms(w.started_at); }))" \
    "$WORK/final.json" "$WORK/fleet_after.json"
check "the group's current snapshot is v$T, no node pinned" \
    [ "$(rt_group_current "$G")/$(sql "SELECT count(*) FROM node_status WHERE desired_snapshot_version IS NOT NULL")" = "$T/0" ]

rt_finish "$SURVIVOR"

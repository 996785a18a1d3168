#!/usr/bin/env bash
# test_rollout_timeout.sh — a wave that never finishes: 6 real xDS clients of one group
# (2 @grpc/grpc-js-xds, 4 ADS), one of which never answers (no ACK, no NACK) a response
# carrying the new version's marker. All at once, wave timeout 10 s (room for the test's
# own observations of the wave in progress on a loaded machine):
#   - the five others ACK the new version, the silent one stays on the old one; after
#     10 s (not before) the wave fails and the deployment rolls back by itself: state
#     rolled_back, the reason says the wave timed out (and that 5 of 6 nodes ACKed);
#   - every client runs the old version again, the grpc-js clients reach the old
#     backend, the group's current snapshot did not move;
#   - the audit log has deployment.fail and deployment.rollback (automatic=true) with
#     the timeout reason; the events table has rollout_failed with it;
#   - when the silent client finally answers (late, after the rollback), it does not
#     stay on the new version: Sextant brings it back to the old one.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init timeout
rt_serve r1 || exit 1
G=rt-timeout
MARKER=hangs

rt_old_config
FLEET=(--servers "127.0.0.1:$R1_GRPC" --prefix to- --kinds grpcjs:2,ads:4)
rt_fleet_spec --group "$G" "${FLEET[@]}" >"$WORK/spec.json" || exit 1
SILENT=$(jq_ 'j.clients.find(c => c.kind === "ads").id' "$WORK/spec.json")
rt_fleet_up "${FLEET[@]}" --set "$SILENT.silent_if=$MARKER"
OTHERS=$(jq_ "j.clients.filter(c => c.id !== '$SILENT').map(c => c.id).join(' ')" "$WORK/spec.json")
check "node_status: 6 nodes acked v$V1" wait_for 10 rt_acked_all "$V1" 6
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec "echo-$MARKER" "$ECHO_NEW")") || exit 1

rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"all_at_once\"},\"wave_timeout\":\"10s\",\"reason\":\"timeout test\"}"
expect_status "the deployment is created (wave timeout 10 s)" 201 "$ST"
[ "$ST" = 201 ] || rt_finish r1
T=$(jv ".target_snapshots[\"$G\"]")
check "the policy says 10s" jtrue 'j.policy.wave_timeout === "10s"'

# shellcheck disable=SC2086
check "the five others run v$T" wait_for 20 rt_fleet_all "x.version === '$T'" $OTHERS
check "$SILENT received v$T and holds it unanswered" \
    wait_for 10 rt_fleet_true "const x = c('$SILENT'); x.silenced.some(s => s.version === '$T') && x.version === '$V1' && x.nacks === 0"
check "meanwhile the wave is in progress with 5 ACKs" \
    wait_for 5 rt_deploy_true "$DEPLOY" "j.state === 'in_progress' && j.waves[0].state === 'in_progress' && j.waves[0].acks === 5"

check "the deployment ends rolled back" wait_for 30 rt_deploy_in "$DEPLOY" rolled_back rollback_failed completed
cp "$WORK/deploy.json" "$WORK/final.json"
check "... rolled_back, the reason says the wave timed out after 10s with 5 of 6 ACKs ($(jv .state_reason "$WORK/final.json"))" \
    jtrue 'j.state === "rolled_back" && /timed out/.test(j.state_reason) && /10s/.test(j.state_reason) && /5 of 6/.test(j.state_reason)' "$WORK/final.json"
check "the wave was rolled back with 5 ACKs, no NACK" \
    jtrue 'j.waves[0].state === "rolled_back" && j.waves[0].acks === 5 && j.waves[0].nacks === 0' "$WORK/final.json"
FAILED_AT=$(sql "SELECT extract(epoch FROM at) * 1000 FROM audit_log WHERE action = 'deployment.fail' AND resource_id = '$DEPLOY'")
check "the wave failed 10 s after it started, not before" \
    jtrue "const d = ${FAILED_AT:-0} - ms(j.waves[0].started_at); d >= 10000 && d < 15000" "$WORK/final.json"

# shellcheck disable=SC2086
check "the five others run v$V1 again" wait_for 20 rt_fleet_all "x.version === '$V1' && x.version_at > x.versions['$T'].first_ack_at" $OTHERS
check "$SILENT never ran v$T" rt_fleet_true "c('$SILENT').version === '$V1'"
# shellcheck disable=SC2086
check "the grpc-js clients reach the old backend" wait_for 10 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
check "node_status: 6 nodes acked v$V1, none pinned" \
    wait_for 10 test "$(sql "SELECT count(*) FROM node_status WHERE acked_snapshot_version = $V1 AND desired_snapshot_version IS NULL")" = 6
check "the group's current snapshot is still v$V1, the live version 1" \
    [ "$(rt_group_current "$G")/$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = "$V1/1" ]

check "audit: deployment.fail with the timeout reason" \
    [ "$(rt_audit_count deployment.fail "$DEPLOY" "details->>'reason' LIKE '%timed out%'")" = 1 ]
check "audit: deployment.rollback, automatic=true, with the timeout reason" \
    [ "$(rt_audit_count deployment.rollback "$DEPLOY" "(details->>'automatic')::boolean AND details->>'reason' LIKE '%timed out%'")" = 1 ]
check "events: wave_started, rollout_failed (timed out), rollback_started, rollback_completed" \
    [ "$(sql "SELECT string_agg(type, ' ' ORDER BY txid, id) FROM events WHERE deployment_id = '$DEPLOY' AND type <> 'snapshot_generated'")/$(sql "SELECT count(*) FROM events WHERE deployment_id = '$DEPLOY' AND type = 'rollout_failed' AND data->>'reason' LIKE '%timed out%'")" = \
      "deployment_started wave_started rollout_failed rollback_started rollback_completed/1" ]

# ---------------------------------------------------------------- the late answer
check "$SILENT answers late (its behaviour cleared)" rt_fleet_post "/clients/$SILENT/behaviour" '{"silent_if":null}'
check "... and is brought back to v$V1 after it" \
    wait_for 15 rt_fleet_true "const x = c('$SILENT'); x.versions['$T'].acks > 0 && x.version === '$V1' && x.version_at > x.versions['$T'].last_ack_at"
check "node_status: $SILENT acked v$V1" \
    wait_for 10 test "$(sql "SELECT acked_snapshot_version FROM node_status WHERE node_id = '$SILENT'")" = "$V1"

rt_finish r1

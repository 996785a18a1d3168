#!/usr/bin/env bash
# test_rollout_bluegreen_timeout.sh — blue-green holds that nobody ends, and a green that
# refuses, on 6 real xDS clients (2 @grpc/grpc-js-xds, 4 ADS) of one group, green picked
# by node id:
#   - promote_timeout 3s, on_timeout left to its default: green ACKs, nobody promotes,
#     the deployment rolls back by itself (reason: not promoted within 3s); green runs
#     the old version again, blue never received the new one, nothing was promoted;
#   - promote_timeout 2s, on_timeout promote: the driver promotes by itself, every client
#     runs the new version, the promotion is audited as the system's with trigger
#     timeout; /metrics counts both outcomes;
#   - a green client NACKs the next version: the first wave fails and rolls back by
#     itself before any promotion; blue never received that version and promoting is
#     refused (409).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init bgtimeout
rt_serve r1 || exit 1
G=rt-bgt
MARKER=nackme
NACK_MESSAGE="fleet: refusing the nackme backend"

rt_old_config
FLEET=(--servers "127.0.0.1:$R1_GRPC" --prefix bgt- --kinds grpcjs:2,ads:4)
rt_fleet_spec --group "$G" "${FLEET[@]}" >"$WORK/spec.json" || exit 1
GREEN=$(jq_ '[j.clients.find(c => c.kind === "grpcjs").id, ...j.clients.filter(c => c.kind === "ads").slice(0, 1).map(c => c.id)].sort().join(" ")' "$WORK/spec.json")
NACKER=$(jq_ 'j.clients.find(c => c.kind === "ads").id' "$WORK/spec.json")
rt_fleet_up "${FLEET[@]}"
BLUE=$(jq_ "j.clients.map(c => c.id).filter(id => !'$GREEN'.split(' ').includes(id)).sort().join(' ')" "$WORK/spec.json")
GREEN_JSON=$(jq_ "JSON.stringify('$GREEN'.split(' '))" "$WORK/spec.json")
check "node_status: 6 nodes acked v$V1" wait_for 10 rt_acked_all "$V1" 6
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")") || exit 1

# ---------------------------------------------------------------- timeout: roll back (default)
rt_deploy "a blue-green deployment with a 3 s hold is created" "$V" \
    "{\"type\":\"blue_green\",\"green\":{\"node_ids\":$GREEN_JSON},\"promote_timeout\":\"3s\"}" "nobody promotes"
D1=$DEPLOY T1=$TARGET
check "on_timeout defaults to rollback" jtrue 'j.strategy.on_timeout === "rollback" && j.strategy.promote_timeout === "3s"'
check "green ACKed v$T1 (wave 0 completed)" wait_for 30 rt_deploy_true "$D1" 'j.waves[0].state === "completed" || j.waves[0].state === "rolled_back"'
check "the deployment rolls back by itself" wait_for 30 rt_deploy_in "$D1" rolled_back rollback_failed completed
cp "$WORK/deploy.json" "$WORK/d1.json"
check "... rolled_back, the reason says it was not promoted within 3s ($(jv .state_reason "$WORK/d1.json"))" \
    jtrue 'j.state === "rolled_back" && /not promoted within 3s/.test(j.state_reason) && j.waves.map(w => w.state).join() === "rolled_back,canceled" && !j.waves[1].started_at' "$WORK/d1.json"
# shellcheck disable=SC2086
check "green received v$T1 and runs v$V1 again" \
    wait_for 20 rt_fleet_all "x.versions['$T1'] && x.version === '$V1' && x.version_at > x.versions['$T1'].first_response_at" $GREEN
# shellcheck disable=SC2086
check "blue never received v$T1" rt_fleet_all "x.version === '$V1' && !x.versions['$T1']" $BLUE
check "the group's current snapshot is still v$V1, the live version 1" \
    [ "$(rt_group_current "$G")/$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = "$V1/1" ]
check "audit: deployment.rollback by the system, automatic, with the timeout reason; no promotion" \
    [ "$(rt_audit_count deployment.rollback "$D1" "actor = 'system' AND (details->>'automatic')::boolean AND details->>'reason' LIKE '%not promoted within 3s%'")/$(rt_audit_count deployment.promote "$D1")" = 1/0 ]
rt_refused "promoting a rolled-back deployment is refused" "$D1" promote "too late"

# ---------------------------------------------------------------- timeout: promote
rt_deploy "a blue-green deployment promoting on timeout is created" "$V" \
    "{\"type\":\"blue_green\",\"green\":{\"node_ids\":$GREEN_JSON},\"promote_timeout\":\"2s\",\"on_timeout\":\"promote\"}" \
    "promote on timeout"
D2=$DEPLOY T2=$TARGET
check "it completes without an operator" wait_for 40 rt_deploy_in "$D2" completed rolled_back rollback_failed
check "... completed, phase switched" jtrue 'j.state === "completed" && j.blue_green.phase === "switched" && j.blue_green.promoted_at' "$WORK/deploy.json"
check "blue was switched only after the 2 s hold" \
    jtrue 'ms(j.waves[1].started_at) - ms(j.waves[0].completed_at) >= 2000' "$WORK/deploy.json"
check "every client runs v$T2" wait_for 20 rt_fleet_all "x.version === '$T2'"
check "audit: deployment.promote by the system, trigger timeout" \
    [ "$(rt_audit_count deployment.promote "$D2" "actor = 'system' AND details->>'trigger' = 'timeout'")" = 1 ]
check "/metrics: one hold rolled back, one promoted on timeout" \
    [ "$(metric 'sextant_rollout_bluegreen_total{outcome="rolled_back_on_timeout"}')/$(metric 'sextant_rollout_bluegreen_total{outcome="promoted_on_timeout"}')" = 1/1 ]

# ---------------------------------------------------------------- a green NACK
rt_fleet_post "/clients/$NACKER/behaviour" "{\"nack_if\":\"$MARKER\",\"nack_message\":\"$NACK_MESSAGE\"}" ||
    fail "the fleet takes $NACKER's behaviour"
V3=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec "echo-$MARKER" "$ECHO_NEW")" "a backend green refuses") || exit 1
rt_deploy "a blue-green deployment of v$V3 is created (green includes $NACKER)" "$V3" \
    "{\"type\":\"blue_green\",\"green\":{\"node_ids\":$GREEN_JSON},\"promote_timeout\":\"10m\"}" \
    "green refuses" '"nack_threshold":0.2,"nack_min_sample":1'
D3=$DEPLOY T3=$TARGET
check "the deployment fails and rolls back by itself" wait_for 40 rt_deploy_in "$D3" rolled_back rollback_failed completed
cp "$WORK/deploy.json" "$WORK/d3.json"
check "... rolled_back on the NACK rate; green's wave lists the NACK; blue canceled, never started" \
    jtrue "j.state === 'rolled_back' && /NACK rate/.test(j.state_reason) && j.waves[0].state === 'rolled_back' && j.waves[0].errors.some(e => e.node_id === '$NACKER' && e.error.includes('$NACK_MESSAGE')) && j.waves[1].state === 'canceled' && !j.waves[1].started_at && !j.blue_green.promoted_at" "$WORK/d3.json"
# shellcheck disable=SC2086
check "blue never received v$T3" rt_fleet_all "!x.versions['$T3'] && x.version === '$T2'" $BLUE
# shellcheck disable=SC2086
check "green runs v$T2 again" wait_for 20 rt_fleet_all "x.version === '$T2'" $GREEN
check "the group's current snapshot is still v$T2" [ "$(rt_group_current "$G")" = "$T2" ]
check "audit: deployment.fail and the automatic rollback, no promotion" \
    [ "$(rt_audit_count deployment.fail "$D3" "details->>'reason' LIKE '%NACK rate%'")/$(rt_audit_count deployment.rollback "$D3" "(details->>'automatic')::boolean")/$(rt_audit_count deployment.promote "$D3")" = 1/1/0 ]
rt_refused "promoting the rolled-back deployment is refused" "$D3" promote "anyway"

rt_finish r1

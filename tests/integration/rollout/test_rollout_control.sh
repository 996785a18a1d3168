#!/usr/bin/env bash
# test_rollout_control.sh — an operator steering rollouts of 10 real xDS clients (3
# @grpc/grpc-js-xds, 7 ADS) in one group:
#   - canary by percent (initial 10 %, then 40 % more per wave, 30 s apart): the waves
#     cover 10 %, 50 %, 90 %, 100 % of the nodes, i.e. 1, 4, 4 and 1 nodes
#     (server/rollout/strategy.h: cumulative percentages, rounded up);
#   - pause after the canary wave: the deployment stays paused well past the interval,
#     the next wave does not start and its nodes receive nothing; pausing twice is
#     refused (409); resume: the next wave starts (after the resume) and completes;
#   - cancel while the rollout is in progress: canceling → rolled back; the nodes that
#     had the new version run the old one again, the waves not started are canceled
#     and their nodes never received it;
#   - a second deployment, all at once, completes (the group's current snapshot and the
#     config's live version move); cancel is refused then (409); a manual rollback
#     brings every client back to the old content (old backend, live version 1);
#   - the audit log has each operator action with its user and reason.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init control
rt_serve r1 || exit 1
G=rt-ctl

rt_old_config
rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix ctl- --kinds grpcjs:3,ads:5,envoy:2
check "node_status: 10 nodes acked v$V1" wait_for 10 rt_acked_all "$V1" 10
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")") || exit 1

# ---------------------------------------------------------------- canary, pause, resume
rt_deploy "a canary deployment is created" "$V" \
    '{"type":"canary","initial_percent":10,"increment_percent":40,"interval":"30s"}' canary
D1=$DEPLOY T=$TARGET
cp "$WORK/body" "$WORK/d1.json"
W1=$(jq_ 'j.waves[1].node_ids.join(" ")' "$WORK/d1.json")
LATER=$(jq_ 'j.waves.slice(2).flatMap(w => w.node_ids).join(" ")' "$WORK/d1.json")
FIRST_TWO=$(jq_ 'j.waves.slice(0, 2).flatMap(w => w.node_ids).join(" ")' "$WORK/d1.json")
CANARY=$(jq_ 'j.waves[0].node_ids[0]' "$WORK/d1.json")
check "canary 10 % + 40 %: waves of 1, 4, 4, 1 nodes (10 %, 50 %, 90 %, 100 %)" \
    jtrue 'j.waves.map(w => w.node_ids.length).join() === "1,4,4,1"' "$WORK/d1.json"
check "the stored strategy says canary 10/40 every 30 s" \
    jtrue 'j.strategy.type === "canary" && j.strategy.initial_percent === 10 && j.strategy.increment_percent === 40 && j.strategy.interval === "30s"' "$WORK/d1.json"

check "the canary wave completes" wait_for 20 rt_deploy_true "$D1" 'j.waves[0].state === "completed"'
CANARY_DONE_MS=$(jq_ 'Math.floor(ms(j.waves[0].completed_at))' "$WORK/deploy.json")
st=$(rt_deploy_action "$D1" pause "look at the canary")
expect_status "POST .../pause during the interval" 200 "$st"
check "... answers the deployment, paused, the next wave still pending" \
    jtrue "j.id === '$D1' && j.state === 'paused' && j.waves[1].state === 'pending'"
check "the canary node runs v$T" wait_for 10 rt_fleet_true "c('$CANARY').version === '$T'"
rt_refused "pausing a paused deployment is refused" "$D1" pause "again"
check "... with a conflict error saying why" jtrue 'j.error.code === "conflict" && /paused/.test(j.error.message)'
# Nothing may happen while paused, until well past the 30 s interval after the canary
# wave: a negative check needs the time to pass. (The interval is long so that the pause
# lands inside it however slowly a loaded machine runs the steps before it.)
[[ $CANARY_DONE_MS =~ ^[0-9]+$ ]] || fail "the canary wave has a completion time (got '$CANARY_DONE_MS')"
while [ "$(now_ms)" -lt $((CANARY_DONE_MS + 31000)) ]; do sleep 0.2; done
check "past the interval the deployment is still paused and wave 1 has not started" \
    rt_deploy_true "$D1" 'j.state === "paused" && j.waves[1].state === "pending" && !j.waves[1].started_at'
# shellcheck disable=SC2086
check "... and wave 1's nodes received nothing new" rt_fleet_all "x.version === '$V1' && !x.versions['$T']" $W1
RESUMED_MS=$(now_ms)
st=$(rt_deploy_action "$D1" resume "canary looks fine")
expect_status "POST .../resume" 200 "$st"
check "... answers in_progress" jtrue 'j.state === "in_progress"'
rt_refused "resuming a deployment in progress is refused" "$D1" resume "twice"
check "wave 1 starts after the resume and completes" wait_for 20 rt_deploy_true "$D1" "j.waves[1].state === 'completed' && ms(j.waves[1].started_at) >= $RESUMED_MS - 50"
# shellcheck disable=SC2086
check "wave 1's 4 nodes run v$T" wait_for 10 rt_fleet_all "x.version === '$T'" $W1

# ---------------------------------------------------------------- cancel in progress
st=$(rt_deploy_action "$D1" cancel "changed my mind")
expect_status "POST .../cancel while in progress (interval before wave 2)" 200 "$st"
check "... answers canceling (or already rolling back)" jtrue "['canceling', 'rolling_back', 'rolled_back'].includes(j.state)"
check "the canceled deployment rolls back" wait_for 30 rt_deploy_in "$D1" rolled_back rollback_failed
cp "$WORK/deploy.json" "$WORK/d1_final.json"
check "... to rolled_back, with the cancel as its reason" \
    jtrue 'j.state === "rolled_back" && /cancel/.test(j.state_reason) && /changed my mind/.test(j.state_reason)' "$WORK/d1_final.json"
check "waves 0-1 rolled back, waves 2-3 canceled without starting" \
    jtrue 'j.waves.map(w => w.state).join() === "rolled_back,rolled_back,canceled,canceled" && !j.waves[2].started_at && !j.waves[3].started_at' "$WORK/d1_final.json"
# shellcheck disable=SC2086
check "the 5 nodes that had v$T run v$V1 again" wait_for 20 rt_fleet_all "x.version === '$V1' && x.versions['$T'] && x.version_at > x.versions['$T'].first_ack_at" $FIRST_TWO
# shellcheck disable=SC2086
check "the nodes of waves 2-3 never received v$T" rt_fleet_all "!x.versions['$T']" $LATER
# shellcheck disable=SC2086
check "the grpc-js clients reach the old backend" wait_for 10 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
check "node_status: 10 nodes acked v$V1, none pinned" \
    wait_for 10 test "$(sql "SELECT count(*) FROM node_status WHERE acked_snapshot_version = $V1 AND desired_snapshot_version IS NULL")" = 10
check "events: the operator's pause, resume and cancel, each once with its reason, by the deployment" \
    [ "$(sql "SELECT string_agg(type || ':' || (data->>'reason'), ',' ORDER BY id) FROM events WHERE deployment_id = '$D1' AND type IN ('rollout_paused', 'rollout_resumed', 'rollout_canceled')")" = "rollout_paused:look at the canary,rollout_resumed:canary looks fine,rollout_canceled:changed my mind" ]
check "the group's current snapshot stayed v$V1 and the live version 1" \
    [ "$(rt_group_current "$G")/$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = "$V1/1" ]
rt_refused "resuming a rolled-back deployment is refused" "$D1" resume "too late"
rt_refused "canceling a rolled-back deployment is refused" "$D1" cancel "again"

# ---------------------------------------------------------------- all at once, then a manual rollback
rt_deploy "a second deployment of version $V (all at once)" "$V" '{"type":"all_at_once"}' "all at once"
D2=$DEPLOY T2=$TARGET
check "one wave of all 10 nodes" jtrue 'j.waves.length === 1 && j.waves[0].node_ids.length === 10'
check "it completes" wait_for 30 rt_deploy_in "$D2" completed
check "every client runs v$T2" wait_for 10 rt_fleet_all "x.version === '$T2'"
# shellcheck disable=SC2086
check "the grpc-js clients reach the new backend" wait_for 10 rt_fleet_all "x.backend === 'NEW'" $GRPCJS
check "the group's current snapshot is v$T2, the config's live version 2" \
    [ "$(rt_group_current "$G")/$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = "$T2/2" ]
rt_refused "canceling a completed deployment is refused" "$D2" cancel "too late"
rt_refused "pausing a completed deployment is refused" "$D2" pause "too late"
st=$(rt_deploy_action "$D2" rollback "new backend misbehaves")
expect_status "POST .../rollback of the completed deployment" 200 "$st"
check "... answers rolling_back (or already rolled_back)" jtrue "['rolling_back', 'rolled_back'].includes(j.state)"
check "the rollback finishes" wait_for 30 rt_deploy_in "$D2" rolled_back rollback_failed
check "... rolled_back" rt_deploy_true "$D2" 'j.state === "rolled_back"'
# shellcheck disable=SC2086
check "the grpc-js clients reach the old backend again" wait_for 20 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
CUR=$(rt_group_current "$G")
check "the group's current snapshot (v$CUR) has the old content again" \
    [ "$(sql "SELECT ir::text LIKE '%echo-old%' AND ir::text NOT LIKE '%echo-new%' FROM snapshots WHERE group_name = '$G' AND version = $CUR")" = t ]
check "every client runs the group's current snapshot v$CUR" wait_for 20 rt_fleet_all "x.version === '$CUR'"
check "the config's live version is 1 again" [ "$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = 1 ]
proxies_acked() {
    [ "$(rt_api GET "/api/v1/proxies?group=$G")" = 200 ] &&
        jtrue "j.items.length === 10 && j.items.every(n => n.acked_version === $1)"
}
check "GET /proxies: every node acked v$CUR" wait_for 10 proxies_acked "$CUR"
rt_refused "rolling back a rolled-back deployment is refused" "$D2" rollback "twice"

# ---------------------------------------------------------------- audit
check "audit: pause, resume and cancel of $D1 by rollout-tester with their reasons" \
    [ "$(sql "SELECT string_agg(action || '=' || (details->>'reason'), ',' ORDER BY id) FROM audit_log WHERE resource_id = '$D1' AND actor = 'rollout-tester' AND result = 'success'")" = \
      "deployment.pause=look at the canary,deployment.resume=canary looks fine,deployment.cancel=changed my mind" ]
check "audit: the refused actions are recorded as failed (409)" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE resource_id IN ('$D1', '$D2') AND result = 'failed' AND status_code = 409")" = 7 ]
check "audit: the manual rollback of $D2, automatic=false, with its reason" \
    [ "$(rt_audit_count deployment.rollback "$D2" "actor = 'rollout-tester' AND NOT (details->>'automatic')::boolean AND details->>'reason' LIKE '%new backend misbehaves%'")" = 1 ]

rt_finish r1

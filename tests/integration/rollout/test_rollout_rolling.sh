#!/usr/bin/env bash
# test_rollout_rolling.sh — a rolling deployment to 20 real xDS clients of one group
# (6 @grpc/grpc-js-xds channels making calls, 10 proxyless-like and 4 Envoy-like ADS
# clients), waves of 5 with a 3 s pause (long enough for the watcher to sample each step
# even on a loaded machine):
#   - the new version, saved as a draft, moves nobody; a dry run answers the plan (4
#     waves of 5, the group's change) and writes nothing;
#   - at every moment of the rollout (watch.js samples the deployment and the fleet
#     together), nodes of waves not started yet run the old version, have not even
#     received the new one, and their calls reach the old backend; nodes of completed
#     waves run the new one;
#   - each wave starts only after the previous one completed and its pause passed
#     (the deployment's timestamps), and no client of a wave received the new version
#     before every client of the previous wave had ACKed it (the clients' own clocks);
#   - no client is sent a CDS response that removes a cluster its accepted routes still
#     use (make-before-break, seen on the wire), and no call of the grpc-js clients
#     fails during the rollout;
#   - the deployment completes; every client runs the new version and reaches the new
#     backend; the group's current snapshot is the target, the config's live version is
#     the new one, no node is pinned; /proxies says every node acked the target; the
#     audit log and the events table tell the story in order.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init rolling
rt_serve r1 || exit 1
G=rt-roll

rt_old_config
check "the config's first version is the group's current snapshot ($V1)" [ "$V1" -ge 1 ]

rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix roll- --kinds grpcjs:6,ads:10,envoy:4 --labels app=web
# shellcheck disable=SC2086
check "the grpc-js clients reach the old backend" wait_for 20 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
proxies_acked() {
    [ "$(rt_api GET "/api/v1/proxies?group=$G&connected=true")" = 200 ] &&
        jtrue "j.items.length === 20 && j.items.every(n => n.acked_version === $1)"
}
check "GET /proxies: 20 connected nodes acked v$V1" wait_for 10 proxies_acked "$V1"

# ---------------------------------------------------------------- draft: nothing moves
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")" "to the new backend") || exit 1
check "the draft is version 2 of the config" [ "$V" = 2 ]
LATEST=$(sql "SELECT latest_snapshot_version FROM proxy_groups WHERE name = '$G'")
check "the draft wrote no snapshot (group current and latest stay v$V1)" \
    [ "$(rt_group_current "$G")/$LATEST" = "$V1/$V1" ]
st=$(rt_api GET "/api/v1/configs/$CONFIG_ID")
check "GET /configs/{id}: version 2 is a draft, the live version is still 1" \
    jtrue 'j.version === 2 && j.draft === true && j.live_version === 1'

# ---------------------------------------------------------------- dry run
PLAN_BODY="{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"rolling\",\"wave_size\":5,\"pause\":\"3s\"}"
rt_apply "$CONFIG_ID" "$PLAN_BODY,\"dry_run\":true}"
expect_status "a dry run answers the plan" 200 "$ST"
cp "$WORK/body" "$WORK/plan.json"
check "the plan: 4 waves of 5 nodes, all 20 clients once" \
    jtrue 'j.plan.waves.map(w => w.node_ids.length).join() === "5,5,5,5" && uniq(j.plan.waves.flatMap(w => w.node_ids)).length === 20 && j.plan.waves.every((w, i) => w.index === i)' "$WORK/plan.json"
check "the plan: group $G from v$V1, with its diff" \
    jtrue "j.plan.groups.length === 1 && j.plan.groups[0].group === '$G' && j.plan.groups[0].from_version === $V1 && j.plan.groups[0].diff" "$WORK/plan.json"
check "the plan: nothing skipped, the version is valid" \
    jtrue 'j.plan.skipped.length === 0 && j.validation.valid === true' "$WORK/plan.json"
st=$(rt_api GET /api/v1/deployments)
check "the dry run wrote no deployment (GET /deployments is empty)" jtrue "j.items.length === 0"
check "the dry run wrote no snapshot" \
    [ "$(sql "SELECT latest_snapshot_version FROM proxy_groups WHERE name = '$G'")" = "$LATEST" ]
check "after the draft and the dry run no client has received anything but v$V1" \
    rt_fleet_true "clients().every(x => Object.keys(x.versions).join() === '$V1')"

# ---------------------------------------------------------------- the rollout
rt_fleet_state "$WORK/fleet_before.json"
rt_apply "$CONFIG_ID" "$PLAN_BODY,\"reason\":\"rolling test\",\"wave_timeout\":\"30s\"}"
expect_status "POST /configs/{id}/apply creates the deployment" 201 "$ST"
[ "$ST" = 201 ] || rt_finish r1
check "Location names it" [ "$(tr -d '\r' <"$WORK/headers" | sed -n 's/^[Ll]ocation: //p')" = "/api/v1/deployments/$DEPLOY" ]
T=$(jv ".target_snapshots[\"$G\"]")
check "the deployment stages a new snapshot of $G (v$T) on top of v$V1 (baseline)" \
    jtrue "j.config_id === '$CONFIG_ID' && j.config_version === 2 && j.baseline_snapshots['$G'] === $V1 && j.target_snapshots['$G'] > $V1 && ['pending', 'in_progress'].includes(j.state)"
check "it planned 4 waves of 5 nodes" jtrue 'j.waves.length === 4 && j.waves.every(w => w.node_ids.length === 5)'
rt_watch_start "$DEPLOY" "$V1" OLD

check "the deployment completes" wait_for 90 rt_deploy_in "$DEPLOY" completed
cp "$WORK/deploy.json" "$WORK/final.json"
check "the watcher saw the end" wait_for 10 jtrue 'j.final_state === "completed"' "$WORK/watch.json"
# How many samples fit in the rollout depends on the machine's load; what matters is that
# the watcher looked while some waves were done and others still pending.
check "the watcher sampled the rollout while waves were still pending ($(jv .samples "$WORK/watch.json") samples)" \
    jtrue 'j.samples >= 5 && j.wave_states.some(s => s.state === "in_progress" && s.states.includes("completed") && s.states.includes("pending"))' "$WORK/watch.json"
if ! rt_check "at every moment: pending waves' nodes on v$V1 and the old backend, completed waves' on v$T" \
    jtrue 'j.violation_count === 0' "$WORK/watch.json"; then
    jq_ 'j.violations.slice(0, 10).map(v => JSON.stringify(v)).join("\n")' "$WORK/watch.json" >&2
fi

# ---------------------------------------------------------------- wave order
check "every wave completed with 5 ACKs and no NACK" \
    jtrue 'j.waves.every(w => w.state === "completed" && w.acks === 5 && w.nacks === 0 && w.errors.length === 0)' "$WORK/final.json"
check "wave k+1 started at least the 3 s pause after wave k completed (deployment timestamps)" \
    jtrue 'j.waves.every((w, k) => ms(w.started_at) <= ms(w.completed_at) && (k === 0 || ms(w.started_at) - ms(j.waves[k - 1].completed_at) >= 2999))' "$WORK/final.json"
rt_fleet_state "$WORK/fleet_after.json"
check "each client first received v$T after its wave started (clients' clocks)" \
    jtrue "j.waves.every(w => w.node_ids.every(id => { const x = c(id, j2); return x.versions['$T'] && x.versions['$T'].first_response_at >= ms(w.started_at); }))" \
    "$WORK/final.json" "$WORK/fleet_after.json"
check "no client of wave k+1 received v$T before every client of wave k had ACKed it (clients' clocks)" \
    jtrue "j.waves.every((w, k) => k === 0 || Math.min(...w.node_ids.map(id => c(id, j2).versions['$T'].first_response_at)) >= Math.max(...j.waves[k - 1].node_ids.map(id => c(id, j2).versions['$T'].first_ack_at)))" \
    "$WORK/final.json" "$WORK/fleet_after.json"

# ---------------------------------------------------------------- the end state
check "all 20 clients run v$T" wait_for 10 rt_fleet_all "x.version === '$T'"
# shellcheck disable=SC2086
check "the grpc-js clients reach the new backend" wait_for 10 rt_fleet_all "x.backend === 'NEW'" $GRPCJS
if ! rt_check "make-before-break: no client was sent a CDS response without a cluster its accepted routes still use" \
    jtrue 'clients().every(x => x.dangling.length === 0)' "$WORK/fleet_after.json"; then
    jq_ 'clients().filter(x => x.dangling.length).map(x => x.node_id + " (" + x.kind + ") " + JSON.stringify(x.dangling)).join("\n")' "$WORK/fleet_after.json" >&2
fi
errors_before=$(jq_ 'clients().reduce((s, x) => s + (x.rpc_errors || 0), 0)' "$WORK/fleet_before.json")
errors_after=$(jq_ 'clients().reduce((s, x) => s + (x.rpc_errors || 0), 0)' "$WORK/fleet_after.json")
if ! rt_check "no call of the grpc-js clients failed during the rollout ($((errors_after - errors_before)) failed)" \
    [ "$errors_after" = "$errors_before" ]; then
    # What those clients were sent around the failure (responses, ACKs, calls).
    jq_ "clients().filter(x => x.last_rpc_error).map(x => x.node_id + ' ' + JSON.stringify(x.last_rpc_error) + '\n' + x.events.filter(e => e.version === '$T' || e.ev === 'backend').map(e => '    ' + (e.at - x.last_rpc_error.at) + ' ms ' + e.ev + ' ' + (e.type || e.backend) + (e.resources !== undefined ? ' resources=' + e.resources : '')).join('\n')).join('\n')" "$WORK/fleet_after.json" >&2
fi
check "the group's current snapshot is v$T" [ "$(rt_group_current "$G")" = "$T" ]
st=$(rt_api GET "/api/v1/configs/$CONFIG_ID")
check "GET /configs/{id}: the live version is 2" jtrue 'j.live_version === 2'
check "GET /proxies: every node acked v$T and none is pinned any more" wait_for 10 proxies_acked "$T"
check "GET /proxies: desired_version is null everywhere (pins released)" \
    jtrue 'j.items.every(n => n.desired_version === null)'
check "the deployment says why it completed and who made it" \
    jtrue 'j.state_reason !== "" && j.created_by === "rollout-tester" && j.reason === "rolling test" && j.finished_at' "$WORK/final.json"

check "audit: the apply (by rollout-tester) and the completion, once each" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action IN ('config.apply', 'deployment.create') AND actor = 'rollout-tester' AND (resource_id = '$DEPLOY' OR details->>'deployment_id' = '$DEPLOY')")/$(rt_audit_count deployment.complete "$DEPLOY")" = "1/1" ]
check "events: wave_started/wave_completed for each wave in order, then rollout_completed" \
    [ "$(sql "SELECT string_agg(type || coalesce(':' || (data->>'wave'), ''), ' ' ORDER BY txid, id) FROM events WHERE deployment_id = '$DEPLOY' AND type <> 'snapshot_generated'")" = \
      "deployment_started wave_started:0 wave_completed:0 wave_started:1 wave_completed:1 wave_started:2 wave_completed:2 wave_started:3 wave_completed:3 rollout_completed" ]

rt_finish r1

#!/usr/bin/env bash
# test_rollout_nack.sh — a rollout some clients refuse: 20 clients of one group (4
# @grpc/grpc-js-xds, 12 proxyless-like and 4 Envoy-like ADS clients), rolling waves of
# 5, NACK threshold 15 % over at least 10 responses. The new version routes to a backend
# whose name carries a marker; three ADS clients of the second wave of the plan (a dry
# run of the same request) are told to NACK any response carrying the marker before
# the deployment is created, so nothing races the driver. Then:
#   - wave 0 completes, wave 1 gets 3 NACKs of 5: the rollout halts there (the NACK
#     rate is over the threshold), waves 2 and 3 never start and their nodes never
#     receive the new version;
#   - the deployment fails and rolls back by itself (failed → rolling_back →
#     rolled_back): every client that had received the new version runs the old one
#     again (the fleet's record, GET /proxies), the grpc-js clients reach the old
#     backend; the group's current snapshot and the config's live version did not move;
#   - the failed wave lists the three NACKs with the clients' message; the audit log has
#     deployment.fail and deployment.rollback with automatic=true and the reason; the
#     events say rollout_failed, rollback_started, rollback_completed (GET /api/v1/events
#     when served, and the events table).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init nack
rt_serve r1 || exit 1
G=rt-nack
MARKER=nackme
NACK_MESSAGE="fleet: refusing the nackme backend"

rt_old_config
rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix nack- --kinds grpcjs:4,ads:12,envoy:4
check "node_status: 20 nodes acked v$V1" wait_for 10 rt_acked_all "$V1" 20
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec "echo-$MARKER" "$ECHO_NEW")" "backend that some clients refuse") || exit 1

EVENTS=0
if rt_events_route; then
    EVENTS=1
    rt_sse_start main
fi

# ---------------------------------------------------------------- the rollout
BODY="{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"rolling\",\"wave_size\":5,\"pause\":\"2s\"},\"nack_threshold\":0.15,\"nack_min_sample\":10,\"wave_timeout\":\"30s\",\"reason\":\"nack test\""
rt_apply "$CONFIG_ID" "$BODY,\"dry_run\":true}"
expect_status "a dry run answers the plan" 200 "$ST"
cp "$WORK/body" "$WORK/plan.json"
# Three ADS clients of the plan's wave 1 refuse the marked version, told before the
# deployment exists.
NACKERS=$(jq_ "j.plan.waves[1].node_ids.filter(id => j2.clients.find(x => x.id === id).kind === 'ads').slice(0, 3).join(' ')" "$WORK/plan.json" "$WORK/spec.json")
for n in $NACKERS; do
    rt_fleet_post "/clients/$n/behaviour" "{\"nack_if\":\"$MARKER\",\"nack_message\":\"$NACK_MESSAGE\"}" ||
        fail "the fleet takes $n's behaviour"
done
check "three ADS clients of the plan's wave 1 NACK the marker ($NACKERS)" [ "$(echo "$NACKERS" | wc -w)" = 3 ]
rt_apply "$CONFIG_ID" "$BODY}"
expect_status "the deployment is created" 201 "$ST"
[ "$ST" = 201 ] || rt_finish r1
cp "$WORK/body" "$WORK/created.json"
T=$(jv ".target_snapshots[\"$G\"]" "$WORK/created.json")
check "... with the plan's waves (the NACKing clients are in wave 1)" \
    [ "$(jq_ 'j.waves.map(w => w.node_ids.join()).join(";")' "$WORK/created.json")" = \
        "$(jq_ 'j.plan.waves.map(w => w.node_ids.join()).join(";")' "$WORK/plan.json")" ]
STARTED_BEFORE=$(jq_ 'j.waves.slice(0, 2).flatMap(w => w.node_ids).join(" ")' "$WORK/created.json")
NEVER=$(jq_ 'j.waves.slice(2).flatMap(w => w.node_ids).join(" ")' "$WORK/created.json")

check "the deployment ends rolled back" wait_for 60 rt_deploy_in "$DEPLOY" rolled_back rollback_failed completed
cp "$WORK/deploy.json" "$WORK/final.json"
check "... in state rolled_back" jtrue 'j.state === "rolled_back"' "$WORK/final.json"
check "the reason names the NACK rate over the threshold ($(jv .state_reason "$WORK/final.json"))" \
    jtrue '/NACK rate/i.test(j.state_reason) && /threshold/.test(j.state_reason)' "$WORK/final.json"
check "wave 0 completed then rolled back; wave 1 failed with 3 NACKs then rolled back; waves 2-3 canceled, never started" \
    jtrue 'j.waves.map(w => w.state).join() === "rolled_back,rolled_back,canceled,canceled" && j.waves[0].acks === 5 && j.waves[1].nacks === 3 && !j.waves[2].started_at && !j.waves[3].started_at' "$WORK/final.json"
check "the failed wave lists each NACK: node, target version, the client's message" \
    jtrue "const n = '$NACKERS'.split(' '); const e = j.waves[1].errors; e.length === 3 && n.every(id => e.some(x => x.node_id === id && x.version === $T && x.error.includes('$NACK_MESSAGE') && x.at))" "$WORK/final.json"

# ---------------------------------------------------------------- where the clients are
# shellcheck disable=SC2086
check "the NACKing clients NACKed v$T and never ran it" \
    rt_fleet_all "x.last_nack && x.last_nack.version === '$T' && x.version === '$V1'" $NACKERS
# shellcheck disable=SC2086
check "every client of waves 0-1 received v$T and runs v$V1 again" \
    wait_for 20 rt_fleet_all "x.versions['$T'] && x.versions['$T'].first_response_at && x.version === '$V1' && x.version_at > x.versions['$T'].first_response_at" $STARTED_BEFORE
# shellcheck disable=SC2086
check "no client of waves 2-3 ever received v$T" rt_fleet_all "!x.versions['$T']" $NEVER
# shellcheck disable=SC2086
check "the grpc-js clients reach the old backend" wait_for 10 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
# Wave 0's clients ran v$T through the whole pause before wave 1 (2 s, twenty of their
# calls); a client of wave 1 may be rolled back before its next call, so only wave 0's
# are asked whether they reached the new backend.
WAVE0=$(jq_ 'j.waves[0].node_ids.join(" ")' "$WORK/created.json")
# shellcheck disable=SC2086
check "the grpc-js clients of wave 0 reached the new backend while they ran v$T" \
    rt_fleet_all "x.kind !== 'grpcjs' || (x.versions['$T'] && x.versions['$T'].first_ack_at && x.backends.some(b => b.backend === 'NEW'))" $WAVE0
proxies_back() {
    [ "$(rt_api GET "/api/v1/proxies?group=$G&connected=true")" = 200 ] &&
        jtrue "j.items.length === 20 && j.items.every(n => n.acked_version === $V1 && n.desired_version === null)"
}
check "GET /proxies: all 20 nodes acked v$V1 again, none pinned" wait_for 10 proxies_back
check "the group's current snapshot is still v$V1" [ "$(rt_group_current "$G")" = "$V1" ]
st=$(rt_api GET "/api/v1/configs/$CONFIG_ID")
check "the config's live version is still 1" jtrue 'j.live_version === 1'
first_nacker=${NACKERS%% *}
st=$(rt_api GET "/api/v1/proxies/$first_nacker/nacks")
check "GET /proxies/$first_nacker/nacks: its NACK history has the NACK of v$T with the client's message (got $st)" \
    jtrue "j.items.length >= 1 && j.items[0].version === $T && j.items[0].error.includes('$NACK_MESSAGE') && j.items[0].group === '$G' && j.items[0].at"
not_nacking() {
    [ "$(rt_api GET "/api/v1/proxies/$first_nacker")" = 200 ] && jtrue 'j.nacking === false && j.acked_version === '"$V1"
}
check "$first_nacker is not NACKing any more once it ACKed v$V1 again" wait_for 10 not_nacking
st=$(rt_api GET "/api/v1/proxies/no-such-node/nacks")
check "GET /proxies/no-such-node/nacks is 404 (got $st)" [ "$st" = 404 ]

# ---------------------------------------------------------------- audit and events
check "audit: deployment.fail with the reason, by the system" \
    [ "$(rt_audit_count deployment.fail "$DEPLOY" "actor = 'system' AND details->>'reason' LIKE '%NACK rate%'")" = 1 ]
check "audit: deployment.rollback with automatic=true and the reason" \
    [ "$(rt_audit_count deployment.rollback "$DEPLOY" "(details->>'automatic')::boolean AND details->>'reason' LIKE '%NACK rate%'")" = 1 ]
check "audit: no manual rollback, no completion" \
    [ "$(rt_audit_count deployment.rollback "$DEPLOY" "NOT (details->>'automatic')::boolean")/$(rt_audit_count deployment.complete "$DEPLOY")" = "0/0" ]
check "events table: wave 1 started, then rollout_failed, rollback_started, rollback_completed" \
    [ "$(sql "SELECT string_agg(type, ' ' ORDER BY txid, id) FROM events WHERE deployment_id = '$DEPLOY' AND type NOT IN ('wave_completed', 'snapshot_generated')")" = \
      "deployment_started wave_started wave_started rollout_failed rollback_started rollback_completed" ]
check "events table: rollout_failed names wave 1 and the reason" \
    [ "$(sql "SELECT count(*) FROM events WHERE deployment_id = '$DEPLOY' AND type = 'rollout_failed' AND (data->>'wave')::int = 1 AND data->>'reason' LIKE '%NACK rate%'")" = 1 ]
if [ "$EVENTS" = 1 ]; then
    sse_has() { jtrue "const t = sse('$WORK/sse_main.log').filter(e => JSON.stringify(e.data).includes('$DEPLOY')).map(e => e.event); ['rollout_failed', 'rollback_started', 'rollback_completed'].every(x => t.includes(x))" /dev/null; }
    check "GET /api/v1/events streamed rollout_failed, rollback_started and rollback_completed" wait_for 10 sse_has
else
    fail "GET /api/v1/events is not served (the events were checked in the events table only)"
fi

rt_finish r1

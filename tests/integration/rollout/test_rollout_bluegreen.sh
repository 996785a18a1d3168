#!/usr/bin/env bash
# test_rollout_bluegreen.sh — a blue-green rollout of 6 real xDS clients (2
# @grpc/grpc-js-xds, 4 ADS) in one group, the two labelled slot=green being green:
#   - a blue_green strategy without "green", whose green picks every node or names an
#     unknown one (a dry run too), is refused with the path and nothing is created;
#   - green takes the new version while blue keeps the old one; once green ACKed the
#     deployment holds (phase awaiting_promotion) and blue receives nothing;
#   - a viewer may not promote (403); the operator's promote switches every blue node at
#     once (promoting twice is refused, 409), the
#     deployment completes, the group's current snapshot and the live version move, and
#     the promotion is audited with its user and reason and counted in /metrics;
#   - a rollback after the promotion puts every node back on the old (blue) snapshot;
#     the grpc-js clients reach the old backend again.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init bluegreen
rt_serve r1 || exit 1
G=rt-bg

rt_old_config
FLEET=(--servers "127.0.0.1:$R1_GRPC" --prefix bg- --kinds grpcjs:2,ads:4)
rt_fleet_spec --group "$G" "${FLEET[@]}" >"$WORK/spec.json" || exit 1
# Green: one grpc-js and one ADS client, by label.
GREEN=$(jq_ '[j.clients.find(c => c.kind === "grpcjs").id, j.clients.find(c => c.kind === "ads").id].sort().join(" ")' "$WORK/spec.json")
SETS=()
for n in $GREEN; do SETS+=(--set "$n.labels={\"slot\":\"green\"}"); done
rt_fleet_up "${FLEET[@]}" "${SETS[@]}"
BLUE=$(jq_ "j.clients.map(c => c.id).filter(id => !'$GREEN'.split(' ').includes(id)).sort().join(' ')" "$WORK/spec.json")
check "node_status: 6 nodes acked v$V1" wait_for 10 rt_acked_all "$V1" 6
V=$(rt_config_draft "$CONFIG_ID" "$(rt_echo_spec echo-new "$ECHO_NEW")") || exit 1

# ---------------------------------------------------------------- refusals
rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"blue_green\"}}"
expect_status "blue_green without green is refused" 400 "$ST"
check "... naming strategy.green" jtrue 'j.error.details.some(d => d.path === "strategy.green")'
rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"blue_green\",\"green\":{\"labels\":{\"kind\":\"any\"}},\"on_timeout\":\"wait\"}}"
expect_status "an unknown on_timeout and a green matching nothing are refused" 400 "$ST"
check "... naming strategy.on_timeout" jtrue 'j.error.details.some(d => d.path === "strategy.on_timeout")'
ALL=$(jq_ 'JSON.stringify(j.clients.map(c => c.id))' "$WORK/spec.json")
rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"blue_green\",\"green\":{\"node_ids\":$ALL}}}"
expect_status "a green that picks every node is refused" 400 "$ST"
check "... saying blue would be empty" jtrue 'j.error.details.some(d => d.path === "strategy.green" && /every selected node/.test(d.message))'
rt_apply "$CONFIG_ID" "{\"version\":$V,\"selector\":{\"groups\":[\"$G\"]},\"strategy\":{\"type\":\"blue_green\",\"green\":{\"node_ids\":[\"no-such-node\"]}},\"dry_run\":true}"
expect_status "a dry run whose green names an unknown node is refused too" 400 "$ST"
check "... naming strategy.green.node_ids[0]" jtrue 'j.error.details.some(d => d.path === "strategy.green.node_ids[0]" && /no-such-node/.test(d.message))'
check "no deployment was created" [ "$(sql "SELECT count(*) FROM deployments")" = 0 ]

# ---------------------------------------------------------------- green, hold, promote
rt_deploy "a blue-green deployment is created" "$V" \
    '{"type":"blue_green","green":{"labels":{"slot":"green"}},"promote_timeout":"10m"}' blue-green
D1=$DEPLOY T=$TARGET
cp "$WORK/body" "$WORK/d1.json"
check "two waves: green ($GREEN) then blue ($BLUE)" \
    jtrue "j.waves.length === 2 && j.waves[0].node_ids.slice().sort().join(' ') === '$GREEN' && j.waves[1].node_ids.slice().sort().join(' ') === '$BLUE'" "$WORK/d1.json"
check "the stored strategy keeps green, the timeout and on_timeout rollback (the default)" \
    jtrue 'j.strategy.type === "blue_green" && j.strategy.green.labels.slot === "green" && j.strategy.promote_timeout === "10m" && j.strategy.on_timeout === "rollback" && j.blue_green.on_timeout === "rollback"' "$WORK/d1.json"
check "green ACKs and the deployment holds for a promotion" \
    wait_for 30 rt_deploy_true "$D1" 'j.state === "in_progress" && j.blue_green.phase === "awaiting_promotion" && j.waves[0].state === "completed" && j.waves[1].state === "pending"'
check "... with the hold's time left shown (under 10 minutes)" \
    jtrue 'j.blue_green.promote_timeout_left_seconds > 0 && j.blue_green.promote_timeout_left_seconds <= 600 && j.blue_green.promoted_at === null' "$WORK/deploy.json"
# shellcheck disable=SC2086
check "green runs v$T" wait_for 10 rt_fleet_all "x.version === '$T'" $GREEN
# shellcheck disable=SC2086
check "blue runs v$V1 and never received v$T" rt_fleet_all "x.version === '$V1' && !x.versions['$T']" $BLUE
check "the group's current snapshot is still v$V1" [ "$(rt_group_current "$G")" = "$V1" ]

VIEWER=$(token bg-viewer viewer)
st=$(curl -s -o "$WORK/body" -w '%{http_code}' -X POST --max-time 10 -H "Authorization: Bearer $VIEWER" \
    -H 'Content-Type: application/json' --data '{"reason":"not mine"}' "http://127.0.0.1:$HTTP_PORT/api/v1/deployments/$D1/promote")
expect_status "a viewer may not promote" 403 "$st"
check "... and the deployment still holds" rt_deploy_true "$D1" 'j.blue_green.phase === "awaiting_promotion"'

PROMOTED_MS=$(now_ms)
st=$(rt_deploy_action "$D1" promote "green looks good")
expect_status "POST .../promote" 200 "$st"
check "... answers the deployment with blue switching" \
    jtrue "j.id === '$D1' && ['switching', 'switched'].includes(j.blue_green.phase) && j.waves[1].state !== 'pending' && ms(j.blue_green.promoted_at) >= $PROMOTED_MS - 1000"
rt_refused "promoting twice is refused" "$D1" promote "again"
check "... with a conflict error saying why" jtrue 'j.error.code === "conflict" && /promoted/.test(j.error.message)'
check "the deployment completes" wait_for 30 rt_deploy_in "$D1" completed
check "... phase switched" jtrue 'j.blue_green.phase === "switched"' "$WORK/deploy.json"
check "every client runs v$T" wait_for 10 rt_fleet_all "x.version === '$T'"
# shellcheck disable=SC2086
check "the grpc-js clients reach the new backend" wait_for 10 rt_fleet_all "x.backend === 'NEW'" $GRPCJS
check "the group's current snapshot is v$T, the config's live version 2" \
    [ "$(rt_group_current "$G")/$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = "$T/2" ]
check "audit: deployment.promote by rollout-tester, trigger operator, with the reason" \
    [ "$(rt_audit_count deployment.promote "$D1" "actor = 'rollout-tester' AND details->>'trigger' = 'operator' AND details->>'reason' = 'green looks good' AND (details->>'blue_nodes')::int = 4")" = 1 ]
check "audit: the viewer's attempt is recorded as refused (403)" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE resource_id = '$D1' AND action = 'deployment.promote' AND result <> 'success' AND status_code = 403")" = 1 ]
check "/metrics counts one promotion by an operator" \
    [ "$(metric 'sextant_rollout_bluegreen_total{outcome="promoted"}')" = 1 ]
check "events: wave_started for green then for blue, then rollout_completed" \
    [ "$(sql "SELECT string_agg(type || ':' || coalesce(data->>'wave', ''), ' ' ORDER BY id) FROM events WHERE deployment_id = '$D1' AND type IN ('wave_started', 'rollout_completed')")" = "wave_started:0 wave_started:1 rollout_completed:" ]

# ---------------------------------------------------------------- rollback after promote
st=$(rt_deploy_action "$D1" rollback "back to blue")
expect_status "POST .../rollback of the promoted deployment" 200 "$st"
check "the rollback finishes: rolled_back" wait_for 30 rt_deploy_in "$D1" rolled_back rollback_failed
check "... rolled_back, phase rolled_back" jtrue 'j.state === "rolled_back" && j.blue_green.phase === "rolled_back"' "$WORK/deploy.json"
CUR=$(rt_group_current "$G")
check "the group's current snapshot (v$CUR) has the old content again" \
    [ "$(sql "SELECT ir::text LIKE '%echo-old%' AND ir::text NOT LIKE '%echo-new%' FROM snapshots WHERE group_name = '$G' AND version = $CUR")" = t ]
check "every client, green and blue, runs v$CUR" wait_for 20 rt_fleet_all "x.version === '$CUR'"
# shellcheck disable=SC2086
check "the grpc-js clients reach the old backend again" wait_for 20 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
check "the config's live version is 1 again" [ "$(sql "SELECT live_version FROM configs WHERE id = '$CONFIG_ID'")" = 1 ]
check "audit: the manual rollback, automatic=false, promotion undone" \
    [ "$(rt_audit_count deployment.rollback "$D1" "actor = 'rollout-tester' AND NOT (details->>'automatic')::boolean AND (details->>'promotion_undone')::boolean")" = 1 ]

rt_finish r1

#!/usr/bin/env bash
# test_rollout_grpc_js.sh — a rolling deployment reaches real proxyless gRPC clients
# (@grpc/grpc-js-xds) wave by wave: four clients of one group follow config v1 to
# backend A; v2 (backend B) is saved as a draft (nothing moves), then applied with
# {"type": "rolling", "wave_size": 2}: the first wave's clients reach B while the
# second wave's still reach A, then all reach B; the deployment completes, the group's
# current snapshot is the staged one and the config's live version is 2. A manual
# rollback of the completed deployment brings every client back to A.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init rollout-grpc-js
conf_services || exit 1
conf_rest_auth "conformance-rollout-secret-0123456789abcdef" rollout-tester
export SEXTANT_ROLLOUTS_TICK=200ms
export SEXTANT_NODES_FLUSH_INTERVAL=100ms
echo_backend A || exit 1
echo_backend B || exit 1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP
GROUP=conf-rollout

conf_echo_snapshot "$WORK/a.json" "$ECHO_A"
conf_echo_snapshot "$WORK/b.json" "$ECHO_B"
st=$(conf_rest POST /api/v1/configs "$(printf '{"namespace":"conformance","name":"echo","groups":["%s"],"spec":%s}' "$GROUP" "$(cat "$WORK/a.json")")")
check "the config is created (got $st)" [ "$st" = 201 ]
ID=$(jv .id)

for i in 1 2 3 4; do
    GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "node-$i" "$GROUP" "$R1_GRPC") \
        bg_run "client$i" node "$CONF/lib/xds_client.js" --target xds:///echo.test \
        --out "$WORK/calls$i.log" --interval-ms 50
done
for i in 1 2 3 4; do
    check "client $i reaches backend A" wait_for 20 last_is "$WORK/calls$i.log" "ok A"
done
acked() { [ "$(sql "SELECT count(*) FROM node_status WHERE acked_snapshot_version = $1")" = "$2" ]; }
check "the four nodes ACKed snapshot 1" wait_for 10 acked 1 4

st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/b.json"),\"draft\":true,\"message\":\"to B\"}")
check "v2 is saved as a draft (got $st)" [ "$st" = 200 ]
sleep 1
check "a draft moves nobody" last_is "$WORK/calls1.log" "ok A"

st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":2,"strategy":{"type":"rolling","wave_size":2,"pause":"3s"},"dry_run":true}')
check "a dry run answers the plan (got $st)" [ "$st" = 200 ]
check "the plan has two waves of two nodes" [ "$(jv '.plan.waves.map(w => w.node_ids.length).join(",")')" = "2,2" ]
check "the plan shows the group's change" [ "$(jv '.plan.groups[0].changed')" = true ]
check "a dry run writes no deployment" [ "$(sql 'SELECT count(*) FROM deployments')" = 0 ]

# Bad requests change nothing and say what is wrong.
st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":2,"strategy":{"type":"red_black"}}')
check "an unknown strategy is refused (got $st)" [ "$st" = 400 ]
check "... naming strategy.type" [ "$(jv '.error.details[0].path')" = strategy.type ]
st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":2,"selector":{"node_ids":["node-1","ghost"]}}')
check "an unknown node is refused (got $st)" [ "$st" = 400 ]
check "... naming it" [ "$(jv '.error.details[0].path')" = 'selector.node_ids[1]' ]
st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":9}')
check "an unknown version is 404 (got $st)" [ "$st" = 404 ]
st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":"2"}')
check "a version of the wrong type is 400 (got $st)" [ "$st" = 400 ]
check "refused applies wrote no deployment" [ "$(sql 'SELECT count(*) FROM deployments')" = 0 ]
check "each refused apply is in the audit log" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'config.apply' AND result = 'failed'")" = 4 ]

# The pause is long so that the checks made in it land in it on a loaded machine too.
st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":2,"strategy":{"type":"rolling","wave_size":2,"pause":"10s"},"reason":"move to B"}')
check "the deployment is created (got $st)" [ "$st" = 201 ]
DEP=$(jv .id)
state() { conf_rest GET "/api/v1/deployments/$DEP" >/dev/null; [ "$(jv .state)" = "$1" ]; }
check "the first wave's clients reach B" wait_for 20 last_is "$WORK/calls1.log" "ok B"
check "client 2 (first wave) reaches B" wait_for 10 last_is "$WORK/calls2.log" "ok B"
check "client 3 (second wave) still reaches A during the pause" last_is "$WORK/calls3.log" "ok A"
check "client 4 (second wave) still reaches A during the pause" last_is "$WORK/calls4.log" "ok A"
st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/a.json"),\"message\":\"direct\"}")
check "a direct change of the group is refused while the deployment holds it (got $st)" [ "$st" = 409 ]
st=$(conf_rest POST "/api/v1/configs/$ID/apply" '{"version":2}')
check "a second deployment of the group is refused (got $st)" [ "$st" = 409 ]
st=$(conf_rest POST "/api/v1/groups/$GROUP/rollback" '{"snapshot_version":1}')
check "a group rollback is refused while the deployment holds the group (got $st)" [ "$st" = 409 ]
check "the deployment completes" wait_for 30 state completed
check "client 3 reaches B" wait_for 10 last_is "$WORK/calls3.log" "ok B"
check "client 4 reaches B" wait_for 10 last_is "$WORK/calls4.log" "ok B"
conf_rest GET "/api/v1/deployments/$DEP" >/dev/null
TARGET=$(jv ".target_snapshots[\"$GROUP\"]")
check "both waves completed with 2 ACKs each" [ "$(jv '.waves.map(w => w.state + ":" + w.acks).join(",")')" = "completed:2,completed:2" ]
st=$(conf_rest GET "/api/v1/deployments?state=completed")
LISTED="$st $(jv '.items.length') $(jv '.items[0].id') $(jv '.items.map(d => [d.progress.waves, d.progress.waves_completed, d.progress.nodes, d.progress.acks, d.progress.nacks].join(","))[0]')"
check "the list of completed deployments has it with its progress summed up ($LISTED)" \
    [ "$LISTED" = "200 1 $DEP 2,2,4,4,0" ]
conf_rest GET "/api/v1/deployments/$DEP" >/dev/null
check "wave 2 started after wave 1 completed" node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    process.exit(Date.parse(d.waves[1].started_at) >= Date.parse(d.waves[0].completed_at) ? 0 : 1)' "$WORK/body"
check "the group's current snapshot is the staged one" [ "$(sql "SELECT current_snapshot_version FROM proxy_groups WHERE name = '$GROUP'")" = "$TARGET" ]
check "the config's live version is 2" [ "$(sql "SELECT live_version FROM configs WHERE id = '$ID'")" = 2 ]
check "no node is pinned any more" [ "$(sql 'SELECT count(*) FROM node_status WHERE desired_snapshot_version IS NOT NULL')" = 0 ]

st=$(conf_rest POST "/api/v1/deployments/$DEP/rollback" '{"reason":"B is slow"}')
check "a completed deployment can be rolled back (got $st)" [ "$st" = 200 ]
check "the rollback finishes" wait_for 30 state rolled_back
for i in 1 2 3 4; do
    check "client $i is back on A" wait_for 10 last_is "$WORK/calls$i.log" "ok A"
done
check "the config's live version is 1 again" [ "$(sql "SELECT live_version FROM configs WHERE id = '$ID'")" = 1 ]
check "the audit log has the apply and the manual rollback" \
    [ "$(sql "SELECT string_agg(action, ',' ORDER BY id) FROM audit_log WHERE result = 'success' AND action IN ('config.apply','deployment.complete','deployment.rollback','deployment.rolled_back')")" = "config.apply,deployment.complete,deployment.rollback,deployment.rolled_back" ]
st=$(conf_rest POST "/api/v1/deployments/$DEP/pause" '{}')
check "a rolled-back deployment cannot be paused (got $st)" [ "$st" = 409 ]

# A completed deployment whose version is no longer live cannot be rolled back: that
# would undo the change made after it.
st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/b.json"),\"draft\":true,\"message\":\"B again\"}")
V3=$(jv .version)
st=$(conf_rest POST "/api/v1/configs/$ID/apply" "{\"version\":$V3}")
check "an all-at-once deployment of v$V3 is created (got $st)" [ "$st" = 201 ]
DEP=$(jv .id)
check "it completes" wait_for 30 state completed
check "client 1 is on B" wait_for 10 last_is "$WORK/calls1.log" "ok B"
st=$(conf_rest PUT "/api/v1/configs/$ID" "{\"spec\":$(cat "$WORK/a.json"),\"message\":\"back to A directly\"}")
check "a direct change afterwards is accepted (got $st)" [ "$st" = 200 ]
st=$(conf_rest POST "/api/v1/deployments/$DEP/rollback" '{}')
check "rolling back the older deployment is refused (got $st)" [ "$st" = 409 ]
check "... saying what changed since" grep -q "is live at version" "$WORK/body"
check "... and it stays completed" state completed
conf_stop_serve r1
finish

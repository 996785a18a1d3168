#!/usr/bin/env bash
# test_rollout_managed.sh — a rollout of a config the Kubernetes source manages, to 4
# real xDS clients (2 @grpc/grpc-js-xds, 2 ADS) of its group. The source's writes come
# from tests/tools/managed_config (the write entry a controller calls):
#   - the source writes version 1 (backend OLD), then version 2 (backend NEW): the
#     clients follow each, as they follow any config change;
#   - the REST API may not change the config (409 managed_by_kubernetes), but a rolling
#     deployment of version 1 goes through: waves complete, every client runs the old
#     content again and reaches OLD, and version 1 is the config's live version;
#   - the source's next writes of the Gateway's current spec (version 2's) are compared
#     with the source's own last translation, not with what is live: unchanged, so the
#     rollout holds (version 1 live, the clients stay on OLD) however often they come;
#   - a changed translation is written live at once: version 3, and the clients reach
#     NEW.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

TOOL=${SEXTANT_TEST_TOOLS:?SEXTANT_TEST_TOOLS must name the test tools folder}/managed_config

rt_init managed
rt_serve r1 || exit 1
G=rt-managed

# k8s_put SPEC: the Kubernetes source writes config default/web (Gateway default/web) in
# group G; its answer in $WORK/put.json.
k8s_put() {
    printf '%s' "$1" >"$WORK/k8s_spec.json"
    "${SX_ENV[@]}" "$TOOL" put default web "$G" "Gateway default/web" "$WORK/k8s_spec.json" >"$WORK/put.json"
}

echo_backend OLD || exit 1
echo_backend NEW || exit 1
OLD_SPEC=$(rt_echo_spec echo-old "$ECHO_OLD")
NEW_SPEC=$(rt_echo_spec echo-new "$ECHO_NEW")
check "the source writes version 1 (OLD)" k8s_put "$OLD_SPEC"
CONFIG_ID=$(jv .config_id "$WORK/put.json")
V1=$(rt_group_current "$G")
rt_fleet_up --servers "127.0.0.1:$R1_GRPC" --prefix mg- --kinds grpcjs:2,ads:2
# shellcheck disable=SC2086
check "the grpc-js clients reach OLD" wait_for 20 rt_fleet_all "x.backend === 'OLD'" $GRPCJS

check "the source writes version 2 (NEW)" k8s_put "$NEW_SPEC"
check "... live version 2" jtrue 'j.changed && j.version === 2' "$WORK/put.json"
V2=$(rt_group_current "$G")
check "every client runs the group's new snapshot v$V2" wait_for 20 rt_fleet_all "x.version === '$V2'"
# shellcheck disable=SC2086
check "the grpc-js clients reach NEW" wait_for 20 rt_fleet_all "x.backend === 'NEW'" $GRPCJS

st=$(rt_api PUT "/api/v1/configs/$CONFIG_ID" "{\"spec\":$OLD_SPEC}")
expect_status "PUT of the managed config is refused" 409 "$st"
check "... managed_by_kubernetes" jtrue 'j.error.code === "managed_by_kubernetes"'

# ---------------------------------------------------------------- a rollout of version 1
rt_deploy "POST /configs/{id}/apply of version 1 creates a deployment" 1 '{"type":"rolling","wave_size":2}' "back to OLD"
T=$TARGET
check "it stages a new snapshot on top of v$V2, in 2 waves of 2" \
    jtrue "j.config_version === 1 && j.baseline_snapshots['$G'] === $V2 && j.target_snapshots['$G'] > $V2 && j.waves.length === 2"
check "the deployment completes" wait_for 60 rt_deploy_in "$DEPLOY" completed
check "every client runs v$T" wait_for 10 rt_fleet_all "x.version === '$T'"
# shellcheck disable=SC2086
check "the grpc-js clients reach OLD again" wait_for 10 rt_fleet_all "x.backend === 'OLD'" $GRPCJS
st=$(rt_api GET "/api/v1/configs/$CONFIG_ID")
check "the config's live version is 1; it is still managed by Kubernetes" \
    jtrue 'j.live_version === 1 && j.version === 2 && j.source === "kubernetes" && j.source_ref === "Gateway default/web"'
check "the group's current snapshot is v$T" [ "$(rt_group_current "$G")" = "$T" ]

# ---------------------------------------------------------------- the source writes again
# The Gateway has not changed: the source's passes (settle, resync, restart) bring its
# current translation, version 2's, again and again; the rollout of version 1 holds.
for pass in 1 2 3; do
    check "pass $pass: the source's unchanged translation writes nothing" k8s_put "$NEW_SPEC"
    check "... version 1 stays live" jtrue '!j.changed && j.version === 1 && j.snapshots.length === 0' "$WORK/put.json"
done
check "the group's current snapshot is still v$T" [ "$(rt_group_current "$G")" = "$T" ]
check "every client still runs v$T" rt_fleet_all "x.version === '$T'"
# shellcheck disable=SC2086
check "the grpc-js clients still reach OLD" rt_fleet_all "x.backend === 'OLD'" $GRPCJS
# The Gateway changes (a new cluster name for the NEW backend): written live at once.
NEW2_SPEC=$(rt_echo_spec echo-new2 "$ECHO_NEW")
check "the source writes the Gateway's changed translation" k8s_put "$NEW2_SPEC"
check "... version 3, live" jtrue 'j.changed && j.version === 3 && j.snapshots.length === 1' "$WORK/put.json"
V3=$(rt_group_current "$G")
check "every client runs the group's new snapshot v$V3" wait_for 20 rt_fleet_all "x.version === '$V3'"
# shellcheck disable=SC2086
check "the grpc-js clients reach NEW" wait_for 20 rt_fleet_all "x.backend === 'NEW'" $GRPCJS
check "audit: the deployment by the operator, the source's three writes by kubernetes" \
    [ "$(sql "SELECT count(*) FROM audit_log WHERE action = 'config.apply' AND actor = 'rollout-tester' AND result = 'success'")/$(sql "SELECT count(*) FROM audit_log WHERE actor = 'kubernetes' AND action = 'config.sync' AND resource_id = '$CONFIG_ID'")" = 1/3 ]

rt_finish r1

#!/usr/bin/env bash
# test_rollout_fleet.sh — the test fleet itself (tests/integration/rollout/lib/fleet.js),
# against two real replicas and `sextant publish`, so the rollout tests can trust what
# it reports: grpc-js-xds clients and protocol-level ADS clients (proxyless-like and
# Envoy-like) connect with their own node ids, groups and labels (Sextant stores the
# labels), ACK each published version (the fleet's record matches node_status), grpcjs
# clients reach the backend the route leads to; a nack_if client NACKs the version
# whose resources carry its marker (Sextant records the NACK with the message) and a
# silent_if client never answers it (both behaviours are the ads clients'; grpc-js-xds
# answers as it decides); a behaviour changed at run time applies to the
# next response; when the replica half of them use is SIGKILLed, every client fails
# over to the other replica and follows the next publish there.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/rollout/lib/rollout.sh"

rt_init fleet
rt_serve r1 || exit 1
rt_serve r2 || exit 1
echo_backend A || exit 1
echo_backend B || exit 1
G=rt-fleet

rt_echo_spec echo-a "$ECHO_A" >"$WORK/v1.json"
rt_echo_spec echo-b-marked "$ECHO_B" >"$WORK/v2.json"
rt_echo_spec echo-a-again "$ECHO_A" >"$WORK/v3.json"
rt_echo_spec echo-b-second "$ECHO_B" >"$WORK/v4.json"
V1=$(conf_publish "$G" "$WORK/v1.json") || exit 1

# f-01..f-08: grpcjs, ads (proxyless) and ads (envoy-like), spread over r1 and r2;
# f-03 NACKs the marked version, f-06 stays silent on it.
rt_fleet_spec --servers "127.0.0.1:$R1_GRPC,127.0.0.1:$R2_GRPC" --group "$G" --prefix f- \
    --kinds grpcjs:3,ads:3,envoy:2 --spread --labels tier=web,zone=a \
    --set 'f-02.labels={"tier":"api"}' \
    --set f-03.nack_if=b-marked --set 'f-03.nack_message=fleet test: marked version refused' \
    --set f-06.silent_if=b-marked >"$WORK/spec.json" || exit 1
rt_fleet_start "$WORK/spec.json" || exit 1
ALL=$(jq_ 'j.clients.map(c => c.id).join(" ")' "$WORK/spec.json")
KINDS=$(jq_ 'j.clients.map(c => c.id + ":" + c.kind + (c.mode ? "/" + c.mode : "")).join(" ")' "$WORK/spec.json")
echo "fleet: $KINDS"
NACKER="f-03"
SILENT="f-06"
OTHERS=$(for n in $ALL; do [ "$n" != $NACKER ] && [ "$n" != $SILENT ] && echo "$n"; done | tr '\n' ' ')
GRPCJS=$(jq_ 'j.clients.filter(c => c.kind === "grpcjs").map(c => c.id).join(" ")' "$WORK/spec.json")
check "the spec mixes the kinds (3 grpcjs, 3 ads, 2 envoy-like)" \
    jtrue 'j.clients.filter(c => c.kind === "grpcjs").length === 3 && j.clients.filter(c => c.mode === "envoy").length === 2' "$WORK/spec.json"

# ---------------------------------------------------------------- v1: everyone
check "all 8 clients ACK v$V1 on every type they asked for" \
    wait_for 30 rt_fleet_all "x.version === '$V1' && x.connected && Object.keys(x.acked).length >= 4 && Object.values(x.acked).every(a => a.version === '$V1')"
# shellcheck disable=SC2086
check "grpcjs clients reach backend A" wait_for 20 rt_fleet_all "x.backend === 'A'" $GRPCJS
check "every client's server is one of the two replicas, both used" \
    rt_fleet_true "clients().every(x => ['127.0.0.1:$R1_GRPC', '127.0.0.1:$R2_GRPC'].includes(x.server)) && uniq(clients().map(x => x.server)).length === 2"
acked_in_db() { [ "$(sql "SELECT count(*) FROM node_status s JOIN proxy_nodes p USING (node_id) WHERE p.group_name = '$G' AND p.connected AND s.acked_snapshot_version = $1")" = "$2" ]; }
check "node_status: the 8 nodes acked v$V1 (what the fleet reports)" wait_for 10 acked_in_db "$V1" 8
check "proxy_nodes: group and labels from node metadata" \
    [ "$(sql "SELECT count(*) FROM proxy_nodes WHERE group_name = '$G' AND labels = '{\"tier\":\"web\",\"zone\":\"a\"}'::jsonb")/$(sql "SELECT labels->>'tier' FROM proxy_nodes WHERE node_id = 'f-02'")" = "7/api" ]
check "the grpcjs clients are grpc-js-xds, the ads clients the fleet's" \
    [ "$(sql "SELECT count(*) FROM proxy_nodes WHERE group_name = '$G' AND client LIKE 'gRPC Node Pure JS%'")/$(sql "SELECT count(*) FROM proxy_nodes WHERE group_name = '$G' AND client LIKE 'sextant-fleet%'")" = "3/5" ]

# ---------------------------------------------------------------- v2: marked
t0=$(now_ms)
V2=$(conf_publish "$G" "$WORK/v2.json") || exit 1
# shellcheck disable=SC2086
check "the others ACK v$V2" wait_for 20 rt_fleet_all "x.version === '$V2'" $OTHERS
# shellcheck disable=SC2086
check "grpcjs clients reach backend B" wait_for 20 rt_fleet_all "x.backend === 'B'" $GRPCJS
check "$NACKER NACKs v$V2 with its message and stays on v$V1" \
    wait_for 10 rt_fleet_true "const x = c('$NACKER'); x.version === '$V1' && x.last_nack && x.last_nack.version === '$V2' && x.last_nack.error === 'fleet test: marked version refused' && x.last_nack.at >= $t0 && !x.versions['$V2'].first_ack_at"
check "Sextant records $NACKER's NACK of v$V2 and its message" \
    wait_for 10 test "$(sql "SELECT last_nack_version || ' ' || last_nack_error FROM node_status WHERE node_id = '$NACKER'")" = "$V2 fleet test: marked version refused"
check "$SILENT received v$V2, answered nothing, stays on v$V1" \
    rt_fleet_true "const x = c('$SILENT'); x.version === '$V1' && x.versions['$V2'] && x.versions['$V2'].first_response_at && x.versions['$V2'].held > 0 && x.silenced.some(s => s.version === '$V2') && x.nacks === 0"
check "node_status: $SILENT has not acked v$V2" [ "$(sql "SELECT acked_snapshot_version FROM node_status WHERE node_id = '$SILENT'")" = "$V1" ]
check "versions record when each client first saw and first ACKed v$V2 (after the publish)" \
    rt_fleet_true "clients().filter(x => x.node_id !== '$NACKER' && x.node_id !== '$SILENT').every(x => x.versions['$V2'].first_response_at >= $t0 && x.versions['$V2'].first_ack_at >= x.versions['$V2'].first_response_at)"

# ---------------------------------------------------------------- a behaviour set at run time
ADS1=$(jq_ 'j.clients.find(c => c.kind === "ads" && !c.mode && !c.nack_if && !c.silent_if).id' "$WORK/spec.json")
check "POST /clients/$ADS1/behaviour sets nack_if" rt_fleet_post "/clients/$ADS1/behaviour" "{\"nack_if\":\"b-second\",\"nack_message\":\"$ADS1 refuses v4\"}"
check "POST /clients/$NACKER/behaviour clears nack_if" rt_fleet_post "/clients/$NACKER/behaviour" '{"nack_if":null}'
check "POST /clients/$SILENT/behaviour clears silent_if" rt_fleet_post "/clients/$SILENT/behaviour" '{"silent_if":null}'
check "$SILENT answers what it held back: it ACKs v$V2 now" wait_for 10 rt_fleet_true "c('$SILENT').version === '$V2'"

# ---------------------------------------------------------------- failover: r1 dies
bg_stop r1 KILL
check "every client fails over to r2" \
    wait_for 30 rt_fleet_all "x.server === '127.0.0.1:$R2_GRPC' && x.connected"
V3=$(conf_publish "$G" "$WORK/v3.json") || exit 1
check "after the failover all 8 clients ACK v$V3 (from r2)" \
    wait_for 30 rt_fleet_all "x.version === '$V3'"
# shellcheck disable=SC2086
check "grpcjs clients are back on backend A" wait_for 20 rt_fleet_all "x.backend === 'A'" $GRPCJS
check "node_status: the 8 nodes acked v$V3 on r2" wait_for 10 acked_in_db "$V3" 8
check "proxy_nodes: they are all connected to r2" \
    [ "$(sql "SELECT count(*) FROM proxy_nodes WHERE group_name = '$G' AND connected AND replica_id = 'r2'")" = 8 ]
V4=$(conf_publish "$G" "$WORK/v4.json") || exit 1
check "$ADS1 NACKs v$V4 by its new behaviour, stays on v$V3" \
    wait_for 15 rt_fleet_true "const x = c('$ADS1'); x.last_nack && x.last_nack.version === '$V4' && x.last_nack.error === '$ADS1 refuses v4' && x.version === '$V3'"
check "$NACKER now ACKs v$V4" wait_for 15 rt_fleet_true "c('$NACKER').version === '$V4'"

# ---------------------------------------------------------------- stop / start
check "POST /clients/f-04/stop" rt_fleet_post /clients/f-04/stop
check "f-04 is reported disconnected by Sextant" \
    wait_for 10 test "$(sql "SELECT connected FROM proxy_nodes WHERE node_id = 'f-04'")" = f
check "POST /clients/f-04/start" rt_fleet_post /clients/f-04/start
check "f-04 connects again and ACKs v$V4" wait_for 15 rt_fleet_true "const x = c('f-04'); x.connected && x.version === '$V4' && x.connects >= 2"

rt_finish r2

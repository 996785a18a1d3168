#!/usr/bin/env bash
# test_reconnect_versions.sh — a replica's death does not re-push the snapshot to the
# clients that reconnect holding it. An ADS state-of-the-world client and a
# gateway.control.v1 client (lib/reconnect_follow.js: real gRPC streams that, like Envoy
# and gRPC's xDS clients, reconnect carrying the versions and resource names they hold)
# follow group G on replica r1 and ACK snapshot 1. r1 is killed (SIGKILL) and restarted
# on the same ports; both clients reconnect to it carrying version 1, which is what they
# should have: neither is sent anything on its new stream (counted from their logs) —
# until a publish, which both then receive, once, as on any stream (ADS: only the type
# it changed). The restarted replica records their ACKs of it.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init reconnect-versions
G=conf-reconnect

conf_services || exit 1
P1=$(free_port) && P2=$(free_port) || exit 1
conf_echo_snapshot "$WORK/v1.json" "$P1"
conf_echo_snapshot "$WORK/v2.json" "$P2"
v1=$(conf_publish "$G" "$WORK/v1.json") || exit 1
conf_serve r1 || exit 1

follow() { # follow NAME PROTOCOL: a reconnecting client, node NAME, on r1
    bg_run "$1" node "$CONF/lib/reconnect_follow.js" --protocol "$2" --server "127.0.0.1:$R1_GRPC" \
        --group "$G" --node "$1" --log "$WORK/$1.responses" --state "$WORK/$1.state"
}
state() { # state NAME EXPR: a value of the client's state file
    [ -s "$WORK/$1.state" ] && node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$WORK/$1.state" "$2"
}
holds() { # holds NAME STREAM VERSION: the client is on stream STREAM and holds VERSION of every type
    [ "$(state "$1" "s.stream + ' ' + [...new Set(Object.values(s.versions))].join()")" = "$2 $3" ]
}
types_held() { # types_held NAME: how many types the client holds
    state "$1" "Object.keys(s.versions).length"
}
responses() { # responses NAME STREAM: the responses logged on stream STREAM ("type version count")
    awk -v s="$2" '$2 == s && $3 != "open" && $3 != "closed" { print $3, $4, $5 }' "$WORK/$1.responses"
}
sql() { psql "$SEXTANT_DATABASE_URL" -qtAXc "$1"; }

follow ads-node ads
follow ctl-node control
check "the ADS client holds snapshot $v1 of LDS, RDS, CDS and EDS" \
    wait_for 20 bash -c "$(declare -f state holds types_held); WORK='$WORK'; holds ads-node 1 $v1 && [ \$(types_held ads-node) = 4 ]"
check "the gateway.control.v1 client holds snapshot $v1" \
    wait_for 20 bash -c "$(declare -f state holds); WORK='$WORK'; holds ctl-node 1 $v1"
acked() { # acked NODE VERSION: node_status has the node's ACK of VERSION
    [ "$(sql "SELECT acked_snapshot_version FROM node_status WHERE node_id = '$1'")" = "$2" ]
}
check "Sextant records both ACKs of snapshot $v1" \
    wait_for 10 bash -c "$(declare -f sql acked); acked ads-node $v1 && acked ctl-node $v1"
n_ads=$(responses ads-node 1 | wc -l)
n_ctl=$(responses ctl-node 1 | wc -l)
check "on their first streams the ADS client got $n_ads responses and the control client 1" \
    [ "$n_ads" -ge 4 -a "$n_ctl" = 1 ]

# ---------------------------------------------------------------- the replica dies and comes back
t_kill=$(sql "SELECT now()")
bg_stop r1 KILL
check "r1 is gone (SIGKILL)" bash -c "! kill -0 $PID_r1 2>/dev/null"
conf_serve_on r1 "$R1_HTTP" "$R1_GRPC" 20 || { fail "r1 restarted on the same ports"; finish; }
back() { # back NODE: the node's new stream is registered on the restarted r1
    [ "$(sql "SELECT count(*) FROM proxy_nodes WHERE node_id = '$1' AND connected AND replica_id = 'r1' AND connected_at > '$t_kill'")" = 1 ]
}
check "both clients reconnected to the restarted r1 (stream 2)" \
    wait_for 20 bash -c "$(declare -f state sql back); WORK='$WORK'; SEXTANT_DATABASE_URL='$SEXTANT_DATABASE_URL'; t_kill='$t_kill'; [ \"\$(state ads-node s.stream)\" = 2 ] && [ \"\$(state ctl-node s.stream)\" = 2 ] && back ads-node && back ctl-node"
# The restarted replica serves snapshot 1 (a fresh client gets it), so it was built and
# handed to the reconnected streams before the publish below is.
fresh_v1() {
    node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$R1_GRPC" --group "$G" --node fresh-client >"$WORK/fresh.json" &&
        [ "$(node -e 'const s = require(process.argv[1]); console.log(s.CDS.version, s.EDS.version)' "$WORK/fresh.json")" = "$v1 $v1" ]
}
check "the restarted r1 serves snapshot $v1 to a new client" fresh_v1

# ---------------------------------------------------------------- nothing re-sent, until a publish
v2=$(conf_publish "$G" "$WORK/v2.json")
check "sextant publish writes snapshot 2 (got '$v2')" [ "$v2" = 2 ]
got() { # got NAME VERSION: the client holds VERSION of some type on stream 2
    [ "$(state "$1" "s.stream + ' ' + Object.values(s.versions).includes('$2')")" = "2 true" ]
}
check "the ADS client receives snapshot 2" \
    wait_for 20 bash -c "$(declare -f state got); WORK='$WORK'; got ads-node $v2"
check "the gateway.control.v1 client receives snapshot 2" \
    wait_for 20 bash -c "$(declare -f state holds); WORK='$WORK'; holds ctl-node 2 $v2"
# A stream's responses arrive in order: a re-push of snapshot 1 would come before 2's.
ads2=$(responses ads-node 2)
ctl2=$(responses ctl-node 2)
check "the ADS client was not sent snapshot $v1 again after the reconnect (stream 2: $(echo "$ads2" | tr '\n' ';'))" \
    [ -z "$(echo "$ads2" | awk -v v="$v1" '$2 == v')" ]
check "the ADS client's stream 2 carried only what snapshot 2 changed: EDS" \
    [ "$(echo "$ads2" | awk '{ print $1, $2 }' | sort -u | tr '\n' ';')" = "EDS $v2;" ]
check "the gateway.control.v1 client's stream 2 carried one response: snapshot 2 (got: $(echo "$ctl2" | tr '\n' ';'))" \
    [ "$ctl2" = "snapshot $v2 1" ]
check "Sextant records both ACKs of snapshot $v2 on the restarted r1" \
    wait_for 10 bash -c "$(declare -f sql acked); acked ads-node $v2 && acked ctl-node $v2"

bg_stop ads-node
bg_stop ctl-node
conf_stop_serve r1
finish

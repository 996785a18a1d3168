#!/usr/bin/env bash
# test_ads_incremental.sh — a change of one cluster's endpoints out of 100 sends each
# stream one resource. Two raw ADS clients (gRPC C core through python3-grpcio,
# lib/ads_resources.py, decoding the responses with the field numbers of Envoy's protos),
# one state of the world and one Delta, subscribe to the listeners, the 100 clusters and
# their 100 ClusterLoadAssignments of a group and ACK everything. After a publish that
# moves only the first cluster's endpoints, each receives exactly one response: EDS with
# that one ClusterLoadAssignment — no CDS or LDS response (a SotW one would have to carry
# every resource, and none changed). A stream opened afterwards still gets the whole
# snapshot, and one that reconnects claiming the current version gets nothing.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init ads-incremental
conf_need_python_grpc || exit 1
G=conf-incremental
SNAP="$SRC/tests/bench/xds_fanout_snapshot.py"

conf_services || exit 1
"$PYTHON" "$SNAP" 1000 0 >"$WORK/v1.json" || exit 1
"$PYTHON" "$SNAP" 1000 2 >"$WORK/v2.json" || exit 1
"$PYTHON" "$SNAP" --eds-names >"$WORK/eds.txt" || exit 1
FIRST=$(head -n 1 "$WORK/eds.txt")
v1=$(conf_publish "$G" "$WORK/v1.json") || exit 1
conf_serve r1 || exit 1

client() { # client NAME PROTOCOL [ARGS...]: node NAME of G on r1, logging to $WORK/NAME.responses
    local name=$1 proto=$2
    shift 2
    bg_run "$name" "$PYTHON" "$CONF/lib/ads_resources.py" --server "127.0.0.1:$R1_GRPC" --node "$name" \
        --cluster "$G" --protocol "$proto" --eds-names "$WORK/eds.txt" --out "$WORK/$name.responses" "$@"
}
responses() { # responses NAME: "type version count names" of every response logged
    awk '$2 == "response" { $1 = ""; $2 = ""; sub(/^  /, ""); print }' "$WORK/$1.responses" 2>/dev/null
}
# total NAME TYPE: how many resources of TYPE the responses to NAME carried, over all of them
total() { responses "$1" | awk -v t="$2" '$1 == t { n += $3 } END { print n + 0 }'; }
acked() { conf_acked "$1" "$2"; }

client sotw-node sotw
client delta-node delta
check "the SotW client's ACK of snapshot $v1 is recorded" wait_for 20 acked sotw-node "$v1"
check "the Delta client's ACK of snapshot $v1 is recorded" wait_for 20 acked delta-node "$v1"
for name in sotw-node delta-node; do
    check "$name received 1 listener, 100 clusters and 100 ClusterLoadAssignments of snapshot $v1" \
        [ "$(total "$name" lds) $(total "$name" cds) $(total "$name" eds)" = "1 100 100" ]
done
n_sotw=$(responses sotw-node | wc -l)
n_delta=$(responses delta-node | wc -l)

# ---------------------------------------------------------------- one cluster's endpoints move
v2=$(conf_publish "$G" "$WORK/v2.json") || exit 1
check "a publish moving $FIRST's endpoints makes snapshot $v2" [ -n "$v2" ] && [ "$v2" -gt "$v1" ]
check "the SotW client's ACK of snapshot $v2 is recorded" wait_for 20 acked sotw-node "$v2"
check "the Delta client's ACK of snapshot $v2 is recorded" wait_for 20 acked delta-node "$v2"
# Every type's response of v2 is ACKed by the time the node is recorded at v2, so
# whatever was sent for it is in the logs now.
got=$(responses sotw-node | tail -n +$((n_sotw + 1)))
check "the SotW client got one response for snapshot $v2: EDS with $FIRST alone (got: ${got//$'\n'/; })" \
    [ "$got" = "eds $v2 1 $FIRST" ]
got=$(responses delta-node | tail -n +$((n_delta + 1)))
check "the Delta client got one response for snapshot $v2: EDS with $FIRST alone (got: ${got//$'\n'/; })" \
    [ "$(cut -d' ' -f1,3- <<<"$got")" = "eds 1 $FIRST" ]

# ---------------------------------------------------------------- new and reconnecting streams
client sotw-late sotw
check "a SotW stream opened after snapshot $v2 has its ACK recorded" wait_for 20 acked sotw-late "$v2"
check "it received every resource of snapshot $v2 (1 listener, 100 clusters, 100 ClusterLoadAssignments)" \
    [ "$(total sotw-late lds) $(total sotw-late cds) $(total sotw-late eds)" = "1 100 100" ]
check "...each in a response of version $v2" \
    [ "$(responses sotw-late | cut -d' ' -f2 | sort -u)" = "$v2" ]
client sotw-back sotw --version "$v2"
check "a SotW stream that starts claiming snapshot $v2 is recorded at it" wait_for 20 acked sotw-back "$v2"
check "and was sent nothing" [ "$(responses sotw-back | wc -l)" = 0 ]

for name in sotw-node delta-node sotw-late sotw-back; do
    bg_stop "$name"
done
conf_stop_serve r1
finish

#!/usr/bin/env bash
# test_k8s_grpc_js.sh — a service defined in Kubernetes, dialled by a real proxyless
# gRPC client (@grpc/grpc-js-xds) through Sextant, while its Service scales.
#
# The test Kubernetes API server holds a Gateway of the class Sextant handles with a
# listener for proxyless gRPC clients (protocol sextant.dev/ProxylessGRPC), a GRPCRoute
# for echo.test matching the echo service's method, and the Service "echo" whose
# EndpointSlice names backend A. One replica watches it; the client dials
# xds:///echo.test with the Gateway's proxy group in its bootstrap and calls without
# pause while the test, with kubectl:
#   1. adds backend B to the EndpointSlice (a second pod of the Service, same port on
#      another loopback address): calls reach B, none fails;
#   2. removes backend A from it: every call goes to B, none fails;
# each change is one new version of the Gateway's config, and the GRPCRoute's status
# says Accepted and ResolvedRefs.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-grpc-js
conf_services || exit 1
k8s_source_init || exit 1

NS=mesh
GROUP="$NS/grpc-mesh"
NODE=k8s-grpc-js-client
LOG="$WORK/calls.log"

# Two backends on one port, at 127.0.0.1 and 127.0.0.2 (another port when B cannot
# have A's).
for attempt in 1 2 3; do
    echo_backend A 127.0.0.1 || exit 1
    echo_backend B 127.0.0.2 "$ECHO_A" && break
    bg_stop echo_A
    rm -f "$WORK/echo_A.port" "$WORK/echo_B.port"
    [ "$attempt" = 3 ] && { echo "no port free on both loopback addresses" >&2; exit 1; }
done
PORT=$ECHO_A

# slice ADDRESS...: the Service's EndpointSlice with one ready endpoint per address.
slice() {
    cat <<EOF
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-x7k2p
  namespace: $NS
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
  - name: grpc
    protocol: TCP
    port: $PORT
endpoints:
EOF
    local a
    for a in "$@"; do
        printf '  - addresses: ["%s"]\n    conditions:\n      ready: true\n' "$a"
    done
}

{
    cat <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: sextant
spec:
  controllerName: sextant.dev/gateway-controller
---
EOF
    k8s_gateway grpc-mesh "$NS" xds 443 sextant.dev/ProxylessGRPC 'allowedRoutes:' '  namespaces:' '    from: Same'
    cat <<EOF
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: echo
  namespace: $NS
spec:
  parentRefs:
    - name: grpc-mesh
      sectionName: xds
  hostnames:
    - echo.test
  rules:
    - matches:
        - method:
            type: Exact
            service: sextant.test.Echo
            method: Hello
      backendRefs:
        - name: echo
          port: 50051
---
apiVersion: v1
kind: Service
metadata:
  name: echo
  namespace: $NS
spec:
  selector:
    app: echo
  ports:
    - name: grpc
      protocol: TCP
      port: 50051
      targetPort: grpc
      appProtocol: kubernetes.io/h2c
---
EOF
} >"$WORK/objects.yaml"
slice 127.0.0.1 >>"$WORK/objects.yaml"
k8s_apply "$WORK/objects.yaml" || exit 1

k8s_source_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

ID=
config_written() {
    ID=$(k8s_config_id "$NS" grpc-mesh)
    [ -n "$ID" ]
}
check "the Gateway $GROUP becomes a config of source kubernetes" wait_for 20 config_written
[ -n "$ID" ] || finish

# route_condition TYPE: the GRPCRoute's parent status of our controller has TYPE True
# for the route's current generation.
route_condition() {
    k8s_kubectl "$K8S_DIR" get grpcroute -n "$NS" echo -o json >"$WORK/route.json" 2>/dev/null || return 1
    jtrue '(j.status && j.status.parents || []).some((p) => p.controllerName === "sextant.dev/gateway-controller" &&
        (p.conditions || []).some((c) => c.type === "'"$1"'" && c.status === "True" &&
            c.observedGeneration === j.metadata.generation))' "$WORK/route.json"
}
check "the GRPCRoute's status says Accepted" wait_for 10 route_condition Accepted
check "the GRPCRoute's status says ResolvedRefs" route_condition ResolvedRefs

conf_client_on_a "$LOG" 20 "a call to xds:///echo.test reaches backend A"
V0=$(k8s_versions "$ID")

# ok_since MS BACKEND: a call after MS reached BACKEND.
ok_since() {
    results_since "$LOG" "$1" | grep -q "^ok $2\$"
}

# ---------------------------------------------------------------- the Service scales to B
T1=$(now_ms)
slice 127.0.0.1 127.0.0.2 >"$WORK/slice-ab.yaml"
check "kubectl applies the EndpointSlice with a second endpoint" k8s_apply "$WORK/slice-ab.yaml"
check "calls reach backend B once the EndpointSlice names it" wait_for 20 ok_since "$T1" B
# both backends take calls now: A still gets some after the first call on B
T2=$(awk -v t="$T1" '$1 >= t && $2 == "ok" && $3 == "B" { print $1; exit }' "$LOG")
check "calls keep reaching backend A beside B" wait_for 20 ok_since "$((${T2:-$T1} + 1))" A
check "the config has one new version for the change (v$((V0 + 1)))" [ "$(k8s_versions "$ID")" = $((V0 + 1)) ]

# ---------------------------------------------------------------- backend A leaves
slice 127.0.0.2 >"$WORK/slice-b.yaml"
T3=$(now_ms)
check "kubectl applies the EndpointSlice without the first endpoint" k8s_apply "$WORK/slice-b.yaml"
# only_b: the last 30 calls since the change all went to B (while the slice names both,
# the client's round robin alternates between them)
only_b() {
    local tail
    tail=$(results_since "$LOG" "$T3" | tail -n 30)
    [ "$(echo "$tail" | grep -c '^ok B$')" = 30 ]
}
check "after A left the EndpointSlice, every call goes to backend B" wait_for 20 only_b
check "the config has one new version for the change (v$((V0 + 2)))" [ "$(k8s_versions "$ID")" = $((V0 + 2)) ]

ERRS=$(results_since "$LOG" "$T1" | grep -c '^err' || true)
CALLS=$(results_since "$LOG" "$T1" | wc -l)
check "no call failed while the Service scaled ($ERRS of $CALLS failed)" [ "$ERRS" = 0 ]

q="SELECT count(*) FROM node_status WHERE node_id = '$NODE' AND last_nack_error IS NOT NULL"
check "the client NACKed nothing Sextant sent" [ "$(sql "$q")" = 0 ]
check "the route's status still says Accepted" route_condition Accepted

conf_end_client "$LOG"

#!/usr/bin/env bash
# test_k8s_gateway_api.sh — the Gateway API conformance scenarios end to end: the test
# Kubernetes API server (tests/k8s/apiserver.py) with the Gateway API CRDs, one
# `sextant serve` replica watching it (k8s.enabled, its own PostgreSQL), the objects of
# tests/k8s/fixtures/ applied with kubectl, and lib/k8s_gateway_api.js checking, per
# scenario, the status Sextant wrote (kubectl get -o json) and what each Gateway's proxy
# group is served over ADS (decoded with Envoy's protos): HTTPRouteSimpleSameNamespace,
# HTTPRouteCrossNamespace, HTTPRouteInvalidReferenceGrant / HTTPRouteReferenceGrant,
# HTTPRouteInvalidBackendRefUnknownKind, HTTPRouteHostnameIntersection,
# HTTPRouteListenerHostnameMatching, HTTPRouteMatching, HTTPRouteWeight,
# GatewayInvalidTLSConfiguration, GatewayWithAttachedRoutes, GRPCRouteExactMethodMatching,
# TLSRouteSimpleSameNamespace.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$SRC/tests/conformance/lib/k8s_harness.sh"

conf_init k8s-gateway-api
conf_k8s || exit 1
export SEXTANT_K8S_GATEWAY_ADDRESSES=192.0.2.10
conf_serve r1 || exit 1

# A failing check waits for its status (20 s) or xDS state (15 s) in each of three steps.
CONFORMANCE_TIME_LIMIT_MS=120000 K8S_DIR="$K8S_DIR" XDS_SERVER="127.0.0.1:$R1_GRPC" GATEWAY_ADDRESS=192.0.2.10 \
    node "$CONF/lib/k8s_gateway_api.js" | tee "$WORK/k8s_gateway_api.out"
check "every Gateway API scenario check passed (lib/k8s_gateway_api.js)" [ "${PIPESTATUS[0]}" = 0 ]
conf_stop_serve r1
finish

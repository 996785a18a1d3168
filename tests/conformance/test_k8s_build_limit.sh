#!/usr/bin/env bash
# test_k8s_build_limit.sh — a Gateway's build over k8s.max_endpoints_per_snapshot keeps
# the last good snapshot serving: one `sextant serve` replica watching the test
# Kubernetes API server with the limit at 3 endpoints, and lib/k8s_build_limit.js
# growing a Service's EndpointSlice past it and back (status, metric, database and what
# an ADS client is served).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$SRC/tests/conformance/lib/k8s_harness.sh"

conf_init k8s-build-limit
conf_k8s || exit 1
export SEXTANT_K8S_MAX_ENDPOINTS_PER_SNAPSHOT=3
conf_serve r1 || exit 1

# A failing step waits up to 15 s for what it expects, in each of five steps.
CONFORMANCE_TIME_LIMIT_MS=100000 K8S_DIR="$K8S_DIR" XDS_SERVER="127.0.0.1:$R1_GRPC" HTTP_PORT=$R1_HTTP \
    node "$CONF/lib/k8s_build_limit.js" | tee "$WORK/k8s_build_limit.out"
check "every build limit check passed (lib/k8s_build_limit.js)" [ "${PIPESTATUS[0]}" = 0 ]
conf_stop_serve r1
finish

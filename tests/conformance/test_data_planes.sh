#!/usr/bin/env bash
# test_data_planes.sh — a proxy group's data planes through the REST API: a
# gateway.control.v1 client of a group serving "control" receives AI service, token
# policy, Wasm plugin, session persistence, extension_ref, HTTP/3 and UDP configuration
# created through REST; the same config in a group serving Envoy is refused naming the
# data plane (lib/data_planes.js).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init data-planes
conf_rest_auth "conformance-data-planes-secret-0123456789"
VIEWER_TOKEN=$(token conformance-viewer viewer)
export TOKEN VIEWER_TOKEN
conf_services || exit 1
conf_serve r1 || exit 1
XDS_SERVER="127.0.0.1:$R1_GRPC" HTTP_PORT=$R1_HTTP node "$CONF/lib/data_planes.js" | tee "$WORK/data_planes.out"
check "every data plane check passed (lib/data_planes.js)" [ "${PIPESTATUS[0]}" = 0 ]
conf_stop_serve r1
finish

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
conf_run_checks data_planes.js "data plane"

#!/usr/bin/env bash
# test_grpc_js_xds.sh — @grpc/grpc-js-xds, gRPC's own xDS client for Node, dials
# xds:///echo.test through Sextant: it reaches the backend the published snapshot
# names, follows `sextant publish` to a second backend, fails as the client reports
# when the listener and route are removed, and recovers when they come back.
# The scenario is lib/client_flow.sh; the client is lib/xds_client.js.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/client_flow.sh"

conf_init grpc-js
conf_client_flow js conf-js
finish

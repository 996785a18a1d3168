#!/usr/bin/env bash
# test_control_v1.sh — gateway.control.v1 ConfigurationDiscoveryService, driven by
# lib/control_v1.js (control.proto loaded by @grpc/proto-loader) against one replica:
# subscribe, receive the published snapshot, ACK, NACK with error_detail (checked in
# node_status), subscriptions honoured, ReportStatus accepted and rejected.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init control-v1
conf_services || exit 1
conf_serve r1 || exit 1

XDS_SERVER="127.0.0.1:$R1_GRPC" HTTP_PORT=$R1_HTTP node "$CONF/lib/control_v1.js" | tee "$WORK/control_v1.out"
check "every gateway.control.v1 check passed (lib/control_v1.js)" [ "${PIPESTATUS[0]}" = 0 ]
conf_stop_serve r1
finish

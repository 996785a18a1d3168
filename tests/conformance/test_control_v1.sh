#!/usr/bin/env bash
# test_control_v1.sh — gateway.control.v1 ConfigurationDiscoveryService, driven by
# lib/control_v1.js (control.proto loaded by @grpc/proto-loader) against one replica:
# subscribe, receive the published snapshot, ACK, NACK with error_detail (checked in
# node_status), subscriptions honoured, ReportStatus accepted and rejected.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init control-v1
conf_run_checks control_v1.js "gateway.control.v1"

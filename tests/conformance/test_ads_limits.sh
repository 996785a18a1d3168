#!/usr/bin/env bash
# test_ads_limits.sh — the xDS server's input limits (lib/ads_limits.js) on one replica
# with xds.max_streams 3 and xds.max_receive_message_bytes 2 MiB: every breach refused
# with its gRPC status and counted, the well-behaved client served meanwhile.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init ads-limits
conf_services || exit 1
export SEXTANT_XDS_MAX_STREAMS=3 SEXTANT_XDS_MAX_RECEIVE_MESSAGE_BYTES=2097152
conf_serve r1 || exit 1
XDS_SERVER="127.0.0.1:$R1_GRPC" HTTP_PORT=$R1_HTTP node "$CONF/lib/ads_limits.js" | tee "$WORK/ads_limits.out"
check "every limit check passed (lib/ads_limits.js)" [ "${PIPESTATUS[0]}" = 0 ]
conf_stop_serve r1
finish

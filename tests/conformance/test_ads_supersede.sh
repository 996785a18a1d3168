#!/usr/bin/env bash
# test_ads_supersede.sh — a second ADS stream with the node id of a live stream
# supersedes it; the node stays connected, on the second stream, in the REST API
# (lib/ads_supersede.js).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init ads-supersede
conf_rest_auth "conformance-supersede-secret-0123456789"
export TOKEN
conf_services || exit 1
conf_serve r1 || exit 1
XDS_SERVER="127.0.0.1:$R1_GRPC" HTTP_PORT=$R1_HTTP REPLICA_LOG="$WORK/r1.log" \
    node "$CONF/lib/ads_supersede.js" | tee "$WORK/ads_supersede.out"
check "every supersede check passed (lib/ads_supersede.js)" [ "${PIPESTATUS[0]}" = 0 ]
conf_stop_serve r1
finish

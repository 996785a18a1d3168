#!/usr/bin/env bash
# test_ads_protocol.sh — Envoy ADS v3, state of the world and Delta, at the protocol
# level: lib/ads_protocol.js talks to one `sextant serve` replica, publishes its own
# snapshots with `sextant publish`, decodes every response with Envoy's upstream
# protos and checks every point of the xDS protocol semantics Sextant promises: nonces,
# versions, ACK/NACK (NACKs checked in node_status), stale nonces, named and wildcard
# subscriptions, full state, push order, Delta resource versions and removals, and
# the stream's node.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init ads-protocol
conf_run_checks ads_protocol.js "ADS protocol"

#!/usr/bin/env bash
# test_ui_fleet.sh — the fleet views while a rolling deployment runs against real data
# planes (gateway.control.v1 clients, tests/e2e/lib/dataplane.cjs).
#
# Four data planes follow group e2e-fleet at v1 and two follow e2e-edge, one of which
# rejects snapshots carrying "nack-me". On the fleet page (scenarios/fleet.mjs) both
# groups show with their proxies by state and version; a rolling deployment of a new
# version, one proxy per wave, runs while the page is open: the version distribution
# of e2e-fleet moves from four proxies on v1 through a mix of both versions to four on
# the new one, each step seen on the rendered bar (its segments per version and their
# counts), and the deployment page, open in another tab, shows each wave's ACK arriving
# on its timeline and its propagation curve. A change to e2e-edge that one proxy NACKs
# shows its error grouped by message on its deployment page; the metrics page draws
# its four charts, and its pushes are the ones the replica counted on /metrics. Screenshots of each view go to the test output folder;
# fleet-readme.png is the one docs/ui-fleet.png (the README's) is taken from.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/e2e/lib/harness.sh"

e2e_init fleet
e2e_services || exit 1
export SEXTANT_ROLLOUTS_TICK=200ms
SEXTANT_AUTH_DEV_SIGN_IN=true e2e_serve || exit 1
ADMIN=$(e2e_token e2e-admin admin)
GROUP=e2e-fleet
EDGE=e2e-edge
CONFIG_ID=$(e2e_create_config "$ADMIN" web "$GROUP" "$(e2e_spec web.example 10080 8080)" "first version") || exit 1
EDGE_ID=$(e2e_create_config "$ADMIN" edge "$EDGE" "$(e2e_spec edge.example 10081 8081)" "first version") || exit 1
NODES="dp-fl-1 dp-fl-2 dp-fl-3 dp-fl-4"
for n in $NODES; do
    e2e_dataplane "$n" "$GROUP"
done
e2e_dataplane dp-edge-1 "$EDGE"
e2e_dataplane dp-edge-bad "$EDGE" --nack-matching nack-me
for n in $NODES; do
    check "$n acked v1" e2e_wait_acked "$ADMIN" "$n" 1
done
for n in dp-edge-1 dp-edge-bad; do
    check "$n acked v1" e2e_wait_acked "$ADMIN" "$n" 1
done

# The next versions, saved as drafts: the scenario applies them.
e2e_rest "$ADMIN" PUT "/api/v1/configs/$CONFIG_ID" \
    "{\"spec\":$(e2e_spec web.example 10080 8090),\"message\":\"a new backend port\",\"draft\":true}" >/dev/null
check "the web draft is version 2" [ "$(jv .version)" = 2 ]
e2e_rest "$ADMIN" PUT "/api/v1/configs/$EDGE_ID" \
    "{\"spec\":$(e2e_spec edge.example 10081 8081 | sed 's/"healthy":true/"healthy":true,"zone":"nack-me"/'),\"message\":\"a zone one proxy rejects\",\"draft\":true}" >/dev/null
check "the edge draft is version 2" [ "$(jv .version)" = 2 ]

export ADMIN CONFIG_ID EDGE_ID GROUP EDGE NODES
e2e_browser "$E2E/scenarios/fleet.mjs"

# The metrics' pushes are the replica's own: once its heartbeat has reported, the hour's
# pushes from GET /api/v1/fleet/metrics equal its sextant_xds_pushes_total on /metrics.
pushes_reported() {
    local scraped
    scraped=$(curl -s --max-time 10 "$SEXTANT_URL/metrics" | awk '/^sextant_xds_pushes_total\{/ {n += $2} END {print n + 0}')
    [ "$scraped" -gt 0 ] && [ "$(e2e_rest "$ADMIN" GET /api/v1/fleet/metrics)" = 200 ] &&
        jtrue "j.series.reduce((n, s) => n + s.pushes, 0) === $scraped"
}
check "the metrics count every push the replica made" wait_for 30 pushes_reported
finish

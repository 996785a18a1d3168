#!/usr/bin/env bash
# test_fleet.sh — fleet health against the real daemon, PostgreSQL and Redis: nodes
# inserted with psql at different ages show as connected, stale and disconnected in
# GET /api/v1/proxies (and /proxies/{id}) with fleet.stale_after=120s and
# fleet.disconnected_after=300s; ?state= filters; the sextant_proxies{state} gauge of
# /metrics follows within its 10 s refresh; GET /api/v1/groups gives each group its
# proxies by state and its NACK rate (nodes whose last answer was a NACK / nodes that
# answered at all).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init fleet
export SEXTANT_FLEET_STALE_AFTER=120s SEXTANT_FLEET_DISCONNECTED_AFTER=300s
api_serve
VIEW=$(api_token victor viewer)
OPER=$(api_token olga operator)

# A snapshot makes the group "edge" exist for GET /groups.
call_status "POST /configs creates group edge" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body web edge "$(api_spec 10080 a.example)")"

sql "INSERT INTO proxy_nodes (node_id, group_name, connected, last_seen) VALUES
       ('n-fresh', 'edge', true,  now()),
       ('n-idle',  'edge', true,  now() - interval '200 seconds'),
       ('n-gone',  'edge', true,  now() - interval '400 seconds'),
       ('n-down',  'edge', false, now());
     INSERT INTO node_status (node_id, acked_snapshot_version, acked_at, last_nack_version,
                              last_nack_error, last_nack_at, nack_count) VALUES
       ('n-fresh', 1, now() - interval '60 seconds', 2, 'bad listener', now() - interval '10 seconds', 1),
       ('n-idle',  2, now(), 1, 'old error', now() - interval '100 seconds', 1),
       ('n-gone',  NULL, NULL, NULL, NULL, NULL, 0),
       ('n-down',  NULL, NULL, NULL, NULL, NULL, 0)" >/dev/null

call_status "GET /proxies" 200 api_call "$VIEW" GET /api/v1/proxies
check "states: fresh connected, idle stale, gone and down disconnected" \
    [ "$(jv '.items.map(n => n.node_id + "=" + n.state).join(",")')" = \
      "n-down=disconnected,n-fresh=connected,n-gone=disconnected,n-idle=stale" ]
check "nacking: only the node whose NACK is newer than its ACK" \
    [ "$(jv '.items.filter(n => n.nacking).map(n => n.node_id).join(",")')" = n-fresh ]
check "the stream flag stays as stored" jtrue 'j.items.find(n => n.node_id === "n-gone").connected === true'

call_status "GET /proxies?state=stale" 200 api_call "$VIEW" GET "/api/v1/proxies?state=stale"
check "?state=stale lists only n-idle" [ "$(jv '.items.map(n => n.node_id).join(",")')" = n-idle ]
call_status "GET /proxies?state=disconnected&limit=1" 200 api_call "$VIEW" GET "/api/v1/proxies?state=disconnected&limit=1"
check "?state=disconnected pages: n-down first, with a cursor" \
    jtrue 'j.items.length === 1 && j.items[0].node_id === "n-down" && j.next_cursor'
st=$(api_next_page "$VIEW" '/api/v1/proxies?state=disconnected&limit=1')
check "... then n-gone" jtrue 'j.items.length === 1 && j.items[0].node_id === "n-gone"'
call_error "GET /proxies?state=sleepy" 400 invalid_argument api_call "$VIEW" GET "/api/v1/proxies?state=sleepy"

call_status "GET /proxies/n-idle" 200 api_call "$VIEW" GET /api/v1/proxies/n-idle
check "one proxy carries its state" jtrue 'j.state === "stale" && j.nacking === false'

check "/metrics: sextant_proxies{state=\"stale\"} 1 within 12 s" wait_for 12 metric_is 'sextant_proxies{state="stale"}' 1
check "/metrics: connected 1, disconnected 2" \
    [ "$(metric 'sextant_proxies{state="connected"}')/$(metric 'sextant_proxies{state="disconnected"}')" = "1/2" ]

call_status "GET /groups" 200 api_call "$VIEW" GET /api/v1/groups
check "group edge: proxies by state and nacking" \
    jtrue 'const g = j.items.find(g => g.name === "edge"); g.proxies.connected === 1 && g.proxies.stale === 1 && g.proxies.disconnected === 2 && g.proxies.nacking === 1'
check "group edge: nack_rate 0.5 (one of two nodes that answered)" \
    jtrue 'j.items.find(g => g.name === "edge").nack_rate === 0.5'

api_stop
finish

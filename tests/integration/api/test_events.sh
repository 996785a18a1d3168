#!/usr/bin/env bash
# test_events.sh — GET /api/v1/events (server-sent events) against two replicas on one
# PostgreSQL and Redis, with events.keepalive=1s:
#
#   - a stream on replica B sees proxy_connected, config_applied (versions 1 and 2) and
#     proxy_disconnected of a protocol-level ADS client (tests/conformance/lib/ads_fetch.js)
#     connected to replica A, in that order, with their data fields;
#   - a stream cut off and resumed with Last-Event-ID (and one with ?since=) gets exactly
#     the events after that id that an uninterrupted stream got, none lost or repeated;
#   - a viewer sees a deployment event (inserted with psql); a role that may read proxies
#     but not deployments (auth.policy_file) sees the proxy events and not that one;
#     ?types= narrows; a role without events read gets 403, no token 401;
#   - a keep-alive comment arrives within the keep-alive interval;
#   - a connected node idle past fleet.stale_after gets one proxy_stale, and past
#     fleet.disconnected_after one proxy_disconnected (no_activity), whichever
#     replica sweeps; events.max_streams is enforced with 503;
#   - sextant_events_streams / sextant_events_sent_total on /metrics;
#   - both replicas exit 0 on SIGTERM with streams open.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init events
SSE="$SRC/tests/integration/api/sse.js"
CONF="$SRC/tests/conformance"
# The protocol-level ADS client needs the conformance tests' node_modules.
npm_ready "$CONF" || { echo "npm ci of $CONF failed" >&2; exit 1; }

api_policy 'admin *=*' 'operator *=read' 'operator configs=*' 'viewer *=read' \
    'fleetwatch events=read' 'fleetwatch proxies=read' 'configreader configs=read'
export SEXTANT_EVENTS_KEEPALIVE=1s
export SEXTANT_FLEET_STALE_AFTER=30s SEXTANT_FLEET_DISCONNECTED_AFTER=600s
export SEXTANT_NODES_FLUSH_INTERVAL=100ms

# Replica A: the xDS client's; at most 2 event streams.
SEXTANT_REPLICA_ID=events-a SEXTANT_EVENTS_MAX_STREAMS=2 api_serve
# Replica B: where the streams are read.
HTTP_B=$(free_port) || exit 1
GRPC_B=$(free_port) || exit 1
SEXTANT_HTTP_LISTEN="127.0.0.1:$HTTP_B" SEXTANT_GRPC_LISTEN="127.0.0.1:$GRPC_B" SEXTANT_REPLICA_ID=events-b \
    bg_run serve_b "${SX_ENV[@]}" "$BIN" serve
wait_for 20 ready "$HTTP_B" || { echo "replica B did not become ready" >&2; exit 1; }

ADMIN=$(api_token ada admin)
OPER=$(api_token olga operator)
VIEW=$(api_token victor viewer)
WATCH=$(api_token wanda fleetwatch)
CONFR=$(api_token carl configreader)


# ---------------------------------------------------------------- refusals
st=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$HTTP_B/api/v1/events")
expect_status "GET /events without a token" 401 "$st"
st=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $CONFR" \
    "http://127.0.0.1:$HTTP_B/api/v1/events")
expect_status "GET /events by a role without events read" 403 "$st"
st=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $VIEW" \
    "http://127.0.0.1:$HTTP_B/api/v1/events?types=config_applied,bogus")
expect_error "GET /events?types= with an unknown type" 400 invalid_argument "$st"
st=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $VIEW" \
    -H "Last-Event-ID: seven" "http://127.0.0.1:$HTTP_B/api/v1/events")
expect_error "GET /events with a malformed Last-Event-ID" 400 invalid_argument "$st"

# ---------------------------------------------------------------- streams on B
stream live "$HTTP_B" "$VIEW"
stream watch "$HTTP_B" "$WATCH"
stream acks "$HTTP_B" "$VIEW" -G --data-urlencode "types=config_applied"
stream cut "$HTTP_B" "$VIEW" # cut off after the first events, then resumed
for s in live watch acks cut; do
    check "stream $s on replica B is open (\": connected\")" wait_for 10 connected "$s"
done
check "the stream answers text/event-stream" grep -qi '^content-type: text/event-stream' "$WORK/live.h"

# ---------------------------------------------------------------- an xDS client on A
G=events-g
NODE=events-node-1
call_status "POST /configs (group $G, snapshot 1)" 201 api_json "$OPER" POST /api/v1/configs "$(api_config_body web "$G" "$(api_spec 10080 a.example)")"
CFG=$(jv .id)
node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$GRPC_PORT" --group "$G" --node "$NODE" \
    --until-version 2 --timeout-ms 30000 --ready-file "$WORK/ads.ready" >"$WORK/ads.out" 2>"$WORK/ads.err" &
PID_ADS=$!
BG_PIDS+=("$PID_ADS")
check "the ADS client on replica A holds version 1" wait_for 15 test -e "$WORK/ads.ready"
node_has() { # node_has STREAM EXPR-over-x (the node's events)
    sse "$1" "(() => { const x = e.filter(v => v.data.node_id === '$NODE'); return $2; })()"
}
check "B's stream: proxy_connected of the client on A" \
    wait_for 10 node_has live 'x.some(v => v.event === "proxy_connected")'
check "B's stream: config_applied version 1" \
    wait_for 10 node_has live 'x.some(v => v.event === "config_applied" && v.data.version === 1)'
check "stream cut got config_applied version 1 too" \
    wait_for 5 node_has cut 'x.some(v => v.event === "config_applied" && v.data.version === 1)'
kill "$PID_cut" 2>/dev/null

call_status "PUT /configs/$CFG (snapshot 2)" 200 api_json "$OPER" PUT "/api/v1/configs/$CFG" "{\"spec\":$(api_spec 10080 a.example 10.0.0.2)}"
check "B's stream: config_applied version 2" \
    wait_for 15 node_has live 'x.some(v => v.event === "config_applied" && v.data.version === 2)'
wait "$PID_ADS" 2>/dev/null
check "the ADS client got version 2 and closed its stream" [ $? = 0 ]
check "B's stream: proxy_disconnected after the client left A" \
    wait_for 10 node_has live 'x.some(v => v.event === "proxy_disconnected")'

check "the client's events, in order: connected, applied 1, applied 2, disconnected" \
    node_has live 'x.map(v => v.event + (v.data.version ? v.data.version : "")).join(",") === "proxy_connected,config_applied1,config_applied2,proxy_disconnected"'
check "proxy_connected data: protocol ads-sotw, the client, replica events-a, group" \
    node_has live '(c => c.data.protocol === "ads-sotw" && c.data.replica === "events-a" && typeof c.data.client === "string" && c.data.group === "'"$G"'")(x.find(v => v.event === "proxy_connected"))'
check "config_applied data: version, group" \
    node_has live 'x.filter(v => v.event === "config_applied").every(v => v.data.group === "'"$G"'" && Number.isInteger(v.data.version))'
check "proxy_disconnected data: a reason" \
    node_has live 'typeof x.find(v => v.event === "proxy_disconnected").data.reason === "string"'
check "every event: SSE id = data.id, event = data.type, at in RFC 3339" \
    sse live 'e.length > 0 && e.every(v => v.id === v.data.id && v.event === v.data.type && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v.data.at))'
check "ids are never repeated in a stream" sse live 'new Set(e.map(v => v.id)).size === e.length'
check "?types=config_applied streams only config_applied" \
    sse acks 'e.length >= 2 && e.every(v => v.event === "config_applied")'

# ---------------------------------------------------------------- permissions
DEP=3f1d2c44-5b6e-4f70-8a91-b2c3d4e5f607
sql "BEGIN; INSERT INTO events (type, deployment_id, group_name, data)
       VALUES ('wave_started', '$DEP', '$G', '{\"wave\": 1}');
     SELECT pg_notify('sextant_events', currval('events_id_seq')::text); COMMIT" >/dev/null
sql "BEGIN; INSERT INTO events (type, node_id, group_name, data)
       VALUES ('proxy_connected', 'marker', '$G', '{}');
     SELECT pg_notify('sextant_events', currval('events_id_seq')::text); COMMIT" >/dev/null
marker() { sse "$1" 'e.some(v => v.data.node_id === "marker")'; }
check "the viewer's stream reaches the marker event" wait_for 10 marker live
check "the proxies-only role's stream reaches the marker event" wait_for 10 marker watch
check "the viewer sees the deployment event (wave_started)" \
    sse live 'e.some(v => v.event === "wave_started" && v.data.deployment_id === "'"$DEP"'" && v.data.wave === 1)'
check "the role without deployments read does not" sse watch '!e.some(v => v.event.startsWith("wave") || v.data.deployment_id)'
check "... but sees the proxy events" \
    sse watch 'e.some(v => v.event === "proxy_connected" && v.data.node_id === "'"$NODE"'") && e.some(v => v.event === "config_applied")'

# ---------------------------------------------------------------- resuming
FIRST=$(ssep cut 'e[0].id')
LAST=$(ssep cut 'e[e.length - 1].id')
check "stream cut saw events before it was cut (ids $FIRST..$LAST)" \
    sse cut 'e.length >= 2 && e.every((v, i) => v.id === ['"$(ssep live 'e.map(v => v.id).join(",")')"'][i])'
stream resumed "$HTTP_B" "$VIEW" -H "Last-Event-ID: $LAST"
stream since "$HTTP_B" "$VIEW" -G --data-urlencode "since=$FIRST"
check "the resumed stream reaches the marker" wait_for 10 marker resumed
check "the ?since= stream reaches the marker" wait_for 10 marker since
after() { # after STREAM ID: the ids after ID, up to the marker, of the stream
    ssep "$1" 'e.slice(e.findIndex(v => v.id === '"$2"') + 1, e.findIndex(v => v.data.node_id === "marker") + 1).map(v => v.id).join(",")'
}
resumed_ids() {
    ssep "$1" 'e.slice(0, e.findIndex(v => v.data.node_id === "marker") + 1).map(v => v.id).join(",")'
}
want=$(after live "$LAST")
got=$(resumed_ids resumed)
check "Last-Event-ID: $LAST resumes with exactly the events after it, those the cut stream missed ($got; uninterrupted: $want)" \
    [ -n "$want" ] && [ "$got" = "$want" ]
want=$(after live "$FIRST")
got=$(resumed_ids since)
check "?since=$FIRST gives exactly the events after $FIRST ($got; uninterrupted: $want)" \
    [ -n "$want" ] && [ "$got" = "$want" ]

# ---------------------------------------------------------------- keep-alive
stream idle "$HTTP_B" "$WATCH" -G --data-urlencode "types=rollout_failed"
check "stream idle is open" wait_for 10 connected idle
t0=$(date +%s%N)
wait_for 5 sse idle 'comments.includes(": keep-alive")'
ms=$((($(date +%s%N) - t0) / 1000000))
check "a keep-alive comment within events.keepalive (1s; seen after $ms ms, polling included)" [ "$ms" -le 2500 ]

# ---------------------------------------------------------------- proxy_stale
sql "INSERT INTO proxy_nodes (node_id, group_name, connected, replica_id, last_seen)
     VALUES ('ghost', '$G', true, 'events-gone', now() - interval '1 hour')" >/dev/null
check "a connected node idle past fleet.stale_after: proxy_stale (within a 10 s sweep)" \
    wait_for 15 sse live 'e.some(v => v.event === "proxy_stale" && v.data.node_id === "ghost" && v.data.last_seen)'
check "... written once although both replicas sweep" \
    [ "$(sql "SELECT count(*) FROM events WHERE type = 'proxy_stale' AND node_id = 'ghost'")" = 1 ]
check "proxy_nodes.stale_since is set" \
    [ "$(sql "SELECT stale_since IS NOT NULL FROM proxy_nodes WHERE node_id = 'ghost'")" = t ]
# Idle past fleet.disconnected_after too (600 s; its replica is gone): it is marked
# disconnected, with one proxy_disconnected event.
check "a node silent past fleet.disconnected_after: proxy_disconnected, reason no_activity" \
    wait_for 15 sse live 'e.some(v => v.event === "proxy_disconnected" && v.data.node_id === "ghost" && v.data.reason === "no_activity")'
check "... written once although both replicas sweep" \
    [ "$(sql "SELECT count(*) FROM events WHERE type = 'proxy_disconnected' AND node_id = 'ghost'")" = 1 ]
check "... and the node is not connected any more" \
    [ "$(sql "SELECT connected::text || ' ' || disconnect_reason FROM proxy_nodes WHERE node_id = 'ghost'")" = "false no_activity" ]

# ---------------------------------------------------------------- limits and metrics
stream a1 "$HTTP_PORT" "$VIEW"
stream a2 "$HTTP_PORT" "$VIEW"
check "two streams open on replica A" wait_for 10 bash -c "node '$SSE' '$WORK/a1.sse' 'comments.length > 0' && node '$SSE' '$WORK/a2.sse' 'comments.length > 0'"
st=$(curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --max-time 5 \
    -H "Authorization: Bearer $VIEW" "http://127.0.0.1:$HTTP_PORT/api/v1/events")
expect_error "a third stream on replica A (events.max_streams=2)" 503 unavailable "$st"
check "sextant_events_streams on B counts its open streams" \
    [ "$(metric sextant_events_streams "$HTTP_B")" -ge 5 ]
check "sextant_events_sent_total on B is positive" \
    awk -v v="$(metric sextant_events_sent_total "$HTTP_B")" 'BEGIN { exit !(v > 0) }'

# ---------------------------------------------------------------- shutdown with open streams
stop_daemon "replica B (streams open)" "$PID_serve_b" 10
check "its streams ended (curl exited)" wait_for 5 bash -c "! kill -0 $PID_live 2>/dev/null"
api_stop
finish

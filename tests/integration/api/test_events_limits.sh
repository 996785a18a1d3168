#!/usr/bin/env bash
# test_events_limits.sh — GET /api/v1/events bound to its credentials, against the real
# daemon, PostgreSQL and Redis (events.keepalive=60s, so nothing below can ride on a
# keep-alive):
#
#   - a stream opened with a token that expires in a few seconds ends by itself once the
#     token has expired (auth.clock_skew=1s), with a closing comment, while events keep
#     coming; resumed with a fresh token and Last-Event-ID, the two streams together hold
#     every event, once, in order;
#   - one user holds at most events.max_streams_per_user streams (here 2): the next gets
#     429 with Retry-After, another user is still served, and a client that hangs up
#     frees its place at once (not at the next keep-alive);
#   - with events.max_stream_lifetime=2s a stream with a long-lived token ends by itself
#     too (after 2 to 4 s), saying so.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/integration/api/lib.sh"

api_init events_limits
SSE="$SRC/tests/integration/api/sse.js"
export SEXTANT_AUTH_CLOCK_SKEW=1s
export SEXTANT_EVENTS_KEEPALIVE=60s
export SEXTANT_EVENTS_MAX_STREAMS_PER_USER=2
api_serve

ended() { ! kill -0 "$1" 2>/dev/null; }
# ticks NAME: the numbers of the tick events of stream NAME, in stream order.
ticks() { ssep "$1" 'e.filter(v => (v.data.node_id || "").startsWith("tick-")).map(v => Number(v.data.node_id.slice(5))).join(",")'; }

# The ticker: an event (proxy_connected of node tick-N) every 0.2 s until
# $WORK/ticks.stop exists; the last N in $WORK/ticks.n.
ticker() {
    local i=0
    while [ ! -e "$WORK/ticks.stop" ]; do
        i=$((i + 1))
        sql "BEGIN; INSERT INTO events (type, node_id, group_name, data)
               VALUES ('proxy_connected', 'tick-$i', 'limits', '{}');
             SELECT pg_notify('sextant_events', currval('events_id_seq')::text); COMMIT" >/dev/null
        echo "$i" >"$WORK/ticks.n"
        sleep 0.2
    done
}

# ------------------------------------------------------------------ token expiry
SHORT=$(api_token tess viewer 5s)
EXP=$(node -e 'console.log(JSON.parse(Buffer.from(process.argv[1].split(".")[1], "base64url")).exp)' "$SHORT")
stream exp "$HTTP_PORT" "$SHORT"
check "a stream opens with a token that expires at $EXP" wait_for 10 connected exp
ticker &
PID_TICKER=$!
BG_PIDS+=("$PID_TICKER")
check "the stream gets events while its token is valid" \
    wait_for 10 sse exp 'e.some(v => v.data.node_id === "tick-2")'
check "the stream ends by itself once the token has expired" wait_for 30 ended "$PID_exp"
END=$(date +%s)
wait "$PID_exp"
rc=$?
check "curl saw the stream end cleanly (exit $rc)" [ "$rc" = 0 ]
check "it did not end before the token expired (ended at $END, exp $EXP)" [ "$END" -ge "$EXP" ]
check "its last words are a closing comment naming the token" \
    sse exp 'comments.some(c => c.startsWith(": stream closed, the token expired"))'
check "the server logged why it ended" contains "$WORK/serve.log" 'event stream ended: its token expired'
check "the token is refused now (401)" wait_for 5 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Authorization: Bearer $SHORT' http://127.0.0.1:$HTTP_PORT/api/v1/whoami)\" = 401 ]"

# Resumed with a fresh token after the last event the stream delivered.
LAST=$(ssep exp 'e.length ? e[e.length - 1].id : ""')
FIRST_PART=$(ticks exp)
check "the expired stream delivered events (ticks $FIRST_PART, last id $LAST)" [ -n "$LAST" ]
FRESH=$(api_token tess viewer 1h)
stream res "$HTTP_PORT" "$FRESH" -H "Last-Event-ID: $LAST"
check "the stream resumes with Last-Event-ID" wait_for 10 connected res
MAXFIRST=${FIRST_PART##*,}
check "the resumed stream gets the ticks after it" \
    wait_for 15 sse res "e.some(v => v.data.node_id === 'tick-$((MAXFIRST + 5))')"
touch "$WORK/ticks.stop"
wait "$PID_TICKER"
N=$(cat "$WORK/ticks.n")
check "the resumed stream gets the last tick ($N)" wait_for 15 sse res "e.some(v => v.data.node_id === 'tick-$N')"
got="$FIRST_PART,$(ticks res)"
want=$(seq -s, 1 "$N")
check "the two streams hold every tick once, in order (got $got)" [ "$got" = "$want" ]
bg_stop res

# ------------------------------------------------------------------ per-user cap
URS=$(api_token ursula viewer)
OSC=$(api_token oscar viewer)
stream u1 "$HTTP_PORT" "$URS"
stream u2 "$HTTP_PORT" "$URS"
check "ursula holds two streams" wait_for 10 bash -c "node '$SSE' '$WORK/u1.sse' 'comments.length > 0' && node '$SSE' '$WORK/u2.sse' 'comments.length > 0'"
st=$(curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --max-time 5 \
    -H "Authorization: Bearer $URS" "http://127.0.0.1:$HTTP_PORT/api/v1/events")
expect_status "ursula's third stream (events.max_streams_per_user=2)" 429 "$st"
check "the 429 has the error shape, naming the limit" \
    jtrue 'typeof j.error.code === "string" && j.error.message.includes("too many open event streams") && JSON.stringify(j.error.details).includes("events.max_streams_per_user")'
RA=$(header Retry-After)
check "the 429 carries Retry-After ($RA)" grep -Eqx '[1-9][0-9]*' <<<"$RA"
stream o1 "$HTTP_PORT" "$OSC"
check "oscar is still served" wait_for 10 connected o1
check "three streams are open (sextant_events_streams)" wait_for 10 metric_is sextant_events_streams 3
bg_stop u1
check "ursula's closed stream is reaped at once, not at the next keep-alive (60 s)" \
    wait_for 10 metric_is sextant_events_streams 2
stream u3 "$HTTP_PORT" "$URS"
check "... so ursula may open another" wait_for 10 connected u3
check "the access log has the hung-up stream" contains "$WORK/serve.log" '"route":"/api/v1/events","status":200'
bg_stop u2
bg_stop u3
bg_stop o1

# ------------------------------------------------------------------ lifetime
api_stop
export SEXTANT_EVENTS_MAX_STREAM_LIFETIME=2s
api_serve
LONG=$(api_token liam viewer 1h)
START=$(date +%s)
stream life "$HTTP_PORT" "$LONG"
check "a stream with a long-lived token opens" wait_for 10 connected life
check "it ends by itself after its lifetime" wait_for 30 ended "$PID_life"
wait "$PID_life"
rc=$?
END=$(date +%s)
check "curl saw it end cleanly (exit $rc)" [ "$rc" = 0 ]
check "not before the lifetime (2 s; took $((END - START)) s)" [ $((END - START)) -ge 2 ]
check "its closing comment says the lifetime is over" \
    sse life 'comments.some(c => c.startsWith(": stream closed, its lifetime is over"))'
check "the server logged why it ended" contains "$WORK/serve.log" 'event stream ended: it reached its lifetime'

api_stop
finish

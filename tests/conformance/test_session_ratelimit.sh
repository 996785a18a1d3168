#!/usr/bin/env bash
# test_session_ratelimit.sh — a config with session persistence on a route rule whose
# backend has a token policy, in a group serving envoy and grpc, created through the
# REST API, is translated into Envoy's stateful session and local rate limit filters
# (lib/route_filters_check.js decodes what ADS sends with Envoy's upstream protos), and
# both real xDS clients accept it: gRPC C core (python3-grpcio) and
# @grpc/grpc-js-xds dial xds:///echo.test through the group, reach the backend, and ACK
# the snapshot without a NACK. Neither implements these filters (C core 1.51 and
# grpc-js-xds 1.14 have neither): they take the listener because the filters and their
# per-route configs are marked optional, which is what this checks.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init session-ratelimit
conf_need_python_grpc || exit 1
conf_rest_auth "conformance-session-persistence-secret-0123"
GROUP=conf-session
conf_services || exit 1
echo_backend A || exit 1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

status=$(conf_rest PUT "/api/v1/groups/$GROUP" '{"data_planes":["envoy","grpc"]}')
check "the group is set to serve envoy and grpc (got $status)" [ "$status" = 200 ]

# The echo snapshot, its rule keeping sessions in a permanent cookie, its backend limited
# to 6000 requests a minute with a burst of 1.5 (9000 at once).
conf_echo_snapshot "$WORK/echo.json" "$ECHO_A"
node -e '
    const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    s.http_routes[0].rules[0].session_persistence = {session_name: "echo-session", type: "Cookie",
        cookie_lifetime_type: "Permanent", absolute_timeout: "3600s"};
    s.backends[0].token_policy = {requests_per_minute: 6000, burst: 1.5, on_limit: "reject"};
    process.stdout.write(JSON.stringify({namespace: "conformance", name: "echo", groups: [process.argv[2]], spec: s}));
' "$WORK/echo.json" "$GROUP" >"$WORK/create.json"
conf_create_config "$WORK/create.json" "session persistence and a token policy" session-fetch
node "$CONF/lib/route_filters_check.js" "$WORK/fetch.json" echo-session 3600 6000 9000 | tee "$WORK/route_filters_check.out"
check "every stateful session and rate limit check passed (lib/route_filters_check.js)" [ "${PIPESTATUS[0]}" = 0 ]

# ---------------------------------------------------------------- both real clients
conf_both_clients session "through the route with both filters"
conf_stop_serve r1
finish

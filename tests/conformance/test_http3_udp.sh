#!/usr/bin/env bash
# test_http3_udp.sh — an HTTP/3 listener and a UDP listener with its UDP route, in a
# group serving envoy and grpc, created through the REST API beside a proxyless gRPC
# service, are translated into an Envoy QUIC listener and a udp_proxy listener
# (lib/http3_udp_check.js decodes what ADS sends with Envoy's upstream protos), and both
# real xDS clients of the group — gRPC C core (python3-grpcio) and @grpc/grpc-js-xds —
# still reach the backend and ACK the snapshot without a NACK.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init http3-udp
conf_need_python_grpc || exit 1
conf_rest_auth "conformance-http3-secret-0123456789abcdef"
GROUP=conf-http3
conf_services || exit 1
# The HTTP/3 listener terminates TLS with a private key: stored encrypted.
secrets_keyring "$WORK/secrets.keys"
echo_backend A || exit 1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

status=$(conf_rest PUT "/api/v1/groups/$GROUP" '{"data_planes":["envoy","grpc"]}')
check "the group is set to serve envoy and grpc (got $status)" [ "$status" = 200 ]

# A certificate for the listener (QUIC always encrypts).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=h3.example.com -keyout "$WORK/h3.key" -out "$WORK/h3.crt" 2>/dev/null
conf_echo_snapshot "$WORK/echo.json" "$ECHO_A"
H3_PORT=$(free_port) || exit 1
UDP_PORT=$(free_port) || exit 1
node -e '
    const fs = require("fs");
    const [file, group, port, crt, key, udpPort] = process.argv.slice(1);
    const s = JSON.parse(fs.readFileSync(file, "utf8"));
    s.listeners.push({name: "h3", protocol: "LISTENER_PROTOCOL_HTTP3", port: Number(port),
        hostnames: ["h3.example.com"], attached_routes: ["conformance/h3"],
        tls: {secret_refs: ["conformance/h3-tls"]}});
    s.http_routes.push({name: "h3", namespace: "conformance", hostnames: ["h3.example.com"],
        rules: [{backend_refs: [{name: "echo", namespace: "conformance"}]}]});
    s.listeners.push({name: "dns", protocol: "LISTENER_PROTOCOL_UDP", port: Number(udpPort),
        attached_routes: ["conformance/dns"]});
    s.stream_routes = [{name: "dns", namespace: "conformance", kind: "ROUTE_KIND_UDP",
        rules: [{backend_refs: [{name: "dns", namespace: "conformance"}]}]}];
    s.backends.push({name: "dns", namespace: "conformance", endpoints: [{address: "127.0.0.1", port: 53, healthy: true}]});
    s.secrets = [{namespace: "conformance", name: "h3-tls", cert_pem: fs.readFileSync(crt, "utf8"),
        key_pem: fs.readFileSync(key, "utf8")}];
    process.stdout.write(JSON.stringify({namespace: "conformance", name: "echo", groups: [group], spec: s}));
 ' "$WORK/echo.json" "$GROUP" "$H3_PORT" "$WORK/h3.crt" "$WORK/h3.key" "$UDP_PORT" >"$WORK/create.json"
conf_create_config "$WORK/create.json" "an HTTP/3 and a UDP listener" h3-fetch
node "$CONF/lib/http3_udp_check.js" "$WORK/fetch.json" h3 "$H3_PORT" conformance/h3-tls dns "$UDP_PORT" conformance/dns |
    tee "$WORK/http3_udp_check.out"
check "every HTTP/3 and UDP check passed (lib/http3_udp_check.js)" [ "${PIPESTATUS[0]}" = 0 ]

# ---------------------------------------------------------------- both real clients
conf_both_clients h3
conf_stop_serve r1
finish

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
status=$(conf_rest POST /api/v1/configs "$(cat "$WORK/create.json")")
check "a config with an HTTP/3 and a UDP listener is created in the group (got $status)" [ "$status" = 201 ]
if [ "$status" != 201 ]; then
    cat "$WORK/body" >&2
    finish
fi

# ---------------------------------------------------------------- what ADS sends
node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$R1_GRPC" --group "$GROUP" --node h3-fetch >"$WORK/fetch.json"
check "ads_fetch walks LDS, RDS, CDS and EDS of the group" [ $? = 0 ]
node "$CONF/lib/http3_udp_check.js" "$WORK/fetch.json" h3 "$H3_PORT" conformance/h3-tls dns "$UDP_PORT" conformance/dns |
    tee "$WORK/http3_udp_check.out"
check "every HTTP/3 and UDP check passed (lib/http3_udp_check.js)" [ "${PIPESTATUS[0]}" = 0 ]

# ---------------------------------------------------------------- both real clients
acked() { # acked NODE: node_status holds its ACK of version 1
    [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT acked_snapshot_version FROM node_status WHERE node_id = '$1'")" = 1 ]
}
for kind in py js; do
    node_id="h3-$kind-client"
    case "$kind" in
    js) client=(node "$CONF/lib/xds_client.js") ;;
    py) client=("$PYTHON" "$CONF/lib/xds_client.py") ;;
    esac
    log="$WORK/calls-$kind.log"
    GRPC_XDS_BOOTSTRAP_CONFIG=$(xds_bootstrap "$node_id" "$GROUP" "$R1_GRPC") \
        bg_run "client-$kind" "${client[@]}" --target xds:///echo.test --out "$log" --interval-ms 50
    check "$kind: calls to xds:///echo.test reach backend A" wait_for 20 last_is "$log" "ok A"
    check "$kind: node_status records the client's ACK of version 1" wait_for 10 acked "$node_id"
    n=$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT count(*) FROM node_status WHERE node_id = '$node_id' AND last_nack_error IS NOT NULL")
    check "$kind: the client NACKed nothing Sextant sent" [ "$n" = 0 ]
    bg_stop "client-$kind"
done
conf_stop_serve r1
finish

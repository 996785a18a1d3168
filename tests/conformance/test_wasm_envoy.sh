#!/usr/bin/env bash
# test_wasm_envoy.sh — a backend's Wasm plugin in a group serving envoy, created through
# the REST API, reaches Envoy as an upstream HTTP filter of the backend's cluster
# (lib/wasm_check.js decodes what ADS sends with Envoy's upstream protos); what Envoy
# cannot run (sandbox memory and time limits, hooks, a module that is not WebAssembly, a
# checksum that does not match) is refused with its path and the data plane named, and a
# group cannot start serving proxyless gRPC clients, which run no plugins, while it
# holds one.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"

conf_init wasm-envoy
conf_rest_auth "conformance-wasm-secret-0123456789abcdef"
GROUP=conf-wasm
conf_services || exit 1
conf_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

status=$(conf_rest PUT "/api/v1/groups/$GROUP" '{"data_planes":["envoy"]}')
check "the group is set to serve envoy (got $status)" [ "$status" = 200 ]

# The smallest WebAssembly module: the magic number and version 1, no sections.
printf '\000asm\001\000\000\000' >"$WORK/plugin.wasm"
WEB_PORT=$(free_port) || exit 1
conf_echo_snapshot "$WORK/echo.json" 9
# plugin_config PLUGIN_JSON: a config of the group serving the echo routes on an HTTP
# listener (a socket: Envoy's) whose HTTP/1.1 echo backend has the plugin.
plugin_config() {
    node -e '
        const fs = require("fs");
        const [file, group, wasm, plugin, port] = process.argv.slice(1);
        const s = JSON.parse(fs.readFileSync(file, "utf8"));
        const p = JSON.parse(plugin);
        if (p.wasm_bytes === undefined) p.wasm_bytes = fs.readFileSync(wasm).toString("base64");
        s.listeners = [{name: "web", protocol: "LISTENER_PROTOCOL_HTTP", port: Number(port),
            hostnames: ["echo.test"], attached_routes: ["echo"]}];
        const b = s.backends.find((x) => x.name === "echo");
        delete b.protocol;
        b.wasm_plugin = p;
        process.stdout.write(JSON.stringify({namespace: "conformance", name: "echo", groups: [group], spec: s}));
    ' "$WORK/echo.json" "$GROUP" "$WORK/plugin.wasm" "$1" "$WEB_PORT"
}
# refused PLUGIN_JSON FIELD TEXT: creating such a config answers 422 with a problem at
# spec.backends[…].wasm_plugin.FIELD whose detail says TEXT; no config is stored.
refused() {
    local status
    status=$(conf_rest POST /api/v1/configs "$(plugin_config "$1")")
    [ "$status" = 422 ] &&
        jq -e --arg f "$2" --arg t "$3" \
            '[.error.details[] | select((.path | endswith(".wasm_plugin." + $f)) and (.message | contains($t)))] | length > 0' \
            "$WORK/body" >/dev/null &&
        [ "$(psql "$SEXTANT_DATABASE_URL" -qtAXc "SELECT count(*) FROM configs")" = 0 ]
}
check "sandbox memory limits are refused for the envoy data plane" \
    refused '{"name":"auth","sandbox":{"max_memory_bytes":1048576}}' sandbox.max_memory_bytes envoy
check "sandbox time limits are refused for the envoy data plane" \
    refused '{"name":"auth","sandbox":{"max_execution_time_ms":5}}' sandbox.max_execution_time_ms envoy
check "execution hooks are refused for the envoy data plane" \
    refused '{"name":"auth","hooks":["on_request_headers"]}' hooks envoy
check "a module that is not WebAssembly is refused" \
    refused '{"name":"auth","wasm_bytes":"bm90IHdhc20="}' wasm_bytes "WebAssembly"
check "a checksum that is not the module's is refused" \
    refused "{\"name\":\"auth\",\"sha256\":\"$(printf x | sha256sum | cut -d' ' -f1)\"}" sha256 checksum

SUM=$(sha256sum "$WORK/plugin.wasm" | cut -d' ' -f1)
PLUGIN_CONF='{"deny":["/admin"]}'
plugin=$(jq -cn --arg sum "$SUM" --arg conf "$PLUGIN_CONF" \
    '{name: "auth", namespace: "conformance", sha256: $sum, config_json: $conf, sandbox: {allow_network: false}}')
status=$(conf_rest POST /api/v1/configs "$(plugin_config "$plugin")")
check "a config whose backend has a wasm plugin is created in the envoy group (got $status)" [ "$status" = 201 ]
[ "$status" = 201 ] || { cat "$WORK/body" >&2; finish; }

node "$CONF/lib/ads_fetch.js" --server "127.0.0.1:$R1_GRPC" --group "$GROUP" --node wasm-fetch >"$WORK/fetch.json"
check "ads_fetch walks LDS, RDS, CDS and EDS of the group" [ $? = 0 ]
node "$CONF/lib/wasm_check.js" "$WORK/fetch.json" conformance/echo "$WORK/plugin.wasm" conformance/auth "$PLUGIN_CONF" |
    tee "$WORK/wasm_check.out"
check "every Wasm check passed (lib/wasm_check.js)" [ "${PIPESTATUS[0]}" = 0 ]

status=$(conf_rest PUT "/api/v1/groups/$GROUP" '{"data_planes":["envoy","grpc"]}')
check "the group cannot start serving proxyless gRPC clients while a config has a plugin (got $status)" \
    [ "$status" = 422 ]
check "the refusal names the grpc data plane and the plugin" \
    jq -e '[.error.details[] | select((.path | endswith(".wasm_plugin")) and (.message | contains("grpc")))] | length > 0' "$WORK/body"
planes=$(conf_rest GET "/api/v1/groups/$GROUP" >/dev/null; jq -c .data_planes "$WORK/body")
check "the group still serves envoy only (got $planes)" [ "$planes" = '["envoy"]' ]
conf_stop_serve r1
finish

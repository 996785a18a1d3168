#!/usr/bin/env bash
# test_k8s_crds.sh — Sextant's own CRDs (deploy/k8s/crds/) applied with kubectl to the test
# Kubernetes API server, and a BackendLBPolicy carried to the data planes:
#   1. the four CRDs (AIService, TokenPolicy, WasmPlugin, BackendLBPolicy) are served, and
#      an example of each is stored as applied;
#   2. a BackendLBPolicy targeting the Service behind the Gateway shop/web reaches the
#      backend a gateway.control.v1 client of the group shop/web receives (load_balancing
#      with the algorithm, hash and ring size), and its status.ancestors names the
#      Gateway, Accepted=True;
#   3. a BackendLBPolicy targeting a Service that does not exist says so in
#      status.ancestors (Accepted=False, TargetNotFound), and changes nothing served;
#   4. the policy deleted: the backend is served without load_balancing again;
#   5. an AIService, a TokenPolicy (token counts) and a WasmPlugin targeting the same
#      Service are left out of the group shop/web while it serves Envoy (the default), each
#      Accepted=False (Invalid) naming the group's data planes, the rest still served; once
#      the group serves control only, the control.v1 client receives all three and each
#      is Accepted=True;
#      (the PUT alone, without any Kubernetes event, retranslates the Gateway);
#   6. finalizer: the WasmPlugin carries sextant.dev/finalizer; while an HTTPRoute names it
#      in an ExtensionRef filter (the route Accepted with it), `kubectl delete` leaves it
#      in place (deletionTimestamp set, status sextant.dev/DeletionBlocked naming the
#      route) and still served; once
#      the route stops naming it, the deletion completes and it is no longer served;
#   7. a TokenPolicy targeting the Gateway shop/web reaches the backend of every route of
#      it, one targeting the HTTPRoute shop/shop (more specific) wins that route's use of
#      the backend, which is split into a backend of its own; both name the Gateway in
#      status.ancestors, Accepted=True; one targeting a missing HTTPRoute says
#      TargetNotFound on it.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-crds
conf_services || exit 1
k8s_source_init || exit 1
kc() { k8s_kubectl "$K8S_DIR" "$@"; }
# policy KIND NAME TARGET-KIND TARGET-NAME: the YAML document of the sextant.dev policy
# KIND shop/NAME targeting TARGET-KIND shop/TARGET-NAME (a Service or a Gateway API
# object), the rest of its spec read from stdin
policy() {
    local group=gateway.networking.k8s.io
    [ "$3" != Service ] || group='""'
    printf 'apiVersion: sextant.dev/v1alpha1\nkind: %s\nmetadata: {name: %s, namespace: shop}\nspec:\n' "$1" "$2"
    printf '  targetRefs: [{group: %s, kind: %s, name: %s}]\n' "$group" "$3" "$4"
    cat
}

# ---------------------------------------------------------------- 1. the CRDs
for r in aiservices tokenpolicies wasmplugins backendlbpolicies; do
    check "the CRD $r.sextant.dev is established and served" \
        kc get "$r.sextant.dev" -A
done
k8s_apply_examples 00-namespace 10-gatewayclass 20-gateway 30-service 31-endpointslice 40-httproute || exit 1
{
    policy AIService llm Service shop-api <<'EOF2'
  provider: openai
  model: gpt-4o
  timeout: 30s
  auth: {type: Bearer, headerName: Authorization, secretRef: {name: openai-key, key: token}}
EOF2
    echo ---
    policy TokenPolicy budget Service shop-api <<'EOF2'
  tokensPerMinute: 60000
  requestsPerMinute: 600
  burst: 1.5
  scope: proxy
  onLimit: reject
EOF2
    echo ---
    policy WasmPlugin redact Service shop-api <<'EOF2'
  module: AGFzbQEAAAA=
  sha256: 93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476
  hooks: [request_headers]
  config: {mask: "*"}
  sandbox: {maxMemoryBytes: 16777216, maxExecutionTimeMs: 50}
EOF2
} | k8s_apply - || exit 1
check "an AIService is stored as applied" \
    [ "$(kc get aiservice -n shop llm -o jsonpath='{.spec.provider}/{.spec.model}/{.spec.auth.secretRef.name}')" = openai/gpt-4o/openai-key ]
check "a TokenPolicy is stored as applied" \
    [ "$(kc get tokenpolicy -n shop budget -o jsonpath='{.spec.tokensPerMinute}/{.spec.requestsPerMinute}/{.spec.burst}')" = 60000/600/1.5 ]
check "a WasmPlugin is stored as applied, its sandbox defaults filled in" \
    [ "$(kc get wasmplugin -n shop redact -o jsonpath='{.spec.config.mask}/{.spec.sandbox.maxMemoryBytes}/{.spec.sandbox.allowNetwork}')" = '*/16777216/false' ]
bad=$(policy BackendLBPolicy bad Service shop-api <<'EOF2' | kc apply -f - 2>&1
  algorithm: Fastest
  minimumRingSize: 99999999
EOF2
)
check "a BackendLBPolicy out of the schema is refused, naming the fields: $bad" \
    eval 'grep -q "spec.algorithm" <<<"$bad" && grep -q "spec.minimumRingSize" <<<"$bad"'
check "... and not stored" eval '! kc get backendlbpolicy -n shop bad >/dev/null 2>&1'

k8s_source_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

# served: the backends the control.v1 client of shop/web receives, in $WORK/snap.json
served() {
    node "$SRC/tests/integration/k8s/control_fetch.js" --server "127.0.0.1:$R1_GRPC" --group shop/web \
        >"$WORK/snap.json" 2>"$WORK/snap.err"
}
backend_lb() { # backend_lb JQ-FILTER-ON-load_balancing
    served && jq -e ".backends[] | select(.name == \"shop-api:8080\") | .load_balancing | $1" "$WORK/snap.json" >/dev/null
}
check "the control.v1 client of shop/web is served the backend shop-api:8080, without load_balancing" \
    wait_for 20 backend_lb '. == null'

# ---------------------------------------------------------------- 2. a policy attached
policy BackendLBPolicy sticky Service shop-api <<'EOF2' | k8s_apply - || exit 1
  algorithm: RingHash
  hashOn: Header
  hashKey: x-user
  minimumRingSize: 1024
EOF2
check "the control.v1 client receives the backend with the policy's load_balancing" \
    wait_for 20 backend_lb '.algorithm == "LOAD_BALANCING_ALGORITHM_RING_HASH" and .hash_on == "Header" and .hash_key == "x-user" and .minimum_ring_size == "1024"'
# ancestor RESOURCE NAME KIND ANCESTOR-NAME STATUS REASON: the policy RESOURCE shop/NAME has
# our entry in status.ancestors for KIND shop/ANCESTOR-NAME, Accepted=STATUS with REASON;
# the policy is left in $WORK/pol.json
ancestor() {
    kc get "$1" -n shop "$2" -o json >"$WORK/pol.json" 2>/dev/null &&
        jq -e --arg k "$3" --arg n "$4" --arg s "$5" --arg r "$6" \
            '.status.ancestors[] | select(.controllerName == "sextant.dev/gateway-controller" and
             .ancestorRef.kind == $k and .ancestorRef.name == $n and .ancestorRef.namespace == "shop") |
             .conditions[] | select(.type == "Accepted" and .status == $s and .reason == $r)' "$WORK/pol.json" >/dev/null
}
check "its status.ancestors names the Gateway shop/web, Accepted=True" \
    wait_for 20 ancestor backendlbpolicy sticky Gateway web True Accepted
check "... with observedGeneration" \
    jq -e '.status.ancestors[0].conditions[0].observedGeneration == .metadata.generation' "$WORK/pol.json"

# ---------------------------------------------------------------- 3. a missing target
policy BackendLBPolicy lost Service ghost <<<'  algorithm: Maglev' | k8s_apply - || exit 1
check "a policy targeting a missing Service: Accepted=False TargetNotFound on that target" \
    wait_for 20 ancestor backendlbpolicy lost Service ghost False TargetNotFound
check "... its message names the Service" \
    jq -e '.status.ancestors[0].conditions[0].message | test("Service shop/ghost does not exist")' "$WORK/pol.json"
check "... and what is served did not change" \
    backend_lb '.algorithm == "LOAD_BALANCING_ALGORITHM_RING_HASH"'

# ---------------------------------------------------------------- 4. detached
kc delete backendlbpolicy -n shop sticky >/dev/null || exit 1
check "the policy deleted: the backend is served without load_balancing again" \
    wait_for 20 backend_lb '. == null'

# ---------------------------------------------------------------- 5. data planes
for p in aiservice/llm tokenpolicy/budget wasmplugin/redact; do
    check "$p, in a group that serves Envoy: Accepted=False (Invalid) for Gateway shop/web" \
        wait_for 20 ancestor "${p%/*}" "${p#*/}" Gateway web False Invalid
    check "... naming the group's data planes" \
        jq -e '[.status.ancestors[].conditions[].message] | any(test("group shop/web serves envoy, grpc, control, and only control data planes take"))' "$WORK/pol.json"
done
backend() { # backend JQ-FILTER-ON-THE-BACKEND
    served && jq -e ".backends[] | select(.name == \"shop-api:8080\") | $1" "$WORK/snap.json" >/dev/null
}
check "... and left out: the backend is served without them" \
    backend '.ai_service == null and .token_policy == null and .wasm_plugin == null'
code=$(conf_rest PUT /api/v1/groups/shop%2Fweb '{"data_planes": ["control"]}')
check "the group shop/web set to serve control only (PUT /api/v1/groups/shop%2Fweb: $code)" [ "$code" = 200 ]
# No Kubernetes event follows: the change of the group's data planes alone (NOTIFYed to
# every replica) makes the leader translate again.
check "the leader is told of the group's new data planes" \
    wait_for 20 grep -q 'the data planes of group shop/web changed: translating again' "$WORK/r1.log"
check "the control.v1 client receives the AI service, without any Kubernetes event" \
    wait_for 20 backend '.ai_service.provider == "openai" and .ai_service.model == "gpt-4o" and
        .ai_service.auth.type == "Bearer" and .ai_service.auth.secret_ref == "openai-key" and .ai_service.auth.secret_key == "token"'
check "... the token policy" \
    backend '.token_policy.tokens_per_minute == "60000" and .token_policy.requests_per_minute == "600" and
        .token_policy.burst == 1.5 and .token_policy.scope == "proxy" and .token_policy.on_limit == "reject"'
check "... the Wasm plugin with its module, checksum, configuration and sandbox" \
    backend '.wasm_plugin.name == "redact" and .wasm_plugin.namespace == "shop" and
        .wasm_plugin.wasm_bytes == "AGFzbQEAAAA=" and
        .wasm_plugin.sha256 == "93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476" and
        .wasm_plugin.hooks == ["request_headers"] and .wasm_plugin.config_json == "{\"mask\":\"*\"}" and
        .wasm_plugin.sandbox.max_memory_bytes == "16777216" and .wasm_plugin.sandbox.max_execution_time_ms == "50"'
for p in aiservice/llm tokenpolicy/budget wasmplugin/redact; do
    check "$p: Accepted=True for Gateway shop/web" wait_for 20 ancestor "${p%/*}" "${p#*/}" Gateway web True Accepted
done

# ---------------------------------------------------------------- 6. finalizer
has_fin() { kc get wasmplugin -n shop redact -o json 2>/dev/null | jq -e '.metadata.finalizers | index("sextant.dev/finalizer") != null' >/dev/null; }
check "the WasmPlugin carries the finalizer sextant.dev/finalizer" wait_for 20 has_fin
route_with_filter() {
    k8s_apply - <<EOF2
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: filtered, namespace: shop}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [filtered.example.com]
  rules:
    - backendRefs: [{name: shop-api, port: 8080}]
$1
EOF2
}
route_with_filter '      filters: [{type: ExtensionRef, extensionRef: {group: sextant.dev, kind: WasmPlugin, name: redact}}]' || exit 1
route_accepted() {
    kc get httproute -n shop filtered -o json 2>/dev/null | jq -e '[.status.parents[] |
        select(.controllerName == "sextant.dev/gateway-controller") | .conditions[] |
        select((.type == "Accepted" or .type == "ResolvedRefs") and .status == "True")] | length == 2' >/dev/null
}
check "an HTTPRoute whose rule names the WasmPlugin in an ExtensionRef filter is Accepted, its refs resolved" \
    wait_for 20 route_accepted
kc delete wasmplugin -n shop redact --wait=false >/dev/null || exit 1
blocked() {
    kc get wasmplugin -n shop redact -o json >"$WORK/wasm.json" 2>/dev/null &&
        jq -e '.metadata.deletionTimestamp != null and (.status.conditions[] |
            select(.type == "sextant.dev/DeletionBlocked" and .status == "True" and .reason == "InUse" and
                   (.message | test("HTTPRoute shop/filtered"))))' "$WORK/wasm.json" >/dev/null
}
check "kubectl delete of the WasmPlugin a route names waits: DeletionBlocked names HTTPRoute shop/filtered" \
    wait_for 20 blocked
check "... and the plugin is still served meanwhile" backend '.wasm_plugin.name == "redact"'
route_with_filter '' || exit 1
gone() { ! kc get wasmplugin -n shop redact >/dev/null 2>&1; }
check "the route no longer names it: the deletion completes" wait_for 20 gone
check "... and the plugin is no longer served" wait_for 20 backend '.wasm_plugin == null'

# ---------------------------------------------------------------- 7. Gateway and route targets
kc delete tokenpolicy -n shop budget --wait=false >/dev/null || exit 1 # its Service target would win
check "the TokenPolicy on the Service is gone from what is served" \
    wait_for 20 backend '.token_policy == null'
{
    policy TokenPolicy gateway-rate Gateway web <<<'  requestsPerMinute: 100'
    echo ---
    policy TokenPolicy route-rate HTTPRoute shop <<<'  requestsPerMinute: 20'
    echo ---
    policy TokenPolicy no-route HTTPRoute ghost <<<'  requestsPerMinute: 1'
} | k8s_apply - || exit 1
# rpm_of ROUTE: the requests_per_minute of the backend the first rule of HTTP route ROUTE
# sends to, as served
rpm_of() {
    jq -r --arg r "$1" '(.http_routes[] | select(.name == $r) | .rules[0].backend_refs[0].name) as $b |
        .backends[] | select(.name == $b) | .token_policy.requests_per_minute // "none"' "$WORK/snap.json"
}
split_served() {
    served && [ "$(rpm_of shop)" = 20 ] && [ "$(rpm_of filtered)" = 100 ]
}
check "the route's policy reaches the backend of HTTPRoute shop, the Gateway's that of HTTPRoute filtered" \
    wait_for 20 split_served
check "... HTTPRoute filtered keeps the backend shop-api:8080, HTTPRoute shop sends to a copy of its own" \
    jq -e '([.http_routes[] | select(.name == "filtered") | .rules[0].backend_refs[0].name] == ["shop-api:8080"]) and
        ([.http_routes[] | select(.name == "shop") | .rules[0].backend_refs[0].name | test("^shop-api:8080~[0-9a-f]{8}$")] == [true]) and
        ([.backends[] | select(.name | startswith("shop-api:8080")) | .endpoints] | unique | length == 1)' "$WORK/snap.json"
check "the Gateway's TokenPolicy: status.ancestors names the Gateway shop/web, Accepted=True" \
    wait_for 20 ancestor tokenpolicy gateway-rate Gateway web True Accepted
check "the route's TokenPolicy: status.ancestors names the route's parent Gateway shop/web, Accepted=True" \
    wait_for 20 ancestor tokenpolicy route-rate Gateway web True Accepted
check "a TokenPolicy targeting a missing HTTPRoute: Accepted=False TargetNotFound on it" \
    wait_for 20 ancestor tokenpolicy no-route HTTPRoute ghost False TargetNotFound
kc delete tokenpolicy -n shop route-rate --wait=false >/dev/null || exit 1
joined() { served && [ "$(rpm_of shop)" = 100 ] && [ "$(rpm_of filtered)" = 100 ]; }
check "the route's policy deleted: both routes send to shop-api:8080 with the Gateway's policy" \
    wait_for 20 joined
check "... and the copy is gone" \
    jq -e '[.backends[] | select(.name | startswith("shop-api:8080~"))] == []' "$WORK/snap.json"
finish

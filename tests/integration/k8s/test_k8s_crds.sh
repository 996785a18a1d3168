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
#   4. the policy deleted: the backend is served without load_balancing again.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-crds
conf_services || exit 1
k8s_source_init || exit 1
kc() { k8s_kubectl "$K8S_DIR" "$@"; }

# ---------------------------------------------------------------- 1. the CRDs
for r in aiservices tokenpolicies wasmplugins backendlbpolicies; do
    check "the CRD $r.sextant.dev is established and served" \
        kc get "$r.sextant.dev" -A
done
k8s_apply_examples 00-namespace 10-gatewayclass 20-gateway 30-service 31-endpointslice 40-httproute || exit 1
k8s_apply - <<'EOF2' || exit 1
apiVersion: sextant.dev/v1alpha1
kind: AIService
metadata: {name: llm, namespace: shop}
spec:
  targetRefs: [{group: "", kind: Service, name: shop-api}]
  provider: openai
  model: gpt-4o
  timeout: 30s
  auth: {type: Bearer, headerName: Authorization, secretRef: {name: openai-key, key: token}}
---
apiVersion: sextant.dev/v1alpha1
kind: TokenPolicy
metadata: {name: budget, namespace: shop}
spec:
  targetRefs: [{group: "", kind: Service, name: shop-api}]
  tokensPerMinute: 60000
  requestsPerMinute: 600
  burst: 1.5
  scope: proxy
  onLimit: reject
---
apiVersion: sextant.dev/v1alpha1
kind: WasmPlugin
metadata: {name: redact, namespace: shop}
spec:
  targetRefs: [{group: "", kind: Service, name: shop-api}]
  module: AGFzbQEAAAA=
  sha256: 93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476
  hooks: [request_headers]
  config: {mask: "*"}
  sandbox: {maxMemoryBytes: 16777216, maxExecutionTimeMs: 50}
EOF2
check "an AIService is stored as applied" \
    [ "$(kc get aiservice -n shop llm -o jsonpath='{.spec.provider}/{.spec.model}/{.spec.auth.secretRef.name}')" = openai/gpt-4o/openai-key ]
check "a TokenPolicy is stored as applied" \
    [ "$(kc get tokenpolicy -n shop budget -o jsonpath='{.spec.tokensPerMinute}/{.spec.requestsPerMinute}/{.spec.burst}')" = 60000/600/1.5 ]
check "a WasmPlugin is stored as applied, its sandbox defaults filled in" \
    [ "$(kc get wasmplugin -n shop redact -o jsonpath='{.spec.config.mask}/{.spec.sandbox.maxMemoryBytes}/{.spec.sandbox.allowNetwork}')" = '*/16777216/false' ]
bad=$(kc apply -f - 2>&1 <<'EOF2'
apiVersion: sextant.dev/v1alpha1
kind: BackendLBPolicy
metadata: {name: bad, namespace: shop}
spec:
  targetRefs: [{group: "", kind: Service, name: shop-api}]
  algorithm: Fastest
  minimumRingSize: 99999999
EOF2
)
check "a BackendLBPolicy out of the schema is refused, naming the fields: $bad" \
    eval 'grep -q "spec.algorithm" <<<"$bad" && grep -q "spec.minimumRingSize" <<<"$bad"'
check "... and not stored" eval '! kc get backendlbpolicy -n shop bad >/dev/null 2>&1'

k8s_source_serve r1 || exit 1

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
k8s_apply - <<'EOF2' || exit 1
apiVersion: sextant.dev/v1alpha1
kind: BackendLBPolicy
metadata: {name: sticky, namespace: shop}
spec:
  targetRefs: [{group: "", kind: Service, name: shop-api}]
  algorithm: RingHash
  hashOn: Header
  hashKey: x-user
  minimumRingSize: 1024
EOF2
check "the control.v1 client receives the backend with the policy's load_balancing" \
    wait_for 20 backend_lb '.algorithm == "LOAD_BALANCING_ALGORITHM_RING_HASH" and .hash_on == "Header" and .hash_key == "x-user" and .minimum_ring_size == "1024"'
ancestor() { # ancestor NAME KIND ANCESTOR-NAME STATUS REASON
    kc get backendlbpolicy -n shop "$1" -o json >"$WORK/pol.json" 2>/dev/null &&
        jq -e --arg k "$2" --arg n "$3" --arg s "$4" --arg r "$5" \
            '.status.ancestors[] | select(.controllerName == "sextant.dev/gateway-controller" and
             .ancestorRef.kind == $k and .ancestorRef.name == $n and .ancestorRef.namespace == "shop") |
             .conditions[] | select(.type == "Accepted" and .status == $s and .reason == $r)' "$WORK/pol.json" >/dev/null
}
check "its status.ancestors names the Gateway shop/web, Accepted=True" \
    wait_for 20 ancestor sticky Gateway web True Accepted
check "... with observedGeneration" \
    jq -e '.status.ancestors[0].conditions[0].observedGeneration == .metadata.generation' "$WORK/pol.json"

# ---------------------------------------------------------------- 3. a missing target
k8s_apply - <<'EOF2' || exit 1
apiVersion: sextant.dev/v1alpha1
kind: BackendLBPolicy
metadata: {name: lost, namespace: shop}
spec:
  targetRefs: [{group: "", kind: Service, name: ghost}]
  algorithm: Maglev
EOF2
check "a policy targeting a missing Service: Accepted=False TargetNotFound on that target" \
    wait_for 20 ancestor lost Service ghost False TargetNotFound
check "... its message names the Service" \
    jq -e '.status.ancestors[0].conditions[0].message | test("Service shop/ghost does not exist")' "$WORK/pol.json"
check "... and what is served did not change" \
    backend_lb '.algorithm == "LOAD_BALANCING_ALGORITHM_RING_HASH"'

# ---------------------------------------------------------------- 4. detached
kc delete backendlbpolicy -n shop sticky >/dev/null || exit 1
check "the policy deleted: the backend is served without load_balancing again" \
    wait_for 20 backend_lb '. == null'
finish

#!/usr/bin/env bash
# test_k8s_manifests.sh — deploy/k8s as an operator applies it: the kustomization builds and
# lists every file, every object fits the Kubernetes API's types, and what the manifests
# say agrees with the binary: the container ports are the ports of the defaults `sextant
# serve --help` prints; the ConfigMap's sextant.yaml starts `sextant serve` (with the
# database URL from the environment, as the Secret gives it) and runs with the values it
# sets; the probe paths answer on that daemon; and, with that daemon watching the test
# Kubernetes API server holding an object of every kind, every request it makes is one the
# ClusterRole grants, and every grant is used.
source "$SEXTANT_SOURCE_DIR/tests/integration/deploy/lib.sh"
source "$SRC/tests/lib/k8s.sh"

deploy_init k8s
K8S="$SRC/deploy/k8s"

# ---------------------------------------------------------------- static
check "kubectl kustomize builds deploy/k8s" sh -c "kubectl kustomize '$K8S' >'$WORK/all.yaml' 2>'$WORK/kustomize.err'"
[ -s "$WORK/all.yaml" ] || { cat "$WORK/kustomize.err" >&2; finish; }
check "kustomization.yaml lists every manifest of deploy/k8s" "$PY" "$MANIFESTS" listed "$K8S"
check "every object fits the Kubernetes API types" "$PY" "$MANIFESTS" schema "$WORK/all.yaml"
"$PY" "$MANIFESTS" facts "$WORK/all.yaml" >"$WORK/facts.json" || { fail "the manifests' facts"; finish; }
fact() { jq -r "$1" "$WORK/facts.json"; }

HTTP_DEFAULT=$(default_port http.listen)
GRPC_DEFAULT=$(default_port grpc.listen)
check "sextant serve --help names default ports ($HTTP_DEFAULT, $GRPC_DEFAULT)" \
    test -n "$HTTP_DEFAULT" -a -n "$GRPC_DEFAULT"
check "container port http is http.listen's default port" [ "$(fact .ports.http)" = "$HTTP_DEFAULT" ]
check "container port grpc is grpc.listen's default port" [ "$(fact .ports.grpc)" = "$GRPC_DEFAULT" ]
check "the HTTP Service targets the HTTP port" \
    [ "$(fact '.services[] | select(.service == "sextant-http") | .target')" = "$HTTP_DEFAULT" ]
check "the xDS Service targets the gRPC port" \
    [ "$(fact '.services[] | select(.service == "sextant-xds") | .target')" = "$GRPC_DEFAULT" ]
check "every Service selects the Deployment's pods" \
    [ "$(jq '[.labels as $l | .services[] | .selector | to_entries[] | select($l[.key] != .value)] | length' "$WORK/facts.json")" = 0 ]
check "the NetworkPolicy admits the three ports" \
    [ "$(fact '.network_policy_ports | sort | join(",")')" = "admin,grpc,http" ]
check "3 replicas" [ "$(fact .replicas)" = 3 ]
check "a PodDisruptionBudget keeps at least two" [ "$(fact '.pdb[0].maxUnavailable')" = 1 ]
check "podAntiAffinity" [ "$(fact .anti_affinity)" = true ]
check "resource requests and limits" \
    [ "$(fact '[.resources.requests.cpu, .resources.requests.memory, .resources.limits.memory] | map(select(. != null)) | length')" = 3 ]
check "runAsNonRoot" [ "$(fact .run_as_non_root)" = true ]
check "every container: read-only root, no privilege escalation, no capabilities" \
    [ "$(jq '[.containers[] | select(.securityContext.readOnlyRootFilesystem != true
        or .securityContext.allowPrivilegeEscalation != false
        or .securityContext.capabilities.drop != ["ALL"])] | length' "$WORK/facts.json")" = 0 ]
check "the database URL comes from a Secret" [ "$(fact .env.SEXTANT_DATABASE_URL.from)" = secretKeyRef ]
check "no secret is written in the manifests" \
    sh -c "! grep -Eiq 'postgres(ql)?://|redis://|kind: Secret' '$WORK/all.yaml'"
check "the config file serve reads comes from the ConfigMap" [ "$(fact .config)" != null ]
fact .config >"$WORK/sextant.yaml"
check "the ConfigMap's listen ports are the defaults' ports" \
    grep -q "listen: \"0.0.0.0:$HTTP_DEFAULT\"" "$WORK/sextant.yaml"
check "... and the gRPC one" grep -q "listen: \"0.0.0.0:$GRPC_DEFAULT\"" "$WORK/sextant.yaml"
ADMIN_CM=$(sed -nE 's/^ *admin_listen: "0.0.0.0:([0-9]+)"$/\1/p' "$WORK/sextant.yaml")
check "the ConfigMap's sextant.yaml has an admin listener ($ADMIN_CM)" test -n "$ADMIN_CM"
check "container port admin is its port" [ "$(fact .ports.admin)" = "$ADMIN_CM" ]

# ---------------------------------------------------------------- the daemon
k8s_start "$WORK/k8s" || { fail "the test Kubernetes API server did not start"; finish; }
BG_PIDS+=("$(cat "$WORK/k8s/apiserver.pid")")
ln -s k8s/apiserver.log "$WORK/apiserver.log"
k8s_crds "$WORK/k8s" >"$WORK/kubectl.log" 2>&1 || fail "the Gateway API CRDs were not applied"
k8s_kubectl "$WORK/k8s" apply -f "$SRC/tests/integration/deploy/every-kind.yaml" >>"$WORK/kubectl.log" 2>&1 ||
    fail "the objects of every kind were not applied"
# From here on, every request the API server logs is the daemon's.
LOG_FROM=$(($(wc -l <"$WORK/k8s/apiserver.log") + 1))

# What the test changes, and why: its own ports and JWT key, the API server's kubeconfig
# (a pod uses its service account), the UI of this tree (the image's path is not here).
ADMIN_PORT=$(free_port) || exit 1
if deploy_serve "$WORK/sextant.yaml" SEXTANT_K8S_KUBECONFIG="$KUBECONFIG" SEXTANT_HTTP_UI_DIR="" \
    SEXTANT_HTTP_ADMIN_LISTEN="127.0.0.1:$ADMIN_PORT"; then
    pass "sextant serve --config <the ConfigMap's sextant.yaml> is ready"
else
    fail "sextant serve with the ConfigMap's sextant.yaml did not become ready: $(cat "$WORK/readyz.json" 2>/dev/null)"
fi
check "the daemon runs with every value of the ConfigMap's file" \
    config_matches "$WORK/sextant.yaml" '^(http\.listen|http\.admin_listen|grpc\.listen|http\.ui_dir|auth\.hs256_secret_file|log\.level)$'
# The probes use the admin listener, which answers while the API port is flooded.
for kind in livenessProbe readinessProbe startupProbe; do
    path=$(fact ".probes.$kind.path")
    check "$kind is set" [ "$path" != null ]
    check "$kind targets the admin port" [ "$(fact ".probes.$kind.port")" = "$ADMIN_CM" ]
    check "$kind $path answers 200 on the ready daemon's admin listener" \
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$ADMIN_PORT$path")" = 200 ]
done

# Every status the fixture leads to: GatewayClass, Gateway, five routes, BackendTLSPolicy.
all_patched() {
    local p
    for p in gatewayclasses gateways httproutes grpcroutes tcproutes tlsroutes udproutes backendtlspolicies \
        backendlbpolicies aiservices tokenpolicies wasmplugins; do
        grep -q "\"PATCH [^ ]*/$p/[^/ ]*/status HTTP" "$WORK/k8s/apiserver.log" || return 1
    done
}
check "the daemon wrote the status of every Gateway API kind" wait_for 30 all_patched
serve_stop 15
tail -n +"$LOG_FROM" "$WORK/k8s/apiserver.log" >"$WORK/daemon-requests.log"
if "$PY" "$MANIFESTS" rbac "$WORK/all.yaml" "$WORK/daemon-requests.log" >"$WORK/rbac.out"; then
    pass "the ClusterRole grants every request of the daemon, and nothing else"
else
    fail "RBAC: $(grep '^problem' "$WORK/rbac.out")"
fi
grep '^request' "$WORK/rbac.out"

finish

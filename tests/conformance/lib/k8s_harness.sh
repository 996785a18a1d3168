# k8s_harness.sh — what the Kubernetes conformance tests add to harness.sh: the test
# Kubernetes API server (tests/lib/k8s.sh) in $WORK/k8s with the Gateway API CRDs,
# stopped by the cleanup (its log shown when the test failed), and the environment that
# makes the replicas started next (conf_serve) watch it.
#
#   source "$SEXTANT_SOURCE_DIR/tests/conformance/lib/harness.sh"
#   source "$SRC/tests/conformance/lib/k8s_harness.sh"
#   conf_init NAME
#   conf_k8s                      # PostgreSQL + Redis + API server + CRDs; K8S_DIR
#   conf_serve r1                 # watches the API server (k8s.enabled)
#   finish

# shellcheck source=tests/lib/k8s.sh
source "$SRC/tests/lib/k8s.sh"

K8S_DIR=

# conf_k8s: conf_services, the API server with the CRDs of tests/k8s/crds/ (K8S_DIR),
# the cleanup that stops it, and SEXTANT_K8S_ENABLED / SEXTANT_K8S_KUBECONFIG exported.
conf_k8s() {
    trap conf_k8s_cleanup EXIT
    conf_services || return 1
    K8S_DIR="$WORK/k8s"
    k8s_start "$K8S_DIR" || return 1
    if ! k8s_crds "$K8S_DIR" >"$WORK/crds.out" 2>&1; then
        echo "conformance: kubectl apply of the CRDs failed:" >&2
        cat "$WORK/crds.out" >&2
        return 1
    fi
    export SEXTANT_K8S_ENABLED=true SEXTANT_K8S_KUBECONFIG="$K8S_DIR/kubeconfig"
    # Gateways terminate TLS with the private keys of their Secrets: stored encrypted.
    secrets_keyring "$WORK/secrets.keys"
}

# conf_k8s_cleanup: the API server's log tail on failure, the API server stopped, then
# conf_cleanup with the test's exit status.
conf_k8s_cleanup() {
    local rc=$?
    if [ -n "$K8S_DIR" ]; then
        if [ "$rc" -ne 0 ] || [ "$FAILS" -gt 0 ]; then
            echo "--- apiserver.log (tail)" >&2
            tail -n 25 "$K8S_DIR/apiserver.log" >&2 2>/dev/null
        fi
        k8s_stop "$K8S_DIR"
    fi
    (exit "$rc")
    conf_cleanup
}

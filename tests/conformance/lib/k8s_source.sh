# k8s_source.sh — what the conformance tests of the Kubernetes source share (sourced
# after harness.sh): the test Kubernetes API server (tests/lib/k8s.sh) with the Gateway
# API CRDs, `sextant serve` watching it, and the managed configs read back over REST.
#
#   k8s_source_init               the API server in $WORK/k8s (its log shown on failure,
#                                 stopped with the other background processes), CRDs
#                                 applied, REST auth on for the replicas started next
#   k8s_apply FILE|-              kubectl apply to it (quiet unless it fails)
#   k8s_gateway NAME NS LISTENER PORT PROTOCOL [LINE...]
#                                 a Gateway of class sextant with one listener, as YAML
#   k8s_source_serve NAME         conf_serve NAME watching it (k8s.enabled)
#   k8s_config_id NS NAME         the id of the live config of Gateway NS/NAME, or nothing
#   k8s_versions ID               how many versions config ID has
#   k8s_follow GROUP              follows what a client of GROUP is served (ADS)
#   served_has KEY VALUE          ... and whether it holds VALUE now

# shellcheck source=tests/lib/k8s.sh
source "$SRC/tests/lib/k8s.sh"

K8S_DIR=

k8s_source_init() {
    K8S_DIR="$WORK/k8s"
    k8s_start "$K8S_DIR" || return 1
    # stopped (and waited for) by the harness's cleanup, its log tail shown on failure
    BG_PIDS+=("$(cat "$K8S_DIR/apiserver.pid")")
    ln -s k8s/apiserver.log "$WORK/apiserver.log"
    k8s_crds "$K8S_DIR" >"$WORK/crds.out" 2>&1 || { cat "$WORK/crds.out" >&2; return 1; }
    conf_rest_auth "k8s-source-conformance-secret-0123456789"
    # Gateways terminate TLS with the private keys of their Secrets: stored encrypted.
    secrets_keyring "$WORK/secrets.keys"
}

k8s_apply() {
    local out
    out=$(k8s_kubectl "$K8S_DIR" apply -f "$1" 2>&1) && return 0
    echo "kubectl apply failed: $out" >&2
    return 1
}

# k8s_gateway NAME NS LISTENER PORT PROTOCOL [LINE...]: the YAML document of Gateway NS/NAME
# of class sextant with one listener LISTENER on PORT speaking PROTOCOL; each LINE is one
# more line of the listener (indented as the listener's own keys).
k8s_gateway() {
    cat <<EOF
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: $1
  namespace: $2
spec:
  gatewayClassName: sextant
  listeners:
    - name: $3
      port: $4
      protocol: $5
EOF
    [ $# -le 5 ] || printf '      %s\n' "${@:6}"
}

# k8s_apply_examples NAME...: applies tests/k8s/examples/NAME.yaml, in order.
k8s_apply_examples() {
    local f
    for f in "$@"; do
        k8s_apply "$SRC/tests/k8s/examples/$f.yaml" || return 1
    done
}

# The replica waits for the first full list before /readyz says 200 (conf_serve waits).
k8s_source_serve() {
    SEXTANT_K8S_ENABLED=true SEXTANT_K8S_KUBECONFIG="$K8S_DIR/kubeconfig" conf_serve "$1"
}

k8s_config_id() {
    local code
    code=$(conf_rest GET "/api/v1/configs?source=kubernetes&namespace=$1") || return 1
    [ "$code" = 200 ] || return 1
    node -e '
        const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const c = (j.items || []).find((c) => c.namespace === process.argv[2] && c.name === process.argv[3]);
        if (c) console.log(c.id);' "$WORK/body" "$1" "$2"
}

# Every page of the history, counted.
k8s_versions() {
    local id=$1 cursor='' n=0 code page
    while :; do
        code=$(conf_rest GET "/api/v1/configs/$id/versions?limit=100${cursor:+&cursor=$cursor}") || return 1
        [ "$code" = 200 ] || { echo "versions of $id: HTTP $code" >&2; return 1; }
        page=$(jv '.items.length')
        n=$((n + page))
        cursor=$(jv '.next_cursor')
        case "$cursor" in undefined | null | "") break ;; esac
    done
    echo "$n"
}

# k8s_follow GROUP: lib/ads_follow.js follows what a client of GROUP is served from r1,
# summarised in $WORK/served.json (background process "follow").
k8s_follow() {
    bg_run follow node "$CONF/lib/ads_follow.js" --server "127.0.0.1:$R1_GRPC" --group "$1" \
        --node "k8s-follow" --out "$WORK/served.json"
}
# served_has paths|endpoints|listeners VALUE: the followed state holds VALUE now.
served_has() {
    [ -f "$WORK/served.json" ] && jq -e --arg k "$1" --arg v "$2" '.[$k] | index($v) != null' \
        "$WORK/served.json" >/dev/null
}

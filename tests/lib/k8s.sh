# k8s.sh — the test Kubernetes API server (tests/k8s/apiserver.py) for shell tests.
#
#   k8s_start DIR [apiserver options...]   a CA and a server certificate (openssl) in DIR,
#                        a bearer token, the server on a free loopback port, waited for until
#                        /readyz answers; writes DIR/kubeconfig (server, certificate-authority-
#                        data, token), DIR/ca.crt, DIR/token, DIR/url and DIR/serviceaccount/
#                        {token,ca.crt,namespace} (the in-cluster files); exports K8S_URL,
#                        K8S_TOKEN, K8S_CA (the CA file), KUBECONFIG=DIR/kubeconfig, and
#                        K8S_HOST/K8S_PORT (as KUBERNETES_SERVICE_HOST/PORT would be). A client
#                        certificate signed by the CA (DIR/client.crt, DIR/client.key) is accepted
#                        instead of the token; DIR/kubeconfig-cert uses it (and a CA file rather
#                        than data). Options go to apiserver.py, e.g. --bookmark-interval 1.
#                        Log: DIR/apiserver.log.
#   k8s_stop DIR         stops it (SIGTERM, then SIGKILL after 5 s); quiet when not running
#   k8s_ctl DIR ACTION [ARGS]   the test-only control endpoints (/_test/, same token):
#                          compact                every older resourceVersion becomes 410 Gone
#                          drop-watches           cuts every open watch connection
#                          restart [restamp]      a new resourceVersion history (restamp: every
#                                                 object also gets a new resourceVersion)
#                          fail-next N STATUS [PATH-SUBSTRING]  the next N API requests fail
#                          state                  {"resourceVersion","compacted","watches":{...}}
#                        prints the JSON answer; returns 1 when the call failed
#   k8s_kubectl DIR ARGS...     kubectl (KUBECTL, default kubectl) on DIR/kubeconfig with its
#                        discovery cache in DIR/kube-cache
#   k8s_crds DIR         kubectl apply of the Gateway API CRDs of tests/k8s/crds/ and of
#                        Sextant's own (deploy/k8s/crds/)
#   k8s_wait_watches DIR RESOURCE N [SECONDS]  waits until N watches of RESOURCE (as `state`
#                        names it, e.g. gateway.networking.k8s.io/httproutes or services) are open
#
# The server runs on Debian's /usr/bin/python3 (K8S_PYTHON overrides), standard library only.

# shellcheck source=tests/lib/services.sh
declare -F svc_free_port >/dev/null || source "$(dirname "${BASH_SOURCE[0]}")/services.sh"

K8S_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../k8s" && pwd)
K8S_PYTHON=${K8S_PYTHON:-/usr/bin/python3}

# k8s_certs DIR: ca.crt/ca.key and server.crt/server.key (127.0.0.1, localhost, kubernetes*).
k8s_certs() {
    local dir=$1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -keyout "$dir/ca.key" -out "$dir/ca.crt" -subj "/CN=sextant-test-kubernetes-ca" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        >/dev/null 2>&1 || return 1
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=kube-apiserver" >/dev/null 2>&1 || return 1
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
        "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
        "extendedKeyUsage=serverAuth" >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -out "$dir/server.crt" -extfile "$dir/server.ext" >/dev/null 2>&1 || return 1
    # a client certificate too, for kubeconfigs that authenticate with one
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$dir/client.key" -out "$dir/client.csr" -subj "/O=system:masters/CN=sextant-test" >/dev/null 2>&1 || return 1
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
        "extendedKeyUsage=clientAuth" >"$dir/client.ext"
    openssl x509 -req -in "$dir/client.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -out "$dir/client.crt" -extfile "$dir/client.ext" >/dev/null 2>&1 || return 1
    rm -f "$dir/server.csr" "$dir/server.ext" "$dir/client.csr" "$dir/client.ext" "$dir/ca.srl"
}

k8s_start() {
    local dir=$1 port i attempt ready=0
    shift
    mkdir -p "$dir" || return 1
    dir=$(cd "$dir" && pwd)
    k8s_certs "$dir" || { echo "k8s: could not make the certificates in $dir" >&2; return 1; }
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token"
    K8S_TOKEN=$(cat "$dir/token")
    K8S_CA="$dir/ca.crt"
    K8S_HOST=127.0.0.1
    # a port another process took between svc_free_port and the bind: try another one
    for attempt in 1 2 3; do
        port=$(svc_free_port) || return 1
        "$K8S_PYTHON" -B "$K8S_ROOT/apiserver.py" --port "$port" --cert "$dir/server.crt" --key "$dir/server.key" \
            --token-file "$dir/token" --client-ca "$dir/ca.crt" "$@" >>"$dir/apiserver.log" 2>&1 &
        echo $! >"$dir/apiserver.pid"
        K8S_URL="https://127.0.0.1:$port"
        K8S_PORT=$port
        ready=0
        for i in $(seq 1 100); do
            if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$K8S_CA" \
                -H "Authorization: Bearer $K8S_TOKEN" "$K8S_URL/readyz")" = 200 ]; then
                ready=1
                break
            fi
            kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null || break
            sleep 0.1
        done
        [ "$ready" = 1 ] && break
        if kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
            echo "k8s: the API server did not answer on $K8S_URL" >&2
            k8s_stop "$dir"
            return 1
        fi
        grep -q "Address already in use" "$dir/apiserver.log" && continue
        break
    done
    if [ "$ready" != 1 ]; then
        echo "k8s: the API server exited:" >&2
        tail -n 20 "$dir/apiserver.log" >&2
        return 1
    fi
    echo "$K8S_URL" >"$dir/url"
    k8s_kubeconfig "$dir/kubeconfig" test "certificate-authority-data: $(base64 -w0 <"$K8S_CA")" \
        "token: $K8S_TOKEN" "namespace: default"
    k8s_kubeconfig "$dir/kubeconfig-cert" test-cert "certificate-authority: $K8S_CA" \
        "client-certificate-data: $(base64 -w0 <"$dir/client.crt")
    client-key-data: $(base64 -w0 <"$dir/client.key")"
    mkdir -p "$dir/serviceaccount"
    cp "$dir/token" "$dir/serviceaccount/token"
    cp "$K8S_CA" "$dir/serviceaccount/ca.crt"
    echo default >"$dir/serviceaccount/namespace"
    KUBECONFIG="$dir/kubeconfig"
    export K8S_URL K8S_TOKEN K8S_CA K8S_HOST K8S_PORT KUBECONFIG
}

# k8s_kubeconfig FILE USER CA USER_LINES [CONTEXT_LINE]: a kubeconfig of one cluster
# (K8S_URL, the CA line CA), one user USER (USER_LINES under it) and one context of both
# named USER (with CONTEXT_LINE, such as a namespace), the current one.
k8s_kubeconfig() {
    {
        printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n'
        printf '    server: %s\n    %s\n' "$K8S_URL" "$3"
        printf 'users:\n- name: %s\n  user:\n    %s\n' "$2" "$4"
        printf 'contexts:\n- name: %s\n  context:\n    cluster: test\n    user: %s\n' "$2" "$2"
        [ -z "${5:-}" ] || printf '    %s\n' "$5"
        printf 'current-context: %s\n' "$2"
    } >"$1"
}

k8s_stop() {
    local dir=$1 pid i
    [ -f "$dir/apiserver.pid" ] || return 0
    pid=$(cat "$dir/apiserver.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    rm -f "$dir/apiserver.pid"
    return 0
}

k8s_ctl() {
    local dir=$1 action=$2 method=POST query=
    shift 2
    case "$action" in
    compact | drop-watches) ;;
    restart) [ "${1:-}" = restamp ] && query="?restamp=true" ;;
    fail-next)
        [ $# -ge 2 ] || { echo "k8s_ctl: fail-next N STATUS [PATH-SUBSTRING]" >&2; return 2; }
        query="?count=$1&code=$2"
        [ -n "${3:-}" ] && query="$query&path=$(printf '%s' "$3" | jq -sRr @uri)"
        ;;
    state) method=GET ;;
    *) echo "k8s_ctl: unknown action $action" >&2; return 2 ;;
    esac
    curl -sf --max-time 10 -X "$method" --cacert "$dir/ca.crt" -H "Authorization: Bearer $(cat "$dir/token")" \
        "$(cat "$dir/url")/_test/$action$query"
}

k8s_kubectl() {
    local dir=$1
    shift
    "${KUBECTL:-kubectl}" --kubeconfig "$dir/kubeconfig" --cache-dir "$dir/kube-cache" "$@"
}

k8s_crds() {
    k8s_kubectl "$1" apply -f "$K8S_ROOT/crds/" -f "$K8S_ROOT/../../deploy/k8s/crds/"
}

k8s_wait_watches() {
    local dir=$1 res=$2 want=$3 secs=${4:-10} i n
    for i in $(seq 1 $((secs * 10))); do
        n=$(k8s_ctl "$dir" state | jq -r --arg r "$res" '.watches[$r] // 0')
        [ "${n:-0}" -ge "$want" ] && return 0
        sleep 0.1
    done
    return 1
}

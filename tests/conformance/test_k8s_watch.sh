#!/usr/bin/env bash
# test_k8s_watch.sh — the Kubernetes source survives what API servers do to watches,
# and writes a config version only for a real change.
#
# The test Kubernetes API server holds the Namespace, GatewayClass, Service and
# EndpointSlice of tests/k8s/examples, a Gateway "mesh" for proxyless gRPC clients and a
# GRPCRoute "api" matching one method; one replica watches it. Then, one after the other:
#   1. every watch connection is cut: each kind resumes from its resourceVersion, none
#      lists again;
#   2. the EndpointSlice watch's request is answered 410 Gone: that kind lists again,
#      no other does;
#   3. 410 Gone as a watch event: while the EndpointSlice watch cannot reconnect, the
#      slice changes and the history is compacted; the watch then meets 410, the kind
#      lists again and the change it missed is served; no other kind lists again;
#   4. the API server restarts with a new resourceVersion history (every resourceVersion
#      held is 410): every watched kind lists exactly once more;
#   5. the same with every object's resourceVersion renewed (the maps change, the
#      translation runs and finds nothing to write: no config version, no status write).
# After each of 1, 3, 4 and 5, a GRPCRoute change made with kubectl reaches the config,
# what a client of the Gateway's proxy group is served (over ADS, decoded with Envoy's
# protos) and the route's status, writing one config version and one status. The
# config's version history (REST), its audit rows and the write metrics hold exactly one
# version per real change and none for the disruptions.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-watch
conf_services || exit 1
k8s_source_init || exit 1
k8s_apply_examples 00-namespace 10-gatewayclass 30-service 31-endpointslice || exit 1
{
    k8s_gateway mesh shop xds 443 sextant.dev/ProxylessGRPC
    cat <<'EOF'
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: api
  namespace: shop
spec:
  parentRefs:
    - name: mesh
  hostnames:
    - api.shop.test
  rules:
    - matches:
        - method:
            service: shop.Api
            method: Get
      backendRefs:
        - name: shop-api
          port: 8080
EOF
} | k8s_apply - || exit 1

k8s_source_serve r1 || exit 1
HTTP_PORT=$R1_HTTP
GROUP=shop/mesh

ID=
config_written() {
    ID=$(k8s_config_id shop mesh)
    [ -n "$ID" ]
}
check "the Gateway shop/mesh becomes a config of source kubernetes" wait_for 20 config_written
[ -n "$ID" ] || finish

# ---------------------------------------------------------------- what the checks read

metric_sum() { # metric_sum PREFIX: the sum of the /metrics lines starting with PREFIX
    curl -s --max-time 5 "http://127.0.0.1:$R1_HTTP/metrics" |
        awk -v p="$1" 'index($1, p) == 1 { s += $2 } END { print s + 0 }'
}
writes() { # writes RESULT: sextant_k8s_config_writes_total{result=RESULT}
    metric_sum "sextant_k8s_config_writes_total{result=\"$1\"}"
}
writes_grew() { # writes_grew RESULT COUNT: more than COUNT such writes now
    [ "$(writes "$1")" -gt "$2" ]
}
translations_grew() { # translations_grew COUNT: more than COUNT translations now
    [ "$(metric_sum sextant_k8s_translation_seconds_count)" -gt "$1" ]
}
status_writes() {
    metric_sum 'sextant_k8s_status_writes_total{result="written"}'
}
status_writes_reach() { # status_writes_reach COUNT: at least COUNT status writes now
    [ "$(status_writes)" -ge "$1" ]
}
ctl() { # ctl ACTION [ARGS]: k8s_ctl on the test's API server, quiet
    k8s_ctl "$K8S_DIR" "$@" >/dev/null
}
quiet() {
    "$@" >/dev/null
}
# relists_by_kind: "Kind count" lines, sorted
relists_by_kind() {
    curl -s --max-time 5 "http://127.0.0.1:$R1_HTTP/metrics" |
        sed -n 's/^sextant_k8s_relists_total{kind="\([A-Za-z]*\)"} \([0-9]*\)$/\1 \2/p' | sort
}
audit_rows() { # config versions the audit log holds for ID, written by kubernetes
    conf_rest GET "/api/v1/audit?resource_type=config&resource_id=$ID&user=kubernetes&limit=1000" >/dev/null
    jv '.items.length'
}

# config_has_method METHOD: the config's gRPC routes match shop.Api/METHOD.
config_has_method() {
    [ "$(conf_rest GET "/api/v1/configs/$ID")" = 200 ] &&
        jtrue '(j.spec.grpc_routes || []).some((r) => (r.rules || []).some((u) => (u.matches || []).some((m) =>
            m.service === "shop.Api" && m.method === "'"$1"'")))'
}
served_lacks() {
    ! served_has "$@"
}
# route_status_current: the GRPCRoute's parent status of our controller says Accepted
# and ResolvedRefs for its current generation.
route_status_current() {
    k8s_kubectl "$K8S_DIR" get grpcroute -n shop api -o json >"$WORK/route.json" 2>/dev/null || return 1
    jtrue '["Accepted", "ResolvedRefs"].every((t) => (j.status && j.status.parents || []).some((p) =>
        p.controllerName === "sextant.dev/gateway-controller" && (p.conditions || []).some((c) =>
            c.type === t && c.status === "True" && c.observedGeneration === j.metadata.generation)))' "$WORK/route.json"
}

check "the GRPCRoute's status is written (Accepted, ResolvedRefs)" wait_for 10 route_status_current
k8s_follow "$GROUP"
check "a client of $GROUP is served the route's method /shop.Api/Get" wait_for 10 served_has paths /shop.Api/Get
check "and the ready endpoint of the EndpointSlice" served_has endpoints 10.1.0.5:8080
VERSIONS=$(k8s_versions "$ID")
check "the config has one version (got $VERSIONS)" [ "$VERSIONS" = 1 ]

# change_route METHOD: kubectl changes the method the GRPCRoute matches; the change
# reaches the config, what clients are served and the route's status, as exactly one
# new config version.
change_route() {
    local method=$1 before gen st
    before=$(k8s_versions "$ID")
    st=$(status_writes)
    gen=$(k8s_kubectl "$K8S_DIR" get grpcroute -n shop api -o jsonpath='{.metadata.generation}')
    check "kubectl changes the GRPCRoute's method to $method" quiet k8s_kubectl "$K8S_DIR" patch grpcroute -n shop api \
        --type=json -p '[{"op": "replace", "path": "/spec/rules/0/matches/0/method/method", "value": "'"$method"'"}]'
    check "  the config holds it" wait_for 15 config_has_method "$method"
    check "  a client of $GROUP is served it" wait_for 10 served_has paths "/shop.Api/$method"
    check "  the route's status is written for its generation $((gen + 1))" wait_for 10 route_status_current
    check "  exactly one new config version (v$((before + 1)))" [ "$(k8s_versions "$ID")" = $((before + 1)) ]
    # the route's is the only status the change touches (counted just after its PATCH)
    wait_for 5 status_writes_reach $((st + 1))
    check "  exactly one status written, the route's ($(status_writes) writes, $st before)" \
        [ "$(status_writes)" = $((st + 1)) ]
}

# watching_again MARK: every resource watched before (WATCHED) was asked for again in the
# API server's log after line MARK, and has its watch open again.
watch_re() { # the request path of a watch of resource "group/plural" or "plural"
    case "$1" in
    */*) echo "\"WATCH /apis/${1%%/*}/[^/]*/${1#*/}?" ;;
    *) echo "\"WATCH /api/v1/$1?" ;;
    esac
}
watching_again() {
    local mark=$1 r
    k8s_ctl "$K8S_DIR" state >"$WORK/state.json" || return 1
    for r in $WATCHED; do
        tail -n +"$((mark + 1))" "$K8S_DIR/apiserver.log" | grep -q "$(watch_re "$r")" || return 1
        [ "$(jq --arg r "$r" '.watches[$r] // 0' "$WORK/state.json")" = 1 ] || return 1
    done
}
log_mark() {
    wc -l <"$K8S_DIR/apiserver.log"
}
# relists_grew_by N [KIND...]: each KIND listed N times more than in RELISTS0, every
# other kind 0 times more (what differs goes to $WORK/relists.diff).
relists_grew_by() {
    local n=$1
    shift
    relists_by_kind | while read -r kind count; do
        before=$(awk -v k="$kind" '$1 == k { print $2 }' <<<"$RELISTS0")
        want=0
        [[ " $* " == *" $kind "* ]] && want=$n
        [ "$count" = $((before + want)) ] || echo "$kind listed again $((count - before)) time(s), want $want"
    done >"$WORK/relists.diff"
    [ ! -s "$WORK/relists.diff" ]
}
# check_relists WHAT SECONDS N [KIND...]: a check that relists_grew_by N KIND... holds
# within SECONDS (a relist is counted when the client reads the 410, after its back-off).
check_relists() {
    local what=$1 secs=$2
    shift 2
    if wait_for "$secs" relists_grew_by "$@"; then
        pass "$what"
    else
        fail "$what: $(tr '\n' ';' <"$WORK/relists.diff")"
    fi
}
# kinds_of RESOURCE...: the kinds of watched resources, as the metrics name them.
kinds_of() {
    local r
    for r in "$@"; do
        case "${r#*/}" in
        gatewayclasses) echo GatewayClass ;; gateways) echo Gateway ;; httproutes) echo HTTPRoute ;;
        grpcroutes) echo GRPCRoute ;; tcproutes) echo TCPRoute ;; tlsroutes) echo TLSRoute ;;
        udproutes) echo UDPRoute ;; referencegrants) echo ReferenceGrant ;;
        backendtlspolicies) echo BackendTLSPolicy ;; services) echo Service ;;
        endpointslices) echo EndpointSlice ;; secrets) echo Secret ;; namespaces) echo Namespace ;;
        configmaps) echo ConfigMap ;; backendlbpolicies) echo BackendLBPolicy ;;
        aiservices) echo AIService ;; tokenpolicies) echo TokenPolicy ;; wasmplugins) echo WasmPlugin ;;
        *) echo "unknown-$r" ;;
        esac
    done
}

k8s_ctl "$K8S_DIR" state >"$WORK/state.json"
WATCHED=$(jq -r '.watches | to_entries[] | select(.value > 0) | .key' "$WORK/state.json" | sort | tr '\n' ' ')
echo "watched: $WATCHED"
check "the kinds Sextant reads are watched (GRPCRoute, EndpointSlice, Gateway among them)" \
    bash -c "[[ ' $WATCHED ' == *' gateway.networking.k8s.io/grpcroutes '* && ' $WATCHED ' == *' discovery.k8s.io/endpointslices '* && ' $WATCHED ' == *' gateway.networking.k8s.io/gateways '* ]]"
read -r -a WATCHED_KINDS <<<"$(kinds_of $WATCHED | tr '\n' ' ')"

change_route Get1

# ---------------------------------------------------------------- 1. watches cut
echo "--- 1. every watch connection is cut"
RELISTS0=$(relists_by_kind)
MARK=$(log_mark)
check "the API server cuts the watches" ctl drop-watches
check "every kind watches again" wait_for 15 watching_again "$MARK"
check_relists "no kind listed again: each resumed from its resourceVersion" 5 0
change_route Get2

# ---------------------------------------------------------------- 2. 410 Gone
echo "--- 2. 410 Gone as the answer to the EndpointSlice watch's request"
RELISTS0=$(relists_by_kind)
V=$(k8s_versions "$ID")
check "the API server will answer the next EndpointSlice watch 410" ctl fail-next 1 410 "/endpointslices?watch=true"
MARK=$(log_mark)
ctl drop-watches
check "every kind watches again" wait_for 15 watching_again "$MARK"
check_relists "the EndpointSlice kind listed again; no other kind did" 5 1 EndpointSlice
check "  no new config version" [ "$(k8s_versions "$ID")" = "$V" ]

echo "--- 3. 410 Gone: the EndpointSlice watch misses a change that is then compacted"
RELISTS0=$(relists_by_kind)
check "the API server refuses the EndpointSlice watch (503) until told otherwise" \
    ctl fail-next 1000000 503 "/endpointslices?watch=true"
MARK=$(log_mark)
ctl drop-watches
WATCHED_ALL=$WATCHED
WATCHED=${WATCHED/discovery.k8s.io\/endpointslices/}
check "every other kind watches again" wait_for 15 watching_again "$MARK"
WATCHED=$WATCHED_ALL
refused() {
    tail -n +"$((MARK + 1))" "$K8S_DIR/apiserver.log" | grep -q 'endpointslices?watch=true.*" 503'
}
check "the EndpointSlice watch was refused" wait_for 10 refused
V=$(k8s_versions "$ID")
sed 's/10\.1\.0\.5/10.1.0.7/' "$SRC/tests/k8s/examples/31-endpointslice.yaml" >"$WORK/slice.yaml"
check "kubectl moves the EndpointSlice's ready endpoint to 10.1.0.7" k8s_apply "$WORK/slice.yaml"
check "the API server compacts its history" ctl compact
check "the EndpointSlice watch may reconnect" ctl fail-next 1 404 "/no-request-has-this-path"
check_relists "the EndpointSlice watch met 410 and its kind listed again; no other kind did" 20 1 EndpointSlice
check "  the change it missed is served: endpoint 10.1.0.7" wait_for 10 served_has endpoints 10.1.0.7:8080
check "  and 10.1.0.5 no longer" served_lacks endpoints 10.1.0.5:8080
check "  exactly one new config version for it (v$((V + 1)))" [ "$(k8s_versions "$ID")" = $((V + 1)) ]
check "every kind watches again" wait_for 15 watching_again "$MARK"
change_route Get3

# restart_phase [restamp]: the API server's new resourceVersion history.
restart_phase() {
    local v w s u
    RELISTS0=$(relists_by_kind)
    v=$(k8s_versions "$ID")
    w=$(writes written)
    s=$(status_writes)
    u=$(metric_sum sextant_k8s_translation_seconds_count)
    MARK=$(log_mark)
    check "the API server restarts its resourceVersion history${1:+ ($1)}" ctl restart "$@"
    check "every kind watches again" wait_for 15 watching_again "$MARK"
    check_relists "every watched kind listed again exactly once" 5 1 "${WATCHED_KINDS[@]}"
    if [ "${1:-}" = restamp ]; then
        # every object changed resourceVersion: the maps changed, so a translation runs
        # (and finds every object's output as it was: none is reconciled)
        check "the objects' new resourceVersions are translated again" wait_for 10 translations_grew "$u"
    fi
    check "  no config written for it ($(writes written) writes, $w before)" [ "$(writes written)" = "$w" ]
    check "  no status written for it ($(status_writes) writes, $s before)" [ "$(status_writes)" = "$s" ]
    check "  no new config version" [ "$(k8s_versions "$ID")" = "$v" ]
}

# ---------------------------------------------------------------- 4. restart
echo "--- 4. the API server restarts with a new resourceVersion history"
restart_phase
change_route Get4

# ---------------------------------------------------------------- 5. restart, restamped
echo "--- 5. the same, every object with a new resourceVersion"
restart_phase restamp
change_route Get5

# ---------------------------------------------------------------- the history
echo "--- the history"
VERSIONS=$(k8s_versions "$ID")
# the first, five route changes and the EndpointSlice change
check "7 versions: the first and one per change, none for a disruption (got $VERSIONS)" [ "$VERSIONS" = 7 ]
AUDIT=$(audit_rows)
check "the audit log holds the same 7 writes by kubernetes (got $AUDIT)" [ "$AUDIT" = 7 ]
check "sextant_k8s_config_writes_total{result=\"written\"} says 7 (got $(writes written))" [ "$(writes written)" = 7 ]

check "the client following $GROUP NACKed nothing" [ "$(jq .nacks "$WORK/served.json")" = 0 ]

bg_stop follow
conf_stop_serve r1
finish

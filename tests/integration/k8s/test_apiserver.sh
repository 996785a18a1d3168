#!/usr/bin/env bash
# test_apiserver.sh — the test Kubernetes API server (tests/k8s/apiserver.py, started by
# tests/lib/k8s.sh) checked with real clients: kubectl (Debian's kubernetes-client, or
# KUBECTL) applies the Gateway API CRDs of tests/k8s/crds/ and the objects of
# tests/k8s/examples/, gets them, follows a change with `get -w`, patches a Gateway's
# status; Debian's python3-kubernetes follows a watch, pages a list, meets 410 and 401;
# curl checks what the clients do not show: Status errors, resourceVersion and generation
# rules, selectors, bookmarks, and the test controls (compact, drop-watches, restart,
# fail-next). Every check runs; the script exits 1 when any failed.
set -u

# shellcheck source=tests/lib/shtest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/shtest.sh"
# shellcheck source=tests/lib/k8s.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/k8s.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=/usr/bin/python3
KUBECTL=${KUBECTL:-kubectl}

command -v "$KUBECTL" >/dev/null || { echo "kubectl is missing (tests/lib/deps.sh installs kubernetes-client)" >&2; exit 1; }
"$PY" -c 'import kubernetes' 2>/dev/null || { echo "python3-kubernetes is missing (tests/lib/deps.sh)" >&2; exit 1; }

cleanup() {
    local rc=$?
    bg_stop_all
    k8s_stop "$WORK/k8s"
    if [ "$rc" -ne 0 ] || [ "$FAILS" -ne 0 ]; then
        log_tails 30
        echo "--- apiserver.log (tail)" >&2
        tail -n 40 "$WORK/k8s/apiserver.log" >&2
    fi
    rm -rf "$WORK"
    exit "$rc"
}
work_init k8s-apiserver cleanup
K=$WORK/k8s
k8s_start "$K" || exit 1

kc() { k8s_kubectl "$K" "$@"; }
# api METHOD PATH [curl args...]: the body goes to $WORK/body, the status code is printed.
api() {
    local method=$1 path=$2
    shift 2
    curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' -X "$method" --max-time 10 \
        --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" "$@" "$K8S_URL$path"
}
json() { api "$1" "$2" -H 'Content-Type: application/json' --data-binary "$3"; }
merge() { api PATCH "$1" -H 'Content-Type: application/merge-patch+json' --data-binary "$2"; }
jb() { jq -r "$1" "$WORK/body"; }         # a value of the last answer
is() { [ "$1" = "$2" ]; }
has() { grep -q -- "$2" <<<"$1"; }      # has TEXT REGEX
# status_is WHAT CODE REASON GOT: the answer is a Status with this code and reason.
status_is() {
    expect_status "$1" "$2" "$4"
    check "$1: a Status with reason $3" is "$(jb '.kind + " " + .reason + " " + (.code|tostring)')" "Status $3 $2"
}
GW=/apis/gateway.networking.k8s.io/v1
ROUTE=$GW/namespaces/shop/httproutes/shop
GATEWAY=$GW/namespaces/shop/gateways/web
list_rv() { api GET "$1" >/dev/null && jb .metadata.resourceVersion; }

# ------------------------------------------------------------------ TLS and bearer tokens
code=$(curl -s -o "$WORK/body" -w '%{http_code}' --cacert "$K8S_CA" "$K8S_URL/api/v1/namespaces")
status_is "no bearer token" 401 Unauthorized "$code"
code=$(curl -s -o "$WORK/body" -w '%{http_code}' --cacert "$K8S_CA" -H "Authorization: Bearer wrong" "$K8S_URL/api/v1/namespaces")
status_is "a wrong bearer token" 401 Unauthorized "$code"
curl -s -o /dev/null "$K8S_URL/version"
check "the server's certificate is signed by the test CA only (curl without it: exit $?)" [ $? -eq 60 ]
kc --token=wrong get namespaces >"$WORK/out" 2>&1
check "kubectl with a wrong token is refused: $(tail -n 1 "$WORK/out")" grep -q 'You must be logged in to the server' "$WORK/out"
out=$("$KUBECTL" --kubeconfig "$K/kubeconfig-cert" --cache-dir "$K/kube-cache" get namespaces 2>&1)
check "kubectl with the client certificate instead of a token" has "$out" '^default *Active'
"$PY" "$HERE/pyclient.py" "$KUBECONFIG" badtoken >"$WORK/py.out" 2>&1
check "python3-kubernetes with a wrong token gets 401: $(tail -n 1 "$WORK/py.out")" [ $? -eq 0 ]

# ------------------------------------------------------------------ discovery, CRDs
expect_status "GET /api" 200 "$(api GET /api)"
check "/api lists v1" is "$(jb '.versions|join(",")')" v1
expect_status "GET /api/v1" 200 "$(api GET /api/v1)"
check "/api/v1 serves namespaces (cluster-scoped), services and their status" \
    is "$(jb '[.resources[]|select(.name=="namespaces" or .name=="services" or .name=="services/status")|.name+":"+(.namespaced|tostring)]|join(",")')" \
    "namespaces:false,services:true,services/status:true"
code=$(api GET $GW/gateways)
status_is "gateways before their CRD is applied" 404 NotFound "$code"
kc get gateways >"$WORK/out" 2>&1
check "kubectl get gateways fails before the CRD is applied" bash -c "! grep -q '^NAME' '$WORK/out' && grep -qi 'resource type' '$WORK/out'"

kc apply -f "$ROOT/tests/k8s/crds/" >"$WORK/out" 2>&1
check "kubectl apply -f tests/k8s/crds/ creates 9 CRDs" is "$(grep -c 'customresourcedefinition.* created' "$WORK/out")" 9
check "the CRDs are Established" is "$(kc get crd gateways.gateway.networking.k8s.io \
    -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" True
expect_status "gateways once the CRD is applied" 200 "$(api GET $GW/gateways)"
check "an empty GatewayList" is "$(jb '.kind + " " + (.items|length|tostring)')" "GatewayList 0"
api GET /apis/gateway.networking.k8s.io >/dev/null
check "the gateway group prefers v1 and serves v1, v1beta1, v1alpha3, v1alpha2" \
    is "$(jb '.preferredVersion.version + " " + ([.versions[].version]|join(","))')" "v1 v1,v1beta1,v1alpha3,v1alpha2"
api GET /apis/gateway.networking.k8s.io/v1alpha2 >/dev/null
check "v1alpha2 serves tcproutes, tlsroutes, udproutes and their status" \
    is "$(jb '[.resources[].name]|join(",")')" "tcproutes,tcproutes/status,tlsroutes,tlsroutes/status,udproutes,udproutes/status"

# ------------------------------------------------------------------ example objects
kc apply -f "$ROOT/tests/k8s/examples/" >"$WORK/out" 2>&1
check "kubectl apply -f tests/k8s/examples/ creates 6 objects" is "$(grep -c ' created$' "$WORK/out")" 6
check "kubectl get namespace shop shows its labels and the one the server adds" \
    is "$(kc get namespace shop -o jsonpath='{.metadata.labels.team} {.metadata.labels.kubernetes\.io/metadata\.name} {.status.phase}')" "shop shop Active"
out=$(kc get gatewayclass sextant 2>&1)
check "kubectl get gatewayclass sextant shows its controller" has "$out" '^sextant *sextant.dev/gateway-controller *Unknown'

kc get gateway web -n shop >"$WORK/out" 2>&1
check "kubectl get gateway prints the CRD's columns (CLASS, PROGRAMMED)" bash -c "grep -q 'CLASS.*PROGRAMMED' '$WORK/out' && grep -q '^web *sextant' '$WORK/out'"
check "kubectl get httproute shows the hostnames" is "$(kc get httproute shop -n shop -o jsonpath='{.spec.hostnames[0]}')" shop.example.com
out=$(kc get service shop-api -n shop -o jsonpath='{.spec.ports[0].port} {.spec.clusterIP}' 2>&1)
check "kubectl get service shows the port and an allocated cluster IP ($out)" has "$out" '^8080 10\.96\.'

check "kubectl get endpointslice shows both endpoints" \
    is "$(kc get endpointslices -n shop -l kubernetes.io/service-name=shop-api -o jsonpath='{.items[0].endpoints[*].addresses[0]}')" "10.1.0.5 10.1.0.6"
api GET $ROUTE >/dev/null
check "a new object has a uid, a creationTimestamp, generation 1 and a resourceVersion" \
    bash -c "jq -e '(.metadata.uid|length) == 36 and (.metadata.creationTimestamp|test(\"Z\$\")) and .metadata.generation == 1 and (.metadata.resourceVersion|tonumber) > 0' '$WORK/body' >/dev/null"
check "the CRD's defaults are applied (parentRef group and kind, backendRef weight)" \
    is "$(jb '.spec.parentRefs[0].group + " " + .spec.parentRefs[0].kind + " " + (.spec.rules[0].backendRefs[0].weight|tostring)')" "gateway.networking.k8s.io Gateway 1"
api GET $GATEWAY >/dev/null
check "a new Gateway has the CRD's default status (Accepted Unknown, Pending)" \
    is "$(jb '.status.conditions[0].type + " " + .status.conditions[0].status + " " + .status.conditions[0].reason')" "Accepted Unknown Pending"

sed 's/port: 8080$/port: 9090/' "$ROOT/tests/k8s/examples/30-service.yaml" >"$WORK/service.yaml"
cluster_ip=$(kc get service shop-api -n shop -o jsonpath='{.spec.clusterIP}')
kc apply -f "$WORK/service.yaml" >"$WORK/out" 2>&1
check "kubectl apply of a changed Service (a strategic merge patch): $(cat "$WORK/out")" grep -q configured "$WORK/out"
check "changes its port and keeps its cluster IP" \
    is "$(kc get service shop-api -n shop -o jsonpath='{.spec.ports[*].port} {.spec.ports[0].targetPort} {.spec.clusterIP}')" "9090 8080 $cluster_ip"

# ------------------------------------------------------------------ kubectl get -w, generation
bg_run kwatch "${KUBECTL}" --kubeconfig "$K/kubeconfig" --cache-dir "$K/kube-cache" get httproute -n shop -w --output-watch-events
check "kubectl get httproute -w lists the route first" wait_for 15 grep -q '^ADDED *shop' "$WORK/kwatch.log"
kc patch httproute shop -n shop --type=merge -p '{"spec":{"hostnames":["shop.example.com","www.example.com"]}}' >/dev/null
check "kubectl get httproute -w sees the change made afterwards" wait_for 10 grep -q '^MODIFIED *shop.*www.example.com' "$WORK/kwatch.log"
bg_stop kwatch
check "a spec change bumps the generation to 2" is "$(kc get httproute shop -n shop -o jsonpath='{.metadata.generation}')" 2
kc label httproute shop -n shop tier=front >/dev/null
check "a metadata change leaves the generation alone" is "$(kc get httproute shop -n shop -o jsonpath='{.metadata.generation} {.metadata.labels.tier}')" "2 front"

# ------------------------------------------------------------------ the /status subresource
api GET $GATEWAY >/dev/null
gen_before=$(jb .metadata.generation)
rv_before=$(jb .metadata.resourceVersion)
STATUS='{"status":{"addresses":[{"type":"IPAddress","value":"192.0.2.10"}],"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"ok","observedGeneration":1,"lastTransitionTime":"2024-05-01T10:00:00Z"},{"type":"Programmed","status":"True","reason":"Programmed","message":"ok","observedGeneration":1,"lastTransitionTime":"2024-05-01T10:00:00Z"}]}}'
if "$KUBECTL" patch --help 2>/dev/null | grep -q -- '--subresource'; then
    kc patch gateway web -n shop --subresource=status --type=merge -p "$STATUS" >"$WORK/out" 2>&1
    check "kubectl patch --subresource=status --type=merge: $(cat "$WORK/out")" grep -q patched "$WORK/out"
else
    # kubectl before 1.24 has no --subresource: the same merge patch through the API
    expect_status "merge patch on /status (this kubectl has no --subresource)" 200 "$(merge $GATEWAY/status "$STATUS")"
fi
kc get gateway web -n shop -o yaml >"$WORK/gw.yaml"
check "kubectl get gateway -o yaml shows the status written" bash -c "grep -q 'value: 192.0.2.10' '$WORK/gw.yaml' && grep -q 'reason: Programmed' '$WORK/gw.yaml'"
check "the status write left the generation at $gen_before" grep -q "^  generation: $gen_before\$" "$WORK/gw.yaml"
api GET $GATEWAY >/dev/null
check "the status write took a new resourceVersion" [ "$(jb .metadata.resourceVersion)" -gt "$rv_before" ]
kc get gateway web -n shop >"$WORK/out"
check "kubectl get gateway shows the address and Programmed True" grep -q '^web *sextant *192.0.2.10 *True' "$WORK/out"
rv_before=$(jb .metadata.resourceVersion)
expect_status "the same status again" 200 "$(merge $GATEWAY/status "$STATUS")"
check "an unchanged status writes nothing (same resourceVersion)" is "$(jb .metadata.resourceVersion)" "$rv_before"
expect_status "a spec change through /status" 200 "$(merge $GATEWAY/status '{"spec":{"gatewayClassName":"other"}}')"
check "/status ignores everything but status" is "$(jb '.spec.gatewayClassName + " " + (.metadata.generation|tostring)')" "sextant $gen_before"
expect_status "a status change through the main resource" 200 "$(merge $GATEWAY '{"status":{"addresses":[]}}')"
check "the main resource ignores status" is "$(jb '.status.addresses[0].value')" 192.0.2.10
code=$(merge $GATEWAY/status '{"status":{"conditions":[{"type":"Accepted","status":"True","message":"no reason","lastTransitionTime":"2024-05-01T10:00:00Z"}]}}')
status_is "a condition without a reason" 422 Invalid "$code"
check "the 422 names the field" is "$(jb '.details.causes[0].field + " " + .details.causes[0].reason')" "status.conditions[0].reason FieldValueRequired"
expect_status "a spec change through the main resource" 200 "$(merge $GATEWAY '{"spec":{"listeners":[{"name":"http","port":8080,"protocol":"HTTP"}]}}')"
check "bumps the Gateway's generation" is "$(jb .metadata.generation)" $((gen_before + 1))

# ------------------------------------------------------------------ python3-kubernetes
"$PY" "$HERE/pyclient.py" "$KUBECONFIG" watch shop shop >"$WORK/py.out" 2>&1
check "python3-kubernetes watch.stream follows ADDED then MODIFIED: $(tail -n 1 "$WORK/py.out")" [ $? -eq 0 ]
"$PY" "$HERE/pyclient.py" "$KUBECONFIG" pages >"$WORK/py.out" 2>&1
check "python3-kubernetes pages a list with limit=2 and continue: $(tail -n 1 "$WORK/py.out")" [ $? -eq 0 ]

# ------------------------------------------------------------------ errors as Status objects
ROUTE_JSON='{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"shop"},"spec":{}}'
status_is "creating an existing object" 409 AlreadyExists "$(json POST $GW/namespaces/shop/httproutes "$ROUTE_JSON")"
check "AlreadyExists names the object" is "$(jb .message)" 'httproutes.gateway.networking.k8s.io "shop" already exists'
api GET $ROUTE >/dev/null
jq '.metadata.resourceVersion = "1" | .spec.hostnames = ["x.example.com"]' "$WORK/body" >"$WORK/stale.json"
status_is "an update with a stale resourceVersion" 409 Conflict "$(api PUT $ROUTE -H 'Content-Type: application/json' --data-binary @"$WORK/stale.json")"
jq 'del(.metadata.resourceVersion)' "$WORK/stale.json" >"$WORK/norv.json"
status_is "an update of a custom resource without a resourceVersion" 422 Invalid "$(api PUT $ROUTE -H 'Content-Type: application/json' --data-binary @"$WORK/norv.json")"
status_is "a missing object" 404 NotFound "$(api GET $GW/namespaces/shop/httproutes/nope)"
check "NotFound names the object" is "$(jb '.message + " " + .details.name + " " + .details.kind')" 'httproutes.gateway.networking.k8s.io "nope" not found nope httproutes'
status_is "an object in a namespace that does not exist" 404 NotFound "$(json POST $GW/namespaces/nowhere/httproutes "${ROUTE_JSON/shop/r}")"
code=$(json POST $GW/namespaces/shop/gateways '{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"bad"},"spec":{"gatewayClassName":"sextant","listeners":[{"name":"http","port":70000,"protocol":"HTTP"}]}}')
status_is "a Gateway with listener port 70000" 422 Invalid "$code"
check "the 422 says which field and why" bash -c "jq -r .message '$WORK/body' | grep -q 'spec.listeners\[0\].port: Invalid value: 70000: spec.listeners\[0\].port in body should be less than or equal to 65535'"
status_is "malformed JSON" 400 BadRequest "$(json POST $GW/namespaces/shop/httproutes '{"metadata": ')"
status_is "an unknown field with fieldValidation=Strict" 400 BadRequest \
    "$(json POST "$GW/namespaces/shop/httproutes?fieldValidation=Strict" '{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"strict"},"spec":{"colour":"red"}}')"
check "the strict error names the field" bash -c "jq -r .message '$WORK/body' | grep -q 'unknown field \"spec.colour\"'"
expect_status "an unknown field by default" 201 "$(json POST $GW/namespaces/shop/httproutes '{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"warned"},"spec":{"colour":"red"}}')"
check "is dropped with a Warning header" bash -c "[ \"\$(jq -c .spec '$WORK/body')\" = '{\"rules\":[{\"matches\":[{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/\"}}]}]}' ] && grep -qi '^Warning: 299 - \"unknown field' '$WORK/headers'"
status_is "strategic merge patch on a custom resource" 415 UnsupportedMediaType \
    "$(api PATCH $ROUTE -H 'Content-Type: application/strategic-merge-patch+json' --data-binary '{}')"

# ------------------------------------------------------------------ finalizers and deletion
CLASS=$GW/gatewayclasses/held
kc apply -f - >/dev/null <<'YAML'
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: held
  finalizers: [example.com/hold]
spec:
  controllerName: example.com/other
YAML
out=$(kc delete gatewayclass held --wait=false 2>&1)
check "kubectl delete --wait=false of an object with a finalizer: $out" has "$out" 'gatewayclass.gateway.networking.k8s.io "held" deleted'
out=$(kc get gatewayclass held -o jsonpath='{.metadata.deletionTimestamp} {.metadata.finalizers[0]}' 2>&1)
check "the object stays, with a deletionTimestamp and its finalizer: $out" has "$out" '^20[0-9-]*T[0-9:]*Z example.com/hold$'
out=$(kc patch gatewayclass held --type merge -p '{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}' 2>&1)
check "kubectl patch adding a finalizer while it is deleted is refused: $out" has "$out" 'Forbidden: no new finalizers can be added if the object is being deleted'
api GET $CLASS >/dev/null
rv=$(jb .metadata.resourceVersion)
expect_status "a label added meanwhile" 200 "$(merge $CLASS '{"metadata":{"labels":{"x":"y"}}}')"
status_is "a merge patch carrying the older resourceVersion" 409 Conflict \
    "$(merge $CLASS "{\"metadata\":{\"resourceVersion\":\"$rv\",\"finalizers\":null}}")"
check "leaves the finalizer" is "$(kc get gatewayclass held -o jsonpath='{.metadata.finalizers[0]}')" example.com/hold
expect_status "a second DELETE" 200 "$(api DELETE $CLASS)"
check "answers the object, still being deleted" is "$(jb '.kind + " " + (.metadata.deletionTimestamp != null | tostring)')" "GatewayClass true"
rv=$(list_rv $GW/gatewayclasses)
bg_run finwatch curl -sN --max-time 20 --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" \
    "$K8S_URL$GW/gatewayclasses?watch=true&resourceVersion=$rv&timeoutSeconds=3"
check "a watch of GatewayClasses is open" k8s_wait_watches "$K" gateway.networking.k8s.io/gatewayclasses 1
out=$(kc patch gatewayclass held --type json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]' 2>&1)
check "kubectl patch removing the last finalizer: $out" has "$out" 'patched'
out=$(kc get gatewayclass held 2>&1)
check "completes the deletion: $out" has "$out" 'NotFound'
wait "$PID_finwatch"
check "the watch saw the deletion as DELETED" is "$(jq -r 'select(.object.metadata.name == "held") | .type' "$WORK/finwatch.log" | tr '\n' ' ')" "DELETED "
"$PY" "$HERE/pyclient.py" "$KUBECONFIG" finalizer py-held >"$WORK/py.out" 2>&1
check "python3-kubernetes: delete waits on a finalizer, a stale patch is 409, removing it deletes: $(tail -n 1 "$WORK/py.out")" [ $? -eq 0 ]

# ------------------------------------------------------------------ lists: selectors, pagination
expect_status "a list across namespaces with fieldSelector=metadata.name=shop" 200 "$(api GET "$GW/httproutes?fieldSelector=metadata.name%3Dshop")"
check "finds the one route" is "$(jb '[.items[] | .metadata.namespace + "/" + .metadata.name] | join(",")')" "shop/shop"
expect_status "a list with labelSelector" 200 "$(api GET "/apis/discovery.k8s.io/v1/endpointslices?labelSelector=kubernetes.io%2Fservice-name%20in%20(shop-api,other)")"
check "finds the slice (built-in list items carry no kind)" is "$(jb '([.items[].metadata.name] | join(",")) + " " + (.items[0].kind // "none")')" "shop-api-x7k2p none"
status_is "an unknown field selector" 400 BadRequest "$(api GET "$GW/httproutes?fieldSelector=spec.hostnames%3Dx")"
for i in 1 2 3; do json POST $GW/namespaces/shop/httproutes "{\"apiVersion\":\"gateway.networking.k8s.io/v1\",\"kind\":\"HTTPRoute\",\"metadata\":{\"name\":\"page-$i\"},\"spec\":{}}" >/dev/null; done
total=$(api GET "$GW/namespaces/shop/httproutes" >/dev/null; jb '.items|length')
api GET "$GW/namespaces/shop/httproutes?limit=2" >/dev/null
token=$(jb '.metadata.continue // empty')
check "limit=2 gives 2 of $total routes, a continue token and the count of the rest" \
    is "$(jb '(.items|length|tostring) + " " + (.metadata.remainingItemCount|tostring)') ${token:+token}" "2 $((total - 2)) token"

# ------------------------------------------------------------------ watches
rv=$(list_rv $GW/namespaces/shop/httproutes)
bg_run curlwatch curl -sN --max-time 20 --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" \
    "$K8S_URL$GW/namespaces/shop/httproutes?watch=true&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=5"
check "the watch is open" k8s_wait_watches "$K" gateway.networking.k8s.io/httproutes 1
merge $ROUTE '{"metadata":{"labels":{"watched":"yes"}}}' >/dev/null
api DELETE $GW/namespaces/shop/httproutes/page-1 >/dev/null
check "a timed-out watch ends by itself" gone "$PID_curlwatch" 100
wait "$PID_curlwatch"
check "and cleanly (a complete chunked stream: curl exit $?)" [ $? -eq 0 ]
check "the watch saw MODIFIED then DELETED, then a BOOKMARK before the timeout" \
    is "$(jq -r '.type' "$WORK/curlwatch.log" | tr '\n' ' ')" "MODIFIED DELETED BOOKMARK "
check "the BOOKMARK carries the current resourceVersion" \
    is "$(jq -r 'select(.type=="BOOKMARK")|.object.metadata.resourceVersion' "$WORK/curlwatch.log")" "$(list_rv $GW/namespaces/shop/httproutes)"
check "the DELETED object carries the deletion's resourceVersion" \
    is "$(jq -r 'select(.type=="DELETED")|.object.metadata.resourceVersion' "$WORK/curlwatch.log")" "$(list_rv $GW/namespaces/shop/httproutes)"

n=$(api GET "$GW/namespaces/shop/httproutes" >/dev/null; jb '.items|length')
api GET "$GW/namespaces/shop/httproutes?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1" >/dev/null
check "sends the $n current objects, then a BOOKMARK marking the end of them" \
    is "$(jq -rs --argjson n "$n" '([.[:$n][].type]|unique|join(",")) + " " + .[$n].type + " " + .[$n].object.metadata.annotations["k8s.io/initial-events-end"]' "$WORK/body")" \
    "ADDED BOOKMARK true"

# ------------------------------------------------------------------ compaction: 410 Gone
old_rv=$(list_rv $GW/namespaces/shop/httproutes)
merge $ROUTE '{"metadata":{"labels":{"after":"compaction"}}}' >/dev/null
k8s_ctl "$K" compact >/dev/null
check "compact answers" [ $? -eq 0 ]
code=$(api GET "$GW/namespaces/shop/httproutes?watch=1&resourceVersion=$old_rv")
expect_status "a watch from a compacted resourceVersion starts streaming" 200 "$code"
check "then sends one ERROR event carrying a 410 Expired Status" \
    is "$(jq -r '.type + " " + .object.kind + " " + (.object.code|tostring) + " " + .object.reason' "$WORK/body")" "ERROR Status 410 Expired"
"$PY" "$HERE/pyclient.py" "$KUBECONFIG" gone shop "$old_rv" >"$WORK/py.out" 2>&1
check "python3-kubernetes gets a 410 from that watch: $(tail -n 1 "$WORK/py.out")" [ $? -eq 0 ]
status_is "a list at an exact compacted resourceVersion" 410 Expired \
    "$(api GET "$GW/namespaces/shop/httproutes?resourceVersion=$old_rv&resourceVersionMatch=Exact")"
status_is "a continue token from before the compaction" 410 Expired "$(api GET "$GW/namespaces/shop/httproutes?limit=2&continue=$token")"
check "comes with an inconsistent continue token" [ -n "$(jb '.metadata.continue // empty')" ]
expect_status "a watch from the current resourceVersion" 200 "$(api GET "$GW/namespaces/shop/httproutes?watch=1&resourceVersion=$(list_rv $GW/namespaces/shop/httproutes)&timeoutSeconds=1")"

# ------------------------------------------------------------------ test controls
bg_run dropped curl -sN --max-time 20 --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" "$K8S_URL/api/v1/services?watch=1"
check "a services watch is open" k8s_wait_watches "$K" services 1
check "drop-watches cuts it" [ "$(k8s_ctl "$K" drop-watches | jq -r .dropped)" -ge 1 ]
check "the client sees the connection cut" gone "$PID_dropped" 100
wait "$PID_dropped"
rc=$?
check "mid-stream (curl exit $rc: transfer closed with outstanding data)" [ $rc -eq 18 ]
no_watches() { is "$(k8s_ctl "$K" state | jq -c .watches)" "{}"; }
check "no watch is left open" wait_for 5 no_watches

before=$(list_rv /api/v1/namespaces)
count=$(jb '.items|length')
k8s_ctl "$K" restart >"$WORK/out"
after=$(jq -r .resourceVersion "$WORK/out")
check "restart starts a new resourceVersion history ($before -> $after)" [ "$after" -ge $((before + 1000000)) ]
api GET "/api/v1/namespaces?watch=1&resourceVersion=$before" >/dev/null
check "a watch from before the restart is 410" is "$(jq -r '.type + " " + (.object.code|tostring)' "$WORK/body")" "ERROR 410"
check "restart forgets no object" is "$(api GET /api/v1/namespaces >/dev/null; jb '.items|length')" "$count"

k8s_ctl "$K" fail-next 1 503 /api/v1/namespaces >/dev/null
status_is "fail-next makes the next matching request fail" 503 ServiceUnavailable "$(api GET /api/v1/namespaces)"
expect_status "and only that one" 200 "$(api GET /api/v1/namespaces)"

# ------------------------------------------------------------------ deleting a CRD
json POST /apis/gateway.networking.k8s.io/v1alpha2/namespaces/shop/udproutes \
    '{"apiVersion":"gateway.networking.k8s.io/v1alpha2","kind":"UDPRoute","metadata":{"name":"dns"},"spec":{"rules":[{"backendRefs":[{"name":"dns","port":53}]}]}}' >/dev/null
bg_run udpwatch curl -sN --max-time 20 --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" \
    "$K8S_URL/apis/gateway.networking.k8s.io/v1alpha2/udproutes?watch=1"
check "a udproutes watch is open" k8s_wait_watches "$K" gateway.networking.k8s.io/udproutes 1
kc delete crd udproutes.gateway.networking.k8s.io >/dev/null 2>&1
check "deleting the CRD ends its watches" gone "$PID_udpwatch" 100
check "after its objects were DELETED" is "$(jq -r '.type' "$WORK/udpwatch.log" | tr '\n' ' ')" "ADDED DELETED "
status_is "the kind is no longer served" 404 NotFound "$(api GET /apis/gateway.networking.k8s.io/v1alpha2/udproutes)"

# ------------------------------------------------------------------ deleting a namespace
kc create namespace doomed >/dev/null
json POST $GW/namespaces/doomed/httproutes "${ROUTE_JSON/\"shop\"/\"doomed-route\"}" >/dev/null
kc delete namespace doomed >"$WORK/out" 2>&1
check "kubectl delete namespace" grep -q 'deleted' "$WORK/out"
ns_gone() { [ "$(api GET /api/v1/namespaces/doomed)" = 404 ]; }
check "the namespace goes away" wait_for 10 ns_gone
expect_status "with what was in it" 200 "$(api GET "$GW/httproutes?fieldSelector=metadata.namespace%3Ddoomed")"
check "no route is left in it" is "$(jb '.items|length')" 0

finish

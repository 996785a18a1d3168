#!/usr/bin/env bash
# test_k8s_reconcile.sh — the Kubernetes source's reconcile loops, driven with kubectl
# against the test Kubernetes API server:
#   1. back-off: a Gateway whose certificateRef Secret is no certificate fails to
#      reconcile and is requeued at 1 s, 2 s, 4 s, then at k8s.max_backoff (4 s here),
#      as its log lines and sextant_k8s_reconcile_backoff_seconds say; meanwhile another
#      Gateway is written at once; fixing the Secret reconciles it (config written,
#      listener ResolvedRefs=True) and forgets its failures;
#   2. route conflict: a GRPCRoute sharing a hostname with an older HTTPRoute on a
#      listener (named to sort first) is Accepted=False (Conflicted), naming the older,
#      which alone is served; once the older goes, the GRPCRoute is accepted and served;
#   3. finalizer: the GatewayClass of ours gets sextant.dev/finalizer; `kubectl delete` of
#      it waits while Gateways use it, its status naming them
#      (sextant.dev/DeletionBlocked), and completes when the last one goes;
#   4. resync: a second replica with k8s.resync at 2 s reconciles every object again
#      without a watch event (no ADDED/MODIFIED/DELETED seen meanwhile), and so finds a
#      certificate that expired in the meantime (listener ResolvedRefs=False).
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-reconcile
conf_services || exit 1
k8s_source_init || exit 1
for f in 00-namespace 10-gatewayclass 30-service 31-endpointslice; do
    k8s_apply "$SRC/tests/k8s/examples/$f.yaml" || exit 1
done

kc() { k8s_kubectl "$K8S_DIR" "$@"; }
metric_sum() { # metric_sum PORT PREFIX: the sum of the /metrics lines starting with PREFIX
    curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
        awk -v p="$2" 'index($1, p) == 1 { s += $2 } END { print s + 0 }'
}
at_least() { [ "$(metric_sum "$1" "$2")" -ge "$3" ]; }
# gw_json NS NAME: the Gateway as the API server holds it, in $WORK/gw.json
gw_json() { kc get gateway -n "$1" "$2" -o json >"$WORK/gw.json" 2>/dev/null; }
# listener_cond NS NAME LISTENER TYPE STATUS [REASON]
listener_cond() {
    gw_json "$1" "$2" && jq -e --arg l "$3" --arg t "$4" --arg s "$5" --arg r "${6:-}" \
        '.status.listeners[] | select(.name == $l) | .conditions[] |
         select(.type == $t and .status == $s and ($r == "" or .reason == $r))' "$WORK/gw.json" >/dev/null
}
gw_programmed() { gw_json "$1" "$2" && jq -e '.status.conditions[] | select(.type == "Programmed" and .status == "True")' "$WORK/gw.json" >/dev/null; }

# make_cert NAME SECONDS: a Secret of type kubernetes.io/tls in shop holding a
# self-signed certificate for *.shop.example valid from a minute ago for SECONDS more.
make_cert() {
    /usr/bin/python3 - "$1" "$2" >"$WORK/secret-$1.json" <<'PY' || return 1
import base64, datetime, json, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
name, secs = sys.argv[1], int(sys.argv[2])
key = ec.generate_private_key(ec.SECP256R1())
now = datetime.datetime.now(datetime.timezone.utc)
subj = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "*.shop.example")])
cert = (x509.CertificateBuilder().subject_name(subj).issuer_name(subj).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(seconds=secs))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("*.shop.example")]), critical=False)
        .sign(key, hashes.SHA256()))
b64 = lambda b: base64.b64encode(b).decode()
print(json.dumps({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": name, "namespace": "shop"},
                  "data": {"tls.crt": b64(cert.public_bytes(serialization.Encoding.PEM)),
                           "tls.key": b64(key.private_bytes(serialization.Encoding.PEM,
                                                            serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()))}}))
PY
    k8s_apply "$WORK/secret-$1.json"
}
# tls_gateway NAME SECRET: a Gateway of class sextant with one HTTPS listener "https".
tls_gateway() {
    k8s_apply - <<EOF
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: $1
  namespace: shop
spec:
  gatewayClassName: sextant
  listeners:
    - name: https
      port: 443
      protocol: HTTPS
      hostname: "*.shop.example"
      tls:
        certificateRefs:
          - name: $2
EOF
}

export SEXTANT_K8S_MAX_BACKOFF=4s
k8s_source_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

# ---------------------------------------------------------------- 1. back-off
k8s_apply - <<'EOF' || exit 1
apiVersion: v1
kind: Secret
type: kubernetes.io/tls
metadata:
  name: shop-cert
  namespace: shop
data:
  tls.crt: bm90IGEgY2VydGlmaWNhdGUK
  tls.key: bm90IGEga2V5Cg==
EOF
tls_gateway tls shop-cert || exit 1
check "the Gateway with a Secret that is no certificate: listener ResolvedRefs=False (InvalidCertificateRef)" \
    wait_for 20 listener_cond shop tls https ResolvedRefs False InvalidCertificateRef
check "its reconcile is requeued four times" \
    wait_for 30 at_least "$R1_HTTP" 'sextant_k8s_requeues_total{kind="Gateway"}' 4
delays=$(sed -n 's/.*Gateway shop\/tls: reconcile failed (invalid): .*requeued in \([0-9.]*\)s (attempt \([0-9]*\)).*/\2:\1/p' \
    "$WORK/r1.log" | head -n 4 | tr '\n' ' ')
check "the log shows the delays 1 s, 2 s, 4 s, then k8s.max_backoff (4 s): $delays" [ "$delays" = "1:1 2:2 3:4 4:4 " ]
check "the log says why: the listener's ResolvedRefs" \
    grep -q 'Gateway shop/tls: reconcile failed (invalid): listener https: ResolvedRefs=False (InvalidCertificateRef)' "$WORK/r1.log"
b1=$(metric_sum "$R1_HTTP" 'sextant_k8s_reconcile_backoff_seconds_bucket{kind="Gateway",le="1"}')
b2=$(metric_sum "$R1_HTTP" 'sextant_k8s_reconcile_backoff_seconds_bucket{kind="Gateway",le="2"}')
b4=$(metric_sum "$R1_HTTP" 'sextant_k8s_reconcile_backoff_seconds_bucket{kind="Gateway",le="4"}')
check "sextant_k8s_reconcile_backoff_seconds holds one delay of 1 s, one of 2 s, the rest 4 s ($b1 $b2 $b4)" \
    [ "$b1 $b2" = "1 2" -a "$b4" -ge 4 ]
check "sextant_k8s_reconcile_total counts the failures as invalid" \
    at_least "$R1_HTTP" 'sextant_k8s_reconcile_total{kind="Gateway",result="invalid"}' 4

# Another Gateway is not held up by the failing one.
k8s_apply "$SRC/tests/k8s/examples/20-gateway.yaml" || exit 1
k8s_apply "$SRC/tests/k8s/examples/40-httproute.yaml" || exit 1
web_written() { [ -n "$(k8s_config_id shop web)" ]; }
check "meanwhile the Gateway shop/web is written and Programmed" wait_for 20 gw_programmed shop web
check "... its config exists" web_written
# tls_served: the config of shop/tls serves a certificate
tls_served() {
    local id
    id=$(k8s_config_id shop tls)
    [ -n "$id" ] && [ "$(conf_rest GET "/api/v1/configs/$id")" = 200 ] && jtrue '(j.spec.secrets || []).length > 0'
}
check "... while shop/tls still fails" listener_cond shop tls https ResolvedRefs False InvalidCertificateRef
tls_not_served() { ! tls_served; }
check "... and serves no certificate" tls_not_served

make_cert shop-cert 86400 || exit 1
check "the Secret fixed: the listener is ResolvedRefs=True" wait_for 20 listener_cond shop tls https ResolvedRefs True
check "... and the Gateway's config serves the certificate" wait_for 10 tls_served
check "the log says it reconciled after its failed attempts" \
    grep -Eq 'Gateway shop/tls reconciled after [0-9]+ failed attempts' "$WORK/r1.log"
requeues=$(metric_sum "$R1_HTTP" 'sextant_k8s_requeues_total{kind="Gateway"}')
sleep_until_quiet() { # two passes' worth: nothing requeued any more
    local before=$1
    sleep 5
    [ "$(metric_sum "$R1_HTTP" 'sextant_k8s_requeues_total{kind="Gateway"}')" = "$before" ]
}
check "a success forgets the failures: no requeue of a Gateway follows (5 s watched)" sleep_until_quiet "$requeues"

# ---------------------------------------------------------------- 2. route conflict
# The HTTPRoute shop/shop (hostname shop.example.com on listener http of shop/web) was
# created seconds ago; a GRPCRoute for the same hostname comes now, named to sort first.
k8s_apply - <<'EOF' || exit 1
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: a-grpc
  namespace: shop
spec:
  parentRefs:
    - name: web
      sectionName: http
  hostnames:
    - shop.example.com
  rules:
    - backendRefs:
        - name: shop-api
          port: 8080
EOF
# route_accepted KIND NAME STATUS [REASON [MESSAGE-REGEX]]: the route's parent web says so
route_accepted() {
    kc get "$1" -n shop "$2" -o json >"$WORK/route.json" 2>/dev/null &&
        jq -e --arg s "$3" --arg r "${4:-}" --arg m "${5:-}" '[.status.parents[] |
            select(.controllerName == "sextant.dev/gateway-controller" and .parentRef.name == "web") |
            .conditions[] | select(.type == "Accepted" and .status == $s and ($r == "" or .reason == $r)
            and ($m == "" or (.message | test($m))))] | length == 1' "$WORK/route.json" >/dev/null
}
check "the younger GRPCRoute on the HTTPRoute's hostname: Accepted=False (Conflicted), naming the older" \
    wait_for 20 route_accepted grpcroute a-grpc False Conflicted '^the older HTTPRoute shop/shop serves the same hostnames on listener http of Gateway shop/web$'
check "the older HTTPRoute keeps the listener: Accepted=True" route_accepted httproute shop True Accepted
served_routes() { # served_routes H G: the config of shop/web has H HTTP and G gRPC routes
    local id
    id=$(k8s_config_id shop web)
    [ -n "$id" ] && [ "$(conf_rest GET "/api/v1/configs/$id")" = 200 ] &&
        jtrue "(j.spec.http_routes || []).length === $1 && (j.spec.grpc_routes || []).length === $2"
}
check "the config of shop/web serves the HTTPRoute alone" served_routes 1 0
kc delete httproute -n shop shop >/dev/null 2>&1
check "the older HTTPRoute deleted: the GRPCRoute is Accepted" wait_for 20 route_accepted grpcroute a-grpc True Accepted
check "... and served" wait_for 10 served_routes 0 1

# ---------------------------------------------------------------- 3. finalizer
class_has_finalizer() {
    [ "$(kc get gatewayclass sextant -o jsonpath='{.metadata.finalizers}' 2>/dev/null)" = '["sextant.dev/finalizer"]' ]
}
check "the GatewayClass sextant gets the finalizer sextant.dev/finalizer" wait_for 20 class_has_finalizer
out=$(kc delete gatewayclass sextant --wait=false 2>&1)
check "kubectl delete gatewayclass sextant --wait=false: $out" grep -q deleted <<<"$out"
# blocked MESSAGE-REGEX: the class carries DeletionBlocked=True (InUse) with such a message
blocked() {
    kc get gatewayclass sextant -o json >"$WORK/class.json" 2>/dev/null &&
        jq -e --arg m "$1" '.metadata.deletionTimestamp != null and
            ([.status.conditions[] | select(.type == "sextant.dev/DeletionBlocked" and .status == "True"
              and .reason == "InUse" and (.message | test($m)))] | length == 1)' "$WORK/class.json" >/dev/null
}
check "the class stays, its status naming both Gateways" \
    wait_for 20 blocked '^deletion waits for 2 objects still using it: Gateway shop/tls, Gateway shop/web$'
check "... and its Gateways keep their configs" web_written
kc delete gateway -n shop tls >/dev/null 2>&1
check "one Gateway deleted: the status names the other" \
    wait_for 20 blocked '^deletion waits for 1 object still using it: Gateway shop/web$'
tls_gone() { [ -z "$(k8s_config_id shop tls)" ]; }
check "... the deleted Gateway's config goes" wait_for 20 tls_gone
class_gone() { kc get gatewayclass sextant 2>&1 | grep -q NotFound; }
class_present() { kc get gatewayclass sextant >/dev/null 2>&1; }
check "... and the class is still there" class_present
kc delete gateway -n shop web >/dev/null 2>&1
check "the last Gateway deleted: the finalizer goes and the deletion completes" wait_for 20 class_gone
check "the log says the finalizer was removed" \
    grep -q 'GatewayClass sextant: finalizer sextant.dev/finalizer removed' "$WORK/r1.log"
conf_stop_serve r1

# ---------------------------------------------------------------- 4. resync
k8s_apply "$SRC/tests/k8s/examples/10-gatewayclass.yaml" || exit 1
make_cert short-cert 30 || exit 1
tls_gateway brief short-cert || exit 1
SEXTANT_K8S_RESYNC=2s k8s_source_serve r2 || exit 1
HTTP_PORT=$R2_HTTP
check "the Gateway with a certificate valid 30 s more is Programmed" wait_for 20 listener_cond shop brief https ResolvedRefs True
changes() { # watch events other than BOOKMARK
    curl -s --max-time 5 "http://127.0.0.1:$R2_HTTP/metrics" |
        awk '/^sextant_k8s_watch_events_total\{/ && !/type="BOOKMARK"/ { s += $2 } END { print s + 0 }'
}
r0=$(metric_sum "$R2_HTTP" 'sextant_k8s_resyncs_total')
check "a resync runs" wait_for 10 at_least "$R2_HTTP" 'sextant_k8s_resyncs_total' $((r0 + 1))
e0=$(changes)
g0=$(metric_sum "$R2_HTTP" 'sextant_k8s_reconcile_total{kind="Gateway"')
c0=$(metric_sum "$R2_HTTP" 'sextant_k8s_reconcile_total{kind="GatewayClass"')
r1=$(metric_sum "$R2_HTTP" 'sextant_k8s_resyncs_total')
check "two more resyncs run" wait_for 15 at_least "$R2_HTTP" 'sextant_k8s_resyncs_total' $((r1 + 2))
g1=$(metric_sum "$R2_HTTP" 'sextant_k8s_reconcile_total{kind="Gateway"')
c1=$(metric_sum "$R2_HTTP" 'sextant_k8s_reconcile_total{kind="GatewayClass"')
e1=$(changes)
check "they reconcile the Gateway and the GatewayClass again ($g0 -> $g1, $c0 -> $c1)" \
    [ "$g1" -ge $((g0 + 2)) -a "$c1" -ge $((c0 + 2)) ]
check "with no watch event in between other than bookmarks ($e0 -> $e1)" [ "$e1" = "$e0" ]
check "the certificate expired: a resync finds it, listener ResolvedRefs=False (InvalidCertificateRef)" \
    wait_for 60 listener_cond shop brief https ResolvedRefs False InvalidCertificateRef
check "the log says resync" grep -q 'resync: reconciling every watched object' "$WORK/r2.log"
conf_stop_serve r2
finish

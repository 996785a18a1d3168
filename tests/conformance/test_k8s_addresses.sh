#!/usr/bin/env bash
# test_k8s_addresses.sh — a Gateway's status.addresses from its data plane's Service, as
# an operator running Sextant without k8s.gateway_addresses sees it with kubectl.
#
# A Gateway "edge" and a Service of type LoadBalancer labelled
# gateway.networking.k8s.io/gateway-name=edge are applied to the test Kubernetes API
# server; one replica watches it. While the load balancer has no address the Gateway is
# Programmed=False (AddressNotAssigned) and its proxy group is served all the same; once
# the Service's status gets an ingress IP and host name (kubectl patch --subresource=status,
# as a cloud's load balancer controller writes it), the Gateway lists them and turns
# Programmed=True; a spec.addresses entry nothing gives is AddressNotUsable; deleting the
# Service removes the addresses.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/k8s_source.sh"

conf_init k8s-addresses
conf_services || exit 1
k8s_source_init || exit 1
k8s_apply_examples 00-namespace 10-gatewayclass || exit 1
{
    k8s_gateway edge shop http 8080 HTTP
    cat <<'EOF2'
---
apiVersion: v1
kind: Service
metadata:
  name: edge-proxy
  namespace: shop
  labels:
    gateway.networking.k8s.io/gateway-name: edge
spec:
  type: LoadBalancer
  selector:
    app: edge-proxy
  ports:
    - name: http
      port: 80
      targetPort: 8080
EOF2
} | k8s_apply - || exit 1

unset SEXTANT_K8S_GATEWAY_ADDRESSES
k8s_source_serve r1 || exit 1
HTTP_PORT=$R1_HTTP

kc() { k8s_kubectl "$K8S_DIR" "$@"; }
# gateway_is JQ: the Gateway's status satisfies the jq expression.
gateway_is() {
    kc get gateway edge -n shop -o json >"$WORK/gw.json" 2>/dev/null &&
        jq -e "$1" "$WORK/gw.json" >/dev/null
}
programmed() { # programmed STATUS REASON
    gateway_is ".status.conditions[] | select(.type == \"Programmed\") |
        .status == \"$1\" and .reason == \"$2\""
}

check "without an address the Gateway is Programmed=False, AddressNotAssigned" \
    wait_for 20 programmed False AddressNotAssigned
check "  the condition names the Service waiting for its load balancer" \
    gateway_is '.status.conditions[] | select(.type == "Programmed") | .message | test("shop/edge-proxy")'
check "  and no status.addresses is written" gateway_is '.status.addresses == null'
config_written() { [ -n "$(k8s_config_id shop edge)" ]; }
check "  its proxy group is written all the same" wait_for 10 config_written

kc patch service edge-proxy -n shop --subresource=status --type=merge \
    -p '{"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.20"},{"hostname":"lb.example.net"}]}}}' \
    >"$WORK/patch.out" 2>&1
check "kubectl patches the Service's load balancer status" [ $? = 0 ]
check "the Gateway lists the load balancer's IP and host name" \
    wait_for 20 gateway_is '.status.addresses == [{"type":"IPAddress","value":"198.51.100.20"},{"type":"Hostname","value":"lb.example.net"}]'
check "  and is Programmed=True" programmed True Programmed

kc patch gateway edge -n shop --type=merge \
    -p '{"spec":{"addresses":[{"type":"IPAddress","value":"198.51.100.99"}]}}' >"$WORK/patch2.out" 2>&1
check "a requested address no Service gives is AddressNotUsable" \
    wait_for 20 programmed False AddressNotUsable
kc patch gateway edge -n shop --type=json -p '[{"op":"remove","path":"/spec/addresses"}]' \
    >"$WORK/patch3.out" 2>&1
check "  and Programmed=True again once the request goes" wait_for 20 programmed True Programmed

kc delete service edge-proxy -n shop >"$WORK/delete.out" 2>&1
check "deleting the Service removes the addresses" wait_for 20 gateway_is '.status.addresses == null'
check "  and the Gateway stays Programmed=True (proxyless clients need no address)" \
    programmed True Programmed

conf_stop_serve r1
finish

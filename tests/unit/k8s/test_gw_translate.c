/*
 * test_gw_translate.c — the Gateway API translator on the scenarios of the Gateway API
 * conformance tests: the objects of each test (tests/k8s/fixtures/<test>.yaml on
 * base.yaml) in, the IR spec of each Gateway out, checked field by field and run
 * through Sextant's validation as the REST API would, and the status each object gets
 * with the conditions and reasons the conformance suite asserts.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/k8s/gw.h"
#include "tests/unit/k8s/gw_fixture.h"

#define GROUP_KEY "gateway.networking.k8s.io"

static fx_run *scenario(const char *file)
{
    static fx_run r;
    const char *files[] = {file, NULL};
    fx_translate(&r, files, NULL);
    return &r;
}

/* Asserts the listener status: supported kinds (NULL-terminated), attachedRoutes and
 * conditions Accepted, Programmed, ResolvedRefs (status/reason pairs) and no conflict. */
static void expect_listener(const json_t *gw_status, const char *name, const char *const *kinds,
                            json_int_t attached, const char *acc, const char *prog,
                            const char *refs, const char *refs_reason, json_int_t gen)
{
    const json_t *l = fx_listener(gw_status, name);
    json_t *want = json_array();
    for (size_t i = 0; kinds[i]; i++)
        json_array_append_new(want, json_pack("{s:s,s:s}", "group", GROUP_KEY, "kind", kinds[i]));
    tl_assert_json_equal(json_object_get(l, "supportedKinds"), want);
    json_decref(want);
    assert_int_equal(json_integer_value(json_object_get(l, "attachedRoutes")), attached);
    const json_t *conds = json_object_get(l, "conditions");
    fx_cond(conds, "Accepted", acc, strcmp(acc, "True") == 0 ? "Accepted" : "PortUnavailable", gen);
    fx_cond(conds, "Programmed", prog, strcmp(prog, "True") == 0 ? "Programmed" : "Invalid", gen);
    fx_cond(conds, "ResolvedRefs", refs, refs_reason, gen);
    fx_cond(conds, "Conflicted", "False", "NoConflicts", gen);
}

static const char *const HTTP_KINDS[] = {"HTTPRoute", "GRPCRoute", NULL};

/* ---------------------------------------------------------------- HTTPRouteSimpleSameNamespace */

TL_TEST(test_simple_same_namespace)
{
    fx_run *r = scenario("httproute-simple-same-namespace.yaml");
    const gw_gateway_out *g = fx_gateway(r, FX_NS, "same-namespace");
    assert_string_equal(g->group, FX_NS "/same-namespace");
    assert_string_equal(g->source_ref, "Gateway " FX_NS "/same-namespace");
    assert_null(g->error);
    tl_assert_json_is(
        g->spec,
        "{'listeners': [{'name': 'gateway-conformance-infra/same-namespace:80', 'port': 80,"
        "  'protocol': 'LISTENER_PROTOCOL_HTTP',"
        "  'attached_routes': ['gateway-conformance-infra/gateway-conformance-infra-test']}],"
        " 'http_routes': [{'name': 'gateway-conformance-infra-test',"
        "  'namespace': 'gateway-conformance-infra',"
        "  'parent_refs': [{'name': 'same-namespace', 'namespace': 'gateway-conformance-infra',"
        "                   'section_name': 'http'}],"
        "  'rules': [{'backend_refs': [{'name': 'infra-backend-v1:8080',"
        "     'namespace': 'gateway-conformance-infra', 'weight': 1}]}]}],"
        " 'backends': [{'name': 'infra-backend-v1:8080', 'namespace': 'gateway-conformance-infra',"
        "  'endpoints': [{'address': '10.1.1.11', 'port': 3000, 'healthy': true},"
        "                {'address': '10.1.1.12', 'port': 3000, 'healthy': true}]}]}");
    assert_int_equal(g->objects, 3);
    assert_int_equal(g->endpoints, 2);
    fx_expect_valid(g->spec);

    /* The route: accepted by the Gateway, every reference resolved, at generation 2. */
    const json_t *rs = fx_status(r, GW_HTTP_ROUTE, FX_NS, "gateway-conformance-infra-test");
    assert_int_equal(json_array_size(json_object_get(rs, "parents")), 1);
    const json_t *p = fx_parent(rs, FX_NS, "same-namespace", NULL);
    tl_assert_json_is(json_object_get(p, "parentRef"),
                      "{'group': 'gateway.networking.k8s.io', 'kind': 'Gateway',"
                      " 'namespace': 'gateway-conformance-infra', 'name': 'same-namespace'}");
    const json_t *c = fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 2);
    assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")), FX_NOW_TEXT);
    fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "True", "ResolvedRefs", 2);

    /* The Gateway: accepted, programmed, its address, one route on its listener. */
    const json_t *gs = fx_status(r, GW_GATEWAY, FX_NS, "same-namespace");
    fx_cond(json_object_get(gs, "conditions"), "Accepted", "True", "Accepted", 1);
    fx_cond(json_object_get(gs, "conditions"), "Programmed", "True", "Programmed", 1);
    tl_assert_json_is(json_object_get(gs, "addresses"),
                      "[{'type': 'IPAddress', 'value': '192.0.2.10'}]");
    expect_listener(gs, "http", HTTP_KINDS, 1, "True", "True", "True", "ResolvedRefs", 1);

    /* Our class is accepted; the other controller's class is not ours to write. */
    fx_cond(json_object_get(fx_status(r, GW_GATEWAY_CLASS, NULL, "sextant"), "conditions"),
            "Accepted", "True", "Accepted", 1);
    assert_null(fx_status_entry(r, GW_GATEWAY_CLASS, NULL, "other"));
    assert_int_equal(r->out.n_gateways, 3);
    assert_int_equal(r->out.counters.gateways, 3);
    assert_int_equal(r->out.counters.routes, 1);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- HTTPRouteCrossNamespace */

TL_TEST(test_cross_namespace)
{
    fx_run *r = scenario("httproute-cross-namespace.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "backend-namespaces");
    const json_t *route = fx_named(g->spec, "http_routes", "cross-namespace");
    assert_string_equal(json_string_value(json_object_get(route, "namespace")),
                        "gateway-conformance-web-backend");
    tl_assert_json_is(json_object_get(g->spec, "backends"),
                      "[{'name': 'web-backend:8080', 'namespace':"
                      " 'gateway-conformance-web-backend',"
                      " 'endpoints': [{'address': '10.2.1.11', 'port': 3000, 'healthy': true,"
                      "  'zone': 'zone-a'}, {'address': '10.2.1.12', 'port': 3000,"
                      "  'healthy': true, 'zone': 'zone-b'}]}]");
    const json_t *p =
        fx_parent(fx_status(r, GW_HTTP_ROUTE, "gateway-conformance-web-backend", "cross-namespace"),
                  FX_NS, "backend-namespaces", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "True", "ResolvedRefs", 0);

    /* A listener that admits only its own namespace refuses the same route. */
    p = fx_parent(fx_status(r, GW_HTTP_ROUTE, "gateway-conformance-web-backend",
                            "cross-namespace-not-allowed"),
                  FX_NS, "same-namespace", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "False", "NotAllowedByListeners", 0);
    g = fx_gateway(r, FX_NS, "same-namespace");
    assert_null(json_object_get(g->spec, "http_routes"));
    expect_listener(fx_status(r, GW_GATEWAY, FX_NS, "same-namespace"), "http", HTTP_KINDS, 0,
                    "True", "True", "True", "ResolvedRefs", 1);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- HTTPRouteReferenceGrant */

TL_TEST(test_reference_grant)
{
    fx_run *r = scenario("httproute-reference-grant.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "same-namespace");
    const json_t *route = fx_named(g->spec, "http_routes", "reference-grant");
    tl_assert_json_is(json_object_get(route, "rules"),
                      "[{'backend_refs': [{'name': 'web-backend:8080', 'namespace':"
                      " 'gateway-conformance-web-backend', 'weight': 1}]}]");
    const json_t *p = fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, "reference-grant"), FX_NS,
                                "same-namespace", NULL);
    fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "True", "ResolvedRefs", 0);
    fx_run_free(r);
}

/* HTTPRouteInvalidReferenceGrant: grants in the wrong namespace, or from the wrong
 * group, kind or namespace, or to the wrong group, kind or name, allow nothing. */
TL_TEST(test_invalid_reference_grant)
{
    fx_run *r = scenario("httproute-invalid-reference-grant.yaml");
    const json_t *p = fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, "reference-grant"), FX_NS,
                                "same-namespace", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    const json_t *c =
        fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "False", "RefNotPermitted", 0);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                           "gateway-conformance-web-backend/web-backend"));
    /* Nothing reaches web-backend: the rule has no backend left and is not served. */
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "same-namespace");
    assert_null(json_object_get(g->spec, "http_routes"));
    assert_null(json_object_get(g->spec, "backends"));
    expect_listener(fx_status(r, GW_GATEWAY, FX_NS, "same-namespace"), "http", HTTP_KINDS, 1,
                    "True", "True", "True", "ResolvedRefs", 1);
    fx_run_free(r);
}

/* ----------------------------------------------------------------
 * HTTPRouteInvalidBackendRefUnknownKind */

TL_TEST(test_unknown_kind)
{
    fx_run *r = scenario("httproute-invalid-backendref-unknown-kind.yaml");
    const json_t *p =
        fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, "invalid-backend-ref-unknown-kind"), FX_NS,
                  "same-namespace", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "False", "InvalidKind", 0);
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "same-namespace");
    assert_null(json_object_get(g->spec, "http_routes"));
    fx_cond(json_object_get(fx_status(r, GW_GATEWAY, FX_NS, "same-namespace"), "conditions"),
            "Accepted", "True", "Accepted", 1);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- HTTPRouteHostnameIntersection */

static void expect_hostnames(const json_t *spec, const char *route, const char *want_json)
{
    const json_t *ro = fx_find(json_object_get(spec, "http_routes"), "name", route);
    tl_assert_json_is(json_object_get(ro, "hostnames"), want_json);
}

TL_TEST(test_hostname_intersection)
{
    fx_run *r = scenario("httproute-hostname-intersection.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "httproute-hostname-intersection");
    /* Each route keeps only the hostnames its listener serves. */
    expect_hostnames(g->spec, "specific-host-matches-listener-specific-host",
                     "['very.specific.com']");
    expect_hostnames(g->spec, "specific-host-matches-listener-wildcard-host",
                     "['bar.wildcard.io', 'foo.bar.wildcard.io', 'foo.wildcard.io']");
    expect_hostnames(g->spec, "wildcard-host-matches-listener-specific-host",
                     "['very.specific.com']");
    expect_hostnames(g->spec, "wildcard-host-matches-listener-wildcard-host",
                     "['*.anotherwildcard.io']");
    /* Three listeners share port 80: one IR listener whose routes carry the hostnames. */
    assert_int_equal(json_array_size(json_object_get(g->spec, "listeners")), 1);
    const json_t *l = json_array_get(json_object_get(g->spec, "listeners"), 0);
    assert_null(json_object_get(l, "hostnames"));
    assert_int_equal(json_array_size(json_object_get(l, "attached_routes")), 4);

    const char *accepted[] = {"specific-host-matches-listener-specific-host",
                              "specific-host-matches-listener-wildcard-host",
                              "wildcard-host-matches-listener-specific-host",
                              "wildcard-host-matches-listener-wildcard-host"};
    for (size_t i = 0; i < 4; i++) {
        const json_t *p = fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, accepted[i]), FX_NS,
                                    "httproute-hostname-intersection", NULL);
        fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    }
    const json_t *p = fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, "no-intersecting-hosts"), FX_NS,
                                "httproute-hostname-intersection", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "False", "NoMatchingListenerHostname", 0);
    const json_t *gs = fx_status(r, GW_GATEWAY, FX_NS, "httproute-hostname-intersection");
    expect_listener(gs, "listener-1", HTTP_KINDS, 2, "True", "True", "True", "ResolvedRefs", 0);
    expect_listener(gs, "listener-2", HTTP_KINDS, 1, "True", "True", "True", "ResolvedRefs", 0);
    expect_listener(gs, "listener-3", HTTP_KINDS, 1, "True", "True", "True", "ResolvedRefs", 0);

    /* A listener without hostname takes the route's hostnames as they are. */
    g = fx_gateway(r, FX_NS, "httproute-hostname-intersection-all");
    fx_expect_valid(g->spec);
    expect_hostnames(g->spec, "httproute-hostname-intersection-all",
                     "['first.com', 'second.com', 'sub.first.com', 'sub.second.com']");
    fx_run_free(r);
}

/* ----------------------------------------------------------------
 * HTTPRouteListenerHostnameMatching */

TL_TEST(test_listener_hostname_matching)
{
    fx_run *r = scenario("httproute-listener-hostname-matching.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "httproute-listener-hostname-matching");
    /* Each route answers exactly the hostnames of the listeners it names: foo.bar.com
     * belongs to listener-2 alone, so backend-v3 (listener-3, *.bar.com) does not get it. */
    expect_hostnames(g->spec, "backend-v1", "['bar.com']");
    expect_hostnames(g->spec, "backend-v2", "['foo.bar.com']");
    expect_hostnames(g->spec, "backend-v3", "['*.bar.com', '*.foo.com']");
    const json_t *v3 = fx_named(g->spec, "http_routes", "backend-v3");
    tl_assert_json_is(json_object_get(v3, "parent_refs"),
                      "[{'name': 'httproute-listener-hostname-matching', 'namespace':"
                      " 'gateway-conformance-infra', 'section_name': 'listener-3'},"
                      " {'name': 'httproute-listener-hostname-matching', 'namespace':"
                      " 'gateway-conformance-infra', 'section_name': 'listener-4'}]");

    const json_t *rs = fx_status(r, GW_HTTP_ROUTE, FX_NS, "backend-v3");
    assert_int_equal(json_array_size(json_object_get(rs, "parents")), 2);
    for (size_t i = 0; i < 2; i++) {
        const json_t *p = fx_parent(rs, FX_NS, "httproute-listener-hostname-matching",
                                    i == 0 ? "listener-3" : "listener-4");
        fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    }
    const json_t *gs = fx_status(r, GW_GATEWAY, FX_NS, "httproute-listener-hostname-matching");
    const char *names[] = {"listener-1", "listener-2", "listener-3", "listener-4"};
    for (size_t i = 0; i < 4; i++)
        expect_listener(gs, names[i], HTTP_KINDS, 1, "True", "True", "True", "ResolvedRefs", 0);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- HTTPRouteMatching */

TL_TEST(test_matching)
{
    fx_run *r = scenario("httproute-matching.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "same-namespace");
    const json_t *route = fx_named(g->spec, "http_routes", "matching");
    tl_assert_json_is(
        json_object_get(route, "rules"),
        "[{'matches': [{'path': '/', 'path_type': 'PathPrefix'},"
        "              {'headers': [{'name': 'version', 'value': 'one'}]}],"
        "  'backend_refs': [{'name': 'infra-backend-v1:8080',"
        "                    'namespace': 'gateway-conformance-infra', 'weight': 1}]},"
        " {'matches': [{'path': '/v2', 'path_type': 'PathPrefix'},"
        "              {'headers': [{'name': 'version', 'value': 'two'}]}],"
        "  'backend_refs': [{'name': 'infra-backend-v2:8080',"
        "                    'namespace': 'gateway-conformance-infra', 'weight': 1}]}]");
    assert_null(json_object_get(route, "hostnames"));
    /* infra-backend-v2's only port has no name: its EndpointSlice port has none either. */
    const json_t *b = fx_named(g->spec, "backends", "infra-backend-v2:8080");
    assert_int_equal(json_array_size(json_object_get(b, "endpoints")), 2);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- HTTPRouteWeight */

TL_TEST(test_weight)
{
    fx_run *r = scenario("httproute-weight.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "same-namespace");
    const json_t *route = fx_named(g->spec, "http_routes", "weighted-backends");
    tl_assert_json_is(
        json_object_get(route, "rules"),
        "[{'backend_refs': ["
        "  {'name': 'infra-backend-v1:8080', 'namespace': 'gateway-conformance-infra', "
        "'weight': 70},"
        "  {'name': 'infra-backend-v2:8080', 'namespace': 'gateway-conformance-infra', "
        "'weight': 30},"
        "  {'name': 'infra-backend-v3:8080', 'namespace': 'gateway-conformance-infra',"
        "   'weight': 0}]}]");
    assert_int_equal(json_array_size(json_object_get(g->spec, "backends")), 3);
    assert_int_equal(g->endpoints, 5);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- GatewayInvalidTLSConfiguration
 */

static void expect_bad_certificate(const fx_run *r, const char *ns, const char *gw,
                                   const char *reason)
{
    const json_t *gs = fx_status(r, GW_GATEWAY, ns, gw);
    expect_listener(gs, "https", HTTP_KINDS, 0, "True", "False", "False", reason, 0);
    /* No listener can be served: the Gateway is not programmed, and its spec has no
     * listener (nor the secret it could not use). */
    fx_cond(json_object_get(gs, "conditions"), "Programmed", "False", "Invalid", 0);
    const gw_gateway_out *g = fx_valid_gateway(r, ns, gw);
    assert_null(json_object_get(g->spec, "listeners"));
    assert_null(json_object_get(g->spec, "secrets"));
}

TL_TEST(test_invalid_tls_configuration)
{
    fx_run *r = scenario("gateway-invalid-tls-configuration.yaml");
    const char *invalid[] = {"gateway-certificate-nonexistent-secret",
                             "gateway-certificate-unsupported-group",
                             "gateway-certificate-unsupported-kind",
                             "gateway-certificate-malformed-secret", "gateway-certificate-expired"};
    for (size_t i = 0; i < 5; i++)
        expect_bad_certificate(r, FX_NS, invalid[i], "InvalidCertificateRef");
    const json_t *c = fx_cond(
        json_object_get(
            fx_listener(fx_status(r, GW_GATEWAY, FX_NS, "gateway-certificate-expired"), "https"),
            "conditions"),
        "ResolvedRefs", "False", "InvalidCertificateRef", 0);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")), "expired"));
    expect_bad_certificate(r, "gateway-conformance-web-backend",
                           "gateway-certificate-other-namespace", "RefNotPermitted");

    /* The valid one terminates TLS with the Secret's certificate and key. */
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "gateway-certificate-valid");
    tl_assert_json_is(
        json_object_get(g->spec, "listeners"),
        "[{'name': 'gateway-conformance-infra/gateway-certificate-valid:443', 'port': 443,"
        "  'protocol': 'LISTENER_PROTOCOL_HTTPS', 'hostnames': ['second-example.org'],"
        "  'tls': {'secret_refs': ['gateway-conformance-infra/tls-validity-checks-certificate']},"
        "  'attached_routes': ['gateway-conformance-infra/https-route']}]");
    const json_t *secret = json_array_get(json_object_get(g->spec, "secrets"), 0);
    assert_string_equal(json_string_value(json_object_get(secret, "name")),
                        "tls-validity-checks-certificate");
    assert_non_null(strstr(json_string_value(json_object_get(secret, "cert_pem")),
                           "-----BEGIN CERTIFICATE-----"));
    assert_non_null(
        strstr(json_string_value(json_object_get(secret, "key_pem")), "PRIVATE KEY-----"));
    expect_listener(fx_status(r, GW_GATEWAY, FX_NS, "gateway-certificate-valid"), "https",
                    HTTP_KINDS, 1, "True", "True", "True", "ResolvedRefs", 0);
    expect_hostnames(g->spec, "https-route", "['second-example.org']");
    fx_run_free(r);
}

/* ---------------------------------------------------------------- GatewayWithAttachedRoutes */

TL_TEST(test_with_attached_routes)
{
    fx_run *r = scenario("gateway-with-attached-routes.yaml");
    static const char *const http_only[] = {"HTTPRoute", NULL};
    expect_listener(fx_status(r, GW_GATEWAY, FX_NS, "gateway-with-one-attached-route"), "http",
                    http_only, 1, "True", "True", "True", "ResolvedRefs", 0);
    /* Two routes attach; the one whose hostname the listener does not serve does not. */
    expect_listener(fx_status(r, GW_GATEWAY, FX_NS, "gateway-with-two-attached-routes"), "http",
                    http_only, 2, "True", "True", "True", "ResolvedRefs", 0);
    const json_t *p = fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, "http-route-not-accepted"),
                                FX_NS, "gateway-with-two-attached-routes", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "False", "NoMatchingListenerHostname", 0);
    /* A listener that cannot be served still counts the routes attached to it. */
    const json_t *gs =
        fx_status(r, GW_GATEWAY, FX_NS, "unresolved-gateway-with-one-attached-unresolved-route");
    expect_listener(gs, "tls", http_only, 1, "True", "False", "False", "InvalidCertificateRef", 0);
    p = fx_parent(fx_status(r, GW_HTTP_ROUTE, FX_NS, "http-route-4"), FX_NS,
                  "unresolved-gateway-with-one-attached-unresolved-route", "tls");
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "False", "BackendNotFound", 0);

    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "gateway-with-two-attached-routes");
    expect_hostnames(g->spec, "http-route-2", "['foo.example.com']");
    expect_hostnames(g->spec, "http-route-3", "['foo.example.com']");
    json_t *hosts = tl_json("['foo.example.com']");
    tl_assert_json_equal(
        json_object_get(json_array_get(json_object_get(g->spec, "listeners"), 0), "hostnames"),
        hosts);
    json_decref(hosts);
    fx_expect_valid(fx_gateway(r, FX_NS, "gateway-with-one-attached-route")->spec);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- GRPCRouteExactMethodMatching */

TL_TEST(test_grpc_exact_method)
{
    fx_run *r = scenario("grpcroute-exact-method-matching.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "same-namespace");
    const json_t *route = fx_named(g->spec, "grpc_routes", "exact-matching");
    tl_assert_json_is(
        json_object_get(route, "rules"),
        "[{'matches': [{'service': 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho',"
        "               'method': 'Echo'}],"
        "  'backend_refs': [{'name': 'grpc-infra-backend-v1:8080:grpc',"
        "                    'namespace': 'gateway-conformance-infra', 'weight': 1}]},"
        " {'matches': [{'service': 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho',"
        "               'method': 'EchoTwo'}],"
        "  'backend_refs': [{'name': 'grpc-infra-backend-v2:8080:grpc',"
        "                    'namespace': 'gateway-conformance-infra', 'weight': 1}]}]");
    /* gRPC backends are spoken to over HTTP/2. */
    const json_t *b = fx_named(g->spec, "backends", "grpc-infra-backend-v1:8080:grpc");
    assert_string_equal(json_string_value(json_object_get(b, "protocol")), "GRPC");
    const json_t *l = json_array_get(json_object_get(g->spec, "listeners"), 0);
    tl_assert_json_is(json_object_get(l, "attached_routes"),
                      "['gateway-conformance-infra/exact-matching']");
    const json_t *p = fx_parent(fx_status(r, GW_GRPC_ROUTE, FX_NS, "exact-matching"), FX_NS,
                                "same-namespace", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    fx_cond(json_object_get(p, "conditions"), "ResolvedRefs", "True", "ResolvedRefs", 0);
    fx_run_free(r);
}

/* ---------------------------------------------------------------- TLSRouteSimpleSameNamespace */

TL_TEST(test_tlsroute_simple)
{
    fx_run *r = scenario("tlsroute-simple-same-namespace.yaml");
    const gw_gateway_out *g = fx_valid_gateway(r, FX_NS, "gateway-tlsroute");
    tl_assert_json_is(
        g->spec,
        "{'listeners': [{'name': 'gateway-conformance-infra/gateway-tlsroute:443', 'port': 443,"
        "  'protocol': 'LISTENER_PROTOCOL_TLS_PASSTHROUGH',"
        "  'attached_routes': ['gateway-conformance-infra/gateway-conformance-infra-test']}],"
        " 'stream_routes': [{'name': 'gateway-conformance-infra-test',"
        "  'namespace': 'gateway-conformance-infra', 'kind': 'ROUTE_KIND_TLS',"
        "  'parent_refs': [{'name': 'gateway-tlsroute', 'namespace': 'gateway-conformance-infra',"
        "                   'section_name': 'https'}],"
        "  'rules': [{'port': 443, 'sni_hostname': 'abc.example.com',"
        "             'mode': 'TLS_ROUTE_MODE_PASSTHROUGH',"
        "             'backend_refs': [{'name': 'tcp-backend:8443',"
        "               'namespace': 'gateway-conformance-infra', 'weight': 1}]}]}],"
        " 'backends': [{'name': 'tcp-backend:8443', 'namespace': 'gateway-conformance-infra',"
        "  'endpoints': [{'address': '10.1.4.11', 'port': 8443, 'healthy': true}]}]}");
    static const char *const tls_only[] = {"TLSRoute", NULL};
    expect_listener(fx_status(r, GW_GATEWAY, FX_NS, "gateway-tlsroute"), "https", tls_only, 1,
                    "True", "True", "True", "ResolvedRefs", 0);
    const json_t *p = fx_parent(fx_status(r, GW_TLS_ROUTE, FX_NS, "gateway-conformance-infra-test"),
                                FX_NS, "gateway-tlsroute", NULL);
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    fx_run_free(r);
}

TL_MAIN()

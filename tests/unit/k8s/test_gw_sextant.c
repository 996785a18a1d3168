/*
 * test_gw_sextant.c — Sextant's own policies (sextant.dev) in the Gateway API translator:
 * what they give the backends of the Services, routes, rules, Gateways and listeners they
 * target, the most specific target then the oldest policy winning, a backend split where
 * the routes sharing it get different policies, what a group's data planes cannot take
 * left out of that Gateway alone, and status.ancestors (Accepted, Conflicted, Invalid,
 * TargetNotFound).
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/k8s/gw.h"
#include "tests/unit/k8s/gw_fixture.h"

#define GROUP "gateway-conformance-infra/same-namespace"

static const char *const FILES[] = {"httproute-simple-same-namespace.yaml", "sextant-policies.yaml",
                                    NULL};

static const json_t *backend_v1(const gw_gateway_out *g)
{
    const json_t *b =
        fx_find(json_object_get(g->spec, "backends"), "name", "infra-backend-v1:8080");
    assert_non_null(b);
    return b;
}

/* The single entry of ours in the status of policy kind/name, with ancestorRef ref. */
static const json_t *ancestor(const fx_run *r, gw_kind kind, const char *name, const char *ref)
{
    const json_t *a = json_object_get(fx_status(r, kind, FX_NS, name), "ancestors");
    assert_int_equal(json_array_size(a), 1);
    const json_t *e = json_array_get(a, 0);
    tl_assert_json_is(json_object_get(e, "ancestorRef"), ref);
    assert_string_equal(json_string_value(json_object_get(e, "controllerName")), FX_CONTROLLER);
    return json_object_get(e, "conditions");
}

/* fx_translate of files with the group data planes planes (n of them) and one gateway
 * address, 192.0.2.10. */
static void translate_for_planes(fx_run *r, const char *const *files, const gw_group_planes *planes,
                                 size_t n)
{
    static const char *const addrs[] = {"192.0.2.10"};
    gw_options o = {.gateway_addresses = addrs,
                    .n_gateway_addresses = 1,
                    .group_planes = planes,
                    .n_group_planes = n};
    fx_translate(r, files, &o);
}

static const char *const GW_REF = "{'group': 'gateway.networking.k8s.io', 'kind': 'Gateway',"
                                  " 'namespace': 'gateway-conformance-infra',"
                                  " 'name': 'same-namespace'}";

/* The default data planes (every one): load balancing reaches the backend, the
 * control-only policies do not, and say why. */
TL_TEST(test_default_planes)
{
    fx_run r;
    fx_translate(&r, FILES, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "same-namespace");
    const json_t *b = backend_v1(g);
    tl_assert_json_is(json_object_get(b, "load_balancing"),
                      "{'algorithm': 'LOAD_BALANCING_ALGORITHM_MAGLEV', 'hash_on': 'Cookie',"
                      " 'hash_key': 'session', 'maglev_table_size': 65537}");
    assert_null(json_object_get(b, "ai_service"));
    assert_null(json_object_get(b, "token_policy"));
    assert_null(json_object_get(b, "wasm_plugin"));

    fx_cond(ancestor(&r, GW_BACKEND_LB_POLICY, "older", GW_REF), "Accepted", "True", "Accepted", 3);
    const json_t *c = fx_cond(ancestor(&r, GW_BACKEND_LB_POLICY, "younger", GW_REF), "Accepted",
                              "False", "Conflicted", 1);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                           "BackendLBPolicy gateway-conformance-infra/older, older"));
    /* Not used by the Gateway, and invalid: said on its target. */
    c = fx_cond(ancestor(&r, GW_BACKEND_LB_POLICY, "not-prime",
                         "{'group': '', 'kind': 'Service', 'namespace': "
                         "'gateway-conformance-infra', 'name': 'infra-backend-v2'}"),
                "Accepted", "False", "Invalid", 1);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")), "prime"));
    c = fx_cond(ancestor(&r, GW_BACKEND_LB_POLICY, "lost",
                         "{'group': '', 'kind': 'Service', 'namespace': "
                         "'gateway-conformance-infra', 'name': 'ghost'}"),
                "Accepted", "False", "TargetNotFound", 1);
    assert_string_equal(json_string_value(json_object_get(c, "message")),
                        "Service gateway-conformance-infra/ghost does not exist");

    static const struct {
        gw_kind kind;
        const char *name;
    } control_only[] = {
        {GW_AI_SERVICE, "llm"}, {GW_TOKEN_POLICY, "budget"}, {GW_WASM_PLUGIN, "redact"}};
    for (size_t i = 0; i < 3; i++) {
        c = fx_cond(ancestor(&r, control_only[i].kind, control_only[i].name, GW_REF), "Accepted",
                    "False", "Invalid", 1);
        assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                               "group " GROUP " serves envoy, grpc, control, and only control "
                               "data planes take"));
    }
    c = fx_cond(ancestor(&r, GW_WASM_PLUGIN, "tampered",
                         "{'group': '', 'kind': 'Service', 'namespace': "
                         "'gateway-conformance-infra', 'name': 'infra-backend-v2'}"),
                "Accepted", "False", "Invalid", 1);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                           "does not match the module's SHA-256 "
                           "93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476"));
    fx_run_free(&r);
}

/* The group serves control only: every policy reaches the backend. */
TL_TEST(test_control_group)
{
    const gw_group_planes planes[] = {{"other", GW_PLANES_ALL}, {GROUP, GW_PLANE_CONTROL}};
    fx_run r;
    translate_for_planes(&r, FILES, planes, 2);
    const gw_gateway_out *g = fx_gateway(&r, FX_NS, "same-namespace");
    assert_non_null(g->spec);
    const json_t *b = backend_v1(g);
    tl_assert_json_is(json_object_get(b, "ai_service"),
                      "{'provider': 'anthropic', 'model': 'claude', 'timeout': '90s',"
                      " 'auth': {'type': 'APIKey', 'header_name': 'x-api-key',"
                      " 'secret_ref': 'anthropic-key'}}");
    tl_assert_json_is(json_object_get(b, "token_policy"),
                      "{'tokens_per_hour': 1000000, 'scope': 'global'}");
    json_t *w = json_deep_copy(json_object_get(b, "wasm_plugin"));
    assert_string_equal(json_string_value(json_object_get(w, "config_json")),
                        "{\"fields\":[\"ssn\"],\"mask\":\"*\"}");
    json_object_del(w, "config_json");
    tl_assert_json_is(
        w, "{'name': 'redact', 'namespace': 'gateway-conformance-infra',"
           " 'wasm_bytes': 'AGFzbQEAAAA=',"
           " 'sha256': '93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476',"
           " 'hooks': ['request_headers', 'response_headers'],"
           " 'sandbox': {'max_memory_bytes': 1048576, 'max_execution_time_ms': 10}}");
    json_decref(w);
    assert_non_null(json_object_get(b, "load_balancing"));
    fx_cond(ancestor(&r, GW_AI_SERVICE, "llm", GW_REF), "Accepted", "True", "Accepted", 1);
    fx_cond(ancestor(&r, GW_TOKEN_POLICY, "budget", GW_REF), "Accepted", "True", "Accepted", 1);
    fx_cond(ancestor(&r, GW_WASM_PLUGIN, "redact", GW_REF), "Accepted", "True", "Accepted", 1);
    fx_run_free(&r);
}

/* A plugin without hooks or limits: an envoy group runs it (in the backend's upstream
 * filters); a group that also serves proxyless gRPC clients leaves it out. */
TL_TEST(test_wasm_for_envoy)
{
    static const char *const files[] = {"httproute-simple-same-namespace.yaml",
                                        "sextant-wasm-envoy.yaml", NULL};
    const gw_group_planes planes[] = {{GROUP, GW_PLANE_ENVOY | GW_PLANE_CONTROL}};
    fx_run r;
    translate_for_planes(&r, files, planes, 1);
    const json_t *w =
        json_object_get(backend_v1(fx_gateway(&r, FX_NS, "same-namespace")), "wasm_plugin");
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(w, "name")), "plain");
    fx_cond(ancestor(&r, GW_WASM_PLUGIN, "plain", GW_REF), "Accepted", "True", "Accepted", 1);
    fx_run_free(&r);

    fx_translate(&r, files, NULL); /* every data plane, grpc among them */
    assert_null(
        json_object_get(backend_v1(fx_valid_gateway(&r, FX_NS, "same-namespace")), "wasm_plugin"));
    const json_t *c =
        fx_cond(ancestor(&r, GW_WASM_PLUGIN, "plain", GW_REF), "Accepted", "False", "Invalid", 1);
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                           "serves envoy, grpc, control, and only envoy, control data planes "
                           "take Wasm plugins"));
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- attachment */

static const char *const ATTACH[] = {"sextant-attachment.yaml", NULL};

/* The backend rule k of HTTP route route (in spec) sends to. */
static const json_t *rule_backend(const json_t *spec, const char *route, size_t k)
{
    const json_t *rule =
        json_array_get(json_object_get(fx_named(spec, "http_routes", route), "rules"), k);
    const json_t *ref = json_array_get(json_object_get(rule, "backend_refs"), 0);
    assert_non_null(ref);
    return fx_named(spec, "backends", json_string_value(json_object_get(ref, "name")));
}

static long long rpm(const json_t *backend)
{
    return json_integer_value(
        json_object_get(json_object_get(backend, "token_policy"), "requests_per_minute"));
}

static const char *algorithm(const json_t *backend)
{
    return json_string_value(
        json_object_get(json_object_get(backend, "load_balancing"), "algorithm"));
}

/* The conditions of our entry in the status of policy kind/name whose ancestorRef is
 * (kind ref_kind, name ref_name). */
static const json_t *entry(const fx_run *r, gw_kind kind, const char *name, const char *ref_kind,
                           const char *ref_name)
{
    const json_t *a = json_object_get(fx_status(r, kind, FX_NS, name), "ancestors");
    size_t i;
    const json_t *e;
    json_array_foreach(a, i, e)
    {
        const json_t *ref = json_object_get(e, "ancestorRef");
        if (strcmp(json_string_value(json_object_get(ref, "kind")), ref_kind) == 0 &&
            strcmp(json_string_value(json_object_get(ref, "name")), ref_name) == 0)
            return json_object_get(e, "conditions");
    }
    fail_msg("%s %s: no ancestor %s %s", gw_kind_name(kind), name, ref_kind, ref_name);
    return NULL;
}

static const char *message(const json_t *cond)
{
    return json_string_value(json_object_get(cond, "message"));
}

/* Gateway, listener, route, rule and Service targets, and which one wins a backend. */
TL_TEST(test_attach_targets)
{
    fx_run r;
    fx_translate(&r, ATTACH, NULL);
    const json_t *same = fx_valid_gateway(&r, FX_NS, "same-namespace")->spec;
    /* route-b: the Gateway's token policy, the Service's load balancing (more specific
     * than the Gateway's), under the backend's own name. */
    const json_t *b = rule_backend(same, "route-b", 0);
    assert_string_equal(json_string_value(json_object_get(b, "name")), "infra-backend-v1:8080");
    assert_int_equal(rpm(b), 100);
    assert_string_equal(algorithm(b), "LOAD_BALANCING_ALGORITHM_LEAST_REQUEST");
    /* route-a's rule main: the route's token policy (over the Gateway's), so the shared
     * backend is split: a copy of its own, same endpoints. */
    const json_t *a = rule_backend(same, "route-a", 0);
    const char *an = json_string_value(json_object_get(a, "name"));
    assert_true(strncmp(an, "infra-backend-v1:8080~", 22) == 0 && strlen(an) == 30);
    assert_int_equal(rpm(a), 50);
    assert_string_equal(algorithm(a), "LOAD_BALANCING_ALGORITHM_LEAST_REQUEST");
    assert_true(json_equal(json_object_get(a, "endpoints"), json_object_get(b, "endpoints")));
    /* route-a's rule side: the rule's policy (over the route's), the Gateway's load
     * balancing; the only use of infra-backend-v2 there, so it keeps its name. */
    const json_t *s = rule_backend(same, "route-a", 1);
    assert_string_equal(json_string_value(json_object_get(s, "name")), "infra-backend-v2:8080");
    assert_int_equal(rpm(s), 10);
    assert_string_equal(algorithm(s), "LOAD_BALANCING_ALGORITHM_RANDOM");
    assert_int_equal(json_array_size(json_object_get(same, "backends")), 3);
    /* all-namespaces: its listener's token policy; the Service's load balancing beats
     * the Gateway's; nothing of same-namespace's policies. */
    const json_t *all = fx_valid_gateway(&r, FX_NS, "all-namespaces")->spec;
    const json_t *cb = fx_named(all, "backends", "infra-backend-v1:8080");
    assert_int_equal(rpm(cb), 7);
    assert_string_equal(algorithm(cb), "LOAD_BALANCING_ALGORITHM_LEAST_REQUEST");
    assert_int_equal(json_array_size(json_object_get(all, "backends")), 1);
    fx_run_free(&r);
}

/* status.ancestors of policies attached to Gateways and routes. */
TL_TEST(test_attach_status)
{
    fx_run r;
    fx_translate(&r, ATTACH, NULL);
    static const char *const accepted[][2] = {{"gw-wide", "same-namespace"},
                                              {"route-a", "same-namespace"},
                                              {"side-rule", "same-namespace"},
                                              {"all-http", "all-namespaces"}};
    for (size_t i = 0; i < 4; i++)
        fx_cond(entry(&r, GW_TOKEN_POLICY, accepted[i][0], "Gateway", accepted[i][1]), "Accepted",
                "True", "Accepted", 1);
    fx_cond(entry(&r, GW_BACKEND_LB_POLICY, "svc", "Gateway", "same-namespace"), "Accepted", "True",
            "Accepted", 1);
    fx_cond(entry(&r, GW_BACKEND_LB_POLICY, "svc", "Gateway", "all-namespaces"), "Accepted", "True",
            "Accepted", 1);
    fx_cond(entry(&r, GW_BACKEND_LB_POLICY, "gw-lb", "Gateway", "same-namespace"), "Accepted",
            "True", "Accepted", 1);
    /* A Gateway policy that loses every backend of its Gateway to a Service's. */
    const json_t *c =
        fx_cond(entry(&r, GW_BACKEND_LB_POLICY, "all-lb", "Gateway", "all-namespaces"), "Accepted",
                "False", "Conflicted", 1);
    assert_non_null(strstr(message(c), "BackendLBPolicy gateway-conformance-infra/svc applies "
                                       "instead"));
    /* The same route targeted twice: the younger loses. */
    c = fx_cond(entry(&r, GW_TOKEN_POLICY, "route-a-younger", "Gateway", "same-namespace"),
                "Accepted", "False", "Conflicted", 1);
    assert_non_null(strstr(message(c), "TokenPolicy gateway-conformance-infra/route-a, older"));
    /* gw-wide reaches nothing of all-namespaces: no entry for it. */
    assert_int_equal(json_array_size(json_object_get(
                         fx_status(&r, GW_TOKEN_POLICY, FX_NS, "gw-wide"), "ancestors")),
                     1);
    c = fx_cond(entry(&r, GW_TOKEN_POLICY, "ghost-route", "HTTPRoute", "nope"), "Accepted", "False",
                "TargetNotFound", 1);
    assert_string_equal(message(c), "HTTPRoute gateway-conformance-infra/nope does not exist");
    c = fx_cond(entry(&r, GW_TOKEN_POLICY, "ghost-rule", "HTTPRoute", "route-b"), "Accepted",
                "False", "TargetNotFound", 1);
    assert_string_equal(message(c),
                        "HTTPRoute gateway-conformance-infra/route-b has no rule named nope");
    c = fx_cond(entry(&r, GW_BACKEND_LB_POLICY, "no-port", "Service", "infra-backend-v1"),
                "Accepted", "False", "TargetNotFound", 1);
    assert_string_equal(
        message(c), "Service gateway-conformance-infra/infra-backend-v1 has no port named nope");
    const json_t *other = json_array_get(
        json_object_get(fx_status(&r, GW_TOKEN_POLICY, FX_NS, "other-ns"), "ancestors"), 0);
    tl_assert_json_is(json_object_get(other, "ancestorRef"),
                      "{'group': 'gateway.networking.k8s.io', 'kind': 'Gateway',"
                      " 'namespace': 'elsewhere', 'name': 'same-namespace'}");
    c = fx_cond(json_object_get(other, "conditions"), "Accepted", "False", "Invalid", 1);
    assert_non_null(strstr(message(c), "only to objects of its own namespace"));
    fx_run_free(&r);
}

/* A route policy the group's data planes cannot take is left out of the route's backend
 * only, and its entry for the route's Gateway says why; a control group takes it. */
TL_TEST(test_attach_planes)
{
    static const char *const files[] = {"sextant-attachment.yaml", "sextant-attachment-ai.yaml",
                                        NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const json_t *same = fx_valid_gateway(&r, FX_NS, "same-namespace")->spec;
    assert_null(json_object_get(rule_backend(same, "route-b", 0), "ai_service"));
    assert_null(json_object_get(rule_backend(same, "route-a", 0), "ai_service"));
    const json_t *c = fx_cond(entry(&r, GW_AI_SERVICE, "route-b-llm", "Gateway", "same-namespace"),
                              "Accepted", "False", "Invalid", 1);
    assert_non_null(strstr(message(c), "only control data planes take AI services"));
    fx_run_free(&r);

    static const char *const addrs[] = {"192.0.2.10"};
    const gw_group_planes planes[] = {{GROUP, GW_PLANE_CONTROL}};
    gw_options o = {.gateway_addresses = addrs,
                    .n_gateway_addresses = 1,
                    .group_planes = planes,
                    .n_group_planes = 1};
    fx_translate(&r, files, &o);
    same = fx_gateway(&r, FX_NS, "same-namespace")->spec;
    assert_non_null(same);
    const json_t *b = rule_backend(same, "route-b", 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(b, "ai_service"), "provider")), "ollama");
    assert_null(json_object_get(rule_backend(same, "route-a", 0), "ai_service"));
    fx_cond(entry(&r, GW_AI_SERVICE, "route-b-llm", "Gateway", "same-namespace"), "Accepted",
            "True", "Accepted", 1);
    fx_run_free(&r);
}

/* ExtensionRef filters naming WasmPlugins: the plugin runs on that rule's backends only
 * (the other rule keeps the backend without it); a missing or invalid plugin is not
 * skipped (ResolvedRefs=False, the rule forwards nothing); another group's kind is
 * refused. */
TL_TEST(test_extension_ref)
{
    static const char *const files[] = {"sextant-extension-ref.yaml", NULL};
    static const char *const addrs[] = {"192.0.2.10"};
    const gw_group_planes planes[] = {{GROUP, GW_PLANE_ENVOY | GW_PLANE_CONTROL}};
    gw_options o = {.gateway_addresses = addrs,
                    .n_gateway_addresses = 1,
                    .group_planes = planes,
                    .n_group_planes = 1};
    fx_run r;
    fx_translate(&r, files, &o);
    const json_t *spec = fx_gateway(&r, FX_NS, "same-namespace")->spec;
    assert_non_null(spec);
    const json_t *f = rule_backend(spec, "with-filter", 0);
    assert_true(
        strncmp(json_string_value(json_object_get(f, "name")), "infra-backend-v1:8080~", 22) == 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(f, "wasm_plugin"), "name")),
        "filter-plugin");
    const json_t *p = rule_backend(spec, "with-filter", 1);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "infra-backend-v1:8080");
    assert_null(json_object_get(p, "wasm_plugin"));
    fx_cond(entry(&r, GW_WASM_PLUGIN, "filter-plugin", "Gateway", "same-namespace"), "Accepted",
            "True", "Accepted", 1);
    const json_t *parent = json_array_get(
        json_object_get(fx_status(&r, GW_HTTP_ROUTE, FX_NS, "with-filter"), "parents"), 0);
    fx_cond(json_object_get(parent, "conditions"), "Accepted", "True", "Accepted", 1);
    fx_cond(json_object_get(parent, "conditions"), "ResolvedRefs", "True", "ResolvedRefs", 1);

    static const char *const unresolved[][3] = {
        {"missing-filter", "BackendNotFound",
         "names WasmPlugin gateway-conformance-infra/ghost, which does not exist"},
        {"invalid-filter", "UnsupportedValue",
         "names WasmPlugin gateway-conformance-infra/broken-plugin, which is invalid"}};
    for (size_t i = 0; i < 2; i++) {
        parent = json_array_get(
            json_object_get(fx_status(&r, GW_HTTP_ROUTE, FX_NS, unresolved[i][0]), "parents"), 0);
        const json_t *c = fx_cond(json_object_get(parent, "conditions"), "ResolvedRefs", "False",
                                  unresolved[i][1], 1);
        assert_non_null(strstr(message(c), unresolved[i][2]));
        /* not skipped: the rule forwards nothing rather than reach the backend unfiltered
         * (the route, left without rules, is not served) */
        size_t k;
        const json_t *route;
        json_array_foreach(json_object_get(spec, "http_routes"), k, route)
        {
            assert_string_not_equal(json_string_value(json_object_get(route, "name")),
                                    unresolved[i][0]);
        }
    }
    size_t k;
    const json_t *b;
    json_array_foreach(json_object_get(spec, "backends"), k, b)
    {
        assert_null(strstr(json_string_value(json_object_get(b, "name")), "infra-backend-v2"));
    }
    parent = json_array_get(
        json_object_get(fx_status(&r, GW_HTTP_ROUTE, FX_NS, "other-extension"), "parents"), 0);
    const json_t *c =
        fx_cond(json_object_get(parent, "conditions"), "Accepted", "False", "UnsupportedValue", 1);
    assert_non_null(strstr(message(c), "filter type ExtensionRef is not supported"));
    fx_run_free(&r);
}

/* A GRPCRoute target reaches the backends of every rule of that route; a Gateway
 * listener that does not exist is TargetNotFound. */
TL_TEST(test_attach_grpc)
{
    static const char *const files[] = {"grpcroute-exact-method-matching.yaml",
                                        "sextant-attachment-grpc.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const json_t *spec = fx_valid_gateway(&r, FX_NS, "same-namespace")->spec;
    const json_t *backends = json_object_get(spec, "backends");
    assert_int_equal(json_array_size(backends), 2);
    size_t i;
    const json_t *b;
    json_array_foreach(backends, i, b)
    {
        assert_int_equal(rpm(b), 30);
    }
    fx_named(spec, "backends", "grpc-infra-backend-v1:8080:grpc");
    fx_cond(entry(&r, GW_TOKEN_POLICY, "grpc-rate", "Gateway", "same-namespace"), "Accepted",
            "True", "Accepted", 1);
    const json_t *c =
        fx_cond(entry(&r, GW_TOKEN_POLICY, "no-listener", "Gateway", "same-namespace"), "Accepted",
                "False", "TargetNotFound", 1);
    assert_string_equal(message(c),
                        "Gateway gateway-conformance-infra/same-namespace has no listener https");
    fx_run_free(&r);
}

TL_MAIN()

/*
 * test_gw_sextant.c — Sextant's own policies (sextant.dev) in the Gateway API translator:
 * what they give the backends of the Services they target, the oldest of a Service
 * winning, what a group's data planes cannot take left out of that Gateway alone, and
 * status.ancestors (Accepted, Conflicted, Invalid, TargetNotFound).
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
static void test_default_planes(void **state)
{
    (void)state;
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
static void test_control_group(void **state)
{
    (void)state;
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
static void test_wasm_for_envoy(void **state)
{
    (void)state;
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

TL_MAIN(cmocka_unit_test(test_default_planes), cmocka_unit_test(test_control_group),
        cmocka_unit_test(test_wasm_for_envoy))

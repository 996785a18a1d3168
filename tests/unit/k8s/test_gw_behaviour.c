/*
 * test_gw_behaviour.c — the Gateway API translator beyond the conformance scenarios:
 * the same input in any order gives the same bytes; a status written back and read
 * again does not change (no flapping between replicas) and keeps its transition times;
 * limits turn a Gateway's spec into an error its status explains; objects of other
 * controllers are left alone; listeners that conflict or cannot be served; every
 * filter the IR carries, what it cannot carry, proxyless gRPC, TCP routes, HTTP and gRPC
 * routes on one hostname (the oldest wins), shared route names, the group template and
 * gw_output_fail.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/ir/ir.h"
#include "server/k8s/gw.h"
#include "tests/unit/k8s/gw_fixture.h"

static const char *const ALL_FILES[] = {
    "httproute-simple-same-namespace.yaml",
    "httproute-cross-namespace.yaml",
    "httproute-reference-grant.yaml",
    "httproute-invalid-backendref-unknown-kind.yaml",
    "httproute-hostname-intersection.yaml",
    "httproute-listener-hostname-matching.yaml",
    "httproute-matching.yaml",
    "httproute-weight.yaml",
    "gateway-invalid-tls-configuration.yaml",
    "gateway-with-attached-routes.yaml",
    "grpcroute-exact-method-matching.yaml",
    "tlsroute-simple-same-namespace.yaml",
    "tcproute-multiple-routes-attachment.yaml",
    "grpcroute-proxyless.yaml",
    "httproute-filters.yaml",
    "httproute-unsupported.yaml",
    "gateway-listeners.yaml",
    "gateway-shared-names.yaml",
    "backendtlspolicy.yaml",
    "httproute-grpcroute-conflict.yaml",
    NULL,
};

static char *canonical(const json_t *j)
{
    return j ? ir_canonical_json(j) : strdup("null");
}

/* Fails unless a and b hold the same specs, errors, statuses and counters, byte for
 * byte once canonical. */
static void expect_same_output(const gw_output *a, const gw_output *b)
{
    assert_int_equal(a->n_gateways, b->n_gateways);
    for (size_t i = 0; i < a->n_gateways; i++) {
        assert_string_equal(a->gateways[i].group, b->gateways[i].group);
        char *x = canonical(a->gateways[i].spec), *y = canonical(b->gateways[i].spec);
        assert_string_equal(x, y);
        free(x);
        free(y);
        assert_true((a->gateways[i].error == NULL) == (b->gateways[i].error == NULL));
    }
    assert_int_equal(a->n_statuses, b->n_statuses);
    for (size_t i = 0; i < a->n_statuses; i++) {
        assert_int_equal(a->statuses[i].kind, b->statuses[i].kind);
        assert_string_equal(a->statuses[i].name, b->statuses[i].name);
        char *x = canonical(a->statuses[i].status), *y = canonical(b->statuses[i].status);
        assert_string_equal(x, y);
        free(x);
        free(y);
    }
    assert_memory_equal(&a->counters, &b->counters, sizeof a->counters);
}

/* A fixed permutation of array (Fisher-Yates over a linear congruential generator). */
static json_t *shuffled(const json_t *array, unsigned seed)
{
    size_t n = json_array_size(array);
    json_t **v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(array, i);
    for (size_t i = n; i > 1; i--) {
        seed = seed * 1103515245u + 12345u;
        size_t k = (seed >> 8) % i;
        json_t *t = v[i - 1];
        v[i - 1] = v[k];
        v[k] = t;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

static void translate(const json_t *objects, int64_t now, const gw_options *opts, gw_output *out)
{
    fx_input x;
    fx_input_init(&x, objects, now);
    if (opts)
        x.in.options = *opts;
    sx_err err;
    assert_int_equal(gw_translate(&x.in, out, &err), 0);
    fx_input_free(&x);
}

/* ---------------------------------------------------------------- determinism */

TL_TEST(test_shuffled_input_same_output)
{
    fx_run r;
    fx_translate(&r, ALL_FILES, NULL);
    for (size_t i = 0; i < r.out.n_gateways; i++)
        if (r.out.gateways[i].spec)
            fx_expect_valid(r.out.gateways[i].spec);
    for (unsigned seed = 1; seed <= 3; seed++) {
        json_t *objs = shuffled(r.objects, seed);
        gw_output again;
        translate(objs, FX_NOW, &r.x.in.options, &again);
        expect_same_output(&r.out, &again);
        gw_output_free(&again);
        json_decref(objs);
    }
    fx_run_free(&r);
}

/* The status written back and translated again, a day later: nothing changes, not
 * even a transition time, so two replicas never write a status back and forth. */
TL_TEST(test_written_status_is_stable)
{
    fx_run r;
    fx_translate(&r, ALL_FILES, NULL);
    json_t *objs = json_deep_copy(r.objects);
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        const json_t *md = json_object_get(o, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        gw_kind k = fx_kind(json_string_value(json_object_get(o, "kind")));
        const gw_status_out *s = k < GW_KIND_COUNT ? fx_status_entry(&r, k, ns, name) : NULL;
        if (s)
            json_object_set(o, "status", s->status);
    }
    gw_output again;
    translate(objs, FX_NOW + 86400, &r.x.in.options, &again);
    expect_same_output(&r.out, &again);
    for (size_t k = 0; k < again.n_statuses; k++)
        assert_false(again.statuses[k].changed);

    /* A condition that changes takes the new time; one that does not keeps its own. */
    json_array_foreach(objs, i, o)
    {
        const json_t *md = json_object_get(o, "metadata");
        if (strcmp(json_string_value(json_object_get(md, "name")),
                   "gateway-conformance-infra-test") == 0 &&
            strcmp(json_string_value(json_object_get(o, "kind")), "HTTPRoute") == 0) {
            json_object_set_new((json_t *)md, "generation", json_integer(3));
            json_t *rule = json_array_get(json_object_get(json_object_get(o, "spec"), "rules"), 0);
            json_object_set_new(json_array_get(json_object_get(rule, "backendRefs"), 0), "port",
                                json_integer(9999));
        }
    }
    gw_output third;
    translate(objs, FX_NOW + 86400, &r.x.in.options, &third);
    fx_run view = {.out = third};
    const gw_status_out *s =
        fx_status_entry(&view, GW_HTTP_ROUTE, FX_NS, "gateway-conformance-infra-test");
    assert_true(s->changed);
    assert_int_equal(s->generation, 3);
    const json_t *conds =
        json_object_get(json_array_get(json_object_get(s->status, "parents"), 0), "conditions");
    const json_t *c = fx_cond(conds, "ResolvedRefs", "False", "BackendNotFound", 3);
    assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                        "2027-01-02T00:00:00Z");
    c = fx_cond(conds, "Accepted", "True", "Accepted", 3);
    assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")), FX_NOW_TEXT);
    gw_output_free(&third);
    gw_output_free(&again);
    json_decref(objs);
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- limits */

TL_TEST(test_snapshot_limits)
{
    const char *files[] = {"httproute-weight.yaml", NULL};
    gw_options opts = {.limits = {.max_snapshot_endpoints = 4}};
    fx_run r;
    fx_translate(&r, files, &opts);
    const gw_gateway_out *g = fx_gateway(&r, FX_NS, "same-namespace");
    assert_null(g->spec);
    assert_non_null(strstr(g->error, "5 endpoints, over the limit of 4"));
    const json_t *c =
        fx_cond(json_object_get(fx_status(&r, GW_GATEWAY, FX_NS, "same-namespace"), "conditions"),
                "Programmed", "False", "NoResources", 1);
    assert_string_equal(json_string_value(json_object_get(c, "message")), g->error);
    fx_cond(json_object_get(fx_listener(fx_status(&r, GW_GATEWAY, FX_NS, "same-namespace"), "http"),
                            "conditions"),
            "Programmed", "False", "Invalid", 1);
    /* Other Gateways, within the limit, are built. */
    fx_expect_valid(fx_gateway(&r, FX_NS, "all-namespaces")->spec);
    assert_int_equal(r.out.counters.gateways_failed, 1);
    fx_run_free(&r);

    opts = (gw_options){.limits = {.max_snapshot_objects = 4}};
    fx_translate(&r, files, &opts);
    g = fx_gateway(&r, FX_NS, "same-namespace");
    assert_null(g->spec);
    assert_non_null(strstr(g->error, "5 objects"));
    assert_int_equal(g->objects, 5);
    fx_run_free(&r);
}

TL_TEST(test_input_limit)
{
    json_t *objs = json_array();
    fx_load("base.yaml", objs);
    fx_load("httproute-simple-same-namespace.yaml", objs);
    /* The Gateway had been accepted before. */
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, "kind")), "Gateway") == 0)
            json_object_set_new(o, "status",
                                tl_json("{'conditions': [{'type': 'Accepted', 'status': 'True',"
                                        " 'reason': 'Accepted', 'message': 'earlier',"
                                        " 'observedGeneration': 1,"
                                        " 'lastTransitionTime': '2026-12-01T00:00:00Z'}]}"));
    }
    gw_options opts = {.limits = {.max_input_objects = 10}};
    gw_output out;
    translate(objs, FX_NOW, &opts, &out);
    fx_run view = {.out = out};
    assert_int_equal(out.n_gateways, 3);
    for (size_t k = 0; k < out.n_gateways; k++) {
        assert_null(out.gateways[k].spec);
        assert_non_null(strstr(out.gateways[k].error, "over the limit of 10"));
    }
    const json_t *conds =
        json_object_get(fx_status(&view, GW_GATEWAY, FX_NS, "same-namespace"), "conditions");
    fx_cond(conds, "Programmed", "False", "NoResources", 1);
    const json_t *c = fx_cond(conds, "Accepted", "True", "Accepted", 1);
    assert_string_equal(json_string_value(json_object_get(c, "message")), "earlier");
    /* Nothing was translated: routes are left as they are. */
    assert_null(fx_status_entry(&view, GW_HTTP_ROUTE, FX_NS, "gateway-conformance-infra-test"));
    assert_int_equal(out.counters.objects_in[GW_SERVICE], 7);
    gw_output_free(&out);
    json_decref(objs);
}

/* ---------------------------------------------------------------- other controllers */

TL_TEST(test_other_controllers_left_alone)
{
    const char *files[] = {"gateway-listeners.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    /* The Gateway of the other class is neither translated nor given a status. */
    for (size_t i = 0; i < r.out.n_gateways; i++)
        assert_string_not_equal(r.out.gateways[i].name, "not-ours");
    assert_null(fx_status_entry(&r, GW_GATEWAY, FX_NS, "not-ours"));
    assert_null(fx_status_entry(&r, GW_HTTP_ROUTE, FX_NS, "only-other-class"));
    /* A route naming both keeps the other controller's entry as it was, gets ours, and
     * loses our stale entry for a Gateway it no longer names. */
    const json_t *rs = fx_status(&r, GW_HTTP_ROUTE, FX_NS, "two-parents");
    const json_t *parents = json_object_get(rs, "parents");
    assert_int_equal(json_array_size(parents), 3);
    const json_t *theirs = json_array_get(parents, 0);
    assert_string_equal(json_string_value(json_object_get(theirs, "controllerName")),
                        "example.net/other-controller");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(theirs, "conditions"), 0), "message")),
                        "written by the other controller");
    const json_t *p = fx_parent(rs, FX_NS, "listeners", "http-foo");
    fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 5);
    p = fx_parent(rs, FX_NS, "listeners", "no-such-listener");
    fx_cond(json_object_get(p, "conditions"), "Accepted", "False", "NoMatchingParent", 5);
    fx_run_free(&r);

    /* Another controller name makes the other class ours, and ours not. */
    gw_options opts = {.controller_name = "example.net/other-controller"};
    fx_translate(&r, files, &opts);
    assert_int_equal(r.out.n_gateways, 1);
    assert_string_equal(r.out.gateways[0].name, "not-ours");
    assert_null(fx_status_entry(&r, GW_GATEWAY_CLASS, NULL, "sextant"));
    assert_non_null(fx_status_entry(&r, GW_GATEWAY_CLASS, NULL, "other"));
    fx_expect_valid(r.out.gateways[0].spec);
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- listeners */

TL_TEST(test_listener_conditions)
{
    const char *files[] = {"gateway-listeners.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const json_t *gs = fx_status(&r, GW_GATEWAY, FX_NS, "listeners");
    fx_cond(json_object_get(gs, "conditions"), "Accepted", "True", "ListenersNotValid", 7);
    fx_cond(json_object_get(gs, "conditions"), "Programmed", "True", "Programmed", 7);
    const struct {
        const char *name, *accepted, *reason, *conflict;
    } want[] = {
        {"http", "True", "Accepted", "NoConflicts"},
        {"https-same-port", "False", "PortUnavailable", "ProtocolConflict"},
        {"http-foo", "True", "Accepted", "NoConflicts"},
        {"http-foo-again", "False", "PortUnavailable", "HostnameConflict"},
        {"dns", "False", "UnsupportedProtocol", "NoConflicts"},
        {"sctp", "False", "UnsupportedProtocol", "NoConflicts"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const json_t *conds = json_object_get(fx_listener(gs, want[i].name), "conditions");
        fx_cond(conds, "Accepted", want[i].accepted, want[i].reason, 7);
        bool conflicted = strcmp(want[i].conflict, "NoConflicts") != 0;
        fx_cond(conds, "Conflicted", conflicted ? "True" : "False", want[i].conflict, 7);
        fx_cond(conds, "Programmed", strcmp(want[i].accepted, "True") == 0 ? "True" : "False",
                strcmp(want[i].accepted, "True") == 0 ? "Programmed" : "Invalid", 7);
    }
    json_t *none = json_array();
    tl_assert_json_equal(json_object_get(fx_listener(gs, "sctp"), "supportedKinds"), none);
    json_decref(none);
    /* Listed kinds it cannot serve: ResolvedRefs says so, the others are kept. */
    const json_t *kinds = fx_listener(gs, "kinds");
    fx_cond(json_object_get(kinds, "conditions"), "ResolvedRefs", "False", "InvalidRouteKinds", 7);
    tl_assert_json_is(json_object_get(kinds, "supportedKinds"),
                      "[{'group': 'gateway.networking.k8s.io', 'kind': 'HTTPRoute'}]");

    /* UDP cannot be served: neither the listener nor the route. */
    const json_t *p =
        fx_parent(fx_status(&r, GW_UDP_ROUTE, FX_NS, "dns"), FX_NS, "listeners", "dns");
    fx_cond(json_object_get(p, "conditions"), "Accepted", "False", "UnsupportedValue", 0);
    assert_int_equal(json_integer_value(json_object_get(fx_listener(gs, "dns"), "attachedRoutes")),
                     0);

    /* Served: port 8080 (http and http-foo together) and port 8081. */
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "listeners");
    tl_assert_json_is(json_object_get(g->spec, "listeners"),
                      "[{'name': 'gateway-conformance-infra/listeners:8080', 'port': 8080,"
                      "  'protocol': 'LISTENER_PROTOCOL_HTTP',"
                      "  'attached_routes': ['gateway-conformance-infra/two-parents']},"
                      " {'name': 'gateway-conformance-infra/listeners:8081', 'port': 8081,"
                      "  'protocol': 'LISTENER_PROTOCOL_HTTP'}]");
    const json_t *route = fx_named(g->spec, "http_routes", "two-parents");
    tl_assert_json_is(json_object_get(route, "hostnames"), "['foo.example.com']");
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- filters */

TL_TEST(test_filters)
{
    const char *files[] = {"httproute-filters.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "same-namespace");
    const json_t *route = fx_named(g->spec, "http_routes", "filters");
    tl_assert_json_is(
        json_object_get(route, "rules"),
        "[{'name': 'headers',"
        "  'matches': [{'path': '/headers', 'path_type': 'Exact', 'method': 'POST',"
        "    'headers': [{'name': 'X-Tenant', 'value': '^team-[a-z]+$',"
        "                 'type': 'RegularExpression'}],"
        "    'query_params': [{'name': 'debug', 'value': '1'}]}],"
        "  'filters': ["
        "    {'type': 'RequestHeaderModifier', 'request_header_modifier': {"
        "      'set': [{'name': 'X-Header-Set', 'value': 'set-overwrites-values'}],"
        "      'add': [{'name': 'X-Header-Add', 'value': 'add-appends-values'}],"
        "      'remove': ['X-Header-Remove']}},"
        "    {'type': 'ResponseHeaderModifier', 'response_header_modifier': {"
        "      'add': [{'name': 'X-Response', 'value': 'yes'}]}},"
        "    {'type': 'RequestMirror', 'request_mirror': {"
        "      'backend_ref': {'name': 'infra-backend-v2:8080',"
        "                      'namespace': 'gateway-conformance-infra'}, 'percent': 25}}],"
        "  'backend_refs': [{'name': 'infra-backend-v1:8080',"
        "                    'namespace': 'gateway-conformance-infra', 'weight': 1}],"
        "  'timeouts': {'request': '10s', 'backend_request': '1.5s'},"
        "  'retry': {'codes': [500, 503], 'attempts': 3, 'backoff': '0.1s'}},"
        " {'matches': [{'path': '/old', 'path_type': 'PathPrefix'}],"
        "  'filters': [{'type': 'RequestRedirect', 'request_redirect': {"
        "    'scheme': 'https', 'hostname': 'new.example.com', 'status_code': 301,"
        "    'path': {'type': 'ReplacePrefixMatch', 'replace_prefix_match': '/new'}}}]},"
        " {'matches': [{'path': '/app', 'path_type': 'PathPrefix'}],"
        "  'filters': [{'type': 'URLRewrite', 'url_rewrite': {'hostname': 'app.internal',"
        "    'path': {'type': 'ReplacePrefixMatch', 'replace_prefix_match': '/'}}}],"
        "  'backend_refs': [{'name': 'infra-backend-v1:8081:h2c',"
        "                    'namespace': 'gateway-conformance-infra', 'weight': 1}]}]");
    /* Port 8081 of the Service speaks h2c (appProtocol), and its target port is 3001. */
    const json_t *b = fx_named(g->spec, "backends", "infra-backend-v1:8081:h2c");
    assert_string_equal(json_string_value(json_object_get(b, "protocol")), "H2C");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(b, "endpoints"), 0), "port")),
                     3001);
    fx_run_free(&r);
}

TL_TEST(test_unsupported_values)
{
    const char *files[] = {"httproute-unsupported.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const struct {
        const char *route, *reason, *says;
    } refused[] = {
        {"cors", "UnsupportedValue", "filter type CORS is not supported"},
        {"redirect-and-rewrite", "IncompatibleFilters", "not both"},
        {"bad-regex", "UnsupportedValue", "(?=lookahead)"},
    };
    for (size_t i = 0; i < 3; i++) {
        const json_t *p = fx_parent(fx_status(&r, GW_HTTP_ROUTE, FX_NS, refused[i].route), FX_NS,
                                    "same-namespace", NULL);
        const json_t *c =
            fx_cond(json_object_get(p, "conditions"), "Accepted", "False", refused[i].reason, 0);
        assert_non_null(strstr(json_string_value(json_object_get(c, "message")), refused[i].says));
    }
    /* Refused routes are not attached; the one without ready endpoints is. */
    const json_t *l = fx_listener(fx_status(&r, GW_GATEWAY, FX_NS, "same-namespace"), "http");
    assert_int_equal(json_integer_value(json_object_get(l, "attachedRoutes")), 1);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "same-namespace");
    tl_assert_json_is(
        json_object_get(g->spec, "http_routes"),
        "[{'name': 'no-ready-endpoints', 'namespace': 'gateway-conformance-infra',"
        "  'hostnames': ['zero.example.com'],"
        "  'parent_refs': [{'name': 'same-namespace', 'namespace': 'gateway-conformance-infra',"
        "                   'section_name': 'http'}],"
        "  'rules': [{'matches': [{'path': '/half', 'path_type': 'PathPrefix'}],"
        "    'backend_refs': [{'name': 'scaled-to-zero:8080',"
        "                      'namespace': 'gateway-conformance-infra', 'weight': 0},"
        "                     {'name': 'infra-backend-v3:8080',"
        "                      'namespace': 'gateway-conformance-infra', 'weight': 1}]}]}]");
    const json_t *b = fx_named(g->spec, "backends", "scaled-to-zero:8080");
    assert_int_equal(json_array_size(json_object_get(b, "endpoints")), 0);
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- proxyless, TCP, names */

TL_TEST(test_proxyless_grpc)
{
    const char *files[] = {"grpcroute-proxyless.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "grpc-mesh");
    tl_assert_json_is(
        json_object_get(g->spec, "listeners"),
        "[{'name': 'gateway-conformance-infra/grpc-mesh/xds', 'protocol': 'LISTENER_PROTOCOL_GRPC',"
        "  'hostnames': ['echo.test'], 'attached_routes': ['gateway-conformance-infra/echo']},"
        " {'name': 'gateway-conformance-infra/grpc-mesh/xds-pinned',"
        "  'protocol': 'LISTENER_PROTOCOL_GRPC', 'hostnames': ['pinned.echo.test'],"
        "  'attached_routes': ['gateway-conformance-infra/pinned']}]");
    /* The wildcard hostname cannot be dialled: only echo.test is served. */
    const json_t *echo = fx_named(g->spec, "grpc_routes", "echo");
    tl_assert_json_is(json_object_get(echo, "hostnames"), "['echo.test']");
    tl_assert_json_is(
        json_object_get(json_array_get(json_object_get(echo, "rules"), 0), "backend_refs"),
        "[{'name': 'grpc-infra-backend-v1:8080:grpc', 'namespace': 'gateway-conformance-infra',"
        "  'weight': 3}, {'name': 'grpc-infra-backend-v2:8080:grpc',"
        "  'namespace': 'gateway-conformance-infra', 'weight': 1}]");
    const json_t *gs = fx_status(&r, GW_GATEWAY, FX_NS, "grpc-mesh");
    static const char *const grpc_only = "[{'group': 'gateway.networking.k8s.io', 'kind':"
                                         " 'GRPCRoute'}]";
    tl_assert_json_is(json_object_get(fx_listener(gs, "xds"), "supportedKinds"), grpc_only);
    fx_cond(json_object_get(gs, "conditions"), "Programmed", "True", "Programmed", 4);
    fx_run_free(&r);
}

TL_TEST(test_tcproute_oldest_wins)
{
    const char *files[] = {"tcproute-multiple-routes-attachment.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "tcp-multi-route-attach-gateway");
    tl_assert_json_is(
        json_object_get(g->spec, "stream_routes"),
        "[{'name': 'tcproute-attach-older', 'namespace': 'gateway-conformance-infra',"
        "  'kind': 'ROUTE_KIND_TCP', 'parent_refs': [{'name': 'tcp-multi-route-attach-gateway',"
        "  'namespace': 'gateway-conformance-infra', 'section_name': 'tcp'}],"
        "  'rules': [{'port': 9310, 'backend_refs': [{'name': 'tcp-attach-backend-1:3000',"
        "    'namespace': 'gateway-conformance-infra', 'weight': 1}]}]}]");
    const char *routes[] = {"tcproute-attach-older", "a-tcproute-attach-newer"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *p = fx_parent(fx_status(&r, GW_TCP_ROUTE, FX_NS, routes[i]), FX_NS,
                                    "tcp-multi-route-attach-gateway", "tcp");
        fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    }
    const json_t *l =
        fx_listener(fx_status(&r, GW_GATEWAY, FX_NS, "tcp-multi-route-attach-gateway"), "tcp");
    assert_int_equal(json_integer_value(json_object_get(l, "attachedRoutes")), 1);
    fx_run_free(&r);
}

TL_TEST(test_http_grpc_conflict_oldest_wins)
{
    const char *files[] = {"httproute-grpcroute-conflict.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "same-namespace");
    const json_t *p =
        fx_parent(fx_status(&r, GW_GRPC_ROUTE, FX_NS, "aa-newer"), FX_NS, "same-namespace", NULL);
    const json_t *c =
        fx_cond(json_object_get(p, "conditions"), "Accepted", "False", "Conflicted", 0);
    assert_string_equal(json_string_value(json_object_get(c, "message")),
                        "the older HTTPRoute gateway-conformance-infra/zz-older serves the same "
                        "hostnames on listener http of Gateway "
                        "gateway-conformance-infra/same-namespace");
    const char *accepted[][2] = {{"zz-older", "h"}, {"http-tie", "h"}, {"grpc-elsewhere", "g"}};
    for (size_t i = 0; i < 3; i++) {
        gw_kind k = accepted[i][1][0] == 'h' ? GW_HTTP_ROUTE : GW_GRPC_ROUTE;
        p = fx_parent(fx_status(&r, k, FX_NS, accepted[i][0]), FX_NS, "same-namespace", NULL);
        fx_cond(json_object_get(p, "conditions"), "Accepted", "True", "Accepted", 0);
    }
    /* Only the winners are served and counted. */
    size_t n;
    const json_t *http = json_object_get(g->spec, "http_routes");
    const json_t *grpc = json_object_get(g->spec, "grpc_routes");
    n = json_array_size(grpc);
    assert_int_equal(n, 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(grpc, 0), "name")),
                        "grpc-elsewhere");
    assert_int_equal(json_array_size(http), 2);
    const json_t *l = fx_listener(fx_status(&r, GW_GATEWAY, FX_NS, "same-namespace"), "http");
    assert_int_equal(json_integer_value(json_object_get(l, "attachedRoutes")), 3);
    fx_run_free(&r);
}

TL_TEST(test_shared_names_and_virtual_hosts)
{
    const char *files[] = {"gateway-shared-names.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "mixed");
    /* "web" answers every hostname (listener http) and a.example.com (listener http-a),
     * where only-a answers too: two IR routes, the catch-all and the named host. */
    const json_t *http = json_object_get(g->spec, "http_routes");
    assert_int_equal(json_array_size(http), 3);
    assert_null(json_object_get(fx_find(http, "name", "web@1"), "hostnames"));
    json_t *a = tl_json("['a.example.com']");
    tl_assert_json_equal(json_object_get(fx_find(http, "name", "web@2"), "hostnames"), a);
    tl_assert_json_equal(json_object_get(fx_find(http, "name", "only-a"), "hostnames"), a);
    json_decref(a);
    /* The TCPRoute of the same name is renamed, so that no listener attaches both. */
    const json_t *tcp = json_array_get(json_object_get(g->spec, "stream_routes"), 0);
    assert_string_equal(json_string_value(json_object_get(tcp, "name")), "web~tcproute");
    const json_t *l9000 = fx_named(g->spec, "listeners", "gateway-conformance-infra/mixed:9000");
    tl_assert_json_is(json_object_get(l9000, "attached_routes"),
                      "['gateway-conformance-infra/web~tcproute']");
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- BackendTLSPolicy */

static void expect_policy(const fx_run *r, const char *name, const char *accepted,
                          const char *reason, const char *resolved, json_int_t gen)
{
    const json_t *st = fx_status(r, GW_BACKEND_TLS_POLICY, FX_NS, name);
    const json_t *ancestors = json_object_get(st, "ancestors");
    assert_int_equal(json_array_size(ancestors), 1);
    const json_t *a = json_array_get(ancestors, 0);
    tl_assert_json_is(json_object_get(a, "ancestorRef"),
                      "{'group': 'gateway.networking.k8s.io', 'kind': 'Gateway',"
                      " 'namespace': 'gateway-conformance-infra', 'name': 'same-namespace'}");
    assert_string_equal(json_string_value(json_object_get(a, "controllerName")), FX_CONTROLLER);
    const json_t *conds = json_object_get(a, "conditions");
    fx_cond(conds, "Accepted", accepted, reason, gen);
    fx_cond(conds, "ResolvedRefs", strcmp(resolved, "ResolvedRefs") == 0 ? "True" : "False",
            resolved, gen);
}

TL_TEST(test_backend_tls_policy)
{
    const char *files[] = {"backendtlspolicy.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    const gw_gateway_out *g = fx_valid_gateway(&r, FX_NS, "same-namespace");
    const json_t *backends = json_object_get(g->spec, "backends");
    /* A ConfigMap's ca.crt, by the older of two policies on the port. */
    const json_t *v =
        json_object_get(fx_find(backends, "name", "backendtlspolicy-test:443"), "tls_validation");
    assert_string_equal(json_string_value(json_object_get(v, "hostname")), "abc.example.com");
    tl_assert_json_is(json_object_get(v, "ca_certificate_refs"),
                      "['gateway-conformance-infra/backend-tls-checks-certificate']");
    assert_non_null(strstr(json_string_value(json_array_get(json_object_get(v, "ca_pems"), 0)),
                           "-----BEGIN CERTIFICATE-----"));
    /* A Secret's ca.crt. */
    v = json_object_get(fx_find(backends, "name", "tls-secret-ca:443"), "tls_validation");
    assert_int_equal(json_array_size(json_object_get(v, "ca_pems")), 1);
    /* The system's CAs and subject alternative names. */
    tl_assert_json_is(
        json_object_get(fx_find(backends, "name", "tls-system:443"), "tls_validation"),
        "{'hostname': 'sys.example.com', 'well_known_ca_certificates': 'System',"
        " 'subject_alt_names': ['sys.example.com',"
        "   'spiffe://cluster.local/ns/gateway-conformance-infra/sa/tls-system']}");
    /* No CA bundle: never plain text to a Service that expects TLS; the rule is not
     * served at all. */
    const json_t *rules =
        json_object_get(json_array_get(json_object_get(g->spec, "http_routes"), 0), "rules");
    assert_int_equal(json_array_size(rules), 3);
    assert_int_equal(json_array_size(backends), 3);

    expect_policy(&r, "normative-test-backendtlspolicy", "True", "Accepted", "ResolvedRefs", 2);
    expect_policy(&r, "a-newer-policy", "False", "Conflicted", "ResolvedRefs", 0);
    expect_policy(&r, "system-policy", "True", "Accepted", "ResolvedRefs", 0);
    expect_policy(&r, "secret-ca-policy", "True", "Accepted", "ResolvedRefs", 0);
    expect_policy(&r, "missing-ca-policy", "False", "NoValidCACertificate",
                  "InvalidCACertificateRef", 0);
    fx_run_free(&r);
}

/* ---------------------------------------------------------------- options and failures */

TL_TEST(test_group_template)
{
    const char *files[] = {NULL};
    gw_options opts = {.group_template = "gw.<class>.<namespace>.<gateway>"};
    fx_run r;
    fx_translate(&r, files, &opts);
    assert_string_equal(fx_gateway(&r, FX_NS, "same-namespace")->group,
                        "gw.sextant.gateway-conformance-infra.same-namespace");
    fx_run_free(&r);

    json_t *objs = json_array();
    fx_load("base.yaml", objs);
    const char *bad[] = {"<nope>/<gateway>", ""};
    for (size_t i = 0; i < 2; i++) {
        fx_input x;
        fx_input_init(&x, objs, FX_NOW);
        x.in.options.group_template = bad[i];
        gw_output out;
        sx_err err;
        sx_err_clear(&err);
        assert_int_equal(gw_translate(&x.in, &out, &err), SX_EINVAL);
        assert_non_null(strstr(err.message, "k8s.group_template"));
        gw_output_free(&out);
        fx_input_free(&x);
    }
    json_decref(objs);
}

TL_TEST(test_output_fail)
{
    const char *files[] = {"httproute-simple-same-namespace.yaml", NULL};
    fx_run r;
    fx_translate(&r, files, NULL);
    size_t i = 0;
    while (strcmp(r.out.gateways[i].name, "same-namespace") != 0)
        i++;
    assert_int_equal(gw_output_fail(&r.out, i, "Invalid", "refused by validation: conflict"), 0);
    assert_null(r.out.gateways[i].spec);
    assert_string_equal(r.out.gateways[i].error, "refused by validation: conflict");
    assert_int_equal(r.out.counters.gateways_failed, 1);
    const gw_status_out *s = fx_status_entry(&r, GW_GATEWAY, FX_NS, "same-namespace");
    assert_true(s->changed);
    const json_t *c =
        fx_cond(json_object_get(s->status, "conditions"), "Programmed", "False", "Invalid", 1);
    assert_string_equal(json_string_value(json_object_get(c, "message")),
                        "refused by validation: conflict");
    fx_cond(json_object_get(s->status, "conditions"), "Accepted", "True", "Accepted", 1);
    fx_cond(json_object_get(fx_listener(s->status, "http"), "conditions"), "Programmed", "False",
            "Invalid", 1);
    assert_int_equal(gw_output_fail(&r.out, r.out.n_gateways, "Invalid", "x"), SX_EINVAL);
    fx_run_free(&r);
}

TL_MAIN()

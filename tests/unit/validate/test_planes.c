/*
 * test_planes.c — what each data plane a proxy group serves can take
 * (server/validate/val_planes.c): the names parse (and bad lists are refused with the
 * reason); a config with features only gateway.control.v1 carries passes in a group
 * serving control only, and in a group serving envoy each feature is refused at its
 * path, the problem naming the data plane and the group; a group that never chose
 * serves the default; a change of a group's data planes lists what its configs hold.
 */
#include "tests/lib/testlib.h"

#include <string.h>

#include "server/base/err.h"
#include "server/validate/validate.h"

static const char *SPEC =
    "{'http_routes': [{'name': 'r', 'rules': [{'backend_refs': [{'name': 'ai'}],"
    "   'filters': [{'type': 'ExtensionRef', 'extension_ref': {'kind': 'K', 'name': 'n'}}]}]}],"
    " 'backends': [{'name': 'ai', 'endpoints': [{'address': '192.0.2.1', 'port': 443}],"
    "   'ai_service': {'provider': 'openai', 'model': 'm'},"
    "   'token_policy': {'tokens_per_minute': 10}}]}";

TL_TEST(test_names)
{
    unsigned p;
    char why[160];
    assert_int_equal(val_planes_parse_csv("envoy,grpc,control", &p, why, sizeof why), 0);
    assert_int_equal(p, VAL_PLANES_ALL);
    assert_int_equal(val_planes_parse_csv(" control ", &p, why, sizeof why), 0);
    assert_int_equal(p, VAL_PLANE_CONTROL);
    assert_int_equal(val_planes_parse_csv("envoy,quic", &p, why, sizeof why), -1);
    assert_string_equal(why, "unknown data plane \"quic\" (envoy, grpc or control)");
    assert_int_equal(val_planes_parse_csv("envoy,envoy", &p, why, sizeof why), -1);
    assert_string_equal(why, "data plane \"envoy\" is named twice");
    assert_int_equal(val_planes_parse_csv("", &p, why, sizeof why), -1);
    assert_string_equal(why, "must name at least one data plane (envoy, grpc, control)");
    json_t *j = val_planes_json(VAL_PLANE_CONTROL | VAL_PLANE_ENVOY);
    tl_assert_json_is(j, "['envoy', 'control']");
    json_decref(j);
}

/* val_run of the spec text (a format: part, when given, goes into its %s) in group, which
 * serves planes (0: never chose, dflt applies); *out is the result. */
static int run_spec(const char *text, const char *part, const char *group, unsigned planes,
                    unsigned dflt, val_result *out)
{
    char buf[1024];
    if (part)
        snprintf(buf, sizeof buf, text, part);
    json_t *spec = tl_json(part ? buf : text);
    val_group_planes g = {group, planes};
    val_limits l = {.default_planes = dflt, .groups = &g, .ngroups = 1};
    int rc = val_run(spec, NULL, 0, &l, 1700000000, out);
    json_decref(spec);
    return rc;
}

static int run_in(const char *group, unsigned planes, unsigned dflt, val_result *out)
{
    return run_spec(SPEC, NULL, group, planes, dflt, out);
}

static const val_problem *at(const val_result *r, const char *path, const char *plane)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->items[i].path, path) == 0 && r->items[i].data_plane &&
            strcmp(r->items[i].data_plane, plane) == 0)
            return &r->items[i];
    return NULL;
}

TL_TEST(test_control_takes_all)
{
    val_result r;
    assert_int_equal(run_in("ai", VAL_PLANE_CONTROL, VAL_PLANES_ALL, &r), 0);
    assert_int_equal(r.count, 0);
    val_result_free(&r);
}

TL_TEST(test_envoy_refuses_with_the_plane)
{
    val_result r;
    assert_int_equal(run_in("edge", VAL_PLANE_ENVOY, VAL_PLANES_ALL, &r), SX_EVALIDATION);
    const char *paths[] = {"spec.backends[0].ai_service",
                           "spec.backends[0].token_policy.tokens_per_minute",
                           "spec.backends[0].token_policy.requests_per_minute",
                           "spec.http_routes[0].rules[0].filters[0].extension_ref"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        const val_problem *p = at(&r, paths[i], "envoy");
        assert_non_null(p);
        assert_int_equal(p->stage, VAL_SEMANTIC);
        assert_non_null(strstr(p->message, "the envoy data plane cannot take"));
        assert_non_null(strstr(p->message, "group \"edge\" serves envoy"));
    }
    /* The translator says nothing more at those paths, and no grpc problem is made up. */
    assert_int_equal(r.count, 4);
    json_t *j = val_result_to_json(&r);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "data_plane")),
                        "envoy");
    json_decref(j);
    val_result_free(&r);
}

TL_TEST(test_default_applies)
{
    val_result r;
    /* planes 0: the group never chose; the default (control only) holds. */
    assert_int_equal(run_in("quiet", 0, VAL_PLANE_CONTROL, &r), 0);
    val_result_free(&r);
    assert_int_equal(run_in("loud", 0, VAL_PLANE_GRPC, &r), SX_EVALIDATION);
    assert_non_null(at(&r, "spec.backends[0].ai_service", "grpc"));
    assert_null(at(&r, "spec.backends[0].ai_service", "envoy"));
    val_result_free(&r);
}

/* Session persistence: translated for envoy (a cookie or a header), for grpc a cookie
 * only; an idle timeout reaches control data planes only. */
TL_TEST(test_session_persistence)
{
    const char *base = "{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', "
                       "'port': 80, 'attached_routes': ['r']}],"
                       " 'http_routes': [{'name': 'r', 'rules': [{'backend_refs': [{'name': "
                       "'b'}], 'session_persistence': %s}]}],"
                       " 'backends': [{'name': 'b', 'endpoints': [{'address': '192.0.2.1', "
                       "'port': 80}]}]}";
    val_result r;
    const char *header = "{'session_name': 'sid', 'type': 'Header'}";
    assert_int_equal(run_spec(base, header, "edge", VAL_PLANE_ENVOY, 0, &r), 0);
    val_result_free(&r);
    assert_int_equal(run_spec(base, header, "edge", VAL_PLANE_GRPC, 0, &r), SX_EVALIDATION);
    assert_non_null(at(&r, "spec.http_routes[0].rules[0].session_persistence.type", "grpc"));
    assert_int_equal(r.count, 1);
    val_result_free(&r);

    const char *idle = "{'session_name': 'sid', 'idle_timeout': '60s'}";
    assert_int_equal(run_spec(base, idle, "edge", VAL_PLANE_ENVOY | VAL_PLANE_CONTROL, 0, &r),
                     SX_EVALIDATION);
    assert_non_null(
        at(&r, "spec.http_routes[0].rules[0].session_persistence.idle_timeout", "envoy"));
    assert_int_equal(r.count, 1);
    val_result_free(&r);
    assert_int_equal(run_spec(base, idle, "edge", VAL_PLANE_CONTROL, 0, &r), 0);
    val_result_free(&r);
}

/* A token policy's request rate reaches Envoy; its token counts do not. */
TL_TEST(test_token_policy)
{
    const char *base = "{'listeners': [{'name': 'l', 'protocol': 'LISTENER_PROTOCOL_HTTP', "
                       "'port': 80, 'attached_routes': ['r']}],"
                       " 'http_routes': [{'name': 'r', 'rules': [{'backend_refs': [{'name': "
                       "'b'}]}]}],"
                       " 'backends': [{'name': 'b', 'endpoints': [{'address': '192.0.2.1', "
                       "'port': 80}], 'token_policy': %s}]}";
    unsigned planes = VAL_PLANE_ENVOY | VAL_PLANE_GRPC;
    val_result r;
    assert_int_equal(
        run_spec(base, "{'requests_per_minute': 600, 'burst': 2}", "edge", planes, 0, &r), 0);
    val_result_free(&r);
    assert_int_equal(
        run_spec(base, "{'requests_per_minute': 600, 'tokens_per_hour': 9}", "edge", planes, 0, &r),
        SX_EVALIDATION);
    assert_non_null(at(&r, "spec.backends[0].token_policy.tokens_per_hour", "envoy"));
    assert_non_null(at(&r, "spec.backends[0].token_policy.tokens_per_hour", "grpc"));
    assert_int_equal(r.count, 2);
    val_result_free(&r);
}

/* An HTTP/3 listener binds UDP: it shares its port with a TCP listener without a clash,
 * but not with a UDP one. */
TL_TEST(test_udp_and_tcp_share_a_port)
{
    val_result r;
    assert_int_equal(run_spec("{'listeners': [{'name': 'tcp', 'protocol': 'LISTENER_PROTOCOL_HTTP',"
                              " 'port': 8443}, {'name': 'quic', 'protocol': "
                              "'LISTENER_PROTOCOL_HTTP3', 'port': 8443}]}",
                              NULL, "ctl", VAL_PLANE_CONTROL, 0, &r),
                     0);
    val_result_free(&r);
    assert_int_not_equal(run_spec("{'listeners': [{'name': 'dns', 'protocol': "
                                  "'LISTENER_PROTOCOL_UDP', 'port': 8443}, {'name': 'quic', "
                                  "'protocol': 'LISTENER_PROTOCOL_HTTP3', 'port': 8443}]}",
                                  NULL, "ctl", VAL_PLANE_CONTROL, 0, &r),
                         0);
    assert_true(r.count >= 1);
    val_result_free(&r);
}

TL_TEST(test_group_change)
{
    json_t *spec = tl_json(SPEC);
    val_result r = {0};
    assert_int_equal(val_planes_refusals(spec, "g", VAL_PLANE_CONTROL, &r), 0);
    assert_int_equal(r.count, 0);
    assert_int_equal(val_planes_refusals(spec, "g", VAL_PLANE_CONTROL | VAL_PLANE_ENVOY, &r),
                     SX_EVALIDATION);
    assert_non_null(at(&r, "spec.backends[0].token_policy.tokens_per_minute", "envoy"));
    val_result_free(&r);
    json_decref(spec);
}

TL_MAIN()

/*
 * test_ratelimit.c — a backend's token policy translated into Envoy's local rate limit
 * (server/translate/translate_ratelimit.c), decoded back from the bytes: the connection
 * manager of a listener whose routes reach the backend has the filter (optional, no
 * bucket) before the router, and every Route of a rule forwarding to it carries a
 * LocalRateLimit in an optional FilterConfig: requests_per_minute refilled every minute,
 * requests_per_minute × burst at once, enabled and enforced for every request. What has
 * no counterpart (token counts, a per-consumer scope, another action, a rule splitting
 * traffic between the backend and another) is refused with its path.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>

#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "server/base/fielderr.h"
#include "server/ir/ir.h"
#include "server/translate/resources.h"

typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager Hcm;
typedef Envoy__Extensions__Filters__Http__LocalRatelimit__V3__LocalRateLimit LocalRateLimit;

#define RATELIMIT "envoy.filters.http.local_ratelimit"

static int build(const char *policy, const char *refs, tr_resources **out, sx_err *err)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{'listeners': [{'name': 'web', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
             "   'attached_routes': ['r']}],"
             " 'http_routes': [{'name': 'r', 'rules': [{'backend_refs': %s}]}],"
             " 'backends': [{'name': 'llm', 'endpoints': [{'address': '10.0.0.1', 'port': 80}],"
             "   'token_policy': %s},"
             "  {'name': 'plain', 'endpoints': [{'address': '10.0.0.2', 'port': 80}]}]}",
             refs, policy);
    json_t *j = tl_json(text);
    sx_fielderrs errs = {0};
    ir_snapshot *ir = NULL;
    assert_int_equal(ir_snapshot_from_json(j, NULL, &ir, &errs), 0);
    json_decref(j);
    sx_err_clear(err);
    int rc = tr_resources_build(ir, "edge", 1, out, err);
    ir_snapshot_free(ir);
    return rc;
}

static ProtobufCMessage *unpack_any(const Google__Protobuf__Any *any,
                                    const ProtobufCMessageDescriptor *d)
{
    assert_non_null(any);
    char want[256];
    snprintf(want, sizeof want, "type.googleapis.com/%s", d->name);
    assert_string_equal(any->type_url, want);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, any->value.len, any->value.data);
    assert_non_null(m);
    return m;
}

static void test_request_rate(void **state)
{
    (void)state;
    tr_resources *r = NULL;
    sx_err err;
    if (build("{'requests_per_minute': 600, 'burst': 1.5, 'on_limit': 'reject'}",
              "[{'name': 'llm'}]", &r, &err) != 0)
        fail_msg("build failed: %s (%s)", err.message, err.detail);
    const tr_resource *x = tr_resources_find(r, TR_LDS, "web");
    Envoy__Config__Listener__V3__Listener *l =
        envoy__config__listener__v3__listener__unpack(NULL, x->len, x->bytes);
    Hcm *h = (Hcm *)unpack_any(
        l->filter_chains[0]->filters[0]->typed_config,
        &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor);
    assert_int_equal(h->n_http_filters, 2);
    assert_string_equal(h->http_filters[0]->name, RATELIMIT);
    assert_true(h->http_filters[0]->is_optional);
    LocalRateLimit *top = (LocalRateLimit *)unpack_any(
        h->http_filters[0]->typed_config,
        &envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__descriptor);
    assert_null(top->token_bucket); /* limits nothing by itself */
    assert_string_equal(top->stat_prefix, "token_policy");
    protobuf_c_message_free_unpacked(&top->base, NULL);
    protobuf_c_message_free_unpacked(&h->base, NULL);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);

    x = tr_resources_find(r, TR_RDS, "web");
    Envoy__Config__Route__V3__RouteConfiguration *rc =
        envoy__config__route__v3__route_configuration__unpack(NULL, x->len, x->bytes);
    const Envoy__Config__Route__V3__VirtualHost *vh = rc->virtual_hosts[0];
    assert_true(vh->n_routes >= 1);
    for (size_t i = 0; i < vh->n_routes; i++) {
        const Envoy__Config__Route__V3__Route *route = vh->routes[i];
        assert_int_equal(route->n_typed_per_filter_config, 1);
        assert_string_equal(route->typed_per_filter_config[0]->key, RATELIMIT);
        Envoy__Config__Route__V3__FilterConfig *fc =
            (Envoy__Config__Route__V3__FilterConfig *)unpack_any(
                route->typed_per_filter_config[0]->value,
                &envoy__config__route__v3__filter_config__descriptor);
        assert_true(fc->is_optional);
        LocalRateLimit *lim = (LocalRateLimit *)unpack_any(
            fc->config,
            &envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__descriptor);
        assert_int_equal(lim->token_bucket->max_tokens, 900);
        assert_int_equal(lim->token_bucket->tokens_per_fill->value, 600);
        assert_int_equal(lim->token_bucket->fill_interval->seconds, 60);
        assert_int_equal(lim->filter_enabled->default_value->numerator, 100);
        assert_int_equal(lim->filter_enforced->default_value->numerator, 100);
        protobuf_c_message_free_unpacked(&lim->base, NULL);
        protobuf_c_message_free_unpacked(&fc->base, NULL);
    }
    envoy__config__route__v3__route_configuration__free_unpacked(rc, NULL);
    tr_resources_unref(r);
}

static void test_refusals(void **state)
{
    (void)state;
    struct {
        const char *policy, *refs, *message;
    } cases[] = {
        {"{'requests_per_minute': 10, 'tokens_per_minute': 1000}", "[{'name': 'llm'}]",
         "backends[0].token_policy.tokens_per_minute: envoy's local rate limit counts requests, "
         "not tokens"},
        {"{'requests_per_minute': 10, 'scope': 'consumer'}", "[{'name': 'llm'}]",
         "backends[0].token_policy.scope: envoy's local rate limit counts per proxy: scope "
         "\"consumer\" has no counterpart (leave it empty or use \"proxy\")"},
        {"{'requests_per_minute': 10, 'on_limit': 'queue'}", "[{'name': 'llm'}]",
         "backends[0].token_policy.on_limit: envoy's local rate limit rejects (429): on_limit "
         "\"queue\" has no counterpart"},
        {"{'tokens_per_hour': 5}", "[{'name': 'llm'}]",
         "backends[0].token_policy.tokens_per_hour: envoy's local rate limit counts requests, not "
         "tokens"},
        {"{'requests_per_minute': 10}",
         "[{'name': 'llm', 'weight': 1}, {'name': 'plain', 'weight': 1}]",
         "http_routes[0].rules[0].backend_refs: envoy limits a route, not one of its backends: a "
         "rule whose backends have a token policy forwards to that one backend only"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tr_resources *r = NULL;
        sx_err err;
        assert_int_equal(build(cases[i].policy, cases[i].refs, &r, &err), SX_EVALIDATION);
        if (strcmp(err.message, cases[i].message) != 0)
            fail_msg("case %zu\n got:  %s\n want: %s", i, err.message, cases[i].message);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_rate),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include "tests/lib/translate_fx.h"

#include <stdio.h>
#include <string.h>

#include "envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.pb-c.h"
#include "server/ir/ir.h"

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
    return tl_translate(text, out, err);
}

TL_TEST(test_request_rate)
{
    tr_resources *r = NULL;
    sx_err err;
    if (build("{'requests_per_minute': 600, 'burst': 1.5, 'on_limit': 'reject'}",
              "[{'name': 'llm'}]", &r, &err) != 0)
        fail_msg("build failed: %s (%s)", err.message, err.detail);
    LocalRateLimit *top = (LocalRateLimit *)tl_http_filter_before_router(
        r, "web", RATELIMIT,
        &envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__descriptor);
    assert_null(top->token_bucket); /* limits nothing by itself */
    assert_string_equal(top->stat_prefix, "token_policy");
    protobuf_c_message_free_unpacked(&top->base, NULL);

    Envoy__Config__Route__V3__RouteConfiguration *rc = tl_route_config(r, "web");
    const Envoy__Config__Route__V3__VirtualHost *vh = rc->virtual_hosts[0];
    assert_true(vh->n_routes >= 1);
    for (size_t i = 0; i < vh->n_routes; i++) {
        LocalRateLimit *lim = (LocalRateLimit *)tl_route_filter(
            vh->routes[i], RATELIMIT,
            &envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__descriptor);
        assert_int_equal(lim->token_bucket->max_tokens, 900);
        assert_int_equal(lim->token_bucket->tokens_per_fill->value, 600);
        assert_int_equal(lim->token_bucket->fill_interval->seconds, 60);
        assert_int_equal(lim->filter_enabled->default_value->numerator, 100);
        assert_int_equal(lim->filter_enforced->default_value->numerator, 100);
        protobuf_c_message_free_unpacked(&lim->base, NULL);
    }
    envoy__config__route__v3__route_configuration__free_unpacked(rc, NULL);
    tr_resources_unref(r);
}

TL_TEST(test_refusals)
{
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

TL_MAIN()

/*
 * test_session.c — session persistence of a route rule translated into Envoy's stateful
 * session filter (server/translate/translate_session.c), decoded back from the bytes as a
 * proxy reads them: the connection manager of a listener whose routes keep sessions has
 * the filter (optional, empty) before the router, and only that one; each Route of the
 * rule carries its StatefulSessionPerRoute in an optional FilterConfig, with a cookie
 * (permanent: absolute_timeout as TTL) or a header; what Envoy cannot express (an idle
 * timeout, an absolute timeout of a session cookie) is refused with its path.
 */
#include "tests/lib/testlib.h"

#include <stdio.h>
#include <string.h>

#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/http/stateful_session/v3/stateful_session.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "envoy/extensions/http/stateful_session/cookie/v3/cookie.pb-c.h"
#include "envoy/extensions/http/stateful_session/header/v3/header.pb-c.h"
#include "server/base/fielderr.h"
#include "server/ir/ir.h"
#include "server/translate/resources.h"

typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager Hcm;
typedef Envoy__Extensions__Filters__Http__StatefulSession__V3__StatefulSession Session;
typedef Envoy__Extensions__Filters__Http__StatefulSession__V3__StatefulSessionPerRoute PerRoute;

#define SESSION "envoy.filters.http.stateful_session"

/* Two HTTP listeners: "keep" with a route whose rule keeps sessions (SP is spliced in),
 * "plain" with a route that does not. */
static char *ir_text(const char *sp)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{'listeners': [{'name': 'keep', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 80,"
             "   'attached_routes': ['a']},"
             "  {'name': 'plain', 'protocol': 'LISTENER_PROTOCOL_HTTP', 'port': 81,"
             "   'attached_routes': ['b']}],"
             " 'http_routes': [{'name': 'a', 'rules': [{'matches': [{'path': '/x', 'path_type':"
             "   'PathPrefix'}, {'path': '/y', 'path_type': 'Exact'}], 'backend_refs': [{'name':"
             "   'be'}], 'session_persistence': %s}]},"
             "  {'name': 'b', 'rules': [{'backend_refs': [{'name': 'be'}]}]}],"
             " 'backends': [{'name': 'be', 'endpoints': [{'address': '10.0.0.1', 'port': 80}]}]}",
             sp);
    return buf;
}

static int build(const char *sp, tr_resources **out, sx_err *err)
{
    json_t *j = tl_json(ir_text(sp));
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

static Hcm *hcm_of(const tr_resources *r, const char *listener)
{
    const tr_resource *x = tr_resources_find(r, TR_LDS, listener);
    assert_non_null(x);
    Envoy__Config__Listener__V3__Listener *l =
        envoy__config__listener__v3__listener__unpack(NULL, x->len, x->bytes);
    assert_non_null(l);
    Hcm *h = (Hcm *)unpack_any(
        l->filter_chains[0]->filters[0]->typed_config,
        &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor);
    envoy__config__listener__v3__listener__free_unpacked(l, NULL);
    return h;
}

/* The StatefulSession of every Route of route configuration rc_name (at most max), in
 * out; returns how many. The caller frees each. */
static size_t sessions_of(const tr_resources *r, const char *rc_name, Session **out, size_t max)
{
    const tr_resource *x = tr_resources_find(r, TR_RDS, rc_name);
    assert_non_null(x);
    Envoy__Config__Route__V3__RouteConfiguration *rc =
        envoy__config__route__v3__route_configuration__unpack(NULL, x->len, x->bytes);
    assert_non_null(rc);
    assert_int_equal(rc->n_virtual_hosts, 1);
    size_t n = rc->virtual_hosts[0]->n_routes;
    assert_true(n >= 2 && n <= max); /* two matches: every Route they make keeps sessions */
    for (size_t i = 0; i < n; i++) {
        const Envoy__Config__Route__V3__Route *route = rc->virtual_hosts[0]->routes[i];
        assert_int_equal(route->n_typed_per_filter_config, 1);
        assert_string_equal(route->typed_per_filter_config[0]->key, SESSION);
        Envoy__Config__Route__V3__FilterConfig *fc =
            (Envoy__Config__Route__V3__FilterConfig *)unpack_any(
                route->typed_per_filter_config[0]->value,
                &envoy__config__route__v3__filter_config__descriptor);
        assert_true(fc->is_optional);
        PerRoute *per = (PerRoute *)unpack_any(
            fc->config,
            &envoy__extensions__filters__http__stateful_session__v3__stateful_session_per_route__descriptor);
        assert_int_equal(
            per->override_case,
            ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION_PER_ROUTE__OVERRIDE_STATEFUL_SESSION);
        out[i] = per->stateful_session;
        per->stateful_session = NULL;
        per->override_case =
            ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION_PER_ROUTE__OVERRIDE__NOT_SET;
        protobuf_c_message_free_unpacked(&per->base, NULL);
        protobuf_c_message_free_unpacked(&fc->base, NULL);
    }
    envoy__config__route__v3__route_configuration__free_unpacked(rc, NULL);
    return n;
}

static void test_cookie(void **state)
{
    (void)state;
    tr_resources *r = NULL;
    sx_err err;
    assert_int_equal(build("{'session_name': 'sid', 'cookie_lifetime_type': 'Permanent',"
                           " 'absolute_timeout': '3600s'}",
                           &r, &err),
                     0);
    /* The listener whose routes keep sessions: the filter, optional and empty, first. */
    Hcm *h = hcm_of(r, "keep");
    assert_int_equal(h->n_http_filters, 2);
    assert_string_equal(h->http_filters[0]->name, SESSION);
    assert_true(h->http_filters[0]->is_optional);
    Session *top = (Session *)unpack_any(
        h->http_filters[0]->typed_config,
        &envoy__extensions__filters__http__stateful_session__v3__stateful_session__descriptor);
    assert_null(top->session_state);
    protobuf_c_message_free_unpacked(&top->base, NULL);
    assert_string_equal(h->http_filters[1]->name, "envoy.filters.http.router");
    protobuf_c_message_free_unpacked(&h->base, NULL);
    /* The other keeps its router alone: its bytes are what they were before. */
    h = hcm_of(r, "plain");
    assert_int_equal(h->n_http_filters, 1);
    protobuf_c_message_free_unpacked(&h->base, NULL);

    Session *s[8];
    size_t n = sessions_of(r, "keep", s, 8);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(s[i]->session_state->name, "envoy.http.stateful_session.cookie");
        Envoy__Extensions__Http__StatefulSession__Cookie__V3__CookieBasedSessionState *c =
            (Envoy__Extensions__Http__StatefulSession__Cookie__V3__CookieBasedSessionState *)unpack_any(
                s[i]->session_state->typed_config,
                &envoy__extensions__http__stateful_session__cookie__v3__cookie_based_session_state__descriptor);
        assert_string_equal(c->cookie->name, "sid");
        assert_string_equal(c->cookie->path, "/");
        assert_non_null(c->cookie->ttl);
        assert_int_equal(c->cookie->ttl->seconds, 3600);
        protobuf_c_message_free_unpacked(&c->base, NULL);
        protobuf_c_message_free_unpacked(&s[i]->base, NULL);
    }
    tr_resources_unref(r);
}

static void test_header(void **state)
{
    (void)state;
    tr_resources *r = NULL;
    sx_err err;
    assert_int_equal(build("{'session_name': 'x-session', 'type': 'Header'}", &r, &err), 0);
    Session *s[8];
    size_t n = sessions_of(r, "keep", s, 8);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(s[i]->session_state->name, "envoy.http.stateful_session.header");
        Envoy__Extensions__Http__StatefulSession__Header__V3__HeaderBasedSessionState *hs =
            (Envoy__Extensions__Http__StatefulSession__Header__V3__HeaderBasedSessionState *)unpack_any(
                s[i]->session_state->typed_config,
                &envoy__extensions__http__stateful_session__header__v3__header_based_session_state__descriptor);
        assert_string_equal(hs->name, "x-session");
        protobuf_c_message_free_unpacked(&hs->base, NULL);
        protobuf_c_message_free_unpacked(&s[i]->base, NULL);
    }
    tr_resources_unref(r);
}

static void test_refusals(void **state)
{
    (void)state;
    tr_resources *r = NULL;
    sx_err err;
    assert_int_equal(build("{'type': 'Cookie', 'idle_timeout': '60s'}", &r, &err), SX_EVALIDATION);
    assert_null(r);
    assert_string_equal(err.message, "http_routes[0].rules[0].session_persistence.idle_timeout: "
                                     "envoy's stateful session has no idle timeout");
    assert_int_equal(build("{'absolute_timeout': '60s'}", &r, &err), SX_EVALIDATION);
    assert_string_equal(err.message,
                        "http_routes[0].rules[0].session_persistence.absolute_timeout: envoy's "
                        "stateful session expires only permanent cookies (cookie_lifetime_type "
                        "Permanent)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cookie),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

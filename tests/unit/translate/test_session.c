/*
 * test_session.c — session persistence of a route rule translated into Envoy's stateful
 * session filter (server/translate/translate_session.c), decoded back from the bytes as a
 * proxy reads them: the connection manager of a listener whose routes keep sessions has
 * the filter (optional, empty) before the router, and only that one; each Route of the
 * rule carries its StatefulSessionPerRoute in an optional FilterConfig, with a cookie
 * (permanent: absolute_timeout as TTL) or a header; what Envoy cannot express (an idle
 * timeout, an absolute timeout of a session cookie) is refused with its path.
 */
#include "tests/lib/translate_fx.h"

#include <stdio.h>
#include <string.h>

#include "envoy/extensions/filters/http/stateful_session/v3/stateful_session.pb-c.h"
#include "envoy/extensions/http/stateful_session/cookie/v3/cookie.pb-c.h"
#include "envoy/extensions/http/stateful_session/header/v3/header.pb-c.h"

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
    return tl_translate(ir_text(sp), out, err);
}

/* Checks the session state of every Route of route configuration "keep" (two or more):
 * each must be the extension name; check gets it decoded with descriptor. */
static void expect_session_states(const tr_resources *r, const char *name,
                                  const ProtobufCMessageDescriptor *descriptor,
                                  void (*check)(const ProtobufCMessage *state))
{
    Envoy__Config__Route__V3__RouteConfiguration *rc = tl_route_config(r, "keep");
    assert_int_equal(rc->n_virtual_hosts, 1);
    size_t n = rc->virtual_hosts[0]->n_routes;
    assert_true(n >= 2); /* two matches: every Route they make keeps sessions */
    for (size_t i = 0; i < n; i++) {
        PerRoute *per = (PerRoute *)tl_route_filter(
            rc->virtual_hosts[0]->routes[i], SESSION,
            &envoy__extensions__filters__http__stateful_session__v3__stateful_session_per_route__descriptor);
        assert_int_equal(
            per->override_case,
            ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION_PER_ROUTE__OVERRIDE_STATEFUL_SESSION);
        const Session *s = per->stateful_session;
        assert_string_equal(s->session_state->name, name);
        ProtobufCMessage *st = tl_unpack_any(s->session_state->typed_config, descriptor);
        check(st);
        protobuf_c_message_free_unpacked(st, NULL);
        protobuf_c_message_free_unpacked(&per->base, NULL);
    }
    envoy__config__route__v3__route_configuration__free_unpacked(rc, NULL);
}

/* A permanent cookie "sid" on path / living an hour. */
static void expect_sid_cookie(const ProtobufCMessage *state)
{
    const Envoy__Extensions__Http__StatefulSession__Cookie__V3__CookieBasedSessionState *c =
        (const Envoy__Extensions__Http__StatefulSession__Cookie__V3__CookieBasedSessionState *)
            state;
    assert_string_equal(c->cookie->name, "sid");
    assert_string_equal(c->cookie->path, "/");
    assert_non_null(c->cookie->ttl);
    assert_int_equal(c->cookie->ttl->seconds, 3600);
}

TL_TEST(test_cookie)
{
    tr_resources *r = tl_translated(ir_text("{'session_name': 'sid', 'cookie_lifetime_type':"
                                            " 'Permanent', 'absolute_timeout': '3600s'}"));
    /* The listener whose routes keep sessions: the filter, optional and empty, first. */
    Session *top = (Session *)tl_http_filter_before_router(
        r, "keep", SESSION,
        &envoy__extensions__filters__http__stateful_session__v3__stateful_session__descriptor);
    assert_null(top->session_state);
    protobuf_c_message_free_unpacked(&top->base, NULL);
    /* The other keeps its router alone: its bytes are what they were before. */
    Hcm *h = tl_hcm_of(r, "plain");
    assert_int_equal(h->n_http_filters, 1);
    protobuf_c_message_free_unpacked(&h->base, NULL);

    expect_session_states(
        r, "envoy.http.stateful_session.cookie",
        &envoy__extensions__http__stateful_session__cookie__v3__cookie_based_session_state__descriptor,
        expect_sid_cookie);
    tr_resources_unref(r);
}

/* The header x-session. */
static void expect_session_header(const ProtobufCMessage *state)
{
    assert_string_equal(
        ((const Envoy__Extensions__Http__StatefulSession__Header__V3__HeaderBasedSessionState *)
             state)
            ->name,
        "x-session");
}

TL_TEST(test_header)
{
    tr_resources *r = tl_translated(ir_text("{'session_name': 'x-session', 'type': 'Header'}"));
    expect_session_states(
        r, "envoy.http.stateful_session.header",
        &envoy__extensions__http__stateful_session__header__v3__header_based_session_state__descriptor,
        expect_session_header);
    tr_resources_unref(r);
}

TL_TEST(test_refusals)
{
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

TL_MAIN()

/*
 * translate_session.c — session persistence of an IR route rule as Envoy's stateful
 * session HTTP filter (envoy.filters.http.stateful_session).
 *
 * The filter is configured per route: each HTTP connection manager whose routes keep
 * sessions gets the filter with an empty StatefulSession (no session state, so it does
 * nothing by itself) before the router, and each Route of a rule with session
 * persistence carries a StatefulSessionPerRoute with the session state: a cookie
 * (CookieBasedSessionState; Gateway API's default) or a header (HeaderBasedSessionState)
 * named by session_name. A permanent cookie lives absolute_timeout; a session cookie
 * has no TTL. Envoy's filter has no idle timeout, and a session cookie or a header
 * cannot expire after an absolute time, so those are refused (validation says the same
 * per data plane, server/validate/val_planes.c).
 *
 * Both the filter and the per-route entry are marked optional (HttpFilter.is_optional,
 * and the per-route config wrapped in FilterConfig with is_optional): proxyless gRPC
 * clients that do not implement stateful sessions ignore them instead of refusing the
 * listener, and those that do keep sessions in cookies.
 */
#include <string.h>

#include "envoy/config/core/v3/extension.pb-c.h"
#include "envoy/extensions/filters/http/stateful_session/v3/stateful_session.pb-c.h"
#include "envoy/extensions/http/stateful_session/cookie/v3/cookie.pb-c.h"
#include "envoy/extensions/http/stateful_session/header/v3/header.pb-c.h"
#include "envoy/type/http/v3/cookie.pb-c.h"
#include "server/translate/translate.h"

/* The session name when the rule leaves it empty. */
#define DEFAULT_SESSION_NAME "sextant-session"

typedef Envoy__Extensions__Filters__Http__StatefulSession__V3__StatefulSession ev_session;

static Envoy__Config__Core__V3__TypedExtensionConfig *
session_state(tr_ctx *tr, const Gateway__Control__V1__SessionPersistence *sp, const char *where)
{
    const char *name = tr_empty(sp->session_name) ? DEFAULT_SESSION_NAME : sp->session_name;
    bool header = sp->type && strcmp(sp->type, "Header") == 0;
    bool permanent = sp->cookie_lifetime_type && strcmp(sp->cookie_lifetime_type, "Permanent") == 0;
    if (sp->idle_timeout)
        tr_error(tr, tr_printf(tr, "%s.session_persistence.idle_timeout", where),
                 "envoy's stateful session has no idle timeout");
    if (sp->absolute_timeout && (header || !permanent))
        tr_error(tr, tr_printf(tr, "%s.session_persistence.absolute_timeout", where),
                 "envoy's stateful session expires only permanent cookies "
                 "(cookie_lifetime_type Permanent)");
    Envoy__Config__Core__V3__TypedExtensionConfig *ext =
        TR_NEW(tr, Envoy__Config__Core__V3__TypedExtensionConfig,
               ENVOY__CONFIG__CORE__V3__TYPED_EXTENSION_CONFIG__INIT);
    if (header) {
        Envoy__Extensions__Http__StatefulSession__Header__V3__HeaderBasedSessionState *h = TR_NEW(
            tr, Envoy__Extensions__Http__StatefulSession__Header__V3__HeaderBasedSessionState,
            ENVOY__EXTENSIONS__HTTP__STATEFUL_SESSION__HEADER__V3__HEADER_BASED_SESSION_STATE__INIT);
        h->name = tr_strdup(tr, name);
        ext->name = "envoy.http.stateful_session.header";
        ext->typed_config = tr_any(tr, &h->base);
        return ext;
    }
    Envoy__Type__Http__V3__Cookie *cookie =
        TR_NEW(tr, Envoy__Type__Http__V3__Cookie, ENVOY__TYPE__HTTP__V3__COOKIE__INIT);
    cookie->name = tr_strdup(tr, name);
    cookie->path = "/";
    if (permanent && sp->absolute_timeout)
        cookie->ttl = tr_duration(tr, sp->absolute_timeout,
                                  tr_printf(tr, "%s.session_persistence.absolute_timeout", where));
    Envoy__Extensions__Http__StatefulSession__Cookie__V3__CookieBasedSessionState *c = TR_NEW(
        tr, Envoy__Extensions__Http__StatefulSession__Cookie__V3__CookieBasedSessionState,
        ENVOY__EXTENSIONS__HTTP__STATEFUL_SESSION__COOKIE__V3__COOKIE_BASED_SESSION_STATE__INIT);
    c->cookie = cookie;
    ext->name = "envoy.http.stateful_session.cookie";
    ext->typed_config = tr_any(tr, &c->base);
    return ext;
}

Google__Protobuf__Any *tr_session_route_config(tr_ctx *tr,
                                               const Gateway__Control__V1__SessionPersistence *sp,
                                               const char *where)
{
    if (sp == NULL)
        return NULL;
    ev_session *s =
        TR_NEW(tr, ev_session,
               ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION__INIT);
    s->session_state = session_state(tr, sp, where);
    Envoy__Extensions__Filters__Http__StatefulSession__V3__StatefulSessionPerRoute *per = TR_NEW(
        tr, Envoy__Extensions__Filters__Http__StatefulSession__V3__StatefulSessionPerRoute,
        ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION_PER_ROUTE__INIT);
    per->override_case =
        ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION_PER_ROUTE__OVERRIDE_STATEFUL_SESSION;
    per->stateful_session = s;
    Envoy__Config__Route__V3__FilterConfig *fc = TR_NEW(
        tr, Envoy__Config__Route__V3__FilterConfig, ENVOY__CONFIG__ROUTE__V3__FILTER_CONFIG__INIT);
    fc->config = tr_any(tr, &per->base);
    fc->is_optional = 1;
    return tr_any(tr, &fc->base);
}

void tr_route_filter_config(tr_ctx *tr, Envoy__Config__Route__V3__Route *r, const char *filter,
                            Google__Protobuf__Any *cfg)
{
    if (cfg == NULL)
        return;
    Envoy__Config__Route__V3__Route__TypedPerFilterConfigEntry *e =
        TR_NEW(tr, Envoy__Config__Route__V3__Route__TypedPerFilterConfigEntry,
               ENVOY__CONFIG__ROUTE__V3__ROUTE__TYPED_PER_FILTER_CONFIG_ENTRY__INIT);
    e->key = (char *)filter;
    e->value = cfg;
    Envoy__Config__Route__V3__Route__TypedPerFilterConfigEntry **v =
        (Envoy__Config__Route__V3__Route__TypedPerFilterConfigEntry **)tr_ptrs(
            tr, r->n_typed_per_filter_config + 1);
    for (size_t i = 0; i < r->n_typed_per_filter_config; i++)
        v[i] = r->typed_per_filter_config[i];
    v[r->n_typed_per_filter_config++] = e;
    r->typed_per_filter_config = v;
}

Google__Protobuf__Any *tr_session_filter_config(tr_ctx *tr)
{
    ev_session *s =
        TR_NEW(tr, ev_session,
               ENVOY__EXTENSIONS__FILTERS__HTTP__STATEFUL_SESSION__V3__STATEFUL_SESSION__INIT);
    return tr_any(tr, &s->base);
}

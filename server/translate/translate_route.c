/*
 * translate_route.c — IR HTTP and gRPC routes into Envoy Routes: the matches of each
 * rule (path, method, headers, query parameters).
 *
 * Each match of each rule becomes one Envoy Route (two for a PathPrefix, see below),
 * built once per IR route and shared by every listener that attaches the route
 * (translate_vhost.c orders them into virtual hosts). What a rule does — its filters,
 * its backends, its redirect or rewrite — is built by translate_action.c and copied
 * into every Route of the rule.
 *
 * PathPrefix "/foo" matches "/foo" and "/foo/…" but not "/foobar";
 * path_separated_prefix says exactly that, but gRPC clients reject it, so it is
 * written as two routes every client understands: path "/foo" and prefix "/foo/".
 * PathPrefix "/" is prefix "" (everything). Header matchers use exact_match and
 * safe_regex_match rather than string_match, which gRPC C core before 1.55 NACKs. The
 * ordering keys of each Route (path rank and length, method, header and query counts)
 * are recorded here for the precedence sort.
 *
 * A rule with no backend to send to (none listed, or all weights 0) answers 500 with a
 * direct_response, never a route without action.
 */
#include "server/translate/translate.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/config/route/v3/route.pb-c.h"

typedef Envoy__Config__Route__V3__Route ev_route;
typedef Envoy__Config__Route__V3__RouteMatch ev_match;
typedef Envoy__Config__Route__V3__RouteAction ev_action;
typedef Envoy__Config__Route__V3__RedirectAction ev_redirect;
typedef Envoy__Config__Route__V3__HeaderMatcher ev_header_matcher;
typedef Envoy__Config__Route__V3__QueryParameterMatcher ev_query_matcher;
typedef Envoy__Config__Core__V3__HeaderValueOption ev_hvo;
typedef Gateway__Control__V1__HeaderMatch ir_header_match;
typedef Gateway__Control__V1__Filter ir_filter;

#define PATH_PREFIX ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX
#define PATH_EXACT  ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PATH
#define PATH_REGEX  ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_SAFE_REGEX
#define RANK_EXACT  0
#define RANK_REGEX  1
#define RANK_PREFIX 2

/* ---------------------------------------------------------------- small helpers */

/* s with the RE2 metacharacters escaped. */
static char *re_escape(tr_ctx *tr, const char *s)
{
    char *out = tr_alloc(tr, strlen(s) * 2 + 1), *o = out;
    for (; *s; s++) {
        if (strchr("\\.+*?()|[]{}^$", *s))
            *o++ = '\\';
        *o++ = *s;
    }
    *o = '\0';
    return out;
}

static bool is_regex_type(const char *type)
{
    return type != NULL && strcmp(type, "RegularExpression") == 0;
}

static ev_header_matcher *header_matcher(tr_ctx *tr, const char *name, const char *value,
                                         bool regex)
{
    ev_header_matcher *h =
        TR_NEW(tr, ev_header_matcher, ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__INIT);
    h->name = tr_lower(tr, name);
    if (regex) {
        h->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_SAFE_REGEX_MATCH;
        h->safe_regex_match = tr_regex(tr, value);
    } else {
        h->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_EXACT_MATCH;
        h->exact_match = tr_strdup(tr, value);
    }
    return h;
}

static void header_matchers(tr_ctx *tr, ir_header_match **in, size_t n, const char *method,
                            const char *path, tr_pvec *out)
{
    if (!tr_empty(method))
        tr_pv_push(tr, out, header_matcher(tr, ":method", method, false));
    for (size_t i = 0; i < n; i++) {
        if (tr_empty(in[i]->name)) {
            tr_error(tr, tr_printf(tr, "%s.headers[%zu].name", path, i),
                     "header name must not be empty");
            continue;
        }
        tr_pv_push(tr, out,
                   header_matcher(tr, in[i]->name, in[i]->value, is_regex_type(in[i]->type)));
    }
}

/* The query parameter matchers of HTTP match m (at IR path path) into out. */
static void query_matchers(tr_ctx *tr, const Gateway__Control__V1__HttpMatch *m, const char *path,
                           tr_pvec *out)
{
    for (size_t q = 0; q < m->n_query_params; q++) {
        const Gateway__Control__V1__QueryMatch *qm = m->query_params[q];
        if (tr_empty(qm->name)) {
            tr_error(tr, tr_printf(tr, "%s.query_params[%zu].name", path, q),
                     "query parameter name must not be empty");
            continue;
        }
        ev_query_matcher *qp =
            TR_NEW(tr, ev_query_matcher, ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__INIT);
        qp->name = tr_strdup(tr, qm->name);
        qp->query_parameter_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__QUERY_PARAMETER_MATCH_SPECIFIER_STRING_MATCH;
        Envoy__Type__Matcher__V3__StringMatcher *sm =
            TR_NEW(tr, Envoy__Type__Matcher__V3__StringMatcher,
                   ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT);
        if (is_regex_type(qm->type)) {
            sm->match_pattern_case =
                ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_SAFE_REGEX;
            sm->safe_regex = tr_regex(tr, qm->value);
        } else {
            sm->match_pattern_case = ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_EXACT;
            sm->exact = tr_strdup(tr, qm->value);
        }
        qp->string_match = sm;
        tr_pv_push(tr, out, qp);
    }
}

/* One path matcher of an IR match: kind, value, ordering keys, and the prefix rewrite
 * that ReplacePrefixMatch needs for it. */
typedef struct path_part {
    int kind; /* PATH_PREFIX, PATH_EXACT, PATH_REGEX */
    const char *value;
    int rank;
    size_t len;
    const char *rewrite; /* NULL when no ReplacePrefixMatch */
} path_part;

/* The parts of a PathPrefix value v (already checked to start with "/"). */
static size_t prefix_parts(tr_ctx *tr, const char *v, const char *repl, path_part out[2])
{
    size_t len = strlen(v);
    while (len > 1 && v[len - 1] == '/')
        len--;
    if (len == 1) {
        out[0] = (path_part){PATH_PREFIX, tr_strdup(tr, ""), RANK_PREFIX, 1, NULL};
        if (repl) {
            /* Matched prefix "" is replaced: "/x" becomes repl + "/x", so repl loses its
             * trailing slashes ("/" replaced by "/v2/" gives "/v2/x"). */
            size_t rl = strlen(repl);
            while (rl > 0 && repl[rl - 1] == '/')
                rl--;
            out[0].rewrite = sx_arena_strndup(tr->arena, repl, rl);
        }
        return 1;
    }
    const char *base = sx_arena_strndup(tr->arena, v, len);
    out[0] = (path_part){PATH_EXACT, base, RANK_PREFIX, len, NULL};
    out[1] = (path_part){PATH_PREFIX, tr_printf(tr, "%s/", base), RANK_PREFIX, len, NULL};
    if (repl) {
        size_t rl = strlen(repl);
        out[0].rewrite = tr_strdup(tr, repl);
        out[1].rewrite =
            rl > 0 && repl[rl - 1] == '/' ? tr_strdup(tr, repl) : tr_printf(tr, "%s/", repl);
    }
    return 2;
}

/* The parts of an HTTP match; 0 after recording an error. */
static size_t http_parts(tr_ctx *tr, const Gateway__Control__V1__HttpMatch *m, const char *repl,
                         const char *path, path_part out[2])
{
    const char *type = tr_empty(m->path_type) ? "PathPrefix" : m->path_type;
    const char *v = tr_empty(m->path) ? "/" : m->path;
    bool regex = strcmp(type, "RegularExpression") == 0, exact = strcmp(type, "Exact") == 0;
    if (!regex && v[0] != '/') {
        tr_error(tr, tr_printf(tr, "%s.path", path), "path must start with \"/\"");
        return 0;
    }
    if (!regex && !exact)
        return prefix_parts(tr, v, repl, out);
    if (repl) {
        tr_error(tr, path, "replace_prefix_match needs PathPrefix matches");
        return 0;
    }
    out[0] = (path_part){regex ? PATH_REGEX : PATH_EXACT, tr_strdup(tr, v),
                         regex ? RANK_REGEX : RANK_EXACT, strlen(v), NULL};
    return 1;
}

/* The part of a gRPC match: "/service/method" exact, "/service/" prefix, or a regex. */
static size_t grpc_parts(tr_ctx *tr, const Gateway__Control__V1__GrpcMatch *m, const char *path,
                         path_part out[2])
{
    const char *svc = m->service ? m->service : "", *meth = m->method ? m->method : "";
    if (strchr(svc, '/') || strchr(meth, '/')) {
        tr_error(tr, path, "service and method must not contain \"/\"");
        return 0;
    }
    if (is_regex_type(m->match_type)) {
        /* Each part grouped, so that an alternation stays inside its part: "Get|Put"
         * must not match the path "Put". */
        const char *re = tr_printf(tr, "/%s%s%s/%s%s%s", svc[0] ? "(?:" : "",
                                   svc[0] ? svc : "[^/]+", svc[0] ? ")" : "", meth[0] ? "(?:" : "",
                                   meth[0] ? meth : "[^/]+", meth[0] ? ")" : "");
        out[0] = (path_part){PATH_REGEX, re, RANK_REGEX, strlen(re), NULL};
    } else if (svc[0] && meth[0]) {
        const char *p = tr_printf(tr, "/%s/%s", svc, meth);
        out[0] = (path_part){PATH_EXACT, p, RANK_EXACT, strlen(p), NULL};
    } else if (svc[0]) {
        const char *p = tr_printf(tr, "/%s/", svc);
        out[0] = (path_part){PATH_PREFIX, p, RANK_PREFIX, strlen(p), NULL};
    } else if (meth[0]) {
        const char *re = tr_printf(tr, "/[^/]+/%s", re_escape(tr, meth));
        out[0] = (path_part){PATH_REGEX, re, RANK_REGEX, strlen(re), NULL};
    } else {
        out[0] = (path_part){PATH_PREFIX, tr_strdup(tr, ""), RANK_PREFIX, 1, NULL};
    }
    return 1;
}

/* Builds the Route of one part and appends it to set. */
static void add_route(tr_ctx *tr, tr_route_set *set, const tr_rule_out *ro, const path_part *pp,
                      tr_pvec *headers, tr_pvec *query, bool has_method, const char *qname,
                      tr_route_kind kind, size_t rule, size_t match, size_t part, const char *where)
{
    ev_route *r = TR_NEW(tr, ev_route, ENVOY__CONFIG__ROUTE__V3__ROUTE__INIT);
    r->name =
        tr_printf(tr, "%s/rule%zu/match%zu%s", qname, rule, match, part == 0 ? "" : "/prefix");
    ev_match *m = TR_NEW(tr, ev_match, ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__INIT);
    m->path_specifier_case = pp->kind;
    if (pp->kind == PATH_PREFIX)
        m->prefix = (char *)pp->value; /* never protobuf_c_empty_string: "" must be encoded */
    else if (pp->kind == PATH_EXACT)
        m->path = (char *)pp->value;
    else
        m->safe_regex = tr_regex(tr, pp->value);
    m->n_headers = headers->n;
    m->headers = (ev_header_matcher **)headers->v;
    m->n_query_parameters = query->n;
    m->query_parameters = (ev_query_matcher **)query->v;
    r->match = m;

    r->n_request_headers_to_add = ro->req_add.n;
    r->request_headers_to_add = (ev_hvo **)ro->req_add.v;
    r->n_request_headers_to_remove = ro->req_remove.n;
    r->request_headers_to_remove = (char **)ro->req_remove.v;
    r->n_response_headers_to_add = ro->resp_add.n;
    r->response_headers_to_add = (ev_hvo **)ro->resp_add.v;
    r->n_response_headers_to_remove = ro->resp_remove.n;
    r->response_headers_to_remove = (char **)ro->resp_remove.v;
    tr_route_filter_config(tr, r, TR_SESSION_FILTER, ro->session);
    tr_route_filter_config(tr, r, TR_RATELIMIT_FILTER, ro->ratelimit);

    bool forwarding = false;
    if (ro->redirect) {
        ev_redirect *rd = TR_NEW(tr, ev_redirect, ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__INIT);
        *rd = *ro->redirect;
        if (pp->rewrite) {
            rd->path_rewrite_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__PATH_REWRITE_SPECIFIER_PREFIX_REWRITE;
            rd->prefix_rewrite = (char *)pp->rewrite;
        }
        r->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_REDIRECT;
        r->redirect = rd;
    } else if (ro->action) {
        ev_action *a = TR_NEW(tr, ev_action, ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT);
        *a = *ro->action;
        if (pp->rewrite && pp->rewrite[0])
            a->prefix_rewrite = (char *)pp->rewrite;
        r->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
        r->route = a;
        forwarding = true;
    } else {
        Envoy__Config__Route__V3__DirectResponseAction *d =
            TR_NEW(tr, Envoy__Config__Route__V3__DirectResponseAction,
                   ENVOY__CONFIG__ROUTE__V3__DIRECT_RESPONSE_ACTION__INIT);
        d->status = 500;
        r->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_DIRECT_RESPONSE;
        r->direct_response = d;
    }

    tr_route *e = &set->items[set->count++];
    *e = (tr_route){.msg = r,
                    .forwarding = forwarding,
                    .path_rank = pp->rank,
                    .path_len = pp->len,
                    .has_method = has_method,
                    .n_headers = headers->n - (has_method ? 1 : 0),
                    .n_query = query->n,
                    .qname = qname,
                    .kind = kind,
                    .rule = rule,
                    .match = match,
                    .part = part,
                    .where = where};
}

/* What one rule (at IR path where; grpc: of a gRPC route) does, into ro: its filters,
 * then its action (with the URL rewrite filter, which only HTTP rules may have). */
static void rule_begin(tr_ctx *tr, const char *where, bool grpc, const char *ns,
                       const Gateway__Control__V1__SessionPersistence *session,
                       Gateway__Control__V1__Filter **filters, size_t n_filters,
                       ir_backend_ref **refs, size_t n_refs, tr_route_set *set, tr_rule_out *ro)
{
    ro->session = tr_session_route_config(tr, session, where);
    if (ro->session)
        set->sessions = true;
    const Gateway__Control__V1__UrlRewriteFilter *rw =
        tr_rule_filters(tr, filters, n_filters, ns, grpc, ro, set, where);
    tr_rule_action(tr, ro, refs, n_refs, ns, rw, set, where);
    if (ro->action)
        ro->ratelimit = tr_token_policy_route_config(tr, refs, n_refs, ns, where);
    if (ro->ratelimit)
        set->ratelimited = true;
}

/* One match of a rule, read for add_route: its path parts (returned: how many), header
 * and query matchers, and whether it names a method. */
typedef size_t (*match_fn)(tr_ctx *tr, const void *rule, size_t j, const char *repl, const char *mp,
                           path_part parts[2], tr_pvec *headers, tr_pvec *query, bool *method);

static size_t http_match(tr_ctx *tr, const void *r, size_t j, const char *repl, const char *mp,
                         path_part parts[2], tr_pvec *headers, tr_pvec *query, bool *method)
{
    static const Gateway__Control__V1__HttpMatch any_path = GATEWAY__CONTROL__V1__HTTP_MATCH__INIT;
    const Gateway__Control__V1__HttpRule *rule = r;
    const Gateway__Control__V1__HttpMatch *m = rule->n_matches ? rule->matches[j] : &any_path;
    size_t np = http_parts(tr, m, repl, mp, parts);
    header_matchers(tr, m->headers, m->n_headers, m->method, mp, headers);
    query_matchers(tr, m, mp, query);
    *method = !tr_empty(m->method);
    return np;
}

static size_t grpc_match(tr_ctx *tr, const void *r, size_t j, const char *repl, const char *mp,
                         path_part parts[2], tr_pvec *headers, tr_pvec *query, bool *method)
{
    (void)repl;
    (void)query;
    static const Gateway__Control__V1__GrpcMatch any_method =
        GATEWAY__CONTROL__V1__GRPC_MATCH__INIT;
    const Gateway__Control__V1__GrpcRule *rule = r;
    const Gateway__Control__V1__GrpcMatch *m = rule->n_matches ? rule->matches[j] : &any_method;
    size_t np = grpc_parts(tr, m, mp, parts);
    header_matchers(tr, m->headers, m->n_headers, NULL, mp, headers);
    *method = false;
    return np;
}

/* The Routes of rule k (n_matches matches, read by match; none: one that matches all) of
 * the route qname of kind, added to set. */
static void rule_routes(tr_ctx *tr, tr_route_set *set, const tr_rule_out *ro, const void *rule,
                        size_t n_matches, match_fn match, const char *repl, const char *qname,
                        tr_route_kind kind, size_t k, const char *where)
{
    size_t nm = n_matches ? n_matches : 1;
    for (size_t j = 0; j < nm; j++) {
        const char *mp = tr_printf(tr, "%s.matches[%zu]", where, j);
        path_part parts[2];
        tr_pvec headers = {0}, query = {0};
        bool method;
        size_t np = match(tr, rule, j, repl, mp, parts, &headers, &query, &method);
        for (size_t p = 0; p < np; p++)
            add_route(tr, set, ro, &parts[p], &headers, &query, method, qname, kind, k, j, p,
                      where);
    }
}

/* The items of set, room for route's rules at per_match Routes a match (at least one
 * match a rule). */
#define SET_ALLOC(tr, set, route, per_match)                                                       \
    do {                                                                                           \
        size_t cap_ = 0;                                                                           \
        for (size_t k_ = 0; k_ < (route)->n_rules; k_++)                                           \
            cap_ +=                                                                                \
                (per_match) * ((route)->rules[k_]->n_matches ? (route)->rules[k_]->n_matches : 1); \
        (set)->items = tr_alloc((tr), (cap_ + 1) * sizeof *(set)->items);                          \
    } while (0)

/* rule_begin for rule of route, whose members an HTTP and a gRPC rule share by name. */
#define RULE_BEGIN(tr, where, grpc, route, rule, set, ro)                                          \
    rule_begin((tr), (where), (grpc), (route)->namespace_, (rule)->session_persistence,            \
               (rule)->filters, (rule)->n_filters, (rule)->backend_refs, (rule)->n_backend_refs,   \
               (set), (ro))

/* The Routes of HTTP route ri (hr, named qname) into set. */
static void http_route_set(tr_ctx *tr, size_t ri, const ir_http_route *hr, const char *qname,
                           tr_route_set *set)
{
    for (size_t k = 0; k < hr->n_rules; k++) {
        const Gateway__Control__V1__HttpRule *rule = hr->rules[k];
        const char *where = tr_printf(tr, "http_routes[%zu].rules[%zu]", ri, k);
        tr_rule_out ro = {0};
        RULE_BEGIN(tr, where, false, hr, rule, set, &ro);
        if (ro.action)
            tr_http_policies(tr, ro.action, rule, where);
        const char *repl = (ro.redirect || ro.action) ? ro.prefix_repl : NULL;
        rule_routes(tr, set, &ro, rule, rule->n_matches, http_match, repl, qname, TR_ROUTE_HTTP, k,
                    where);
    }
}

/* The Routes of gRPC route ri (gr, named qname) into set. */
static void grpc_route_set(tr_ctx *tr, size_t ri, const ir_grpc_route *gr, const char *qname,
                           tr_route_set *set)
{
    for (size_t k = 0; k < gr->n_rules; k++) {
        const char *where = tr_printf(tr, "grpc_routes[%zu].rules[%zu]", ri, k);
        tr_rule_out ro = {0};
        RULE_BEGIN(tr, where, true, gr, gr->rules[k], set, &ro);
        rule_routes(tr, set, &ro, gr->rules[k], gr->rules[k]->n_matches, grpc_match, NULL, qname,
                    TR_ROUTE_GRPC, k, where);
    }
}

void tr_routes(tr_ctx *tr)
{
    for (size_t i = 0; i < tr->ir->n_http_routes; i++) {
        const ir_http_route *hr = tr->ir->http_routes[i];
        SET_ALLOC(tr, &tr->http_sets[i], hr, 2); /* a prefix match can make two Routes */
        http_route_set(tr, i, hr, tr_qname(tr, hr->namespace_, hr->name), &tr->http_sets[i]);
    }
    for (size_t i = 0; i < tr->ir->n_grpc_routes; i++) {
        const ir_grpc_route *gr = tr->ir->grpc_routes[i];
        SET_ALLOC(tr, &tr->grpc_sets[i], gr, 1);
        grpc_route_set(tr, i, gr, tr_qname(tr, gr->namespace_, gr->name), &tr->grpc_sets[i]);
    }
}

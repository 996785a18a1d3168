/*
 * translate_route.c — IR HTTP and gRPC routes into Envoy Routes, and the
 * RouteConfiguration of a listener (virtual hosts by hostname).
 *
 * Each match of each rule becomes one Envoy Route (two for a PathPrefix, see below),
 * built once per IR route and shared by every listener that attaches the route. A
 * listener's RouteConfiguration groups them into one virtual host per hostname: the
 * hostnames of a route on a listener are the intersection of the two lists (Gateway
 * API rules, wildcards included); a side without hostnames takes the other's, and "*"
 * stands for none on both. Every listener hostname gets a virtual host even without
 * routes, so that a client dialing it finds its domain.
 *
 * Envoy takes the first route that matches, so routes within a virtual host are
 * ordered by Gateway API precedence: exact paths, then regular expressions, then
 * prefixes, each longest first; then more method, header and query matches first; ties
 * by route (namespace/name), rule, match. PathPrefix "/foo" matches "/foo" and "/foo/…"
 * but not "/foobar"; path_separated_prefix says exactly that, but gRPC clients reject
 * it, so it is written as two routes every client understands: path "/foo" and prefix
 * "/foo/". PathPrefix "/" is prefix "" (everything). Header matchers use exact_match
 * and safe_regex_match rather than string_match, which gRPC C core before 1.55 NACKs.
 *
 * A rule with no backend to send to (none listed, or all weights 0) answers 500 with a
 * direct_response, never a route without action; gRPC clients cannot run such routes
 * (grpc-js NACKs the whole RouteConfiguration), so a proxyless listener refuses them.
 */
#include "server/xds/translate.h"

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

#define PATH_PREFIX   ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX
#define PATH_EXACT    ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PATH
#define PATH_REGEX    ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_SAFE_REGEX
#define RANK_EXACT    0
#define RANK_REGEX    1
#define RANK_PREFIX   2
#define UINT32_WEIGHT 0xffffffffu

/* ---------------------------------------------------------------- small helpers */

typedef struct pvec {
    void **v;
    size_t n, cap;
} pvec;

static void pv_push(xds_tr *tr, pvec *p, void *x)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        void **v = xds_tr_alloc(tr, cap * sizeof *v);
        if (p->n)
            memcpy(v, p->v, p->n * sizeof *v);
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = x;
}

static char *lower(xds_tr *tr, const char *s)
{
    char *c = xds_tr_strdup(tr, s);
    for (char *p = c; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return c;
}

static bool empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* s with the RE2 metacharacters escaped. */
static char *re_escape(xds_tr *tr, const char *s)
{
    char *out = xds_tr_alloc(tr, strlen(s) * 2 + 1), *o = out;
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

static ev_header_matcher *header_matcher(xds_tr *tr, const char *name, const char *value,
                                         bool regex)
{
    ev_header_matcher *h =
        XDS_NEW(tr, ev_header_matcher, ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__INIT);
    h->name = lower(tr, name);
    if (regex) {
        h->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_SAFE_REGEX_MATCH;
        h->safe_regex_match = xds_tr_regex(tr, value);
    } else {
        h->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_EXACT_MATCH;
        h->exact_match = xds_tr_strdup(tr, value);
    }
    return h;
}

static void header_matchers(xds_tr *tr, ir_header_match **in, size_t n, const char *method,
                            const char *path, pvec *out)
{
    if (!empty(method))
        pv_push(tr, out, header_matcher(tr, ":method", method, false));
    for (size_t i = 0; i < n; i++) {
        if (empty(in[i]->name)) {
            xds_tr_error(tr, xds_tr_printf(tr, "%s.headers[%zu].name", path, i),
                         "header name must not be empty");
            continue;
        }
        pv_push(tr, out, header_matcher(tr, in[i]->name, in[i]->value, is_regex_type(in[i]->type)));
    }
}

/* ---------------------------------------------------------------- backends */

static void note_backend(xds_tr *tr, xds_tr_route_set *set, size_t bi)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n_backends; i++)
        if (set->backends[i] == bi)
            return;
    size_t *v = xds_tr_alloc(tr, (set->n_backends + 1) * sizeof *v);
    if (set->n_backends)
        memcpy(v, set->backends, set->n_backends * sizeof *v);
    v[set->n_backends++] = bi;
    set->backends = v;
}

long xds_tr_weighted_backends(xds_tr *tr, ir_backend_ref **refs, size_t n, const char *default_ns,
                              const char *path, const char ***names_out, uint32_t **weights_out)
{
    const char **names = xds_tr_alloc(tr, (n + 1) * sizeof *names);
    uint64_t *w = xds_tr_alloc(tr, (n + 1) * sizeof *w);
    size_t k = 0;
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
        const char *p = xds_tr_printf(tr, "%s.backend_refs[%zu]", path, i);
        long bi = xds_tr_backend_ref(tr, refs[i], default_ns, p);
        if (bi < 0) {
            bad = true;
            continue;
        }
        const ir_backend *b = tr->ir->backends[bi];
        const char *name = xds_tr_qname(tr, b->namespace_, b->name);
        /* An unset weight means 1; a weight of 0 sends no traffic. */
        uint32_t weight = refs[i]->weight ? refs[i]->weight->value : 1;
        size_t j = 0;
        while (j < k && strcmp(names[j], name) != 0)
            j++;
        if (j == k) {
            names[k] = name;
            w[k++] = 0;
        }
        w[j] += weight;
    }
    if (bad)
        return -1;
    /* Sort by name (the order of backend_refs carries no meaning), drop zero weights. */
    size_t *order = xds_tr_alloc(tr, (k + 1) * sizeof *order);
    for (size_t i = 0; i < k; i++)
        order[i] = i;
    for (size_t i = 1; i < k; i++) /* insertion sort: a rule has a handful of backends */
        for (size_t j = i; j > 0 && strcmp(names[order[j - 1]], names[order[j]]) > 0; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    uint32_t *weights = xds_tr_alloc(tr, (k + 1) * sizeof *weights);
    const char **out = xds_tr_alloc(tr, (k + 1) * sizeof *out);
    size_t m = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < k; i++) {
        size_t j = order[i];
        if (w[j] == 0)
            continue;
        total += w[j];
        out[m] = names[j];
        weights[m++] = (uint32_t)(w[j] > UINT32_WEIGHT ? UINT32_WEIGHT : w[j]);
    }
    if (total > UINT32_WEIGHT) {
        xds_tr_error(tr, path, "backend weights add up to more than %u", UINT32_WEIGHT);
        return -1;
    }
    *names_out = out;
    *weights_out = weights;
    return (long)m;
}

/* Hash policies for consistent-hashing backends, so that RING_HASH and MAGLEV hash on
 * what the backend's load_balancing.hash_on names. The same policy is sent once. */
static void hash_policies(xds_tr *tr, ev_action *a, const char **names, size_t n)
{
    pvec hp = {0};
    const Gateway__Control__V1__LoadBalancingPolicy **seen =
        xds_tr_alloc(tr, (n + 1) * sizeof *seen);
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const ir_backend *b = tr->ir->backends[xds_tr_backend_find(tr, names[i])];
        const Gateway__Control__V1__LoadBalancingPolicy *lb = b->load_balancing;
        if (lb == NULL || empty(lb->hash_on) ||
            (lb->algorithm !=
                 GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_RING_HASH &&
             lb->algorithm !=
                 GATEWAY__CONTROL__V1__LOAD_BALANCING_ALGORITHM__LOAD_BALANCING_ALGORITHM_MAGLEV))
            continue;
        bool dup = false;
        for (size_t j = 0; j < n_seen && !dup; j++)
            dup = strcmp(seen[j]->hash_on, lb->hash_on) == 0 &&
                  strcmp(seen[j]->hash_key, lb->hash_key) == 0;
        if (dup)
            continue;
        seen[n_seen++] = lb;
        Envoy__Config__Route__V3__RouteAction__HashPolicy *p =
            XDS_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy,
                    ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__INIT);
        if (strcmp(lb->hash_on, "SourceIP") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_CONNECTION_PROPERTIES;
            p->connection_properties = XDS_NEW(
                tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__ConnectionProperties,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__CONNECTION_PROPERTIES__INIT);
            p->connection_properties->source_ip = 1;
        } else if (empty(lb->hash_key)) {
            continue; /* reported by the cluster translator */
        } else if (strcmp(lb->hash_on, "Header") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_HEADER;
            p->header = XDS_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__Header,
                                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__HEADER__INIT);
            p->header->header_name = lower(tr, lb->hash_key);
        } else if (strcmp(lb->hash_on, "Cookie") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_COOKIE;
            p->cookie = XDS_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__Cookie,
                                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__COOKIE__INIT);
            p->cookie->name = xds_tr_strdup(tr, lb->hash_key);
        } else if (strcmp(lb->hash_on, "QueryParameter") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_QUERY_PARAMETER;
            p->query_parameter =
                XDS_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__QueryParameter,
                        ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__QUERY_PARAMETER__INIT);
            p->query_parameter->name = xds_tr_strdup(tr, lb->hash_key);
        } else {
            continue;
        }
        pv_push(tr, &hp, p);
    }
    a->n_hash_policy = hp.n;
    a->hash_policy = (Envoy__Config__Route__V3__RouteAction__HashPolicy **)hp.v;
}

/* ---------------------------------------------------------------- rules */

/* What the filters and backends of one rule make of every route built from it. */
typedef struct rule_out {
    pvec req_add, req_remove, resp_add, resp_remove, mirrors;
    ev_action *action;        /* forwarding: the template copied per route */
    ev_redirect *redirect;    /* redirect: the template copied per route */
    const char *prefix_repl;  /* ReplacePrefixMatch value (action or redirect), or NULL */
    const char *prefix_where; /* its IR path, for errors */
    bool has_rewrite;
} rule_out;

static void header_options(xds_tr *tr, const Gateway__Control__V1__HeaderModifier *m, pvec *add,
                           pvec *remove, const char *path)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass == 0 ? m->n_set : m->n_add;
        Gateway__Control__V1__HttpHeader **hs = pass == 0 ? m->set : m->add;
        for (size_t i = 0; i < n; i++) {
            if (empty(hs[i]->name)) {
                xds_tr_error(tr,
                             xds_tr_printf(tr, "%s.%s[%zu].name", path, pass ? "add" : "set", i),
                             "header name must not be empty");
                continue;
            }
            ev_hvo *o = XDS_NEW(tr, ev_hvo, ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__INIT);
            o->header = XDS_NEW(tr, Envoy__Config__Core__V3__HeaderValue,
                                ENVOY__CONFIG__CORE__V3__HEADER_VALUE__INIT);
            o->header->key = lower(tr, hs[i]->name);
            o->header->value = xds_tr_strdup(tr, hs[i]->value);
            o->append_action =
                pass == 0
                    ? ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__HEADER_APPEND_ACTION__OVERWRITE_IF_EXISTS_OR_ADD
                    : ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__HEADER_APPEND_ACTION__APPEND_IF_EXISTS_OR_ADD;
            pv_push(tr, add, o);
        }
    }
    for (size_t i = 0; i < m->n_remove; i++)
        pv_push(tr, remove, lower(tr, m->remove[i]));
}

static ev_redirect *redirect_action(xds_tr *tr,
                                    const Gateway__Control__V1__RequestRedirectFilter *f,
                                    rule_out *ro, const char *path)
{
    ev_redirect *r = XDS_NEW(tr, ev_redirect, ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__INIT);
    if (!empty(f->scheme)) {
        r->scheme_rewrite_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__SCHEME_REWRITE_SPECIFIER_SCHEME_REDIRECT;
        r->scheme_redirect = xds_tr_strdup(tr, f->scheme);
    }
    if (!empty(f->hostname))
        r->host_redirect = xds_tr_strdup(tr, f->hostname);
    r->port_redirect = f->port;
    switch (f->status_code) {
    case 0:
    case 302:
        r->response_code = ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__FOUND;
        break;
    case 301:
        r->response_code =
            ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__MOVED_PERMANENTLY;
        break;
    case 303:
        r->response_code =
            ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__SEE_OTHER;
        break;
    case 307:
        r->response_code =
            ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__TEMPORARY_REDIRECT;
        break;
    case 308:
        r->response_code =
            ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__PERMANENT_REDIRECT;
        break;
    default:
        xds_tr_error(tr, xds_tr_printf(tr, "%s.status_code", path),
                     "redirect status %u is not supported: use 301, 302, 303, 307 or 308",
                     f->status_code);
    }
    if (f->path) {
        if (strcmp(f->path->type, "ReplaceFullPath") == 0) {
            r->path_rewrite_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__PATH_REWRITE_SPECIFIER_PATH_REDIRECT;
            r->path_redirect = xds_tr_strdup(tr, f->path->replace_full_path);
        } else {
            ro->prefix_repl = f->path->replace_prefix_match;
            ro->prefix_where = xds_tr_printf(tr, "%s.path", path);
        }
    }
    return r;
}

/* Applies the filters of a rule to ro. grpc: a gRPC rule (redirects and rewrites are
 * HTTP-only). Returns the URL rewrite filter, if any. */
static const Gateway__Control__V1__UrlRewriteFilter *
rule_filters(xds_tr *tr, ir_filter **filters, size_t n, const char *ns, bool grpc, rule_out *ro,
             xds_tr_route_set *set, const char *where)
{
    const Gateway__Control__V1__UrlRewriteFilter *rewrite = NULL;
    for (size_t i = 0; i < n; i++) {
        const ir_filter *f = filters[i];
        const char *path = xds_tr_printf(tr, "%s.filters[%zu]", where, i);
        switch (f->config_case) {
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_HEADER_MODIFIER:
            header_options(tr, f->request_header_modifier, &ro->req_add, &ro->req_remove,
                           xds_tr_printf(tr, "%s.request_header_modifier", path));
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_RESPONSE_HEADER_MODIFIER:
            header_options(tr, f->response_header_modifier, &ro->resp_add, &ro->resp_remove,
                           xds_tr_printf(tr, "%s.response_header_modifier", path));
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_REDIRECT:
            if (grpc) {
                xds_tr_error(tr, path, "request_redirect is not supported on grpc routes");
            } else if (ro->redirect) {
                xds_tr_error(tr, path, "a rule can have one request_redirect filter");
            } else {
                ro->redirect = redirect_action(tr, f->request_redirect, ro,
                                               xds_tr_printf(tr, "%s.request_redirect", path));
            }
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_URL_REWRITE:
            if (grpc)
                xds_tr_error(tr, path, "url_rewrite is not supported on grpc routes");
            else if (rewrite)
                xds_tr_error(tr, path, "a rule can have one url_rewrite filter");
            else
                rewrite = f->url_rewrite;
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_MIRROR: {
            const Gateway__Control__V1__RequestMirrorFilter *m = f->request_mirror;
            const char *bp = xds_tr_printf(tr, "%s.request_mirror.backend_ref", path);
            if (m->backend_ref == NULL) {
                xds_tr_error(tr, bp, "a mirror needs a backend");
                break;
            }
            long bi = xds_tr_backend_ref(tr, m->backend_ref, ns, bp);
            if (bi < 0)
                break;
            note_backend(tr, set, (size_t)bi);
            Envoy__Config__Route__V3__RouteAction__RequestMirrorPolicy *mp =
                XDS_NEW(tr, Envoy__Config__Route__V3__RouteAction__RequestMirrorPolicy,
                        ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__REQUEST_MIRROR_POLICY__INIT);
            mp->cluster = (char *)xds_tr_qname(tr, tr->ir->backends[bi]->namespace_,
                                               tr->ir->backends[bi]->name);
            if (m->percent > 0 && m->percent < 100) {
                mp->runtime_fraction =
                    XDS_NEW(tr, Envoy__Config__Core__V3__RuntimeFractionalPercent,
                            ENVOY__CONFIG__CORE__V3__RUNTIME_FRACTIONAL_PERCENT__INIT);
                mp->runtime_fraction->default_value =
                    XDS_NEW(tr, Envoy__Type__V3__FractionalPercent,
                            ENVOY__TYPE__V3__FRACTIONAL_PERCENT__INIT);
                mp->runtime_fraction->default_value->numerator = m->percent;
                mp->runtime_fraction->default_value->denominator =
                    ENVOY__TYPE__V3__FRACTIONAL_PERCENT__DENOMINATOR_TYPE__HUNDRED;
            }
            pv_push(tr, &ro->mirrors, mp);
            break;
        }
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_EXTENSION_REF:
            xds_tr_error(tr, path,
                         "extension_ref filters are not supported by the envoy translation");
            break;
        default:
            xds_tr_error(tr, path, "filter of type \"%s\" has no configuration", f->type);
        }
    }
    if (ro->redirect && rewrite)
        xds_tr_error(tr, where, "request_redirect and url_rewrite cannot be combined in one rule");
    return rewrite;
}

/* The forwarding action of a rule: cluster or weighted clusters, or NULL when the rule
 * has nothing to forward to (the caller answers 500). */
static int cmp_duration(const Google__Protobuf__Duration *a, const Google__Protobuf__Duration *b)
{
    if (a->seconds != b->seconds)
        return a->seconds < b->seconds ? -1 : 1;
    return a->nanos < b->nanos ? -1 : a->nanos > b->nanos;
}

static ev_action *forward_action(xds_tr *tr, ir_backend_ref **refs, size_t n, const char *ns,
                                 xds_tr_route_set *set, const char *where)
{
    const char **names;
    uint32_t *weights;
    long m = xds_tr_weighted_backends(tr, refs, n, ns, where, &names, &weights);
    if (m < 0)
        return NULL;
    /* Every backend named counts as referenced, zero weights included. */
    for (size_t i = 0; i < n; i++) {
        const char *rns = refs[i]->namespace_ && refs[i]->namespace_[0] ? refs[i]->namespace_ : ns;
        long bi = xds_tr_backend_find(tr, xds_tr_qname(tr, rns, refs[i]->name));
        if (bi >= 0)
            note_backend(tr, set, (size_t)bi);
    }
    if (m == 0)
        return NULL;
    ev_action *a = XDS_NEW(tr, ev_action, ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT);
    if (m == 1) {
        a->cluster_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER;
        a->cluster = (char *)names[0];
    } else {
        Envoy__Config__Route__V3__WeightedCluster *wc =
            XDS_NEW(tr, Envoy__Config__Route__V3__WeightedCluster,
                    ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__INIT);
        wc->n_clusters = (size_t)m;
        wc->clusters =
            (Envoy__Config__Route__V3__WeightedCluster__ClusterWeight **)xds_tr_ptrs(tr, (size_t)m);
        for (long i = 0; i < m; i++) {
            Envoy__Config__Route__V3__WeightedCluster__ClusterWeight *cw =
                XDS_NEW(tr, Envoy__Config__Route__V3__WeightedCluster__ClusterWeight,
                        ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT);
            cw->name = (char *)names[i];
            cw->weight = xds_tr_u32(tr, weights[i]);
            wc->clusters[i] = cw;
        }
        a->cluster_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS;
        a->weighted_clusters = wc;
    }
    hash_policies(tr, a, names, (size_t)m);
    /* With no timeout on the rule, the longest request_timeout of its backends. */
    const Google__Protobuf__Duration *longest = NULL;
    for (long i = 0; i < m; i++) {
        const Google__Protobuf__Duration *d =
            tr->ir->backends[xds_tr_backend_find(tr, names[i])]->request_timeout;
        if (d && (longest == NULL || cmp_duration(d, longest) > 0))
            longest = d;
    }
    if (longest && longest->seconds >= 0 && longest->nanos >= 0)
        a->timeout = xds_tr_duration(tr, longest, where);
    return a;
}

/* Timeouts and retries of an HTTP rule, on a forwarding action. */
static void http_policies(xds_tr *tr, ev_action *a, const Gateway__Control__V1__HttpRule *rule,
                          const char *where)
{
    Envoy__Config__Route__V3__RetryPolicy *rp = NULL;
    const Gateway__Control__V1__HttpRouteRetry *r = rule->retry;
    if (r && (r->attempts > 0 || r->n_codes > 0)) {
        rp = XDS_NEW(tr, Envoy__Config__Route__V3__RetryPolicy,
                     ENVOY__CONFIG__ROUTE__V3__RETRY_POLICY__INIT);
        if (r->n_codes > 0) {
            rp->retry_on = "retriable-status-codes";
            rp->n_retriable_status_codes = r->n_codes;
            rp->retriable_status_codes = xds_tr_alloc(tr, r->n_codes * sizeof(uint32_t));
            memcpy(rp->retriable_status_codes, r->codes, r->n_codes * sizeof(uint32_t));
        } else {
            rp->retry_on = "5xx";
        }
        if (r->attempts > 0)
            rp->num_retries = xds_tr_u32(tr, r->attempts);
        const char *bp = xds_tr_printf(tr, "%s.retry.backoff", where);
        Google__Protobuf__Duration *backoff = xds_tr_duration(tr, r->backoff, bp);
        /* A zero base interval is refused by gRPC clients; it means "no backoff set". */
        if (backoff && (backoff->seconds > 0 || backoff->nanos > 0)) {
            rp->retry_back_off =
                XDS_NEW(tr, Envoy__Config__Route__V3__RetryPolicy__RetryBackOff,
                        ENVOY__CONFIG__ROUTE__V3__RETRY_POLICY__RETRY_BACK_OFF__INIT);
            rp->retry_back_off->base_interval = backoff;
        }
        a->retry_policy = rp;
    }
    const Gateway__Control__V1__HttpRouteTimeouts *t = rule->timeouts;
    if (t == NULL)
        return;
    Google__Protobuf__Duration *req =
        xds_tr_duration(tr, t->request, xds_tr_printf(tr, "%s.timeouts.request", where));
    Google__Protobuf__Duration *back = xds_tr_duration(
        tr, t->backend_request, xds_tr_printf(tr, "%s.timeouts.backend_request", where));
    if (req && back) {
        /* The whole request bounds every attempt; with retries each try is bounded by
         * backend_request, without them the single try is bounded by the smaller. */
        if (rp) {
            a->timeout = req;
            rp->per_try_timeout = back;
        } else {
            a->timeout = cmp_duration(back, req) < 0 ? back : req;
        }
    } else if (req || back) {
        a->timeout = req ? req : back;
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
static size_t prefix_parts(xds_tr *tr, const char *v, const char *repl, path_part out[2])
{
    size_t len = strlen(v);
    while (len > 1 && v[len - 1] == '/')
        len--;
    if (len == 1) {
        out[0] = (path_part){PATH_PREFIX, xds_tr_strdup(tr, ""), RANK_PREFIX, 1, NULL};
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
    out[1] = (path_part){PATH_PREFIX, xds_tr_printf(tr, "%s/", base), RANK_PREFIX, len, NULL};
    if (repl) {
        size_t rl = strlen(repl);
        out[0].rewrite = xds_tr_strdup(tr, repl);
        out[1].rewrite = rl > 0 && repl[rl - 1] == '/' ? xds_tr_strdup(tr, repl)
                                                       : xds_tr_printf(tr, "%s/", repl);
    }
    return 2;
}

/* The parts of an HTTP match; 0 after recording an error. */
static size_t http_parts(xds_tr *tr, const Gateway__Control__V1__HttpMatch *m, const char *repl,
                         const char *path, path_part out[2])
{
    const char *type = empty(m->path_type) ? "PathPrefix" : m->path_type;
    const char *v = empty(m->path) ? "/" : m->path;
    if (strcmp(type, "RegularExpression") == 0) {
        if (repl) {
            xds_tr_error(tr, path, "replace_prefix_match needs PathPrefix matches");
            return 0;
        }
        out[0] = (path_part){PATH_REGEX, xds_tr_strdup(tr, v), RANK_REGEX, strlen(v), NULL};
        return 1;
    }
    if (v[0] != '/') {
        xds_tr_error(tr, xds_tr_printf(tr, "%s.path", path), "path must start with \"/\"");
        return 0;
    }
    if (strcmp(type, "Exact") == 0) {
        if (repl) {
            xds_tr_error(tr, path, "replace_prefix_match needs PathPrefix matches");
            return 0;
        }
        out[0] = (path_part){PATH_EXACT, xds_tr_strdup(tr, v), RANK_EXACT, strlen(v), NULL};
        return 1;
    }
    return prefix_parts(tr, v, repl, out);
}

/* The part of a gRPC match: "/service/method" exact, "/service/" prefix, or a regex. */
static size_t grpc_parts(xds_tr *tr, const Gateway__Control__V1__GrpcMatch *m, const char *path,
                         path_part out[2])
{
    const char *svc = m->service ? m->service : "", *meth = m->method ? m->method : "";
    if (strchr(svc, '/') || strchr(meth, '/')) {
        xds_tr_error(tr, path, "service and method must not contain \"/\"");
        return 0;
    }
    if (is_regex_type(m->match_type)) {
        const char *re =
            xds_tr_printf(tr, "/%s/%s", svc[0] ? svc : "[^/]+", meth[0] ? meth : "[^/]+");
        out[0] = (path_part){PATH_REGEX, re, RANK_REGEX, strlen(re), NULL};
    } else if (svc[0] && meth[0]) {
        const char *p = xds_tr_printf(tr, "/%s/%s", svc, meth);
        out[0] = (path_part){PATH_EXACT, p, RANK_EXACT, strlen(p), NULL};
    } else if (svc[0]) {
        const char *p = xds_tr_printf(tr, "/%s/", svc);
        out[0] = (path_part){PATH_PREFIX, p, RANK_PREFIX, strlen(p), NULL};
    } else if (meth[0]) {
        const char *re = xds_tr_printf(tr, "/[^/]+/%s", re_escape(tr, meth));
        out[0] = (path_part){PATH_REGEX, re, RANK_REGEX, strlen(re), NULL};
    } else {
        out[0] = (path_part){PATH_PREFIX, xds_tr_strdup(tr, ""), RANK_PREFIX, 1, NULL};
    }
    return 1;
}

/* Builds the Route of one part and appends it to set. */
static void add_route(xds_tr *tr, xds_tr_route_set *set, const rule_out *ro, const path_part *pp,
                      pvec *headers, pvec *query, bool has_method, const char *qname,
                      xds_route_kind kind, size_t rule, size_t match, size_t part,
                      const char *where)
{
    ev_route *r = XDS_NEW(tr, ev_route, ENVOY__CONFIG__ROUTE__V3__ROUTE__INIT);
    r->name =
        xds_tr_printf(tr, "%s/rule%zu/match%zu%s", qname, rule, match, part == 0 ? "" : "/prefix");
    ev_match *m = XDS_NEW(tr, ev_match, ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__INIT);
    m->path_specifier_case = pp->kind;
    if (pp->kind == PATH_PREFIX)
        m->prefix = (char *)pp->value; /* never protobuf_c_empty_string: "" must be encoded */
    else if (pp->kind == PATH_EXACT)
        m->path = (char *)pp->value;
    else
        m->safe_regex = xds_tr_regex(tr, pp->value);
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

    bool forwarding = false;
    if (ro->redirect) {
        ev_redirect *rd = XDS_NEW(tr, ev_redirect, ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__INIT);
        *rd = *ro->redirect;
        if (pp->rewrite) {
            rd->path_rewrite_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__PATH_REWRITE_SPECIFIER_PREFIX_REWRITE;
            rd->prefix_rewrite = (char *)pp->rewrite;
        }
        r->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_REDIRECT;
        r->redirect = rd;
    } else if (ro->action) {
        ev_action *a = XDS_NEW(tr, ev_action, ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT);
        *a = *ro->action;
        if (pp->rewrite && pp->rewrite[0])
            a->prefix_rewrite = (char *)pp->rewrite;
        r->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
        r->route = a;
        forwarding = true;
    } else {
        Envoy__Config__Route__V3__DirectResponseAction *d =
            XDS_NEW(tr, Envoy__Config__Route__V3__DirectResponseAction,
                    ENVOY__CONFIG__ROUTE__V3__DIRECT_RESPONSE_ACTION__INIT);
        d->status = 500;
        r->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_DIRECT_RESPONSE;
        r->direct_response = d;
    }

    xds_tr_route *e = &set->items[set->count++];
    *e = (xds_tr_route){.msg = r,
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

/* Finishes the action template of a rule from its backends and URL rewrite. */
static void rule_action(xds_tr *tr, rule_out *ro, ir_backend_ref **refs, size_t n, const char *ns,
                        const Gateway__Control__V1__UrlRewriteFilter *rw, xds_tr_route_set *set,
                        const char *where)
{
    if (ro->redirect)
        return; /* a redirect answers the request itself; backends are not used */
    ro->action = forward_action(tr, refs, n, ns, set, where);
    if (ro->action == NULL)
        return;
    ro->action->n_request_mirror_policies = ro->mirrors.n;
    ro->action->request_mirror_policies =
        (Envoy__Config__Route__V3__RouteAction__RequestMirrorPolicy **)ro->mirrors.v;
    if (rw == NULL)
        return;
    if (!empty(rw->hostname)) {
        ro->action->host_rewrite_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HOST_REWRITE_SPECIFIER_HOST_REWRITE_LITERAL;
        ro->action->host_rewrite_literal = xds_tr_strdup(tr, rw->hostname);
    }
    if (rw->path) {
        if (strcmp(rw->path->type, "ReplaceFullPath") == 0) {
            Envoy__Type__Matcher__V3__RegexMatchAndSubstitute *s =
                XDS_NEW(tr, Envoy__Type__Matcher__V3__RegexMatchAndSubstitute,
                        ENVOY__TYPE__MATCHER__V3__REGEX_MATCH_AND_SUBSTITUTE__INIT);
            s->pattern = xds_tr_regex(tr, "^/.*$");
            s->substitution = xds_tr_strdup(tr, rw->path->replace_full_path);
            ro->action->regex_rewrite = s;
        } else {
            ro->prefix_repl = rw->path->replace_prefix_match;
        }
    }
}

static void http_route_set(xds_tr *tr, size_t ri)
{
    const ir_http_route *hr = tr->ir->http_routes[ri];
    xds_tr_route_set *set = &tr->http_sets[ri];
    const char *qname = xds_tr_qname(tr, hr->namespace_, hr->name);
    size_t cap = 0;
    for (size_t k = 0; k < hr->n_rules; k++)
        cap += 2 * (hr->rules[k]->n_matches ? hr->rules[k]->n_matches : 1);
    set->items = xds_tr_alloc(tr, (cap + 1) * sizeof *set->items);

    for (size_t k = 0; k < hr->n_rules; k++) {
        const Gateway__Control__V1__HttpRule *rule = hr->rules[k];
        const char *where = xds_tr_printf(tr, "http_routes[%zu].rules[%zu]", ri, k);
        if (rule->session_persistence)
            xds_tr_error(tr, xds_tr_printf(tr, "%s.session_persistence", where),
                         "session persistence is not supported by the envoy translation");
        rule_out ro = {0};
        const Gateway__Control__V1__UrlRewriteFilter *rw = rule_filters(
            tr, rule->filters, rule->n_filters, hr->namespace_, false, &ro, set, where);
        rule_action(tr, &ro, rule->backend_refs, rule->n_backend_refs, hr->namespace_, rw, set,
                    where);
        if (ro.action)
            http_policies(tr, ro.action, rule, where);
        const char *repl = (ro.redirect || ro.action) ? ro.prefix_repl : NULL;

        size_t nm = rule->n_matches ? rule->n_matches : 1;
        for (size_t j = 0; j < nm; j++) {
            static const Gateway__Control__V1__HttpMatch any_path =
                GATEWAY__CONTROL__V1__HTTP_MATCH__INIT;
            const Gateway__Control__V1__HttpMatch *m =
                rule->n_matches ? rule->matches[j] : &any_path;
            const char *mp = xds_tr_printf(tr, "%s.matches[%zu]", where, j);
            path_part parts[2];
            size_t np = http_parts(tr, m, repl, mp, parts);
            pvec headers = {0}, query = {0};
            header_matchers(tr, m->headers, m->n_headers, m->method, mp, &headers);
            for (size_t q = 0; q < m->n_query_params; q++) {
                const Gateway__Control__V1__QueryMatch *qm = m->query_params[q];
                if (empty(qm->name)) {
                    xds_tr_error(tr, xds_tr_printf(tr, "%s.query_params[%zu].name", mp, q),
                                 "query parameter name must not be empty");
                    continue;
                }
                ev_query_matcher *qp = XDS_NEW(
                    tr, ev_query_matcher, ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__INIT);
                qp->name = xds_tr_strdup(tr, qm->name);
                qp->query_parameter_match_specifier_case =
                    ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__QUERY_PARAMETER_MATCH_SPECIFIER_STRING_MATCH;
                Envoy__Type__Matcher__V3__StringMatcher *sm =
                    XDS_NEW(tr, Envoy__Type__Matcher__V3__StringMatcher,
                            ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT);
                if (is_regex_type(qm->type)) {
                    sm->match_pattern_case =
                        ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_SAFE_REGEX;
                    sm->safe_regex = xds_tr_regex(tr, qm->value);
                } else {
                    sm->match_pattern_case =
                        ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_EXACT;
                    sm->exact = xds_tr_strdup(tr, qm->value);
                }
                qp->string_match = sm;
                pv_push(tr, &query, qp);
            }
            for (size_t p = 0; p < np; p++)
                add_route(tr, set, &ro, &parts[p], &headers, &query, !empty(m->method), qname,
                          XDS_ROUTE_HTTP, k, j, p, where);
        }
    }
}

static void grpc_route_set(xds_tr *tr, size_t ri)
{
    const ir_grpc_route *gr = tr->ir->grpc_routes[ri];
    xds_tr_route_set *set = &tr->grpc_sets[ri];
    const char *qname = xds_tr_qname(tr, gr->namespace_, gr->name);
    size_t cap = 0;
    for (size_t k = 0; k < gr->n_rules; k++)
        cap += gr->rules[k]->n_matches ? gr->rules[k]->n_matches : 1;
    set->items = xds_tr_alloc(tr, (cap + 1) * sizeof *set->items);

    for (size_t k = 0; k < gr->n_rules; k++) {
        const Gateway__Control__V1__GrpcRule *rule = gr->rules[k];
        const char *where = xds_tr_printf(tr, "grpc_routes[%zu].rules[%zu]", ri, k);
        if (rule->session_persistence)
            xds_tr_error(tr, xds_tr_printf(tr, "%s.session_persistence", where),
                         "session persistence is not supported by the envoy translation");
        rule_out ro = {0};
        (void)rule_filters(tr, rule->filters, rule->n_filters, gr->namespace_, true, &ro, set,
                           where);
        rule_action(tr, &ro, rule->backend_refs, rule->n_backend_refs, gr->namespace_, NULL, set,
                    where);
        size_t nm = rule->n_matches ? rule->n_matches : 1;
        for (size_t j = 0; j < nm; j++) {
            static const Gateway__Control__V1__GrpcMatch any_method =
                GATEWAY__CONTROL__V1__GRPC_MATCH__INIT;
            const Gateway__Control__V1__GrpcMatch *m =
                rule->n_matches ? rule->matches[j] : &any_method;
            const char *mp = xds_tr_printf(tr, "%s.matches[%zu]", where, j);
            path_part parts[2];
            size_t np = grpc_parts(tr, m, mp, parts);
            pvec headers = {0}, query = {0};
            header_matchers(tr, m->headers, m->n_headers, NULL, mp, &headers);
            for (size_t p = 0; p < np; p++)
                add_route(tr, set, &ro, &parts[p], &headers, &query, false, qname, XDS_ROUTE_GRPC,
                          k, j, p, where);
        }
    }
}

void xds_tr_routes(xds_tr *tr)
{
    for (size_t i = 0; i < tr->ir->n_http_routes; i++)
        http_route_set(tr, i);
    for (size_t i = 0; i < tr->ir->n_grpc_routes; i++)
        grpc_route_set(tr, i);
}

/* ---------------------------------------------------------------- route configuration */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* The hostnames both a listener hostname l and a route hostname r match (Gateway API):
 * the more specific of the two, or NULL when they are disjoint. */
static const char *host_intersect(const char *l, const char *r)
{
    if (strcmp(l, r) == 0)
        return l;
    bool lw = l[0] == '*', rw = r[0] == '*';
    if (lw && !rw)
        return ends_with(r, l + 1) ? r : NULL;
    if (rw && !lw)
        return ends_with(l, r + 1) ? l : NULL;
    if (lw && rw) {
        if (ends_with(l + 1, r + 1))
            return l;
        if (ends_with(r + 1, l + 1))
            return r;
    }
    return NULL;
}

typedef struct vhost {
    const char *host;
    pvec routes; /* of xds_tr_route * */
} vhost;

static vhost *vhost_get(xds_tr *tr, pvec *hosts, const char *host)
{
    for (size_t i = 0; i < hosts->n; i++) {
        vhost *v = hosts->v[i];
        if (strcmp(v->host, host) == 0)
            return v;
    }
    vhost *v = xds_tr_alloc(tr, sizeof *v);
    v->host = host;
    pv_push(tr, hosts, v);
    return v;
}

static int cmp_vhost(const void *a, const void *b)
{
    const vhost *x = *(vhost *const *)a, *y = *(vhost *const *)b;
    return strcmp(x->host, y->host);
}

/* Gateway API precedence; see the file comment. A total order, so output is stable. */
static int cmp_route(const void *a, const void *b)
{
    const xds_tr_route *x = *(xds_tr_route *const *)a, *y = *(xds_tr_route *const *)b;
    if (x->path_rank != y->path_rank)
        return x->path_rank < y->path_rank ? -1 : 1;
    if (x->path_len != y->path_len)
        return x->path_len > y->path_len ? -1 : 1;
    if (x->has_method != y->has_method)
        return x->has_method ? -1 : 1;
    if (x->n_headers != y->n_headers)
        return x->n_headers > y->n_headers ? -1 : 1;
    if (x->n_query != y->n_query)
        return x->n_query > y->n_query ? -1 : 1;
    int c = strcmp(x->qname, y->qname);
    if (c != 0)
        return c;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->rule != y->rule)
        return x->rule < y->rule ? -1 : 1;
    if (x->match != y->match)
        return x->match < y->match ? -1 : 1;
    return x->part < y->part ? -1 : x->part > y->part;
}

void xds_tr_route_config(xds_tr *tr, size_t li, const char *name,
                         const xds_tr_name *const *attached, size_t n, bool proxyless)
{
    const ir_listener *l = tr->ir->listeners[li];
    char **lh = xds_tr_alloc(tr, (l->n_hostnames + 1) * sizeof *lh);
    for (size_t i = 0; i < l->n_hostnames; i++)
        lh[i] = lower(tr, l->hostnames[i]);

    pvec hosts = {0};
    for (size_t i = 0; i < l->n_hostnames; i++)
        vhost_get(tr, &hosts, lh[i]);

    for (size_t a = 0; a < n; a++) {
        const xds_tr_name *e = attached[a];
        char **rh_raw;
        size_t n_rh;
        const xds_tr_route_set *set;
        if (e->kind == XDS_ROUTE_HTTP) {
            rh_raw = tr->ir->http_routes[e->idx]->hostnames;
            n_rh = tr->ir->http_routes[e->idx]->n_hostnames;
            set = &tr->http_sets[e->idx];
        } else {
            rh_raw = tr->ir->grpc_routes[e->idx]->hostnames;
            n_rh = tr->ir->grpc_routes[e->idx]->n_hostnames;
            set = &tr->grpc_sets[e->idx];
        }
        /* The hostnames this route serves on this listener. */
        pvec eff = {0};
        if (n_rh == 0 && l->n_hostnames == 0) {
            pv_push(tr, &eff, "*");
        } else if (n_rh == 0) {
            for (size_t i = 0; i < l->n_hostnames; i++)
                pv_push(tr, &eff, lh[i]);
        } else {
            for (size_t r = 0; r < n_rh; r++) {
                char *rh = lower(tr, rh_raw[r]);
                if (l->n_hostnames == 0) {
                    pv_push(tr, &eff, rh);
                    continue;
                }
                for (size_t i = 0; i < l->n_hostnames; i++) {
                    const char *h = host_intersect(lh[i], rh);
                    if (h)
                        pv_push(tr, &eff, (void *)h);
                }
            }
            if (eff.n == 0) {
                xds_tr_error(tr, xds_tr_printf(tr, "listeners[%zu].attached_routes", li),
                             "route \"%s\" has no hostname that listener \"%s\" serves", e->qname,
                             l->name);
                continue;
            }
        }
        if (proxyless) {
            for (size_t k = 0; k < set->count; k++) {
                if (!set->items[k].forwarding)
                    xds_tr_error(tr, set->items[k].where,
                                 "a rule without backends or with a redirect cannot be served to "
                                 "proxyless grpc clients (listener \"%s\" has port 0)",
                                 l->name);
            }
        }
        for (size_t h = 0; h < eff.n; h++) {
            bool dup = false;
            for (size_t q = 0; q < h && !dup; q++)
                dup = strcmp(eff.v[q], eff.v[h]) == 0;
            if (dup)
                continue;
            vhost *v = vhost_get(tr, &hosts, eff.v[h]);
            for (size_t k = 0; k < set->count; k++)
                pv_push(tr, &v->routes, (void *)&set->items[k]);
        }
    }
    if (hosts.n == 0)
        vhost_get(tr, &hosts, "*");
    if (hosts.n > 1)
        qsort(hosts.v, hosts.n, sizeof *hosts.v, cmp_vhost);

    Envoy__Config__Route__V3__RouteConfiguration *rc =
        XDS_NEW(tr, Envoy__Config__Route__V3__RouteConfiguration,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_CONFIGURATION__INIT);
    rc->name = xds_tr_strdup(tr, name);
    rc->n_virtual_hosts = hosts.n;
    rc->virtual_hosts = (Envoy__Config__Route__V3__VirtualHost **)xds_tr_ptrs(tr, hosts.n);
    for (size_t i = 0; i < hosts.n; i++) {
        vhost *v = hosts.v[i];
        if (v->routes.n > 1)
            qsort(v->routes.v, v->routes.n, sizeof *v->routes.v, cmp_route);
        Envoy__Config__Route__V3__VirtualHost *vh =
            XDS_NEW(tr, Envoy__Config__Route__V3__VirtualHost,
                    ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__INIT);
        vh->name = xds_tr_strdup(tr, v->host);
        vh->n_domains = 1;
        vh->domains = (char **)xds_tr_ptrs(tr, 1);
        vh->domains[0] = (char *)v->host;
        vh->n_routes = v->routes.n;
        vh->routes = (ev_route **)xds_tr_ptrs(tr, v->routes.n);
        for (size_t k = 0; k < v->routes.n; k++)
            vh->routes[k] = ((xds_tr_route *)v->routes.v[k])->msg;
        rc->virtual_hosts[i] = vh;
    }
    xds_tr_emit(tr, XDS_RDS, name, &rc->base);
}

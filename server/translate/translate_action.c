/*
 * translate_action.c — what one IR rule does, for every Envoy Route built from it:
 * header modifiers, mirrors, redirect, URL rewrite, and the forwarding action (one
 * cluster or weighted clusters, hash policies, timeouts and retries).
 *
 * Backend references resolve through the name tables (translate.c); the weights of
 * references to the same backend add up, zero weights send nothing, and the clusters of
 * a weighted action are sorted by name, so that the order of backend_refs never changes
 * the bytes. Every backend a rule names, zero weights and mirrors included, counts as
 * referenced by the route (tr_route_set.backends). A rule without timeout takes the
 * longest request_timeout of its backends.
 */
#include "server/translate/translate.h"
#include "server/base/num.h"

#include <stdlib.h>
#include <string.h>

typedef Envoy__Config__Route__V3__RouteAction ev_action;
typedef Envoy__Config__Route__V3__RedirectAction ev_redirect;
typedef Envoy__Config__Core__V3__HeaderValueOption ev_hvo;
typedef Gateway__Control__V1__Filter ir_filter;

#define UINT32_WEIGHT 0xffffffffu

/* ---------------------------------------------------------------- backends */

static void note_backend(tr_ctx *tr, tr_route_set *set, size_t bi)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n_backends; i++)
        if (set->backends[i] == bi)
            return;
    size_t *v = tr_alloc(tr, (set->n_backends + 1) * sizeof *v);
    if (set->n_backends)
        memcpy(v, set->backends, set->n_backends * sizeof *v);
    v[set->n_backends++] = bi;
    set->backends = v;
}

long tr_weighted_backends(tr_ctx *tr, ir_backend_ref **refs, size_t n, const char *default_ns,
                          const char *path, const char ***names_out, uint32_t **weights_out)
{
    const char **names = tr_alloc(tr, (n + 1) * sizeof *names);
    uint64_t *w = tr_alloc(tr, (n + 1) * sizeof *w);
    size_t k = 0;
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
        const char *p = tr_printf(tr, "%s.backend_refs[%zu]", path, i);
        long bi = tr_backend_ref(tr, refs[i], default_ns, p);
        if (bi < 0) {
            bad = true;
            continue;
        }
        const ir_backend *b = tr->ir->backends[bi];
        const char *name = tr_qname(tr, b->namespace_, b->name);
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
    size_t *order = tr_alloc(tr, (k + 1) * sizeof *order);
    for (size_t i = 0; i < k; i++)
        order[i] = i;
    for (size_t i = 1; i < k; i++) /* insertion sort: a rule has a handful of backends */
        for (size_t j = i; j > 0 && strcmp(names[order[j - 1]], names[order[j]]) > 0; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    uint32_t *weights = tr_alloc(tr, (k + 1) * sizeof *weights);
    const char **out = tr_alloc(tr, (k + 1) * sizeof *out);
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
        tr_error(tr, path, "backend weights add up to more than %u", UINT32_WEIGHT);
        return -1;
    }
    *names_out = out;
    *weights_out = weights;
    return (long)m;
}

/* Hash policies for consistent-hashing backends, so that RING_HASH and MAGLEV hash on
 * what the backend's load_balancing.hash_on names. The same policy is sent once. */
static void hash_policies(tr_ctx *tr, ev_action *a, const char **names, size_t n)
{
    tr_pvec hp = {0};
    const Gateway__Control__V1__LoadBalancingPolicy **seen = tr_alloc(tr, (n + 1) * sizeof *seen);
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const ir_backend *b = tr->ir->backends[tr_backend_find(tr, names[i])];
        const Gateway__Control__V1__LoadBalancingPolicy *lb = b->load_balancing;
        if (lb == NULL || tr_empty(lb->hash_on) ||
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
            TR_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy,
                   ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__INIT);
        if (strcmp(lb->hash_on, "SourceIP") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_CONNECTION_PROPERTIES;
            p->connection_properties = TR_NEW(
                tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__ConnectionProperties,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__CONNECTION_PROPERTIES__INIT);
            p->connection_properties->source_ip = 1;
        } else if (tr_empty(lb->hash_key)) {
            continue; /* reported by the cluster translator */
        } else if (strcmp(lb->hash_on, "Header") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_HEADER;
            p->header = TR_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__Header,
                               ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__HEADER__INIT);
            p->header->header_name = tr_lower(tr, lb->hash_key);
        } else if (strcmp(lb->hash_on, "Cookie") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_COOKIE;
            p->cookie = TR_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__Cookie,
                               ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__COOKIE__INIT);
            p->cookie->name = tr_strdup(tr, lb->hash_key);
        } else if (strcmp(lb->hash_on, "QueryParameter") == 0) {
            p->policy_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_QUERY_PARAMETER;
            p->query_parameter =
                TR_NEW(tr, Envoy__Config__Route__V3__RouteAction__HashPolicy__QueryParameter,
                       ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__QUERY_PARAMETER__INIT);
            p->query_parameter->name = tr_strdup(tr, lb->hash_key);
        } else {
            continue;
        }
        tr_pv_push(tr, &hp, p);
    }
    a->n_hash_policy = hp.n;
    a->hash_policy = (Envoy__Config__Route__V3__RouteAction__HashPolicy **)hp.v;
}

/* ---------------------------------------------------------------- filters */

static void header_options(tr_ctx *tr, const Gateway__Control__V1__HeaderModifier *m, tr_pvec *add,
                           tr_pvec *remove, const char *path)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass == 0 ? m->n_set : m->n_add;
        Gateway__Control__V1__HttpHeader **hs = pass == 0 ? m->set : m->add;
        for (size_t i = 0; i < n; i++) {
            if (tr_empty(hs[i]->name)) {
                tr_error(tr, tr_printf(tr, "%s.%s[%zu].name", path, pass ? "add" : "set", i),
                         "header name must not be empty");
                continue;
            }
            ev_hvo *o = TR_NEW(tr, ev_hvo, ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__INIT);
            o->header = TR_NEW(tr, Envoy__Config__Core__V3__HeaderValue,
                               ENVOY__CONFIG__CORE__V3__HEADER_VALUE__INIT);
            o->header->key = tr_lower(tr, hs[i]->name);
            o->header->value = tr_strdup(tr, hs[i]->value);
            o->append_action =
                pass == 0
                    ? ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__HEADER_APPEND_ACTION__OVERWRITE_IF_EXISTS_OR_ADD
                    : ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__HEADER_APPEND_ACTION__APPEND_IF_EXISTS_OR_ADD;
            tr_pv_push(tr, add, o);
        }
    }
    for (size_t i = 0; i < m->n_remove; i++)
        tr_pv_push(tr, remove, tr_lower(tr, m->remove[i]));
}

static ev_redirect *redirect_action(tr_ctx *tr,
                                    const Gateway__Control__V1__RequestRedirectFilter *f,
                                    tr_rule_out *ro, const char *path)
{
    ev_redirect *r = TR_NEW(tr, ev_redirect, ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__INIT);
    if (!tr_empty(f->scheme)) {
        r->scheme_rewrite_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__SCHEME_REWRITE_SPECIFIER_SCHEME_REDIRECT;
        r->scheme_redirect = tr_strdup(tr, f->scheme);
    }
    if (!tr_empty(f->hostname))
        r->host_redirect = tr_strdup(tr, f->hostname);
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
        tr_error(tr, tr_printf(tr, "%s.status_code", path),
                 "redirect status %u is not supported: use 301, 302, 303, 307 or 308",
                 f->status_code);
    }
    if (f->path) {
        if (strcmp(f->path->type, "ReplaceFullPath") == 0) {
            r->path_rewrite_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__PATH_REWRITE_SPECIFIER_PATH_REDIRECT;
            r->path_redirect = tr_strdup(tr, f->path->replace_full_path);
        } else {
            ro->prefix_repl = f->path->replace_prefix_match;
            ro->prefix_where = tr_printf(tr, "%s.path", path);
        }
    }
    return r;
}

/* Applies the filters of a rule to ro. grpc: a gRPC rule (redirects and rewrites are
 * HTTP-only). Returns the URL rewrite filter, if any. */
const Gateway__Control__V1__UrlRewriteFilter *tr_rule_filters(tr_ctx *tr, ir_filter **filters,
                                                              size_t n, const char *ns, bool grpc,
                                                              tr_rule_out *ro, tr_route_set *set,
                                                              const char *where)
{
    const Gateway__Control__V1__UrlRewriteFilter *rewrite = NULL;
    for (size_t i = 0; i < n; i++) {
        const ir_filter *f = filters[i];
        const char *path = tr_printf(tr, "%s.filters[%zu]", where, i);
        switch (f->config_case) {
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_HEADER_MODIFIER:
            header_options(tr, f->request_header_modifier, &ro->req_add, &ro->req_remove,
                           tr_printf(tr, "%s.request_header_modifier", path));
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_RESPONSE_HEADER_MODIFIER:
            header_options(tr, f->response_header_modifier, &ro->resp_add, &ro->resp_remove,
                           tr_printf(tr, "%s.response_header_modifier", path));
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_REDIRECT:
            if (grpc) {
                tr_error(tr, path, "request_redirect is not supported on grpc routes");
            } else if (ro->redirect) {
                tr_error(tr, path, "a rule can have one request_redirect filter");
            } else {
                ro->redirect = redirect_action(tr, f->request_redirect, ro,
                                               tr_printf(tr, "%s.request_redirect", path));
            }
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_URL_REWRITE:
            if (grpc)
                tr_error(tr, path, "url_rewrite is not supported on grpc routes");
            else if (rewrite)
                tr_error(tr, path, "a rule can have one url_rewrite filter");
            else
                rewrite = f->url_rewrite;
            break;
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_MIRROR: {
            const Gateway__Control__V1__RequestMirrorFilter *m = f->request_mirror;
            const char *bp = tr_printf(tr, "%s.request_mirror.backend_ref", path);
            if (m->backend_ref == NULL) {
                tr_error(tr, bp, "a mirror needs a backend");
                break;
            }
            long bi = tr_backend_ref(tr, m->backend_ref, ns, bp);
            if (bi < 0)
                break;
            note_backend(tr, set, (size_t)bi);
            Envoy__Config__Route__V3__RouteAction__RequestMirrorPolicy *mp =
                TR_NEW(tr, Envoy__Config__Route__V3__RouteAction__RequestMirrorPolicy,
                       ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__REQUEST_MIRROR_POLICY__INIT);
            mp->cluster =
                (char *)tr_qname(tr, tr->ir->backends[bi]->namespace_, tr->ir->backends[bi]->name);
            if (m->percent > 0 && m->percent < 100) {
                mp->runtime_fraction =
                    TR_NEW(tr, Envoy__Config__Core__V3__RuntimeFractionalPercent,
                           ENVOY__CONFIG__CORE__V3__RUNTIME_FRACTIONAL_PERCENT__INIT);
                mp->runtime_fraction->default_value =
                    TR_NEW(tr, Envoy__Type__V3__FractionalPercent,
                           ENVOY__TYPE__V3__FRACTIONAL_PERCENT__INIT);
                mp->runtime_fraction->default_value->numerator = m->percent;
                mp->runtime_fraction->default_value->denominator =
                    ENVOY__TYPE__V3__FRACTIONAL_PERCENT__DENOMINATOR_TYPE__HUNDRED;
            }
            tr_pv_push(tr, &ro->mirrors, mp);
            break;
        }
        case GATEWAY__CONTROL__V1__FILTER__CONFIG_EXTENSION_REF:
            tr_error(tr, path, "extension_ref filters are not supported by the envoy translation");
            break;
        default:
            tr_error(tr, path, "filter of type \"%s\" has no configuration", f->type);
        }
    }
    if (ro->redirect && rewrite)
        tr_error(tr, where, "request_redirect and url_rewrite cannot be combined in one rule");
    return rewrite;
}

/* The forwarding action of a rule: cluster or weighted clusters, or NULL when the rule
 * has nothing to forward to (the caller answers 500). */
static int cmp_duration(const Google__Protobuf__Duration *a, const Google__Protobuf__Duration *b)
{
    int c = SX_CMP(a->seconds, b->seconds);
    return c ? c : SX_CMP(a->nanos, b->nanos);
}

static ev_action *forward_action(tr_ctx *tr, ir_backend_ref **refs, size_t n, const char *ns,
                                 tr_route_set *set, const char *where)
{
    const char **names;
    uint32_t *weights;
    long m = tr_weighted_backends(tr, refs, n, ns, where, &names, &weights);
    if (m < 0)
        return NULL;
    /* Every backend named counts as referenced, zero weights included. */
    for (size_t i = 0; i < n; i++) {
        const char *rns = refs[i]->namespace_ && refs[i]->namespace_[0] ? refs[i]->namespace_ : ns;
        long bi = tr_backend_find(tr, tr_qname(tr, rns, refs[i]->name));
        if (bi >= 0)
            note_backend(tr, set, (size_t)bi);
    }
    if (m == 0)
        return NULL;
    ev_action *a = TR_NEW(tr, ev_action, ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT);
    if (m == 1) {
        a->cluster_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER;
        a->cluster = (char *)names[0];
    } else {
        Envoy__Config__Route__V3__WeightedCluster *wc =
            TR_NEW(tr, Envoy__Config__Route__V3__WeightedCluster,
                   ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__INIT);
        wc->n_clusters = (size_t)m;
        wc->clusters =
            (Envoy__Config__Route__V3__WeightedCluster__ClusterWeight **)tr_ptrs(tr, (size_t)m);
        for (long i = 0; i < m; i++) {
            Envoy__Config__Route__V3__WeightedCluster__ClusterWeight *cw =
                TR_NEW(tr, Envoy__Config__Route__V3__WeightedCluster__ClusterWeight,
                       ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT);
            cw->name = (char *)names[i];
            cw->weight = tr_u32(tr, weights[i]);
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
            tr->ir->backends[tr_backend_find(tr, names[i])]->request_timeout;
        if (d && (longest == NULL || cmp_duration(d, longest) > 0))
            longest = d;
    }
    if (longest && longest->seconds >= 0 && longest->nanos >= 0)
        a->timeout = tr_duration(tr, longest, where);
    return a;
}

/* Timeouts and retries of an HTTP rule, on a forwarding action. */
void tr_http_policies(tr_ctx *tr, ev_action *a, const Gateway__Control__V1__HttpRule *rule,
                      const char *where)
{
    Envoy__Config__Route__V3__RetryPolicy *rp = NULL;
    const Gateway__Control__V1__HttpRouteRetry *r = rule->retry;
    if (r && (r->attempts > 0 || r->n_codes > 0)) {
        rp = TR_NEW(tr, Envoy__Config__Route__V3__RetryPolicy,
                    ENVOY__CONFIG__ROUTE__V3__RETRY_POLICY__INIT);
        if (r->n_codes > 0) {
            rp->retry_on = "retriable-status-codes";
            rp->n_retriable_status_codes = r->n_codes;
            rp->retriable_status_codes = tr_alloc(tr, r->n_codes * sizeof(uint32_t));
            memcpy(rp->retriable_status_codes, r->codes, r->n_codes * sizeof(uint32_t));
        } else {
            rp->retry_on = "5xx";
        }
        if (r->attempts > 0)
            rp->num_retries = tr_u32(tr, r->attempts);
        const char *bp = tr_printf(tr, "%s.retry.backoff", where);
        Google__Protobuf__Duration *backoff = tr_duration(tr, r->backoff, bp);
        /* A zero base interval is refused by gRPC clients; it means "no backoff set". */
        if (backoff && (backoff->seconds > 0 || backoff->nanos > 0)) {
            rp->retry_back_off =
                TR_NEW(tr, Envoy__Config__Route__V3__RetryPolicy__RetryBackOff,
                       ENVOY__CONFIG__ROUTE__V3__RETRY_POLICY__RETRY_BACK_OFF__INIT);
            rp->retry_back_off->base_interval = backoff;
        }
        a->retry_policy = rp;
    }
    const Gateway__Control__V1__HttpRouteTimeouts *t = rule->timeouts;
    if (t == NULL)
        return;
    Google__Protobuf__Duration *req =
        tr_duration(tr, t->request, tr_printf(tr, "%s.timeouts.request", where));
    Google__Protobuf__Duration *back =
        tr_duration(tr, t->backend_request, tr_printf(tr, "%s.timeouts.backend_request", where));
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

/* ---------------------------------------------------------------- the rule's action */

/* Finishes the action template of a rule from its backends and URL rewrite. */
void tr_rule_action(tr_ctx *tr, tr_rule_out *ro, ir_backend_ref **refs, size_t n, const char *ns,
                    const Gateway__Control__V1__UrlRewriteFilter *rw, tr_route_set *set,
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
    if (!tr_empty(rw->hostname)) {
        ro->action->host_rewrite_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HOST_REWRITE_SPECIFIER_HOST_REWRITE_LITERAL;
        ro->action->host_rewrite_literal = tr_strdup(tr, rw->hostname);
    }
    if (rw->path) {
        if (strcmp(rw->path->type, "ReplaceFullPath") == 0) {
            Envoy__Type__Matcher__V3__RegexMatchAndSubstitute *s =
                TR_NEW(tr, Envoy__Type__Matcher__V3__RegexMatchAndSubstitute,
                       ENVOY__TYPE__MATCHER__V3__REGEX_MATCH_AND_SUBSTITUTE__INIT);
            s->pattern = tr_regex(tr, "^/.*$");
            s->substitution = tr_strdup(tr, rw->path->replace_full_path);
            ro->action->regex_rewrite = s;
        } else {
            ro->prefix_repl = rw->path->replace_prefix_match;
        }
    }
}

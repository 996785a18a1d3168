/*
 * translate_vhost.c — the RouteConfiguration of a listener: virtual hosts by hostname,
 * routes in Gateway API precedence.
 *
 * A listener's RouteConfiguration groups the Routes of its attached HTTP and gRPC
 * routes (translate_route.c) into one virtual host per hostname: the hostnames of a
 * route on a listener are the intersection of the two lists (Gateway API rules,
 * wildcards included); a side without hostnames takes the other's, and "*" stands for
 * none on both. Every listener hostname gets a virtual host even without routes, so
 * that a client dialing it finds its domain.
 *
 * Envoy takes the first route that matches, so routes within a virtual host are
 * ordered by Gateway API precedence: exact paths, then regular expressions, then
 * prefixes, each longest first; then more method, header and query matches first; ties
 * by route (namespace/name), rule, match. gRPC clients cannot run a route that does
 * not forward (grpc-js NACKs the whole RouteConfiguration), so a proxyless listener
 * refuses them.
 */
#include "server/translate/translate.h"
#include "server/base/num.h"

#include <stdlib.h>
#include <string.h>

#include "envoy/config/route/v3/route.pb-c.h"

typedef Envoy__Config__Route__V3__Route ev_route;

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
    tr_pvec routes; /* of tr_route * */
} vhost;

static vhost *vhost_get(tr_ctx *tr, tr_pvec *hosts, const char *host)
{
    for (size_t i = 0; i < hosts->n; i++) {
        vhost *v = hosts->v[i];
        if (strcmp(v->host, host) == 0)
            return v;
    }
    vhost *v = tr_alloc(tr, sizeof *v);
    v->host = host;
    tr_pv_push(tr, hosts, v);
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
    const tr_route *x = *(tr_route *const *)a, *y = *(tr_route *const *)b;
    /* Lower rank first; then the longer path, a method, more headers, more query
     * parameters (y before x); then by name and position. */
    int c;
    if ((c = SX_CMP(x->path_rank, y->path_rank)) || (c = SX_CMP(y->path_len, x->path_len)) ||
        (c = SX_CMP(y->has_method, x->has_method)) || (c = SX_CMP(y->n_headers, x->n_headers)) ||
        (c = SX_CMP(y->n_query, x->n_query)) || (c = strcmp(x->qname, y->qname)) ||
        (c = SX_CMP(x->kind, y->kind)) || (c = SX_CMP(x->rule, y->rule)) ||
        (c = SX_CMP(x->match, y->match)))
        return c;
    return SX_CMP(x->part, y->part);
}

void tr_route_config(tr_ctx *tr, size_t li, const char *name, const tr_name *const *attached,
                     size_t n, bool proxyless)
{
    const ir_listener *l = tr->ir->listeners[li];
    char **lh = tr_alloc(tr, (l->n_hostnames + 1) * sizeof *lh);
    for (size_t i = 0; i < l->n_hostnames; i++)
        lh[i] = tr_lower(tr, l->hostnames[i]);

    tr_pvec hosts = {0};
    for (size_t i = 0; i < l->n_hostnames; i++)
        vhost_get(tr, &hosts, lh[i]);

    for (size_t a = 0; a < n; a++) {
        const tr_name *e = attached[a];
        char **rh_raw;
        size_t n_rh;
        const tr_route_set *set;
        if (e->kind == TR_ROUTE_HTTP) {
            rh_raw = tr->ir->http_routes[e->idx]->hostnames;
            n_rh = tr->ir->http_routes[e->idx]->n_hostnames;
            set = &tr->http_sets[e->idx];
        } else {
            rh_raw = tr->ir->grpc_routes[e->idx]->hostnames;
            n_rh = tr->ir->grpc_routes[e->idx]->n_hostnames;
            set = &tr->grpc_sets[e->idx];
        }
        /* The hostnames this route serves on this listener. */
        tr_pvec eff = {0};
        if (n_rh == 0 && l->n_hostnames == 0) {
            tr_pv_push(tr, &eff, "*");
        } else if (n_rh == 0) {
            for (size_t i = 0; i < l->n_hostnames; i++)
                tr_pv_push(tr, &eff, lh[i]);
        } else {
            for (size_t r = 0; r < n_rh; r++) {
                char *rh = tr_lower(tr, rh_raw[r]);
                if (l->n_hostnames == 0) {
                    tr_pv_push(tr, &eff, rh);
                    continue;
                }
                for (size_t i = 0; i < l->n_hostnames; i++) {
                    const char *h = host_intersect(lh[i], rh);
                    if (h)
                        tr_pv_push(tr, &eff, (void *)h);
                }
            }
            if (eff.n == 0) {
                tr_error(tr, tr_printf(tr, "listeners[%zu].attached_routes", li),
                         "route \"%s\" has no hostname that listener \"%s\" serves", e->qname,
                         l->name);
                continue;
            }
        }
        if (proxyless) {
            for (size_t k = 0; k < set->count; k++) {
                if (!set->items[k].forwarding)
                    tr_error(tr, set->items[k].where,
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
                tr_pv_push(tr, &v->routes, (void *)&set->items[k]);
        }
    }
    if (hosts.n == 0)
        vhost_get(tr, &hosts, "*");
    if (hosts.n > 1)
        qsort(hosts.v, hosts.n, sizeof *hosts.v, cmp_vhost);

    Envoy__Config__Route__V3__RouteConfiguration *rc =
        TR_NEW(tr, Envoy__Config__Route__V3__RouteConfiguration,
               ENVOY__CONFIG__ROUTE__V3__ROUTE_CONFIGURATION__INIT);
    rc->name = tr_strdup(tr, name);
    rc->n_virtual_hosts = hosts.n;
    rc->virtual_hosts = (Envoy__Config__Route__V3__VirtualHost **)tr_ptrs(tr, hosts.n);
    for (size_t i = 0; i < hosts.n; i++) {
        vhost *v = hosts.v[i];
        if (v->routes.n > 1)
            qsort(v->routes.v, v->routes.n, sizeof *v->routes.v, cmp_route);
        Envoy__Config__Route__V3__VirtualHost *vh =
            TR_NEW(tr, Envoy__Config__Route__V3__VirtualHost,
                   ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__INIT);
        vh->name = tr_strdup(tr, v->host);
        vh->n_domains = 1;
        vh->domains = (char **)tr_ptrs(tr, 1);
        vh->domains[0] = (char *)v->host;
        vh->n_routes = v->routes.n;
        vh->routes = (ev_route **)tr_ptrs(tr, v->routes.n);
        for (size_t k = 0; k < v->routes.n; k++)
            vh->routes[k] = ((tr_route *)v->routes.v[k])->msg;
        rc->virtual_hosts[i] = vh;
    }
    tr_emit(tr, TR_RDS, name, &rc->base);
}

/*
 * gw_routes.c — routes and the Gateways they name: which routes concern us, and which
 * listeners each one attaches to.
 *
 * A parentRef concerns us when it names a Gateway (group gateway.networking.k8s.io,
 * kind Gateway, the route's namespace by default) of one of our classes. For each such
 * parentRef the candidate listeners are those its sectionName and port select (none:
 * NoMatchingParent); a candidate takes the route when it allows the route's kind and
 * namespace (allowedRoutes: Same, All, a label Selector on the Namespace, None) and,
 * for HTTP, gRPC and TLS routes, when the listener's and the route's hostnames meet
 * (else NotAllowedByListeners, or NoMatchingListenerHostname when only hostnames
 * failed). A route refused by its own content (gw_rules.c) attaches nowhere. The
 * parent is Accepted when at least one listener took the route; a listener's
 * attachedRoutes counts the routes it took whether or not it is served.
 *
 * HTTPRoutes and GRPCRoutes do not share hostnames on a listener (the GRPCRoute API):
 * when routes of the two kinds whose hostnames intersect attach to one listener, the
 * oldest (creationTimestamp, then namespace/name) keeps it and the other is detached
 * from it; a parent left with no listener is Accepted=False with reason Conflicted
 * (the Gateway API's reason for a conflict lost, as policies use it), naming the route
 * that won.
 *
 * Routes that no longer name a Gateway of ours but still carry a status entry of this
 * controller are kept too, so that their status can be cleaned.
 */
#include <string.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

static long find_gw(const gw_ctx *c, const char *ns, const char *name)
{
    size_t lo = 0, hi = c->n_gws;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(c->gws[mid].obj->ns, ns);
        if (k == 0)
            k = strcmp(c->gws[mid].obj->name, name);
        if (k == 0)
            return (long)mid;
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static bool has_our_status(const gw_ctx *c, const json_t *o)
{
    size_t n;
    const json_t *parents = gw_array(gw_get(o, "status"), "parents", &n);
    for (size_t i = 0; i < n; i++)
        if (gw_status_is_ours(c, json_array_get(parents, i)))
            return true;
    return false;
}

static void collect_parents(gw_ctx *c, gw_route *r)
{
    size_t n;
    const json_t *refs = gw_array(gw_get(r->obj->o, "spec"), "parentRefs", &n);
    r->parents = sx_arena_alloc(c->a, (n + 1) * sizeof *r->parents);
    for (size_t i = 0; i < n; i++) {
        const json_t *ref = json_array_get(refs, i);
        if (strcmp(gw_str_or(ref, "group", GW_GROUP), GW_GROUP) != 0 ||
            strcmp(gw_str_or(ref, "kind", "Gateway"), "Gateway") != 0)
            continue;
        const char *ns = gw_str_or(ref, "namespace", r->obj->ns);
        const char *name = gw_str_or(ref, "name", "");
        long gi = find_gw(c, ns, name);
        if (gi < 0)
            continue;
        gw_parent *p = &r->parents[r->n_parents++];
        memset(p, 0, sizeof *p);
        p->ref = i;
        p->gw = (size_t)gi;
        p->section = gw_str(ref, "sectionName");
        long long port = 0;
        gw_int(ref, "port", &port);
        p->port = (long)port;
        p->ref_json = json_pack("{s:s,s:s,s:s,s:s}", "group", GW_GROUP, "kind", "Gateway",
                                "namespace", ns, "name", name);
        if (p->section)
            json_object_set_new(p->ref_json, "sectionName", json_string(p->section));
        if (port)
            json_object_set_new(p->ref_json, "port", json_integer(port));
    }
}

void gw_routes_collect(gw_ctx *c)
{
    for (int k = 0; k < RK_COUNT; k++) {
        const gw_index *x = &c->idx[gw_rk_kind((gw_rk)k)];
        c->routes[k] = sx_arena_alloc(c->a, (x->n + 1) * sizeof *c->routes[k]);
        for (size_t i = 0; i < x->n; i++) {
            gw_route *r = &c->routes[k][c->n_routes[k]];
            memset(r, 0, sizeof *r);
            r->kind = (gw_rk)k;
            r->obj = &x->v[i];
            collect_parents(c, r);
            if (r->n_parents == 0 && !has_our_status(c, r->obj->o))
                continue;
            c->n_routes[k]++;
            r->created = gw_str_or(gw_get(r->obj->o, "metadata"), "creationTimestamp", "");
            size_t n;
            const json_t *hosts = gw_array(gw_get(r->obj->o, "spec"), "hostnames", &n);
            r->hostnames = sx_arena_alloc(c->a, (n + 1) * sizeof *r->hostnames);
            for (size_t h = 0; h < n; h++) {
                const char *s = json_string_value(json_array_get(hosts, h));
                if (s && s[0])
                    r->hostnames[r->n_hostnames++] = gw_lower(c, s);
            }
            if (r->n_parents > 0)
                gw_route_analyse(c, r);
        }
    }
}

/* ---------------------------------------------------------------- attachment */

static bool namespace_allowed(gw_ctx *c, const gw_gw *g, const gw_lis *l, const char *ns)
{
    switch (l->from) {
    case FROM_ALL:
        return true;
    case FROM_NONE:
        return false;
    case FROM_SELECTOR: {
        json_t *labels = gw_namespace_labels(c, ns);
        bool ok = gw_selector_match(l->selector, labels);
        json_decref(labels);
        return ok;
    }
    default:
        return strcmp(ns, g->obj->ns) == 0;
    }
}

static bool hostnames_meet(const gw_lis *l, const gw_route *r)
{
    if (r->kind == RK_TCP || r->kind == RK_UDP)
        return true;
    if (l->proto == GP_PROXYLESS && l->hostname == NULL) {
        for (size_t i = 0; i < r->n_hostnames; i++)
            if (gw_host_exact(r->hostnames[i]))
                return true;
        return false;
    }
    if (l->hostname == NULL || r->n_hostnames == 0)
        return true;
    for (size_t i = 0; i < r->n_hostnames; i++)
        if (gw_host_intersect(l->hostname, r->hostnames[i]))
            return true;
    return false;
}

/* Whether r sends to a backend with TLS (a BackendTLSPolicy), which proxyless gRPC
 * clients cannot take from the control plane. */
static bool uses_backend_tls(const gw_ctx *c, const gw_route *r)
{
    for (size_t k = 0; k < r->n_rules; k++)
        for (size_t i = 0; r->rules[k].ir && i < r->rules[k].n_backends; i++)
            if (json_object_get(c->backends[r->rules[k].backends[i]].ir, "tls_validation"))
                return true;
    return false;
}

static void attach(gw_ctx *c, gw_lis *l, gw_route *r)
{
    for (size_t i = 0; i < l->n_routes; i++)
        if (l->routes[i] == r)
            return;
    l->routes = gw_grow(c, l->routes, sizeof *l->routes, &l->cap_routes, l->n_routes + 1);
    l->routes[l->n_routes++] = r;
    l->attached = l->n_routes;
}

/* Keeps the failure of the furthest stage (1: kind or namespace refused, 2: hostnames
 * did not meet, 3: the listener cannot serve what the route sends to); a second
 * hostname failure gets the message that speaks of every listener. */
static void note(int *stage, const char **why, int s, const char *message, const char *many)
{
    if (s > *stage) {
        *stage = s;
        *why = message;
    } else if (s == *stage && many) {
        *why = many;
    }
}

static void attach_parent(gw_ctx *c, gw_gw *g, gw_route *r, gw_parent *p)
{
    const char *gwq = gw_printf(c, "%s/%s", g->obj->ns, g->obj->name);
    if (g->refused) {
        p->accepted =
            (gw_cond){"Accepted", false, "NoMatchingParent",
                      gw_printf(c, "Gateway %s is not accepted: %s", gwq, g->refused_message)};
        return;
    }
    size_t candidates = 0;
    int stage = 0;
    const char *why = NULL;
    bool attached = false;
    for (size_t i = 0; i < g->n_lis; i++) {
        gw_lis *l = &g->lis[i];
        if ((p->section && strcmp(p->section, l->name) != 0) || (p->port && p->port != l->port))
            continue;
        candidates++;
        if (r->refused_reason)
            continue;
        if (!(l->kinds & RK_BIT(r->kind))) {
            note(&stage, &why, 1,
                 gw_printf(c, "listener %s of Gateway %s does not allow %ss", l->name, gwq,
                           gw_rk_name(r->kind)),
                 NULL);
        } else if (!namespace_allowed(c, g, l, r->obj->ns)) {
            note(&stage, &why, 1,
                 gw_printf(c, "listener %s of Gateway %s does not allow routes from namespace %s",
                           l->name, gwq, r->obj->ns),
                 NULL);
        } else if (!hostnames_meet(l, r)) {
            note(&stage, &why, 2,
                 l->hostname
                     ? gw_printf(c, "no hostname of the route matches hostname %s of listener %s",
                                 l->hostname, l->name)
                     : gw_printf(c,
                                 "listener %s serves proxyless gRPC clients, which need an "
                                 "exact route hostname",
                                 l->name),
                 gw_printf(c,
                           "no hostname of the route matches a hostname of the listeners of "
                           "Gateway %s it names",
                           gwq));
        } else if (l->proto == GP_PROXYLESS && uses_backend_tls(c, r)) {
            note(&stage, &why, 3,
                 gw_printf(c,
                           "listener %s serves proxyless gRPC clients, which cannot take "
                           "backend TLS (a BackendTLSPolicy) from Sextant",
                           l->name),
                 NULL);
        } else {
            attach(c, l, r);
            attached = true;
        }
    }
    if (candidates == 0) {
        p->accepted = (gw_cond){"Accepted", false, "NoMatchingParent",
                                gw_printf(c, "Gateway %s has no listener%s%s%s%s", gwq,
                                          p->section ? " named " : "", p->section ? p->section : "",
                                          p->port ? " on port " : "",
                                          p->port ? gw_printf(c, "%ld", p->port) : "")};
    } else if (r->refused_reason) {
        p->accepted = (gw_cond){"Accepted", false, r->refused_reason, r->refused_message};
    } else if (attached) {
        p->accepted = (gw_cond){"Accepted", true, "Accepted",
                                gw_printf(c, "the route is attached to Gateway %s", gwq)};
    } else {
        static const char *const reasons[] = {"NotAllowedByListeners", "NotAllowedByListeners",
                                              "NoMatchingListenerHostname", "UnsupportedValue"};
        p->accepted = (gw_cond){"Accepted", false, reasons[stage], why};
    }
}

/* Older first: creationTimestamp, then namespace/name. */
static int older(const gw_route *a, const gw_route *b)
{
    int k = strcmp(a->created, b->created);
    if (k == 0)
        k = strcmp(a->obj->ns, b->obj->ns);
    if (k == 0)
        k = strcmp(a->obj->name, b->obj->name);
    return k;
}

/* Whether a and b, both on listener l, answer a hostname in common. */
static bool share_hostname(const gw_lis *l, const gw_route *a, const gw_route *b)
{
    (void)l; /* both met the listener's hostname already */
    if (a->n_hostnames == 0 || b->n_hostnames == 0)
        return true;
    for (size_t i = 0; i < a->n_hostnames; i++)
        for (size_t j = 0; j < b->n_hostnames; j++)
            if (gw_host_intersect(a->hostnames[i], b->hostnames[j]))
                return true;
    return false;
}

/* Detaches, listener by listener, each HTTP or gRPC route that shares a hostname with
 * an older route of the other kind kept there. */
static void resolve_kind_conflicts(gw_ctx *c, gw_gw *g)
{
    const char *gwq = gw_printf(c, "%s/%s", g->obj->ns, g->obj->name);
    for (size_t li = 0; li < g->n_lis; li++) {
        gw_lis *l = &g->lis[li];
        /* insertion sort of the HTTP and gRPC routes by age: a listener has few */
        gw_route **v = sx_arena_alloc(c->a, (l->n_routes + 1) * sizeof *v);
        size_t n = 0;
        for (size_t i = 0; i < l->n_routes; i++) {
            gw_route *r = l->routes[i];
            if (r->kind != RK_HTTP && r->kind != RK_GRPC)
                continue;
            size_t at = n++;
            while (at > 0 && older(r, v[at - 1]) < 0) {
                v[at] = v[at - 1];
                at--;
            }
            v[at] = r;
        }
        bool *lost = sx_arena_alloc(c->a, (n + 1) * sizeof *lost);
        size_t n_lost = 0;
        for (size_t i = 0; i < n; i++) {
            lost[i] = false;
            for (size_t j = 0; j < i && !lost[i]; j++) {
                if (lost[j] || v[j]->kind == v[i]->kind || !share_hostname(l, v[i], v[j]))
                    continue;
                lost[i] = true;
                n_lost++;
                v[i]->conflict = gw_printf(
                    c, "the older %s %s/%s serves the same hostnames on listener %s of Gateway %s",
                    gw_rk_name(v[j]->kind), v[j]->obj->ns, v[j]->obj->name, l->name, gwq);
            }
        }
        if (n_lost == 0)
            continue;
        size_t w = 0;
        for (size_t i = 0; i < l->n_routes; i++) {
            bool gone = false;
            for (size_t k = 0; k < n && !gone; k++)
                gone = lost[k] && v[k] == l->routes[i];
            if (!gone)
                l->routes[w++] = l->routes[i];
        }
        l->n_routes = w;
        l->attached = w;
    }
}

/* Whether r is still on a listener of g that parent p selects. */
static bool still_attached(const gw_gw *g, const gw_route *r, const gw_parent *p)
{
    for (size_t i = 0; i < g->n_lis; i++) {
        const gw_lis *l = &g->lis[i];
        if ((p->section && strcmp(p->section, l->name) != 0) || (p->port && p->port != l->port))
            continue;
        for (size_t k = 0; k < l->n_routes; k++)
            if (l->routes[k] == r)
                return true;
    }
    return false;
}

void gw_routes_attach(gw_ctx *c, gw_gw *g, size_t gi)
{
    for (int k = 0; k < RK_COUNT; k++)
        for (size_t i = 0; i < c->n_routes[k]; i++) {
            gw_route *r = &c->routes[k][i];
            r->conflict = NULL;
            for (size_t j = 0; j < r->n_parents; j++)
                if (r->parents[j].gw == gi)
                    attach_parent(c, g, r, &r->parents[j]);
        }
    resolve_kind_conflicts(c, g);
    for (int k = RK_HTTP; k <= RK_GRPC; k++)
        for (size_t i = 0; i < c->n_routes[k]; i++) {
            gw_route *r = &c->routes[k][i];
            if (r->conflict == NULL)
                continue;
            for (size_t j = 0; j < r->n_parents; j++) {
                gw_parent *p = &r->parents[j];
                if (p->gw == gi && p->accepted.ok && !still_attached(g, r, p))
                    p->accepted = (gw_cond){"Accepted", false, "Conflicted", r->conflict};
            }
        }
}

void gw_routes_free(gw_ctx *c)
{
    for (int k = 0; k < RK_COUNT; k++)
        for (size_t i = 0; i < c->n_routes[k]; i++) {
            gw_route *r = &c->routes[k][i];
            for (size_t j = 0; j < r->n_parents; j++)
                json_decref(r->parents[j].ref_json);
            for (size_t j = 0; j < r->n_rules; j++)
                json_decref(r->rules[j].ir);
        }
}

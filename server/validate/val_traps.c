/*
 * val_traps.c — the traps stage: configurations real xDS clients ACK and then fail
 * traffic on (measured with gRPC's own xDS clients), refused before they ship.
 *
 *   - A backend with no endpoints that a route sends traffic to (a backend_ref with a
 *     weight above 0): clients accept the empty endpoint list and fail every call.
 *   - A virtual host that cannot match its listener: an HTTP or gRPC route whose
 *     hostnames meet none of the hostnames of a listener that attaches it (when the
 *     listener restricts hostnames; Gateway API intersection, wildcards included). On a
 *     proxyless gRPC listener (GRPC, port 0) a wildcard hostname is a trap of its own:
 *     clients dial an exact name and ask for a Listener of exactly that name.
 *   - A route without an action: a rule with no backend_ref of weight above 0 and no
 *     RequestRedirect filter (C core ACKs such a route and fails its calls).
 *   - Localities without weight: Sextant always generates load_balancing_weight for
 *     every locality (translate_cluster.c), so the IR cannot express this trap. What
 *     the IR can get wrong is the zones the localities come from: endpoints of one
 *     backend must set a zone on all of them or on none, or part of the traffic ends up
 *     in a locality named "" that nobody meant.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/validate/val_internal.h"

static bool sends_traffic(const val_backend_ref *r)
{
    return r && !val_empty(r->name) && (r->weight == NULL || r->weight->value > 0);
}

/* ---------------------------------------------------------------- empty backends */

static void refs_to_empty(val_ctx *c, const char *base, val_backend_ref **refs, size_t n,
                          const char *ns)
{
    char p[VAL_PATH_MAX], why[SX_ERR_MESSAGE_MAX];
    for (size_t i = 0; i < n; i++) {
        if (!sends_traffic(refs[i]))
            continue;
        const val_name *e = val_resolve_backend(c, refs[i], ns, why, sizeof why);
        if (e == NULL || c->docs[e->doc].ir->backends[e->idx]->n_endpoints > 0)
            continue;
        snprintf(p, sizeof p, "%s.backend_refs[%zu]", base, i);
        val_add(c, p, "backend \"%s\" has no endpoints: clients accept it and fail every call",
                e->qname);
    }
}

/* ---------------------------------------------------------------- actions */

static bool has_action(val_backend_ref **refs, size_t n, val_filter **f, size_t nf)
{
    for (size_t i = 0; i < n; i++)
        if (sends_traffic(refs[i]))
            return true;
    for (size_t i = 0; i < nf; i++)
        if (f[i] && f[i]->config_case == GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_REDIRECT)
            return true;
    return false;
}

#define NO_ACTION "rule has no action: no backend_ref with a weight above 0"

/* The checks on one route rule: its backend refs, and that it has an action (a backend
 * ref with weight or, for HTTP rules only, a RequestRedirect filter). */
static void route_rule(void *arg, const val_rule *u)
{
    val_ctx *c = arg;
    bool http = u->route->kind == VAL_ROUTE_HTTP;
    refs_to_empty(c, u->path, u->backend_refs, u->n_backend_refs, u->route->namespace_);
    if (!has_action(u->backend_refs, u->n_backend_refs, http ? u->filters : NULL,
                    http ? u->n_filters : 0))
        val_add(c, u->path, "%s", http ? NO_ACTION " and no RequestRedirect filter" : NO_ACTION);
}

/* ---------------------------------------------------------------- virtual hosts */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcasecmp(s + n - m, suffix) == 0;
}

/* Whether a listener hostname l and a route hostname r have a hostname in common
 * (Gateway API; the translator's host_intersect). */
static bool hosts_meet(const char *l, const char *r)
{
    if (strcasecmp(l, r) == 0)
        return true;
    bool lw = l[0] == '*', rw = r[0] == '*';
    if (lw && !rw)
        return ends_with(r, l + 1);
    if (rw && !lw)
        return ends_with(l, r + 1);
    if (lw && rw)
        return ends_with(l + 1, r + 1) || ends_with(r + 1, l + 1);
    return false;
}

static void virtual_hosts(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], why[SX_ERR_MESSAGE_MAX];
    for (size_t i = 0; i < ir->n_listeners; i++) {
        const val_listener *l = ir->listeners[i];
        if (l == NULL ||
            (l->protocol != VAL_P_HTTP && l->protocol != VAL_P_HTTPS && l->protocol != VAL_P_GRPC))
            continue;
        if (val_listener_proxyless(l)) {
            if (l->n_hostnames == 0) {
                snprintf(p, sizeof p, "spec.listeners[%zu].hostnames", i);
                val_add(c, p,
                        "a proxyless grpc listener (port 0) needs the hostnames clients dial");
            }
            for (size_t k = 0; k < l->n_hostnames; k++) {
                if (l->hostnames[k] == NULL || strchr(l->hostnames[k], '*') == NULL)
                    continue;
                snprintf(p, sizeof p, "spec.listeners[%zu].hostnames[%zu]", i, k);
                val_add(c, p,
                        "proxyless grpc clients dial an exact name: the wildcard \"%s\" matches "
                        "none of them",
                        l->hostnames[k]);
            }
        }
        if (l->n_hostnames == 0)
            continue; /* the listener takes the routes' hostnames as they are */
        for (size_t a = 0; a < l->n_attached_routes; a++) {
            size_t n;
            const val_name *e =
                val_resolve(&c->routes, l->attached_routes[a], "route", &n, why, sizeof why);
            for (size_t m = 0; e && m < n; m++) {
                const val_name *rn = &e[m];
                const ir_snapshot *rir = c->docs[rn->doc].ir;
                char **rh;
                size_t nrh;
                if (rn->kind == VAL_ROUTE_HTTP) {
                    rh = rir->http_routes[rn->idx]->hostnames;
                    nrh = rir->http_routes[rn->idx]->n_hostnames;
                } else if (rn->kind == VAL_ROUTE_GRPC) {
                    rh = rir->grpc_routes[rn->idx]->hostnames;
                    nrh = rir->grpc_routes[rn->idx]->n_hostnames;
                } else {
                    continue;
                }
                if (nrh == 0)
                    continue;
                bool meet = false;
                for (size_t x = 0; x < nrh && !meet; x++)
                    for (size_t y = 0; y < l->n_hostnames && !meet; y++)
                        meet = rh[x] && l->hostnames[y] && hosts_meet(l->hostnames[y], rh[x]);
                if (meet)
                    continue;
                snprintf(p, sizeof p, "spec.listeners[%zu].attached_routes[%zu]", i, a);
                val_add(c, p,
                        "route \"%s\" has no hostname that listener \"%s\" serves: its virtual "
                        "host can never match",
                        rn->qname, VAL_S(l->name));
            }
        }
    }
}

/* ---------------------------------------------------------------- zones */

static void zones(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < ir->n_backends; i++) {
        const val_backend *b = ir->backends[i];
        if (b == NULL)
            continue;
        size_t with = 0;
        for (size_t k = 0; k < b->n_endpoints; k++)
            with += b->endpoints[k] && !val_empty(b->endpoints[k]->zone);
        if (with == 0 || with == b->n_endpoints)
            continue;
        for (size_t k = 0; k < b->n_endpoints; k++) {
            if (b->endpoints[k] == NULL || !val_empty(b->endpoints[k]->zone))
                continue;
            snprintf(p, sizeof p, "spec.backends[%zu].endpoints[%zu].zone", i, k);
            val_add(c, p,
                    "zone is not set while other endpoints of this backend have one: set it on "
                    "all endpoints or on none");
        }
    }
}

void val_traps(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    val_each_route(ir, VAL_KINDS_ALL, NULL, route_rule, c);
    virtual_hosts(c, ir);
    zones(c, ir);
}

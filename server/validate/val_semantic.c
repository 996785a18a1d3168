/*
 * val_semantic.c — the semantic stage: references resolve, names are unique, and no two
 * listeners of the config take one socket.
 *
 * References are resolved over the config and its peers (val_names.c), since the
 * group's snapshot is their concatenation: a backend_ref may name a backend of another
 * config of the group, and a listener may attach a route defined elsewhere. For the
 * same reason names must be unique across the group wherever the translator refuses a
 * repeat: backends, secrets and routes (per kind) by qualified name, listeners by name,
 * and the Listener resources of proxyless listeners, which are named by hostname and so
 * may collide with another listener's name or hostname.
 */
#include <stdio.h>
#include <string.h>

#include "server/validate/val_internal.h"

/* ---------------------------------------------------------------- references */

static void backend_refs(val_ctx *c, const char *base, val_backend_ref **refs, size_t n,
                         const char *ns)
{
    char p[VAL_PATH_MAX], why[SX_ERR_MESSAGE_MAX];
    for (size_t i = 0; i < n; i++) {
        if (refs[i] == NULL || val_empty(refs[i]->name))
            continue; /* an empty name is a schema problem */
        snprintf(p, sizeof p, "%s.backend_refs[%zu]", base, i);
        if (val_resolve_backend(c, refs[i], ns, why, sizeof why) == NULL)
            val_add(c, p, "%s", why);
    }
}

static void mirrors(val_ctx *c, const char *base, val_filter **f, size_t n, const char *ns)
{
    char p[VAL_PATH_MAX], why[SX_ERR_MESSAGE_MAX];
    for (size_t i = 0; i < n; i++) {
        if (f[i] == NULL ||
            f[i]->config_case != GATEWAY__CONTROL__V1__FILTER__CONFIG_REQUEST_MIRROR)
            continue;
        const val_backend_ref *r = f[i]->request_mirror->backend_ref;
        if (r == NULL || val_empty(r->name))
            continue;
        snprintf(p, sizeof p, "%s.filters[%zu].request_mirror.backend_ref", base, i);
        if (val_resolve_backend(c, r, ns, why, sizeof why) == NULL)
            val_add(c, p, "%s", why);
    }
}

static void route_refs(void *arg, const val_rule *u)
{
    val_ctx *c = arg;
    backend_refs(c, u->path, u->backend_refs, u->n_backend_refs, u->route->namespace_);
    mirrors(c, u->path, u->filters, u->n_filters, u->route->namespace_);
}

static void attached_routes(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], why[SX_ERR_MESSAGE_MAX];
    for (size_t i = 0; i < ir->n_listeners; i++) {
        const val_listener *l = ir->listeners[i];
        for (size_t k = 0; l && k < l->n_attached_routes; k++) {
            size_t n;
            snprintf(p, sizeof p, "spec.listeners[%zu].attached_routes[%zu]", i, k);
            if (val_resolve(&c->routes, l->attached_routes[k], "route", &n, why, sizeof why) ==
                NULL)
                val_add(c, p, "%s", why);
        }
    }
}

/* ---------------------------------------------------------------- unique names */

static const char *route_list(int kind)
{
    return kind == VAL_ROUTE_HTTP   ? "http_routes"
           : kind == VAL_ROUTE_GRPC ? "grpc_routes"
                                    : "stream_routes";
}

static const char *route_what(int kind)
{
    return kind == VAL_ROUTE_HTTP   ? "http route"
           : kind == VAL_ROUTE_GRPC ? "grpc route"
                                    : "stream route";
}

/* Reports every entry of the config that shares its qualified name (and kind) with an
 * earlier entry of the config, or else with an entry of a peer. list/what NULL: routes. */
static void unique(val_ctx *c, const val_table *t, const char *list, const char *what)
{
    char p[VAL_PATH_MAX];
    for (size_t i = 0; i < t->n; i++) {
        const val_name *e = &t->v[i];
        if (e->doc != 0 || e->name[0] == '\0')
            continue;
        const char *l = list ? list : route_list(e->kind);
        const char *w = what ? what : route_what(e->kind);
        const val_name *same_self = NULL, *same_peer = NULL;
        size_t n;
        const val_name *first = val_find(t, e->qname, &n);
        for (size_t k = 0; k < n; k++) {
            const val_name *o = &first[k];
            if (o == e || o->kind != e->kind)
                continue;
            if (o->doc == 0 && o->idx < e->idx && same_self == NULL)
                same_self = o;
            if (o->doc != 0 && same_peer == NULL)
                same_peer = o;
        }
        snprintf(p, sizeof p, "spec.%s[%zu].name", l, e->idx);
        if (same_self)
            val_add(c, p, "duplicate %s name \"%s\" (also spec.%s[%zu])", w, e->qname, l,
                    same_self->idx);
        else if (same_peer)
            val_add(c, p, "%s \"%s\" is also defined by config %s", w, e->qname,
                    c->docs[same_peer->doc].ref);
    }
}

/* Whether listener resource name h (a proxyless hostname) is also produced by another
 * listener: a socket listener named h or a proxyless listener serving h. Only listeners
 * of the config before (li, hi), and every peer listener, are compared, so that a clash
 * is reported once. Writes who into buf. */
static bool lds_clash(const val_ctx *c, size_t li, size_t hi, const char *h, char *buf, size_t n)
{
    for (size_t d = 0; d < c->ndocs; d++) {
        const ir_snapshot *ir = c->docs[d].ir;
        for (size_t i = 0; i < ir->n_listeners; i++) {
            const val_listener *l = ir->listeners[i];
            if (l == NULL)
                continue;
            bool hit = false;
            if (!val_listener_proxyless(l)) {
                hit = strcmp(VAL_S(l->name), h) == 0;
            } else {
                for (size_t k = 0; k < l->n_hostnames && !hit; k++) {
                    if (d == 0 && (i > li || (i == li && k >= hi)))
                        break;
                    hit = l->hostnames[k] && strcmp(l->hostnames[k], h) == 0;
                }
            }
            if (!hit)
                continue;
            if (d == 0)
                snprintf(buf, n, "spec.listeners[%zu] (\"%s\")", i, VAL_S(l->name));
            else
                snprintf(buf, n, "listener \"%s\" of config %s", VAL_S(l->name), c->docs[d].ref);
            return true;
        }
    }
    return false;
}

static void listener_resources(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], who[SX_ERR_MESSAGE_MAX / 2];
    for (size_t i = 0; i < ir->n_listeners; i++) {
        const val_listener *l = ir->listeners[i];
        if (l == NULL)
            continue;
        if (val_listener_proxyless(l)) {
            for (size_t k = 0; k < l->n_hostnames; k++) {
                const char *h = l->hostnames[k];
                if (val_empty(h) || strchr(h, '*'))
                    continue; /* refused elsewhere; not a Listener name */
                snprintf(p, sizeof p, "spec.listeners[%zu].hostnames[%zu]", i, k);
                if (lds_clash(c, i, k, h, who, sizeof who))
                    val_add(c, p, "the Listener resource \"%s\" is also produced by %s", h, who);
            }
            continue;
        }
        /* A socket listener's name against the proxyless hostnames of the peers (those
         * of the config were compared above, from the hostname's side). */
        if (val_empty(l->name))
            continue;
        for (size_t d = 1; d < c->ndocs; d++) {
            const ir_snapshot *pir = c->docs[d].ir;
            for (size_t j = 0; j < pir->n_listeners; j++) {
                const val_listener *o = pir->listeners[j];
                if (o == NULL || !val_listener_proxyless(o))
                    continue;
                for (size_t k = 0; k < o->n_hostnames; k++) {
                    if (o->hostnames[k] && strcmp(o->hostnames[k], l->name) == 0) {
                        snprintf(p, sizeof p, "spec.listeners[%zu].name", i);
                        val_add(c, p,
                                "the Listener resource \"%s\" is also produced by listener \"%s\" "
                                "of config %s",
                                l->name, VAL_S(o->name), c->docs[d].ref);
                    }
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- sockets */

static void sockets(val_ctx *c, const ir_snapshot *ir)
{
    char p[VAL_PATH_MAX], ap[64];
    for (size_t j = 0; j < ir->n_listeners; j++) {
        const val_listener *b = ir->listeners[j];
        for (size_t i = 0; i < j; i++) {
            const val_listener *a = ir->listeners[i];
            const char *hit = val_sockets_clash(b, a);
            if (hit == NULL)
                continue;
            snprintf(p, sizeof p, "spec.listeners[%zu].port", j);
            val_add(c, p, "%s is already taken by spec.listeners[%zu] (\"%s\")",
                    val_addr_port(hit, b->port, ap, sizeof ap), i, VAL_S(a->name));
            break;
        }
    }
}

void val_semantic(val_ctx *c)
{
    const ir_snapshot *ir = c->docs[0].ir;
    val_each_route(ir, VAL_KINDS_ALL, NULL, route_refs, c);
    attached_routes(c, ir);
    sockets(c, ir);
    unique(c, &c->listeners, "listeners", "listener");
    unique(c, &c->routes, NULL, NULL);
    unique(c, &c->backends, "backends", "backend");
    unique(c, &c->secrets, "secrets", "secret");
    listener_resources(c, ir);
}

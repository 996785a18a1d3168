/*
 * gw_spec.c — one Gateway's IR spec: its IR listeners, the IR routes of the routes
 * attached to them, the backends and secrets those use, within the limits.
 *
 * Virtual hosts. Envoy sends a request to the virtual host whose domain matches its
 * host most specifically, then to the first matching route there; the Gateway API
 * sends it to the listener whose hostname matches most specifically, then to the most
 * specific match among the routes attached to that listener whose hostnames match.
 * To make the first say the second, every route is placed, per IR listener, in the
 * virtual hosts (domains) it must answer: the domains are every listener hostname and
 * every effective route hostname (route and listener hostnames intersected); a route
 * of listener L joins domain d when L is the most specific listener for d and one of
 * the route's effective hostnames is d or a wildcard covering d; a route without any
 * hostname on a listener without one also joins the catch-all. A route whose placements
 * differ between IR listeners, or that needs both the catch-all and named domains,
 * becomes several IR routes ("<name>@1", "<name>@2", ...), each carrying exactly its
 * domains as hostnames. The IR listener has no hostnames (so the translator takes the
 * routes' as they are), except when it serves a single Gateway listener that has one.
 * What this cannot say: a listener hostname with no route on it does not hide its
 * requests from a wildcard listener of the same port that has routes.
 *
 * Stream routes: each TLSRoute effective hostname (or "" for every connection, and for
 * TCPRoutes) is claimed per IR listener by the oldest route (creationTimestamp, then
 * namespace/name), which alone is served and counted in attachedRoutes there.
 *
 * IR route names are the route's; a name used by routes of two kinds in the same
 * namespace (an HTTPRoute and a TCPRoute both called "web") gets "~<kind>" on the later
 * kind, since listeners attach routes by name whatever their kind.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

/* ---------------------------------------------------------------- hostnames */

typedef struct hostset {
    bool any;
    const char **h;
    size_t n;
} hostset;

static void host_add(gw_ctx *c, hostset *s, size_t *cap, const char *h)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcasecmp(s->h[i], h) == 0)
            return;
    s->h = gw_grow(c, s->h, sizeof *s->h, cap, s->n + 1);
    s->h[s->n++] = h;
}

/* The hostnames route r serves on listener l (any: both have none). */
static hostset effective(gw_ctx *c, const gw_lis *l, const gw_route *r)
{
    hostset s = {0};
    size_t cap = 0;
    if (l->hostname == NULL && r->n_hostnames == 0) {
        s.any = true;
    } else if (l->hostname == NULL) {
        for (size_t i = 0; i < r->n_hostnames; i++)
            host_add(c, &s, &cap, r->hostnames[i]);
    } else if (r->n_hostnames == 0) {
        host_add(c, &s, &cap, l->hostname);
    } else {
        for (size_t i = 0; i < r->n_hostnames; i++) {
            const char *h = gw_host_intersect(l->hostname, r->hostnames[i]);
            if (h)
                host_add(c, &s, &cap, h);
        }
    }
    return s;
}

static bool set_covers(const hostset *s, const char *d)
{
    if (s->any)
        return true;
    for (size_t i = 0; i < s->n; i++)
        if (strcasecmp(s->h[i], d) == 0 || gw_host_covers(s->h[i], d))
            return true;
    return false;
}

/* The Gateway listener of x that takes requests for domain d, or -1. */
static long listener_of(const gw_gw *g, const gw_irl *x, const char *d)
{
    long best = -1;
    size_t best_rank = 0;
    for (size_t i = 0; i < x->n_lis; i++) {
        const gw_lis *l = &g->lis[x->lis[i]];
        size_t rank = 0;
        if (l->hostname == NULL)
            rank = 1;
        else if (strcasecmp(l->hostname, d) == 0)
            rank = (size_t)-1;
        else if (gw_host_covers(l->hostname, d))
            rank = 1 + strlen(l->hostname);
        if (rank > best_rank) {
            best_rank = rank;
            best = (long)x->lis[i];
        }
    }
    return best;
}

static bool attached_to(const gw_lis *l, const gw_route *r)
{
    for (size_t i = 0; i < l->n_routes; i++)
        if (l->routes[i] == r)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---------------------------------------------------------------- the build */

/* One IR HTTP or gRPC route: a route with one placement (catch-all or domains). */
typedef struct inst {
    gw_route *r;
    const char *key; /* "*" for the catch-all, else the sorted domains joined by "," */
    hostset hosts;   /* the domains (none for the catch-all) */
    const char **irls;
    size_t n_irls, cap_irls;
    const char **sections; /* Gateway listener names, for parent_refs */
    size_t n_sections, cap_sections;
} inst;

typedef struct build {
    gw_ctx *c;
    gw_gw *g;
    inst *insts;
    size_t n_insts, cap_insts;
    json_t *inst_keys;  /* "<kind>|<ns>/<name>|<key>" -> index in insts */
    json_t *first_kind; /* "<ns>/<name>" -> the first route kind attached under that name */
    bool *emit;         /* per IR listener: it goes into the spec */
    hostset *lhosts;    /* per IR listener: its IR hostnames */
    json_t **attached;  /* per IR listener: qualified names of its IR routes */
    struct sroute {
        const gw_route *r;
        json_t *rules;         /* its IR rules */
        const char **sections; /* Gateway listener names it is served on */
        size_t n_sections, cap_sections;
    } * sroutes; /* the TLS and TCP routes served */
    size_t n_sroutes, cap_sroutes;
    json_t *sroute_keys; /* "<kind>|<ns>/<name>" -> index in sroutes */
} build;

static void strs_add(gw_ctx *c, const char ***v, size_t *n, size_t *cap, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], s) == 0)
            return;
    *v = gw_grow(c, *v, sizeof **v, cap, *n + 1);
    (*v)[(*n)++] = s;
}

static json_t *strs_json(const char **v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_str);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* The IR name of route r in this spec: its name, with "~<kind>" when a route of an
 * earlier kind of the same namespace/name is attached to the Gateway too. */
static const char *base_name(const build *b, const gw_route *r)
{
    const char *key = gw_printf(b->c, "%s/%s", r->obj->ns, r->obj->name);
    json_int_t first = json_integer_value(json_object_get(b->first_kind, key));
    if (first == (json_int_t)r->kind)
        return r->obj->name;
    return gw_printf(b->c, "%s~%s", r->obj->name, gw_lower(b->c, gw_rk_name(r->kind)));
}

static void name_kinds(build *b)
{
    for (int k = 0; k < RK_COUNT; k++)
        for (size_t l = 0; l < b->g->n_lis; l++)
            for (size_t i = 0; i < b->g->lis[l].n_routes; i++) {
                const gw_route *r = b->g->lis[l].routes[i];
                const char *key = gw_printf(b->c, "%s/%s", r->obj->ns, r->obj->name);
                if (r->kind == (gw_rk)k && json_object_get(b->first_kind, key) == NULL)
                    json_object_set_new(b->first_kind, key, json_integer(k));
            }
}

/* The served stream route entry of r, made on first use. */
static struct sroute *sroute_of(build *b, const gw_route *r)
{
    const char *key = gw_printf(b->c, "%d|%s/%s", (int)r->kind, r->obj->ns, r->obj->name);
    const json_t *have = json_object_get(b->sroute_keys, key);
    if (have)
        return &b->sroutes[json_integer_value(have)];
    b->sroutes = gw_grow(b->c, b->sroutes, sizeof *b->sroutes, &b->cap_sroutes, b->n_sroutes + 1);
    struct sroute *sr = &b->sroutes[b->n_sroutes];
    memset(sr, 0, sizeof *sr);
    sr->r = r;
    sr->rules = json_array();
    json_object_set_new(b->sroute_keys, key, json_integer((json_int_t)b->n_sroutes++));
    return sr;
}

/* Records that r answers domains (or the catch-all) on IR listener xi, taken there by
 * the Gateway listeners sections (names). */
static void place(build *b, gw_route *r, size_t xi, bool catchall, hostset *domains,
                  const hostset *sections)
{
    gw_ctx *c = b->c;
    const char *key = "*";
    if (!catchall) {
        qsort(domains->h, domains->n, sizeof *domains->h, cmp_str);
        size_t len = 1;
        for (size_t i = 0; i < domains->n; i++)
            len += strlen(domains->h[i]) + 1;
        char *k = sx_arena_alloc(c->a, len);
        for (size_t i = 0; i < domains->n; i++) {
            strcat(k, domains->h[i]);
            if (i + 1 < domains->n)
                strcat(k, ",");
        }
        key = k;
    }
    const char *id = gw_printf(c, "%d|%s/%s|%s", (int)r->kind, r->obj->ns, r->obj->name, key);
    const json_t *have = json_object_get(b->inst_keys, id);
    inst *in;
    if (have) {
        in = &b->insts[json_integer_value(have)];
    } else {
        b->insts = gw_grow(c, b->insts, sizeof *b->insts, &b->cap_insts, b->n_insts + 1);
        in = &b->insts[b->n_insts];
        memset(in, 0, sizeof *in);
        in->r = r;
        in->key = key;
        if (!catchall)
            in->hosts = *domains;
        json_object_set_new(b->inst_keys, id, json_integer((json_int_t)b->n_insts++));
    }
    strs_add(c, &in->irls, &in->n_irls, &in->cap_irls, b->g->irl[xi].name);
    for (size_t i = 0; i < sections->n; i++)
        strs_add(c, &in->sections, &in->n_sections, &in->cap_sections, sections->h[i]);
}

static bool servable(const gw_route *r, gw_rk k1, gw_rk k2)
{
    return (r->kind == k1 || r->kind == k2) && r->refused_reason == NULL && r->n_kept > 0;
}

/* The HTTP and gRPC routes of one socket IR listener, placed in their domains. */
static void http_listener(build *b, size_t xi)
{
    gw_ctx *c = b->c;
    const gw_gw *g = b->g;
    const gw_irl *x = &g->irl[xi];
    hostset domains = {0};
    size_t dcap = 0;
    for (size_t i = 0; i < x->n_lis; i++) {
        const gw_lis *l = &g->lis[x->lis[i]];
        if (l->hostname)
            host_add(c, &domains, &dcap, l->hostname);
        for (size_t k = 0; k < l->n_routes; k++) {
            if (!servable(l->routes[k], RK_HTTP, RK_GRPC))
                continue;
            hostset e = effective(c, l, l->routes[k]);
            for (size_t h = 0; h < e.n; h++)
                host_add(c, &domains, &dcap, e.h[h]);
        }
    }
    b->emit[xi] = true;
    if (x->n_lis == 1 && g->lis[x->lis[0]].hostname) {
        size_t cap = 0;
        host_add(c, &b->lhosts[xi], &cap, g->lis[x->lis[0]].hostname);
    }
    for (size_t i = 0; i < x->n_lis; i++) {
        const gw_lis *l = &g->lis[x->lis[i]];
        for (size_t k = 0; k < l->n_routes; k++) {
            gw_route *r = l->routes[k];
            bool earlier = false; /* placed once per IR listener */
            for (size_t j = 0; j < i && !earlier; j++)
                earlier = attached_to(&g->lis[x->lis[j]], r);
            if (!servable(r, RK_HTTP, RK_GRPC) || earlier)
                continue;
            hostset mine = {0}, by_any = {0}, by_name = {0};
            size_t mcap = 0, acap = 0, ncap = 0;
            for (size_t j = 0; j < x->n_lis; j++) {
                const gw_lis *lj = &g->lis[x->lis[j]];
                if (!attached_to(lj, r))
                    continue;
                hostset e = effective(c, lj, r);
                if (e.any)
                    host_add(c, &by_any, &acap, lj->name);
                for (size_t d = 0; d < domains.n; d++) {
                    if (listener_of(g, x, domains.h[d]) != (long)x->lis[j] ||
                        !set_covers(&e, domains.h[d]))
                        continue;
                    host_add(c, &mine, &mcap, domains.h[d]);
                    host_add(c, &by_name, &ncap, lj->name);
                }
            }
            if (by_any.n)
                place(b, r, xi, true, NULL, &by_any);
            if (mine.n)
                place(b, r, xi, false, &mine, &by_name);
        }
    }
}

/* The gRPC routes of a proxyless IR listener: exact hostnames only, each one served by
 * the first proxyless IR listener of the Gateway that claims it. */
static void proxyless_listener(build *b, size_t xi, json_t *claimed)
{
    gw_ctx *c = b->c;
    const gw_gw *g = b->g;
    const gw_irl *x = &g->irl[xi];
    const gw_lis *l = &g->lis[x->lis[0]];
    size_t acap = 0;
    if (l->hostname && !gw_str(claimed, l->hostname)) {
        json_object_set_new(claimed, l->hostname, json_string(x->name));
        host_add(c, &b->lhosts[xi], &acap, l->hostname);
    }
    for (size_t k = 0; k < l->n_routes; k++) {
        gw_route *r = l->routes[k];
        if (!servable(r, RK_GRPC, RK_GRPC))
            continue;
        hostset e = effective(c, l, r), mine = {0};
        size_t mcap = 0;
        for (size_t h = 0; h < e.n; h++) {
            const char *owner = gw_str(claimed, e.h[h]);
            if (!gw_host_exact(e.h[h]) || (owner && strcmp(owner, x->name) != 0))
                continue;
            json_object_set_new(claimed, e.h[h], json_string(x->name));
            host_add(c, &mine, &mcap, e.h[h]);
            host_add(c, &b->lhosts[xi], &acap, e.h[h]);
        }
        hostset section = {.h = (const char **)&l->name, .n = 1};
        if (mine.n)
            place(b, r, xi, false, &mine, &section);
    }
    b->emit[xi] = b->lhosts[xi].n > 0; /* proxyless clients need names to dial */
}

/* ---------------------------------------------------------------- stream routes */

typedef struct claimant {
    gw_route *r;
    size_t ri;  /* index in ctx->routes[kind] */
    size_t lis; /* Gateway listener index */
} claimant;

static int cmp_claimant(const void *a, const void *b)
{
    const claimant *x = a, *y = b;
    int k = strcmp(x->r->created, y->r->created);
    if (k == 0)
        k = strcmp(x->r->obj->ns, y->r->obj->ns);
    if (k == 0)
        k = strcmp(x->r->obj->name, y->r->obj->name);
    return k != 0 ? k : (x->lis < y->lis ? -1 : x->lis > y->lis);
}

static void stream_listener(build *b, size_t xi)
{
    gw_ctx *c = b->c;
    gw_gw *g = b->g;
    const gw_irl *x = &g->irl[xi];
    gw_rk rk = x->proto == GP_TCP ? RK_TCP : RK_TLS;
    claimant *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < x->n_lis; i++) {
        gw_lis *l = &g->lis[x->lis[i]];
        for (size_t k = 0; k < l->n_routes; k++) {
            gw_route *r = l->routes[k];
            if (r->kind != rk || r->refused_reason)
                continue;
            v = gw_grow(c, v, sizeof *v, &cap, n + 1);
            v[n++] = (claimant){r, (size_t)(r - c->routes[rk]), x->lis[i]};
        }
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_claimant);
    json_t *claims = json_object(); /* sni -> route index */
    for (size_t i = 0; i < n; i++) {
        gw_lis *l = &g->lis[v[i].lis];
        hostset e = {0};
        if (rk == RK_TLS)
            e = effective(c, l, v[i].r);
        size_t ns = e.any || rk == RK_TCP ? 1 : e.n, won = 0, lost = 0;
        for (size_t h = 0; h < ns; h++) {
            const char *sni = e.any || rk == RK_TCP ? "" : e.h[h];
            const json_t *owner = json_object_get(claims, sni);
            if (owner) {
                lost += (size_t)json_integer_value(owner) != v[i].ri;
                continue;
            }
            json_object_set_new(claims, sni, json_integer((json_int_t)v[i].ri));
            won++;
            if (v[i].r->n_kept == 0)
                continue; /* the oldest route takes it even with nothing to forward to */
            json_t *rule = json_pack("{s:I,s:O}", "port", (json_int_t)x->port, "backend_refs",
                                     v[i].r->rules[0].ir);
            if (sni[0])
                json_object_set_new(rule, "sni_hostname", json_string(sni));
            if (rk == RK_TLS)
                json_object_set_new(rule, "mode",
                                    json_string(x->proto == GP_TLS_PASSTHROUGH
                                                    ? "TLS_ROUTE_MODE_PASSTHROUGH"
                                                    : "TLS_ROUTE_MODE_TERMINATE"));
            struct sroute *sr = sroute_of(b, v[i].r);
            json_array_append_new(sr->rules, rule);
            strs_add(c, &sr->sections, &sr->n_sections, &sr->cap_sections, l->name);
            b->emit[xi] = true;
            json_array_append_new(
                b->attached[xi],
                json_string(gw_printf(c, "%s/%s", v[i].r->obj->ns, base_name(b, v[i].r))));
        }
        if (won == 0 && lost > 0 && l->attached > 0)
            l->attached--; /* a younger route on a taken name is not attached */
    }
    json_decref(claims);
}

/* ---------------------------------------------------------------- assembling */

static int cmp_inst(const void *a, const void *b)
{
    const inst *x = a, *y = b;
    if (x->r != y->r) {
        if (x->r->kind != y->r->kind)
            return x->r->kind < y->r->kind ? -1 : 1;
        int k = strcmp(x->r->obj->ns, y->r->obj->ns);
        return k != 0 ? k : strcmp(x->r->obj->name, y->r->obj->name);
    }
    return strcmp(x->key, y->key);
}

static json_t *parent_refs(const build *b, const char **sections, size_t n)
{
    qsort(sections, n, sizeof *sections, cmp_str);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "name", b->g->obj->name, "namespace",
                                           b->g->obj->ns, "section_name", sections[i]));
    return a;
}

/* Renames the references to backend (ns, from) in a rule's IR (backend_refs, a mirror's
 * backend_ref), anywhere in it, to to. */
static void rename_refs(json_t *v, const char *ns, const char *from, const char *to)
{
    const char *key;
    json_t *x;
    size_t i;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            rename_refs(x, ns, from, to);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    if (strcmp(gw_str_or(v, "name", ""), from) == 0 &&
        strcmp(gw_str_or(v, "namespace", ""), ns) == 0 && gw_get(v, "weight") != NULL)
        json_object_set_new(v, "name", json_string(to));
    json_object_foreach(v, key, x)
    {
        if (strcmp(key, "backend_ref") == 0 && json_is_object(x) &&
            strcmp(gw_str_or(x, "name", ""), from) == 0 &&
            strcmp(gw_str_or(x, "namespace", ""), ns) == 0)
            json_object_set_new(x, "name", json_string(to));
        else
            rename_refs(x, ns, from, to);
    }
}

/* Adds the backends rule k of r names to the spec (each name once per spec), with what
 * Sextant's policies give them there; ir (the rule's IR copy in the spec, or NULL) has
 * its references renamed to a backend of their own where those differ between uses. */
static void take_backends(build *b, const gw_route *r, size_t k, json_t *ir, json_t *backends,
                          json_t *added, size_t gi, size_t *endpoints)
{
    for (size_t i = 0; i < r->rules[k].n_backends; i++) {
        gw_backend *be = &b->c->backends[r->rules[k].backends[i]];
        long w[GW_SX_COUNT];
        gw_sx_pick(b->c, be, r, k, gi, w);
        const char *name = gw_sx_name(b->c, be, w, gi);
        if (name != be->name && ir)
            rename_refs(ir, be->svc_ns, be->name, name);
        const char *key = gw_printf(b->c, "%s/%s", be->svc_ns, name);
        if (json_object_get(added, key))
            continue;
        json_object_set_new(added, key, json_true());
        json_t *bir = json_deep_copy(be->ir);
        json_object_set_new(bir, "name", json_string(name));
        gw_sx_decorate(b->c, w, gi, bir);
        json_array_append_new(backends, bir);
        *endpoints += be->n_endpoints;
    }
}

static long irl_index(const gw_gw *g, const char *name)
{
    for (size_t i = 0; i < g->n_irl; i++)
        if (strcmp(g->irl[i].name, name) == 0)
            return (long)i;
    return -1;
}

static void http_routes(build *b, json_t *http, json_t *grpc, json_t *backends, json_t *added,
                        size_t gi, size_t *endpoints)
{
    if (b->n_insts > 1)
        qsort(b->insts, b->n_insts, sizeof *b->insts, cmp_inst);
    for (size_t i = 0, first = 0; i < b->n_insts; i++) {
        inst *in = &b->insts[i];
        if (i == 0 || in->r != b->insts[i - 1].r)
            first = i;
        size_t count = 0;
        while (first + count < b->n_insts && b->insts[first + count].r == in->r)
            count++;
        const char *base = base_name(b, in->r);
        const char *name = count == 1 ? base : gw_printf(b->c, "%s@%zu", base, i - first + 1);
        json_t *o = json_pack("{s:s,s:s}", "name", name, "namespace", in->r->obj->ns);
        if (in->hosts.n)
            json_object_set_new(o, "hostnames", strs_json(in->hosts.h, in->hosts.n));
        json_object_set_new(o, "parent_refs", parent_refs(b, in->sections, in->n_sections));
        json_t *rules = json_array();
        for (size_t k = 0; k < in->r->n_rules; k++) {
            if (in->r->rules[k].ir == NULL)
                continue;
            json_t *rule = json_deep_copy(in->r->rules[k].ir);
            take_backends(b, in->r, k, rule, backends, added, gi, endpoints);
            json_array_append_new(rules, rule);
        }
        json_object_set_new(o, "rules", rules);
        json_array_append_new(in->r->kind == RK_GRPC ? grpc : http, o);
        for (size_t k = 0; k < in->n_irls; k++)
            json_array_append_new(b->attached[irl_index(b->g, in->irls[k])],
                                  json_string(gw_printf(b->c, "%s/%s", in->r->obj->ns, name)));
    }
}

static int cmp_stream_rule(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t px = json_integer_value(json_object_get(x, "port"));
    json_int_t py = json_integer_value(json_object_get(y, "port"));
    if (px != py)
        return px < py ? -1 : 1;
    return strcmp(gw_str_or(x, "sni_hostname", ""), gw_str_or(y, "sni_hostname", ""));
}

static void stream_routes(build *b, json_t *out, json_t *backends, json_t *added, size_t gi,
                          size_t *endpoints)
{
    for (size_t i = 0; i < b->n_sroutes; i++) {
        struct sroute *sr = &b->sroutes[i];
        const gw_route *r = sr->r;
        size_t n = json_array_size(sr->rules);
        json_t **v = sx_malloc(n * sizeof *v);
        for (size_t j = 0; j < n; j++)
            v[j] = json_incref(json_array_get(sr->rules, j));
        qsort(v, n, sizeof *v, cmp_stream_rule);
        /* The rules share the route's backend_refs: renamed in a copy each. */
        json_t *refs = json_deep_copy(r->rules[0].ir);
        take_backends(b, r, 0, refs, backends, added, gi, endpoints);
        json_t *rules = json_array();
        for (size_t j = 0; j < n; j++) {
            json_object_set_new(v[j], "backend_refs", json_deep_copy(refs));
            json_array_append_new(rules, v[j]);
        }
        json_decref(refs);
        sx_free(v);
        json_array_append_new(
            out,
            json_pack("{s:s,s:s,s:s,s:o,s:o}", "name", base_name(b, r), "namespace", r->obj->ns,
                      "kind", r->kind == RK_TLS ? "ROUTE_KIND_TLS" : "ROUTE_KIND_TCP",
                      "parent_refs", parent_refs(b, sr->sections, sr->n_sections), "rules", rules));
    }
}

static const char *ir_protocol(gw_proto p)
{
    /* In gw_proto's order; unknown and UDP read as HTTP. */
    static const char *const protocols[] = {
        "LISTENER_PROTOCOL_HTTP",  "LISTENER_PROTOCOL_HTTP",
        "LISTENER_PROTOCOL_HTTPS", "LISTENER_PROTOCOL_TLS_PASSTHROUGH",
        "LISTENER_PROTOCOL_TLS",   "LISTENER_PROTOCOL_TCP",
        "LISTENER_PROTOCOL_HTTP",  "LISTENER_PROTOCOL_GRPC"};
    _Static_assert(sizeof protocols / sizeof *protocols == GP_PROXYLESS + 1, "one per gw_proto");
    return (size_t)p < sizeof protocols / sizeof *protocols ? protocols[p] : protocols[0];
}

/* The IR listener xi; its secrets' names are added to used. */
static json_t *listener_json(build *b, size_t xi, json_t *used)
{
    gw_ctx *c = b->c;
    const gw_irl *x = &b->g->irl[xi];
    json_t *o = json_pack("{s:s,s:s}", "name", x->name, "protocol", ir_protocol(x->proto));
    if (x->port)
        json_object_set_new(o, "port", json_integer(x->port));
    if (x->proto == GP_HTTPS || x->proto == GP_TLS_TERMINATE) {
        const char **refs = NULL;
        size_t n = 0, cap = 0;
        for (size_t i = 0; i < x->n_lis; i++) {
            const gw_lis *l = &b->g->lis[x->lis[i]];
            for (size_t k = 0; k < l->n_secrets; k++)
                strs_add(c, &refs, &n, &cap, l->secrets[k]);
        }
        for (size_t k = 0; k < n; k++)
            json_object_set_new(used, refs[k], json_true());
        json_t *tls = json_pack("{s:o}", "secret_refs", strs_json(refs, n));
        const gw_lis *first = &b->g->lis[x->lis[0]];
        if (first->tls_min)
            json_object_set_new(tls, "min_version", json_string(first->tls_min));
        if (first->tls_max)
            json_object_set_new(tls, "max_version", json_string(first->tls_max));
        json_object_set_new(o, "tls", tls);
    }
    if (b->lhosts[xi].n)
        json_object_set_new(o, "hostnames", strs_json(b->lhosts[xi].h, b->lhosts[xi].n));
    const char **names = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < json_array_size(b->attached[xi]); i++)
        strs_add(c, &names, &n, &cap, json_string_value(json_array_get(b->attached[xi], i)));
    if (n)
        json_object_set_new(o, "attached_routes", strs_json(names, n));
    return o;
}

static void set_list(json_t *spec, const char *key, json_t *list, size_t *objects)
{
    *objects += json_array_size(list);
    if (json_array_size(list) == 0) {
        json_decref(list);
        return;
    }
    gw_sort_by(list, "name");
    json_object_set_new(spec, key, list);
}

static void limits(gw_ctx *c, gw_gw *g)
{
    const gw_limits *lim = &c->in->options.limits;
    const char *gwq = gw_printf(c, "%s/%s", g->obj->ns, g->obj->name);
    if (lim->max_snapshot_objects && g->objects > lim->max_snapshot_objects)
        g->error = gw_printf(c,
                             "the configuration of Gateway %s would hold %zu objects (listeners, "
                             "routes, backends and secrets), over the limit of %zu "
                             "(k8s.max_objects_per_snapshot); the last good configuration keeps "
                             "serving",
                             gwq, g->objects, lim->max_snapshot_objects);
    else if (lim->max_snapshot_endpoints && g->endpoints > lim->max_snapshot_endpoints)
        g->error = gw_printf(c,
                             "the configuration of Gateway %s would hold %zu endpoints, over the "
                             "limit of %zu (k8s.max_endpoints_per_snapshot); the last good "
                             "configuration keeps serving",
                             gwq, g->endpoints, lim->max_snapshot_endpoints);
    if (g->error) {
        g->error_reason = "NoResources";
        json_decref(g->spec);
        g->spec = NULL;
    }
}

void gw_spec_build(gw_ctx *c, gw_gw *g, size_t gi)
{
    if (g->error)
        return;
    if (g->refused) {
        g->error = g->refused_message;
        g->error_reason = "Invalid";
        return;
    }
    build b = {.c = c, .g = g};
    size_t nx = g->n_irl + 1;
    b.emit = sx_arena_alloc(c->a, nx * sizeof *b.emit);
    b.lhosts = sx_arena_alloc(c->a, nx * sizeof *b.lhosts);
    b.attached = sx_arena_alloc(c->a, nx * sizeof *b.attached);
    for (size_t i = 0; i < g->n_irl; i++)
        b.attached[i] = json_array();
    b.sroute_keys = json_object();
    b.inst_keys = json_object();
    b.first_kind = json_object();
    name_kinds(&b);

    json_t *claimed = json_object();
    for (size_t xi = 0; xi < g->n_irl; xi++) {
        switch (g->irl[xi].proto) {
        case GP_HTTP:
        case GP_HTTPS:
            http_listener(&b, xi);
            break;
        case GP_PROXYLESS:
            proxyless_listener(&b, xi, claimed);
            break;
        default:
            stream_listener(&b, xi);
        }
    }
    json_decref(claimed);
    /* The BackendTLSPolicies of every backend the attached routes name, served or not,
     * have this Gateway as ancestor. */
    for (size_t l = 0; l < g->n_lis; l++)
        for (size_t i = 0; i < g->lis[l].n_routes; i++) {
            const gw_route *r = g->lis[l].routes[i];
            for (size_t k = 0; k < r->n_rules; k++)
                for (size_t j = 0; j < r->rules[k].n_backends; j++) {
                    gw_policies_used(c, &c->backends[r->rules[k].backends[j]], gi);
                    gw_sx_used(c, &c->backends[r->rules[k].backends[j]], r, k, gi);
                }
        }

    json_t *http = json_array(), *grpc = json_array(), *stream = json_array();
    json_t *backends = json_array(), *listeners = json_array(), *used = json_object();
    json_t *added = json_object(); /* "<ns>/<name>" of the backends in the spec */
    http_routes(&b, http, grpc, backends, added, gi, &g->endpoints);
    stream_routes(&b, stream, backends, added, gi, &g->endpoints);
    json_decref(added);
    for (size_t xi = 0; xi < g->n_irl; xi++)
        if (b.emit[xi])
            json_array_append_new(listeners, listener_json(&b, xi, used));
    json_t *secrets = json_array();
    for (size_t i = 0; i < g->n_secrets; i++)
        if (json_object_get(used, gw_printf(c, "%s/%s", g->secrets[i].ns, g->secrets[i].name)))
            json_array_append_new(secrets, json_deep_copy(g->secrets[i].ir));
    json_decref(used);

    g->spec = json_object();
    set_list(g->spec, "listeners", listeners, &g->objects);
    set_list(g->spec, "http_routes", http, &g->objects);
    set_list(g->spec, "grpc_routes", grpc, &g->objects);
    set_list(g->spec, "stream_routes", stream, &g->objects);
    set_list(g->spec, "backends", backends, &g->objects);
    set_list(g->spec, "secrets", secrets, &g->objects);
    limits(c, g);

    for (size_t i = 0; i < g->n_irl; i++)
        json_decref(b.attached[i]);
    for (size_t i = 0; i < b.n_sroutes; i++)
        json_decref(b.sroutes[i].rules);
    json_decref(b.sroute_keys);
    json_decref(b.inst_keys);
    json_decref(b.first_kind);
}

/*
 * gw_sextant_attach.c — where Sextant's own policies (gw_sextant.c) attach: their
 * targetRefs resolved, and which policy applies to each use of a backend.
 *
 * Targets (Gateway API policy attachment, GEP-713), always in the policy's own
 * namespace (a targetRef naming another namespace is Invalid: policies do not reach
 * across namespaces):
 *   - a core Service, or one port of it (sectionName: the port's name): every backend
 *     made from that port, in every Gateway;
 *   - an HTTPRoute or GRPCRoute, or one rule of it (sectionName: the rule's name): the
 *     backends that route (that rule) sends to, mirrors included;
 *   - a Gateway, or one listener of it (sectionName: the listener's name): the backends
 *     of every route attached to it (to that listener), in that Gateway's spec only.
 * A target that does not exist (or a sectionName naming no port, rule or listener) is
 * TargetNotFound; another kind is Invalid.
 *
 * A WasmPlugin an HTTPRoute or GRPCRoute rule names in an ExtensionRef filter
 * (gw_rules.c) runs on that rule's backends, before any plugin targetRefs attach there.
 *
 * Precedence, per kind of policy and per use of a backend (rule k of route r in Gateway
 * g): the most specific target wins — Service port, Service, route rule, route, Gateway
 * listener, Gateway — and among policies with the same target (or listeners of one
 * route) the oldest (creationTimestamp, then namespace/name). A policy that loses every
 * use in a Gateway is Conflicted there, naming the one that applies.
 *
 * The IR has no per-route backend settings: a backend is one cluster per spec. When the
 * uses of one backend in a Gateway get different policies, each use whose policies are
 * not those the backend gets without route-specific targets (its Service's, then the
 * Gateway's) sends to a backend of its own, "<name>~<hash of its policies>", a copy
 * with the same endpoints; the rule's backend references are renamed to it.
 */
#include <stdio.h>
#include <string.h>

#include "server/k8s/gw_internal.h"

/* ---------------------------------------------------------------- targets */

/* Records that policy pi targets key; the first one recorded (the oldest) applies, the
 * others are Conflicted. Only policies that can be applied claim a target. */
static void claim(gw_ctx *c, size_t pi, const char *key)
{
    gw_sxp *p = &c->sxps[pi];
    if (p->ir == NULL)
        return;
    json_t *list = json_object_get(c->sx_targets, key);
    if (list == NULL) {
        list = json_array();
        json_object_set_new(c->sx_targets, key, list);
    }
    json_array_append_new(list, json_integer((json_int_t)pi));
    if (json_array_size(list) > 1 && p->accepted.ok) {
        const gw_sxp *w = &c->sxps[json_integer_value(json_array_get(list, 0))];
        p->accepted = (gw_cond){"Accepted", false, "Conflicted",
                                gw_printf(c, "%s %s/%s, older, has the same target",
                                          gw_sx_kind_name(p->sk), w->obj->ns, w->obj->name)};
    }
}

static void missing(gw_sxp *p, const json_t *t, const char *message)
{
    p->missing[p->n_missing++] = (gw_sx_missing){
        gw_str_or(t, "group", ""), gw_str_or(t, "kind", ""), gw_str_or(t, "name", ""), message};
}

static void invalid(gw_sxp *p, const char *why)
{
    json_decref(p->ir);
    p->ir = NULL;
    p->accepted = (gw_cond){"Accepted", false, "Invalid", why};
}

/* Whether the array at key of o holds an object whose "name" is name. */
static bool has_named(const json_t *o, const char *key, const char *name)
{
    size_t n;
    const json_t *a = gw_array(o, key, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(gw_str_or(json_array_get(a, i), "name", ""), name) == 0)
            return true;
    return false;
}

void gw_sx_targets(gw_ctx *c, size_t pi)
{
    gw_sxp *p = &c->sxps[pi];
    size_t n;
    const json_t *targets = gw_array(gw_get(p->obj->o, "spec"), "targetRefs", &n);
    p->missing = sx_arena_alloc(c->a, (n + 1) * sizeof *p->missing);
    const char *ns = p->obj->ns;
    for (size_t k = 0; k < n; k++) { /* a target it may not have makes it Invalid */
        const json_t *t = json_array_get(targets, k);
        const char *group = gw_str_or(t, "group", ""), *kind = gw_str_or(t, "kind", "");
        const char *tns = gw_str(t, "namespace");
        bool gw_kind = strcmp(group, GW_GROUP) == 0 &&
                       (strcmp(kind, "Gateway") == 0 || strcmp(kind, "HTTPRoute") == 0 ||
                        strcmp(kind, "GRPCRoute") == 0);
        if (tns && strcmp(tns, ns) != 0)
            invalid(p, gw_printf(c,
                                 "targetRefs[%zu] names namespace %s: a policy attaches only to "
                                 "objects of its own namespace (%s)",
                                 k, tns, ns));
        else if (!gw_kind && !(group[0] == '\0' && strcmp(kind, "Service") == 0))
            invalid(p, gw_printf(c,
                                 "a %s attaches to Gateways, HTTPRoutes and GRPCRoutes (group %s) "
                                 "and core Services, not to %s %s",
                                 gw_sx_kind_name(p->sk), GW_GROUP, kind[0] ? kind : "(no kind)",
                                 gw_str_or(t, "name", "")));
    }
    for (size_t k = 0; k < n; k++) {
        const json_t *t = json_array_get(targets, k);
        const char *group = gw_str_or(t, "group", ""), *kind = gw_str_or(t, "kind", "");
        const char *name = gw_str_or(t, "name", ""), *section = gw_str(t, "sectionName");
        const char *sec = section ? section : "*";
        if (group[0] == '\0' && strcmp(kind, "Service") == 0) {
            const gw_obj *svc = gw_find(&c->idx[GW_SERVICE], ns, name);
            if (svc == NULL)
                missing(p, t, gw_printf(c, "Service %s/%s does not exist", ns, name));
            else if (section && !has_named(gw_get(svc->o, "spec"), "ports", section))
                missing(p, t,
                        gw_printf(c, "Service %s/%s has no port named %s", ns, name, section));
            else
                claim(c, pi, gw_printf(c, "%d|S|%s/%s/%s", (int)p->sk, ns, name, sec));
        } else if (strcmp(group, GW_GROUP) == 0 && strcmp(kind, "Gateway") == 0) {
            const gw_obj *g = gw_find(&c->idx[GW_GATEWAY], ns, name);
            if (g == NULL)
                missing(p, t, gw_printf(c, "Gateway %s/%s does not exist", ns, name));
            else if (section && !has_named(gw_get(g->o, "spec"), "listeners", section))
                missing(p, t, gw_printf(c, "Gateway %s/%s has no listener %s", ns, name, section));
            else
                claim(c, pi, gw_printf(c, "%d|G|%s/%s/%s", (int)p->sk, ns, name, sec));
        } else if (strcmp(group, GW_GROUP) == 0 &&
                   (strcmp(kind, "HTTPRoute") == 0 || strcmp(kind, "GRPCRoute") == 0)) {
            gw_kind gk = kind[0] == 'H' ? GW_HTTP_ROUTE : GW_GRPC_ROUTE;
            const gw_obj *r = gw_find(&c->idx[gk], ns, name);
            if (r == NULL)
                missing(p, t, gw_printf(c, "%s %s/%s does not exist", kind, ns, name));
            else if (section && !has_named(gw_get(r->o, "spec"), "rules", section))
                missing(p, t,
                        gw_printf(c, "%s %s/%s has no rule named %s", kind, ns, name, section));
            else
                claim(c, pi, gw_printf(c, "%d|R|%s|%s/%s/%s", (int)p->sk, kind, ns, name, sec));
        }
    }
}

void gw_sx_apply(gw_ctx *c, gw_backend *b, const char *port_name)
{
    if (json_object_size(c->sx_targets) == 0)
        return;
    for (int k = 0; k < GW_SX_COUNT; k++) {
        const char *keys[2] = {gw_printf(c, "%d|S|%s/%s/%s", k, b->svc_ns, b->svc, port_name),
                               gw_printf(c, "%d|S|%s/%s/*", k, b->svc_ns, b->svc)};
        for (int i = 0; i < 2; i++) {
            if (json_object_get(c->sx_targets, keys[i])) {
                b->sx_keys[k] = keys[i];
                break;
            }
        }
    }
}

/* ---------------------------------------------------------------- precedence */

/* The policies that may apply to one use of a backend, most specific first: at most
 * the WasmPlugin of the rule's ExtensionRef filter, the Service's, the rule's, the
 * route's, the listeners' and the Gateway's. */
typedef struct cands {
    const json_t *lists[6];
    size_t n;
} cands;

static void cand(cands *s, const json_t *list)
{
    if (list && s->n < 6)
        s->lists[s->n++] = list;
}

/* Gateway target lists of the listeners of g that route r is attached to, merged: the
 * oldest policy first (indexes in ctx->sxps are in age order within a kind). */
static const json_t *listener_list(gw_ctx *c, const gw_gw *g, const gw_route *r, int k)
{
    const char *key =
        gw_printf(c, "~%d|L|%s/%s/%s/%s", k, g->obj->ns, g->obj->name, r->obj->ns, r->obj->name);
    json_t *merged = json_object_get(c->sx_targets, key);
    if (merged)
        return merged;
    for (size_t l = 0; l < g->n_lis; l++) {
        const json_t *list =
            json_object_get(c->sx_targets, gw_printf(c, "%d|G|%s/%s/%s", k, g->obj->ns,
                                                     g->obj->name, g->lis[l].name));
        if (list == NULL)
            continue;
        bool attached = false;
        for (size_t i = 0; i < g->lis[l].n_routes && !attached; i++)
            attached = g->lis[l].routes[i] == r;
        if (!attached)
            continue;
        if (merged == NULL) {
            merged = json_array();
            json_object_set_new(c->sx_targets, key, merged); /* owned there */
        }
        size_t i;
        const json_t *v;
        json_array_foreach(list, i, v)
        {
            json_int_t x = json_integer_value(v);
            size_t at = json_array_size(merged), j;
            bool dup = false;
            for (j = 0; j < json_array_size(merged) && !dup; j++)
                dup = json_integer_value(json_array_get(merged, j)) == x;
            for (j = 0; j < json_array_size(merged) && !dup; j++)
                if (json_integer_value(json_array_get(merged, j)) > x) {
                    at = j;
                    break;
                }
            if (!dup)
                json_array_insert_new(merged, at, json_integer(x));
        }
    }
    return merged;
}

long gw_sx_find_wasm(const gw_ctx *c, const char *ns, const char *name)
{
    for (size_t i = 0; i < c->n_sxps; i++)
        if (c->sxps[i].sk == GW_SX_WASM && strcmp(c->sxps[i].obj->ns, ns) == 0 &&
            strcmp(c->sxps[i].obj->name, name) == 0)
            return (long)i;
    return -1;
}

/* The one-policy list of the WasmPlugin an ExtensionRef filter of rule k of r names. */
static const json_t *filter_list(gw_ctx *c, const gw_route *r, size_t k)
{
    size_t pi = r->rules[k].wasm - 1;
    const char *key = gw_printf(c, "~F|%zu", pi);
    json_t *list = json_object_get(c->sx_targets, key);
    if (list == NULL) {
        list = json_pack("[I]", (json_int_t)pi);
        json_object_set_new(c->sx_targets, key, list); /* owned there */
    }
    return list;
}

static cands candidates(gw_ctx *c, const gw_backend *b, const gw_route *r, size_t rule, size_t gi,
                        int k)
{
    cands s = {0};
    if (k == GW_SX_WASM && r && rule < r->n_rules && r->rules[rule].wasm)
        cand(&s, filter_list(c, r, rule));
    if (json_object_size(c->sx_targets) == 0)
        return s;
    const gw_gw *g = &c->gws[gi];
    if (b->sx_keys[k])
        cand(&s, json_object_get(c->sx_targets, b->sx_keys[k]));
    if (r && (r->kind == RK_HTTP || r->kind == RK_GRPC)) {
        const char *kind = gw_rk_name(r->kind);
        size_t nr;
        const json_t *rules = gw_array(gw_get(r->obj->o, "spec"), "rules", &nr);
        const char *rname = gw_str(json_array_get(rules, rule), "name");
        if (rname)
            cand(&s, json_object_get(c->sx_targets, gw_printf(c, "%d|R|%s|%s/%s/%s", k, kind,
                                                              r->obj->ns, r->obj->name, rname)));
        cand(&s, json_object_get(c->sx_targets, gw_printf(c, "%d|R|%s|%s/%s/*", k, kind, r->obj->ns,
                                                          r->obj->name)));
    }
    if (r)
        cand(&s, listener_list(c, g, r, k));
    cand(&s,
         json_object_get(c->sx_targets, gw_printf(c, "%d|G|%s/%s/*", k, g->obj->ns, g->obj->name)));
    return s;
}

void gw_sx_pick(gw_ctx *c, const gw_backend *b, const gw_route *r, size_t k, size_t gi,
                long w[GW_SX_COUNT])
{
    for (int sk = 0; sk < GW_SX_COUNT; sk++)
        w[sk] = -1;
    if (c->n_sxps == 0)
        return;
    for (int sk = 0; sk < GW_SX_COUNT; sk++) {
        cands s = candidates(c, b, r, k, gi, sk);
        w[sk] = s.n ? (long)json_integer_value(json_array_get(s.lists[0], 0)) : -1;
    }
}

static gw_sx_anc *ancestor(gw_ctx *c, gw_sxp *p, size_t gi)
{
    for (size_t j = 0; j < p->n_gws; j++)
        if (p->gws[j].gi == gi)
            return &p->gws[j];
    p->gws = gw_grow(c, p->gws, sizeof *p->gws, &p->cap_gws, p->n_gws + 1);
    gw_sx_anc *a = &p->gws[p->n_gws++];
    *a = (gw_sx_anc){.gi = gi, .refused = gw_sx_refusal(c, p, gi), .lost_to = -1};
    return a;
}

void gw_sx_used(gw_ctx *c, const gw_backend *b, const gw_route *r, size_t k, size_t gi)
{
    if (c->n_sxps == 0)
        return;
    const char *ukey = gw_printf(c, "%zu|%zu", gi, (size_t)(b - c->backends));
    json_t *use = json_object_get(c->sx_uses, ukey);
    bool first = use == NULL;
    if (first) {
        use = json_array();
        json_object_set_new(c->sx_uses, ukey, use);
    }
    for (int sk = 0; sk < GW_SX_COUNT; sk++) {
        cands s = candidates(c, b, r, k, gi, sk);
        long win = s.n ? (long)json_integer_value(json_array_get(s.lists[0], 0)) : -1;
        if (first)
            json_array_append_new(use, json_integer(win));
        else if (json_integer_value(json_array_get(use, (size_t)sk)) != win)
            json_array_set_new(use, GW_SX_COUNT, json_true()); /* the uses disagree */
        for (size_t l = 0; l < s.n; l++) {
            size_t i;
            const json_t *v;
            json_array_foreach(s.lists[l], i, v)
            {
                long pi = (long)json_integer_value(v);
                gw_sx_anc *a = ancestor(c, &c->sxps[pi], gi);
                if (pi == win)
                    a->applied = true;
                else if (a->lost_to < 0)
                    a->lost_to = win;
            }
        }
    }
    if (first)
        json_array_append_new(use, json_false());
}

void gw_sx_target_ancestors(gw_ctx *c, gw_sxp *p)
{
    size_t n;
    const json_t *targets = gw_array(gw_get(p->obj->o, "spec"), "targetRefs", &n);
    for (size_t k = 0; k < n; k++) {
        const json_t *t = json_array_get(targets, k);
        const char *kind = gw_str_or(t, "kind", ""), *name = gw_str_or(t, "name", "");
        const char *tns = gw_str(t, "namespace"), *section = gw_str(t, "sectionName");
        if (strcmp(gw_str_or(t, "group", ""), GW_GROUP) != 0 || (tns && strcmp(tns, p->obj->ns)))
            continue;
        if (strcmp(kind, "Gateway") == 0) {
            for (size_t gi = 0; gi < c->n_gws; gi++)
                if (strcmp(c->gws[gi].obj->ns, p->obj->ns) == 0 &&
                    strcmp(c->gws[gi].obj->name, name) == 0 &&
                    (section == NULL ||
                     has_named(gw_get(c->gws[gi].obj->o, "spec"), "listeners", section)))
                    ancestor(c, p, gi);
        } else if (strcmp(kind, "HTTPRoute") == 0 || strcmp(kind, "GRPCRoute") == 0) {
            gw_rk rk = kind[0] == 'H' ? RK_HTTP : RK_GRPC;
            for (size_t ri = 0; ri < c->n_routes[rk]; ri++) {
                const gw_route *r = &c->routes[rk][ri];
                if (strcmp(r->obj->ns, p->obj->ns) != 0 || strcmp(r->obj->name, name) != 0 ||
                    (section && !has_named(gw_get(r->obj->o, "spec"), "rules", section)))
                    continue;
                for (size_t j = 0; j < r->n_parents; j++)
                    ancestor(c, p, r->parents[j].gw);
            }
        }
    }
}

/* ---------------------------------------------------------------- the spec */

const char *gw_sx_name(gw_ctx *c, const gw_backend *b, const long w[GW_SX_COUNT], size_t gi)
{
    if (c->n_sxps == 0)
        return b->name;
    const json_t *use =
        json_object_get(c->sx_uses, gw_printf(c, "%zu|%zu", gi, (size_t)(b - c->backends)));
    if (!json_is_true(json_array_get(use, GW_SX_COUNT)))
        return b->name; /* every use there gets the same */
    long base[GW_SX_COUNT];
    gw_sx_pick(c, b, NULL, 0, gi, base);
    if (memcmp(base, w, sizeof base) == 0)
        return b->name;
    /* FNV-1a over the applying policies' kinds and names */
    unsigned h = 2166136261u;
    for (int k = 0; k < GW_SX_COUNT; k++) {
        const gw_sxp *p = w[k] >= 0 ? &c->sxps[w[k]] : NULL;
        const char *s = p ? gw_printf(c, "%d|%s/%s;", k, p->obj->ns, p->obj->name) : "-;";
        for (; *s; s++)
            h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return gw_printf(c, "%s~%08x", b->name, h);
}

void gw_sx_decorate(gw_ctx *c, const long w[GW_SX_COUNT], size_t gi, json_t *ir)
{
    for (int k = 0; k < GW_SX_COUNT; k++) {
        const gw_sxp *p = w[k] >= 0 ? &c->sxps[w[k]] : NULL;
        if (p == NULL || p->ir == NULL)
            continue;
        bool refused = false;
        for (size_t j = 0; j < p->n_gws; j++)
            if (p->gws[j].gi == gi)
                refused = p->gws[j].refused != NULL;
        if (!refused)
            json_object_set_new(ir, gw_sx_field(k), json_deep_copy(p->ir));
    }
}

/*
 * gw_status.c — the status the translation gives every object it judged: our
 * GatewayClasses (Accepted), our Gateways (Accepted, Programmed, addresses, and per
 * listener Accepted, Programmed, ResolvedRefs, Conflicted, supportedKinds and
 * attachedRoutes), and each route's entries in status.parents for our Gateways
 * (Accepted, ResolvedRefs).
 *
 * Output depends on the input alone, so that two replicas never write a status back
 * and forth: conditions carry observedGeneration = metadata.generation, and a
 * condition keeps the lastTransitionTime it had in the object's status while its
 * status and reason stay the same; only a change takes the translation's "now".
 * Conditions of types we do not set, and route parent entries of other controllers,
 * are kept as the object had them (see gw.h for how the writer merges).
 */
#include <string.h>
#include <time.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

/* ---------------------------------------------------------------- conditions */

static const json_t *find_type(const json_t *conds, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = gw_str(c, "type");
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static json_t *condition(const gw_cond *c, const json_t *prev, int64_t generation,
                         const char *now_text)
{
    const char *status = c->ok ? "True" : "False";
    const json_t *p = find_type(prev, c->type);
    const char *since = now_text;
    if (p && strcmp(gw_str_or(p, "status", ""), status) == 0 &&
        strcmp(gw_str_or(p, "reason", ""), c->reason) == 0 && gw_str(p, "lastTransitionTime"))
        since = gw_str(p, "lastTransitionTime");
    return json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "type", c->type, "status", status, "reason",
                     c->reason, "message", c->message ? c->message : "", "observedGeneration",
                     (json_int_t)generation, "lastTransitionTime", since);
}

json_t *gw_conditions(const gw_cond *ours, size_t n, const json_t *prev, int64_t generation,
                      const char *now_text)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        if (ours[i].reason)
            json_array_append_new(out, condition(&ours[i], prev, generation, now_text));
    size_t i;
    const json_t *c;
    json_array_foreach(prev, i, c)
    {
        const char *t = gw_str(c, "type");
        bool mine = false;
        for (size_t k = 0; k < n && !mine; k++)
            mine = t && strcmp(t, ours[k].type) == 0;
        if (!mine)
            json_array_append_new(out, json_deep_copy(c));
    }
    return out;
}

/* Replaces (or adds) condition c in conds, judged against prev. */
static void set_condition(json_t *conds, const gw_cond *c, const json_t *prev, int64_t generation,
                          const char *now_text)
{
    json_t *nc = condition(c, prev, generation, now_text);
    size_t i;
    json_t *x;
    json_array_foreach(conds, i, x)
    {
        const char *t = gw_str(x, "type");
        if (t && strcmp(t, c->type) == 0) {
            json_array_set_new(conds, i, nc);
            return;
        }
    }
    json_array_append_new(conds, nc);
}

/* ---------------------------------------------------------------- Gateways */

static const json_t *prev_listener(const json_t *prev, const char *name)
{
    size_t n;
    const json_t *ls = gw_array(prev, "listeners", &n);
    for (size_t i = 0; i < n; i++) {
        const char *ln = gw_str(json_array_get(ls, i), "name");
        if (ln && strcmp(ln, name) == 0)
            return json_array_get(ls, i);
    }
    return NULL;
}

json_t *gw_status_gateway(gw_ctx *c, const gw_gw *g, const json_t *prev)
{
    int64_t gen = gw_generation(g->obj->o);
    size_t invalid = 0, served = 0;
    for (size_t i = 0; i < g->n_lis; i++) {
        invalid += !g->lis[i].accepted.ok;
        served += g->lis[i].ok;
    }
    gw_cond conds[2];
    if (g->refused)
        conds[0] = (gw_cond){"Accepted", false, g->refused, g->refused_message};
    else if (invalid == 0)
        conds[0] = (gw_cond){"Accepted", true, "Accepted", "the Gateway is valid"};
    else
        conds[0] = (gw_cond){"Accepted", served > 0, "ListenersNotValid",
                             gw_printf(c, "%zu of %zu listeners are not valid", invalid, g->n_lis)};
    if (g->error)
        conds[1] = (gw_cond){"Programmed", false, g->error_reason, g->error};
    else if (g->n_lis > 0 && served == 0)
        conds[1] = (gw_cond){"Programmed", false, "Invalid",
                             "no listener can be served (see the listeners' conditions)"};
    else if (g->address_problem)
        conds[1] = (gw_cond){"Programmed", false, g->address_reason, g->address_problem};
    else
        conds[1] = (gw_cond){"Programmed", true, "Programmed",
                             gw_printf(c, "configuration built for proxy group %s", g->group)};

    json_t *st = json_is_object(prev) ? json_deep_copy(prev) : json_object();
    json_t *addrs = gw_addresses_json(g);
    if (json_array_size(addrs))
        json_object_set_new(st, "addresses", addrs);
    else {
        json_decref(addrs);
        json_object_del(st, "addresses");
    }
    json_object_set_new(st, "conditions",
                        gw_conditions(conds, 2, gw_get(prev, "conditions"), gen, c->now_text));
    json_t *ls = json_array();
    for (size_t i = 0; i < g->n_lis; i++) {
        const gw_lis *l = &g->lis[i];
        gw_cond lc[4] = {l->accepted, l->programmed, l->resolved, l->conflicted};
        if (g->error && lc[1].ok)
            lc[1] = (gw_cond){"Programmed", false, "Invalid", g->error};
        const json_t *pl = prev_listener(prev, l->name);
        json_array_append_new(
            ls,
            json_pack("{s:s,s:O,s:I,s:o}", "name", l->name, "supportedKinds", l->supported_kinds,
                      "attachedRoutes", (json_int_t)l->attached, "conditions",
                      gw_conditions(lc, 4, gw_get(pl, "conditions"), gen, c->now_text)));
    }
    json_object_set_new(st, "listeners", ls);
    return st;
}

/* Programmed=False on a Gateway status and every listener of it, the rest as it is. */
static void fail_gateway(json_t *st, const json_t *prev, int64_t gen, const char *now_text,
                         const char *reason, const char *message)
{
    gw_cond p = {"Programmed", false, reason, message};
    json_t *conds = json_object_get(st, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(st, "conditions", conds);
    }
    set_condition(conds, &p, gw_get(prev, "conditions"), gen, now_text);
    gw_cond lp = {"Programmed", false, "Invalid", message};
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(st, "listeners"), i, l)
    {
        json_t *lconds = json_object_get(l, "conditions");
        const char *name = gw_str(l, "name");
        if (json_is_array(lconds) && name)
            set_condition(lconds, &lp, gw_get(prev_listener(prev, name), "conditions"), gen,
                          now_text);
    }
}

/* ---------------------------------------------------------------- routes */

static bool same_parent(const gw_ctx *c, const gw_route *r, const json_t *ref, const gw_parent *p)
{
    const char *want_ns = gw_str(p->ref_json, "namespace"), *want = gw_str(p->ref_json, "name");
    long long port = 0;
    gw_int(ref, "port", &port);
    const char *section = gw_str(ref, "sectionName");
    (void)c;
    return strcmp(gw_str_or(ref, "group", GW_GROUP), GW_GROUP) == 0 &&
           strcmp(gw_str_or(ref, "kind", "Gateway"), "Gateway") == 0 &&
           strcmp(gw_str_or(ref, "namespace", r->obj->ns), want_ns) == 0 &&
           strcmp(gw_str_or(ref, "name", ""), want) == 0 && port == p->port &&
           ((section == NULL && p->section == NULL) ||
            (section && p->section && strcmp(section, p->section) == 0));
}

bool gw_status_is_ours(const gw_ctx *c, const json_t *entry)
{
    const char *ctl = gw_str(entry, "controllerName");
    return ctl && strcmp(ctl, c->controller) == 0;
}

json_t *gw_status_others(const gw_ctx *c, const json_t *old, size_t n, bool *ours)
{
    json_t *others = json_array();
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(old, i);
        if (!gw_status_is_ours(c, e))
            json_array_append_new(others, json_deep_copy(e));
        else if (ours)
            *ours = true;
    }
    return others;
}

json_t *gw_status_set(const json_t *prev, const char *key, json_t *value)
{
    json_t *st = json_is_object(prev) ? json_deep_copy(prev) : json_object();
    json_object_set_new(st, key, value);
    return st;
}

static json_t *route_status(gw_ctx *c, const gw_route *r, const json_t *prev)
{
    int64_t gen = gw_generation(r->obj->o);
    size_t n;
    const json_t *old = gw_array(prev, "parents", &n);
    json_t *parents = gw_status_others(c, old, n, NULL);
    for (size_t k = 0; k < r->n_parents; k++) {
        const gw_parent *p = &r->parents[k];
        const json_t *pconds = NULL;
        for (size_t i = 0; i < n && pconds == NULL; i++) {
            const json_t *e = json_array_get(old, i);
            if (gw_status_is_ours(c, e) && same_parent(c, r, gw_get(e, "parentRef"), p))
                pconds = gw_get(e, "conditions");
        }
        gw_cond conds[2] = {p->accepted, r->resolved};
        json_array_append_new(parents,
                              json_pack("{s:O,s:s,s:o}", "parentRef", p->ref_json, "controllerName",
                                        c->controller, "conditions",
                                        gw_conditions(conds, 2, pconds, gen, c->now_text)));
    }
    return gw_status_set(prev, "parents", parents);
}

/* ---------------------------------------------------------------- output */

void gw_status_push(gw_output *out, size_t *cap, gw_kind kind, const gw_obj *o, json_t *status)
{
    if (out->n_statuses == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        out->statuses = sx_realloc(out->statuses, *cap * sizeof *out->statuses);
    }
    const json_t *prev = gw_get(o->o, "status");
    const char *api = gw_str(o->o, "apiVersion");
    const char *rv = gw_str(gw_get(o->o, "metadata"), "resourceVersion");
    gw_status_out *s = &out->statuses[out->n_statuses++];
    *s = (gw_status_out){
        .api_version = sx_strdup(api ? api : GW_GROUP "/v1"),
        .kind = kind,
        .ns = o->ns[0] ? sx_strdup(o->ns) : NULL,
        .name = sx_strdup(o->name),
        .generation = gw_generation(o->o),
        .resource_version = rv ? sx_strdup(rv) : NULL,
        .status = status,
        .prev_ = prev ? json_deep_copy(prev) : NULL,
    };
    json_t *empty = json_object();
    s->changed = !json_equal(status, prev ? prev : empty);
    json_decref(empty);
}

void gw_status_all(gw_ctx *c, gw_output *out)
{
    size_t cap = 0;
    for (size_t i = 0; i < c->n_classes; i++) {
        const gw_class *k = &c->classes[i];
        const json_t *prev = gw_get(k->obj->o, "status");
        json_t *conds = gw_conditions(&k->accepted, 1, gw_get(prev, "conditions"),
                                      gw_generation(k->obj->o), c->now_text);
        gw_status_push(out, &cap, GW_GATEWAY_CLASS, k->obj,
                       gw_status_set(prev, "conditions", conds));
    }
    for (size_t i = 0; i < c->n_gws; i++) {
        const gw_gw *g = &c->gws[i];
        const json_t *prev = gw_get(g->obj->o, "status");
        json_t *st;
        if (c->over_input) {
            st = json_is_object(prev) ? json_deep_copy(prev) : json_object();
            fail_gateway(st, prev, gw_generation(g->obj->o), c->now_text, "NoResources",
                         c->over_input_message);
        } else {
            st = gw_status_gateway(c, g, prev);
        }
        gw_status_push(out, &cap, GW_GATEWAY, g->obj, st);
    }
    if (c->over_input)
        return;
    gw_policies_status(c, out, &cap);
    gw_sx_status(c, out, &cap);
    for (int k = 0; k < RK_COUNT; k++)
        for (size_t i = 0; i < c->n_routes[k]; i++) {
            const gw_route *r = &c->routes[k][i];
            gw_status_push(out, &cap, gw_rk_kind((gw_rk)k), r->obj,
                           route_status(c, r, gw_get(r->obj->o, "status")));
        }
}

int gw_output_fail(gw_output *out, size_t i, const char *reason, const char *message)
{
    if (out == NULL || i >= out->n_gateways)
        return SX_EINVAL;
    gw_gateway_out *g = &out->gateways[i];
    if (g->spec)
        out->counters.gateways_failed++;
    json_decref(g->spec);
    g->spec = NULL;
    sx_free(g->error);
    g->error = sx_strdup(message ? message : "");
    char now_text[32];
    time_t t = (time_t)out->now;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now_text, sizeof now_text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    for (size_t k = 0; k < out->n_statuses; k++) {
        gw_status_out *s = &out->statuses[k];
        if (s->kind != GW_GATEWAY || s->ns == NULL || strcmp(s->ns, g->ns) != 0 ||
            strcmp(s->name, g->name) != 0)
            continue;
        fail_gateway(s->status, s->prev_, s->generation, now_text, reason ? reason : "Invalid",
                     g->error);
        json_t *empty = json_object();
        s->changed = !json_equal(s->status, s->prev_ ? s->prev_ : empty);
        json_decref(empty);
    }
    return 0;
}

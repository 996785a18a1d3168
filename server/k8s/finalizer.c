/*
 * finalizer.c — finalizer-guarded deletion: judging what an object's finalizer needs,
 * the merge patches that add and remove it, the status condition naming what holds it,
 * and the GatewayClass guard.
 */
#include "server/k8s/finalizer.h"

#include <stdio.h>
#include <string.h>

#define MAX_NAMED 10 /* holders named in the condition's message; the rest are counted */

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

static bool has_finalizer(const json_t *obj)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f)
    {
        const char *s = json_string_value(f);
        if (s && strcmp(s, K8S_FINALIZER) == 0)
            return true;
    }
    return false;
}

const char *k8s_fin_action_name(k8s_fin_action a)
{
    static const char *const names[] = {"none", "add", "hold", "remove"};
    _Static_assert(sizeof names / sizeof *names == K8S_FIN_REMOVE + 1, "a name per action");
    return (size_t)a < sizeof names / sizeof *names ? names[a] : names[K8S_FIN_NONE];
}

k8s_fin_action k8s_fin_judge(const k8s_fin_guard *g, const json_t *obj, const wm_table_state *ts,
                             json_t **holders)
{
    *holders = json_array();
    bool ours = g->ours(obj, g->ctx);
    bool has = has_finalizer(obj);
    bool deleting = str_at(obj, "metadata", "deletionTimestamp") != NULL;
    if (!ours)
        return has ? K8S_FIN_REMOVE : K8S_FIN_NONE;
    if (!deleting)
        return has ? K8S_FIN_NONE : K8S_FIN_ADD;
    if (!has)
        return K8S_FIN_NONE; /* its deletion is not ours to hold */
    g->holders(obj, ts, *holders, g->ctx);
    return json_array_size(*holders) > 0 ? K8S_FIN_HOLD : K8S_FIN_REMOVE;
}

json_t *k8s_fin_patch(const json_t *obj, k8s_fin_action a)
{
    if (a != K8S_FIN_ADD && a != K8S_FIN_REMOVE)
        return NULL;
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *list = json_array();
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(meta, "finalizers"), i, f)
    {
        const char *s = json_string_value(f);
        if (s && strcmp(s, K8S_FINALIZER) == 0)
            continue;
        json_array_append(list, (json_t *)f);
    }
    if (a == K8S_FIN_ADD)
        json_array_append_new(list, json_string(K8S_FINALIZER));
    json_t *m = json_pack("{s:o}", "finalizers", list);
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (rv)
        json_object_set_new(m, "resourceVersion", json_string(rv));
    return json_pack("{s:o}", "metadata", m);
}

void k8s_fin_condition(json_t *status, const json_t *prev_status, k8s_fin_action action,
                       const json_t *holders, int64_t generation, const char *now_text)
{
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    size_t at = json_array_size(conds);
    for (size_t i = 0; i < json_array_size(conds); i++) {
        const char *t = json_string_value(json_object_get(json_array_get(conds, i), "type"));
        if (t && strcmp(t, K8S_FIN_CONDITION) == 0) {
            at = i;
            break;
        }
    }
    if (action != K8S_FIN_HOLD) {
        if (at < json_array_size(conds))
            json_array_remove(conds, at);
        if (json_array_size(conds) == 0 && json_object_get(prev_status, "conditions") == NULL)
            json_object_del(status, "conditions");
        return;
    }
    char msg[1024];
    size_t n = json_array_size(holders), used;
    used = (size_t)snprintf(msg, sizeof(msg), "deletion waits for %zu object%s still using it: ", n,
                            n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < MAX_NAMED && used < sizeof(msg); i++)
        used += (size_t)snprintf(msg + used, sizeof(msg) - used, "%s%s", i ? ", " : "",
                                 json_string_value(json_array_get(holders, i)));
    if (n > MAX_NAMED && used < sizeof(msg))
        snprintf(msg + used, sizeof(msg) - used, " and %zu more", n - MAX_NAMED);
    /* The transition time stays while the condition stays True. */
    const char *since = now_text;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(prev_status, "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        const char *lt = json_string_value(json_object_get(c, "lastTransitionTime"));
        if (t && strcmp(t, K8S_FIN_CONDITION) == 0 && s && strcmp(s, "True") == 0 && lt)
            since = lt;
    }
    json_t *cond = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "type", K8S_FIN_CONDITION, "status",
                             "True", "reason", "InUse", "message", msg, "observedGeneration",
                             (json_int_t)generation, "lastTransitionTime", since);
    if (at < json_array_size(conds))
        json_array_set_new(conds, at, cond);
    else
        json_array_append_new(conds, cond);
}

/* ------------------------------------------------------------------ GatewayClass */

static bool class_ours(const json_t *obj, void *ctx)
{
    const char *const *controller = ctx;
    const char *name = str_at(obj, "spec", "controllerName");
    return name && *controller && strcmp(name, *controller) == 0;
}

static void class_holders(const json_t *obj, const wm_table_state *ts, json_t *holders, void *ctx)
{
    (void)ctx;
    const char *cls = str_at(obj, "metadata", "name");
    const wm_state *gws = wm_table_state_find(ts, "Gateway");
    if (cls == NULL || gws == NULL)
        return;
    for (size_t i = 0; i < gws->n; i++) { /* keys are sorted: a stable order */
        const char *want = str_at(gws->values[i], "spec", "gatewayClassName");
        if (want == NULL || strcmp(want, cls) != 0)
            continue;
        char name[600];
        snprintf(name, sizeof(name), "Gateway %s", gws->keys[i]);
        json_array_append_new(holders, json_string(name));
    }
}

k8s_fin_guard k8s_fin_gateway_class(const char *const *controller_name)
{
    return (k8s_fin_guard){.kind = "GatewayClass",
                           .ours = class_ours,
                           .holders = class_holders,
                           .ctx = (void *)controller_name};
}

/* ------------------------------------------------------------------ Sextant's kinds */

static bool always_ours(const json_t *obj, void *ctx)
{
    (void)obj;
    (void)ctx;
    return true;
}

/* Whether filters (an array or NULL) hold an ExtensionRef to kind/name of sextant.dev. */
static bool names_it(const json_t *filters, const char *kind, const char *name)
{
    size_t i;
    const json_t *f;
    json_array_foreach(filters, i, f)
    {
        const json_t *ref = json_object_get(f, "extensionRef");
        const char *type = json_string_value(json_object_get(f, "type"));
        const char *g = json_string_value(json_object_get(ref, "group"));
        const char *k = json_string_value(json_object_get(ref, "kind"));
        const char *n = json_string_value(json_object_get(ref, "name"));
        if (type && strcmp(type, "ExtensionRef") == 0 && g && strcmp(g, "sextant.dev") == 0 && k &&
            strcmp(k, kind) == 0 && n && strcmp(n, name) == 0)
            return true;
    }
    return false;
}

static bool route_names_it(const json_t *route, const char *kind, const char *name)
{
    size_t i, j;
    const json_t *rule, *be;
    json_array_foreach(json_object_get(json_object_get(route, "spec"), "rules"), i, rule)
    {
        if (names_it(json_object_get(rule, "filters"), kind, name))
            return true;
        json_array_foreach(json_object_get(rule, "backendRefs"), j, be)
        {
            if (names_it(json_object_get(be, "filters"), kind, name))
                return true;
        }
    }
    return false;
}

static void sextant_holders(const json_t *obj, const wm_table_state *ts, json_t *holders, void *ctx)
{
    const char *kind = ctx;
    const char *ns = str_at(obj, "metadata", "namespace");
    const char *name = str_at(obj, "metadata", "name");
    if (ns == NULL || name == NULL)
        return;
    static const char *const route_kinds[] = {"HTTPRoute", "GRPCRoute"};
    for (size_t r = 0; r < 2; r++) {
        const wm_state *st = wm_table_state_find(ts, route_kinds[r]);
        for (size_t i = 0; st && i < st->n; i++) { /* keys are sorted: a stable order */
            const char *rns = str_at(st->values[i], "metadata", "namespace");
            if (rns == NULL || strcmp(rns, ns) != 0 || !route_names_it(st->values[i], kind, name))
                continue;
            char held[600];
            snprintf(held, sizeof(held), "%s %s", route_kinds[r], st->keys[i]);
            json_array_append_new(holders, json_string(held));
        }
    }
}

k8s_fin_guard k8s_fin_sextant(const char *kind)
{
    return (k8s_fin_guard){
        .kind = kind, .ours = always_ours, .holders = sextant_holders, .ctx = (void *)kind};
}

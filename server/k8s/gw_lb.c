/*
 * gw_lb.c — BackendLBPolicies (sextant.dev/v1alpha1): how a Gateway balances load over
 * the endpoints of the Services they target, and their status.ancestors.
 *
 * A policy targets core Services of its namespace (targetRefs; a sectionName names one
 * port of the Service by its name) and gives the IR backends made from them their
 * load_balancing (an IR LoadBalancingPolicy, which every data plane takes). As with
 * BackendTLSPolicy, the oldest policy (creationTimestamp, then namespace/name) of a
 * target applies; the others are Accepted=False, Conflicted, and a policy for one port
 * wins over one for the whole Service. A target that does not exist, or of another kind
 * than Service, is reported rather than ignored.
 *
 * Status: status.ancestors holds, for each Gateway of ours whose spec uses a backend the
 * policy targets, an entry (ancestorRef the Gateway) with Accepted; for each target
 * Service that does not exist an entry whose ancestorRef is that target, Accepted=False
 * TargetNotFound; for a policy that cannot be applied at all (its fields out of range, a
 * target of another kind) an entry per target with Accepted=False Invalid. Entries of
 * other controllers are kept as they were.
 */
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/k8s/gw_internal.h"

/* The largest values the IR's Envoy translation takes (translate_cluster.c). */
#define LB_MAX_RING_SIZE    8388608LL
#define LB_MAX_MAGLEV_TABLE 5000011LL

static int cmp_lb(const void *a, const void *b)
{
    const gw_lb *x = a, *y = b;
    int k = strcmp(x->created, y->created);
    if (k == 0)
        k = strcmp(x->obj->ns, y->obj->ns);
    return k != 0 ? k : strcmp(x->obj->name, y->obj->name);
}

static bool prime(long long n)
{
    if (n < 2)
        return false;
    for (long long d = 2; d * d <= n; d++)
        if (n % d == 0)
            return false;
    return true;
}

static const char *algorithm_ir(const char *a)
{
    static const char *const map[][2] = {
        {"RoundRobin", "LOAD_BALANCING_ALGORITHM_ROUND_ROBIN"},
        {"LeastRequest", "LOAD_BALANCING_ALGORITHM_LEAST_REQUEST"},
        {"Random", "LOAD_BALANCING_ALGORITHM_RANDOM"},
        {"RingHash", "LOAD_BALANCING_ALGORITHM_RING_HASH"},
        {"Maglev", "LOAD_BALANCING_ALGORITHM_MAGLEV"},
    };
    for (size_t i = 0; a && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(a, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}

/* The IR LoadBalancingPolicy of p's spec, or NULL with p->accepted set to Invalid. The
 * schema's CEL rules say the same; they are checked again here because an API server
 * that does not evaluate them (or an object stored before them) must not reach the IR. */
static json_t *judge(gw_ctx *c, gw_lb *p)
{
    const json_t *spec = gw_get(p->obj->o, "spec");
    const char *algo = gw_str(spec, "algorithm");
    const char *ir_algo = algorithm_ir(algo);
    const char *hash_on = gw_str(spec, "hashOn"), *hash_key = gw_str(spec, "hashKey");
    long long ring = 0, maglev = 0;
    bool has_ring = gw_int(spec, "minimumRingSize", &ring);
    bool has_maglev = gw_int(spec, "maglevTableSize", &maglev);
    bool hashing = algo && (strcmp(algo, "RingHash") == 0 || strcmp(algo, "Maglev") == 0);
    const char *why = NULL;
    if (ir_algo == NULL)
        why = gw_printf(c,
                        "spec.algorithm %s%s%s is not one of RoundRobin, LeastRequest, "
                        "Random, RingHash, Maglev",
                        algo ? "\"" : "", algo ? algo : "(unset)", algo ? "\"" : "");
    else if (hash_on && !hashing)
        why = "spec.hashOn needs algorithm RingHash or Maglev";
    else if (hash_on && strcmp(hash_on, "Header") != 0 && strcmp(hash_on, "Cookie") != 0 &&
             strcmp(hash_on, "SourceIP") != 0 && strcmp(hash_on, "QueryParameter") != 0)
        why = "spec.hashOn must be Header, Cookie, SourceIP or QueryParameter";
    else if (hash_on && strcmp(hash_on, "SourceIP") != 0 && (hash_key == NULL || !*hash_key))
        why = "spec.hashKey names the header, cookie or query parameter to hash";
    else if (hash_key && (hash_on == NULL || strcmp(hash_on, "SourceIP") == 0))
        why = "spec.hashKey needs hashOn Header, Cookie or QueryParameter";
    else if (has_ring && (strcmp(algo, "RingHash") != 0 || ring < 1 || ring > LB_MAX_RING_SIZE))
        why = "spec.minimumRingSize needs algorithm RingHash and must be between 1 and 8388608";
    else if (has_maglev &&
             (strcmp(algo, "Maglev") != 0 || maglev > LB_MAX_MAGLEV_TABLE || !prime(maglev)))
        why = "spec.maglevTableSize needs algorithm Maglev and must be a prime number at "
              "most 5000011";
    if (why) {
        p->accepted = (gw_cond){"Accepted", false, "Invalid", why};
        return NULL;
    }
    json_t *lb = json_pack("{s:s}", "algorithm", ir_algo);
    if (hash_on)
        json_object_set_new(lb, "hash_on", json_string(hash_on));
    if (hash_key)
        json_object_set_new(lb, "hash_key", json_string(hash_key));
    if (has_ring)
        json_object_set_new(lb, "minimum_ring_size", json_integer(ring));
    if (has_maglev)
        json_object_set_new(lb, "maglev_table_size", json_integer(maglev));
    p->accepted = (gw_cond){"Accepted", true, "Accepted", "the policy is accepted"};
    return lb;
}

/* Records that policy pi targets key ("<ns>/<svc>/<port name or *>"); the first one
 * recorded (the oldest) applies, the others are Conflicted. */
static void claim(gw_ctx *c, size_t pi, const char *key)
{
    json_t *list = json_object_get(c->lb_targets, key);
    if (list == NULL) {
        list = json_array();
        json_object_set_new(c->lb_targets, key, list);
    }
    json_array_append_new(list, json_integer((json_int_t)pi));
    if (json_array_size(list) > 1) {
        gw_lb *p = &c->lbs[pi];
        const gw_lb *w = &c->lbs[json_integer_value(json_array_get(list, 0))];
        if (p->lb)
            p->accepted = (gw_cond){"Accepted", false, "Conflicted",
                                    gw_printf(c,
                                              "BackendLBPolicy %s/%s, older, targets the "
                                              "same Service port",
                                              w->obj->ns, w->obj->name)};
    }
}

void gw_lb_build(gw_ctx *c)
{
    const gw_index *x = &c->idx[GW_BACKEND_LB_POLICY];
    c->lbs = sx_arena_alloc(c->a, (x->n + 1) * sizeof *c->lbs);
    c->lb_targets = json_object();
    for (size_t i = 0; i < x->n; i++) {
        gw_lb *p = &c->lbs[c->n_lbs++];
        memset(p, 0, sizeof *p);
        p->obj = &x->v[i];
        p->created = gw_str_or(gw_get(x->v[i].o, "metadata"), "creationTimestamp", "");
    }
    if (c->n_lbs > 1)
        qsort(c->lbs, c->n_lbs, sizeof *c->lbs, cmp_lb);
    for (size_t i = 0; i < c->n_lbs; i++) {
        gw_lb *p = &c->lbs[i];
        p->lb = judge(c, p);
        size_t n;
        const json_t *targets = gw_array(gw_get(p->obj->o, "spec"), "targetRefs", &n);
        p->missing = sx_arena_alloc(c->a, (n + 1) * sizeof *p->missing);
        for (size_t k = 0; k < n; k++) {
            const json_t *t = json_array_get(targets, k);
            const char *name = gw_str_or(t, "name", "");
            if (gw_str_or(t, "group", "")[0] != '\0' ||
                strcmp(gw_str_or(t, "kind", ""), "Service") != 0) {
                json_decref(p->lb);
                p->lb = NULL;
                p->accepted =
                    (gw_cond){"Accepted", false, "Invalid",
                              gw_printf(c,
                                        "a BackendLBPolicy attaches to core Services only, "
                                        "not to %s %s",
                                        gw_str_or(t, "kind", "(no kind)"), name)};
                continue;
            }
            if (gw_find(&c->idx[GW_SERVICE], p->obj->ns, name) == NULL) {
                p->missing[p->n_missing++] = name;
                continue;
            }
            claim(c, i,
                  gw_printf(c, "%s/%s/%s", p->obj->ns, name, gw_str_or(t, "sectionName", "*")));
        }
    }
}

void gw_lb_apply(gw_ctx *c, gw_backend *b, const char *port_name)
{
    const char *keys[2] = {gw_printf(c, "%s/%s/%s", b->svc_ns, b->svc, port_name),
                           gw_printf(c, "%s/%s/*", b->svc_ns, b->svc)};
    for (int i = 0; i < 2; i++) {
        const json_t *list = json_object_get(c->lb_targets, keys[i]);
        if (list == NULL)
            continue;
        b->lb_key = keys[i];
        const gw_lb *p = &c->lbs[json_integer_value(json_array_get(list, 0))];
        if (p->lb)
            json_object_set_new(b->ir, "load_balancing", json_deep_copy(p->lb));
        return;
    }
}

void gw_lb_used(gw_ctx *c, const gw_backend *b, size_t gi)
{
    const json_t *list = b->lb_key ? json_object_get(c->lb_targets, b->lb_key) : NULL;
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        gw_lb *p = &c->lbs[json_integer_value(v)];
        bool have = false;
        for (size_t k = 0; k < p->n_gws && !have; k++)
            have = p->gws[k] == gi;
        if (!have) {
            p->gws = gw_grow(c, p->gws, sizeof *p->gws, &p->cap_gws, p->n_gws + 1);
            p->gws[p->n_gws++] = gi;
        }
    }
}

/* ---------------------------------------------------------------- status */

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_by_obj(const void *a, const void *b)
{
    const gw_obj *x = (*(gw_lb *const *)a)->obj, *y = (*(gw_lb *const *)b)->obj;
    return x < y ? -1 : x > y;
}

/* The conditions of our previous entry for ancestorRef (group, kind, ns, name). */
static const json_t *prev_conditions(gw_ctx *c, const json_t *old, size_t n, const char *group,
                                     const char *kind, const char *ns, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(old, i), *ref = gw_get(e, "ancestorRef");
        const char *ctl = gw_str(e, "controllerName");
        if (ctl && strcmp(ctl, c->controller) == 0 &&
            strcmp(gw_str_or(ref, "group", GW_GROUP), group) == 0 &&
            strcmp(gw_str_or(ref, "kind", "Gateway"), kind) == 0 &&
            strcmp(gw_str_or(ref, "namespace", ""), ns) == 0 &&
            strcmp(gw_str_or(ref, "name", ""), name) == 0)
            return gw_get(e, "conditions");
    }
    return NULL;
}

static void push_entry(gw_ctx *c, json_t *ancestors, const json_t *old, size_t n, int64_t gen,
                       const char *group, const char *kind, const char *ns, const char *name,
                       gw_cond cond)
{
    const json_t *pconds = prev_conditions(c, old, n, group, kind, ns, name);
    json_array_append_new(
        ancestors, json_pack("{s:{s:s,s:s,s:s,s:s},s:s,s:o}", "ancestorRef", "group", group, "kind",
                             kind, "namespace", ns, "name", name, "controllerName", c->controller,
                             "conditions", gw_conditions(&cond, 1, pconds, gen, c->now_text)));
}

void gw_lb_status(gw_ctx *c, gw_output *out, size_t *cap)
{
    gw_lb **order = sx_malloc((c->n_lbs + 1) * sizeof *order);
    for (size_t i = 0; i < c->n_lbs; i++)
        order[i] = &c->lbs[i];
    qsort(order, c->n_lbs, sizeof *order, cmp_by_obj);
    for (size_t oi = 0; oi < c->n_lbs; oi++) {
        gw_lb *p = order[oi];
        const json_t *prev = gw_get(p->obj->o, "status");
        size_t n;
        const json_t *old = gw_array(prev, "ancestors", &n);
        json_t *ancestors = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *ctl = gw_str(json_array_get(old, i), "controllerName");
            if (ctl == NULL || strcmp(ctl, c->controller) != 0)
                json_array_append_new(ancestors, json_deep_copy(json_array_get(old, i)));
        }
        int64_t gen = gw_generation(p->obj->o);
        qsort(p->gws, p->n_gws, sizeof *p->gws, cmp_size);
        for (size_t k = 0; k < p->n_gws; k++) {
            const gw_gw *g = &c->gws[p->gws[k]];
            push_entry(c, ancestors, old, n, gen, GW_GROUP, "Gateway", g->obj->ns, g->obj->name,
                       p->accepted);
        }
        for (size_t k = 0; k < p->n_missing; k++)
            push_entry(
                c, ancestors, old, n, gen, "", "Service", p->obj->ns, p->missing[k],
                (gw_cond){"Accepted", false, "TargetNotFound",
                          gw_printf(c, "Service %s/%s does not exist", p->obj->ns, p->missing[k])});
        if (p->n_gws == 0 && !p->accepted.ok) {
            /* Invalid or Conflicted with no Gateway using it: said on each target. */
            size_t nt;
            const json_t *targets = gw_array(gw_get(p->obj->o, "spec"), "targetRefs", &nt);
            for (size_t k = 0; k < nt && json_array_size(ancestors) < 16; k++) {
                const json_t *t = json_array_get(targets, k);
                const char *name = gw_str_or(t, "name", "");
                bool missing = false;
                for (size_t m = 0; m < p->n_missing && !missing; m++)
                    missing = strcmp(p->missing[m], name) == 0;
                if (!missing && *name)
                    push_entry(c, ancestors, old, n, gen, gw_str_or(t, "group", ""),
                               gw_str_or(t, "kind", "Service"), p->obj->ns, name, p->accepted);
            }
        }
        json_t *st = json_is_object(prev) ? json_deep_copy(prev) : json_object();
        json_object_set_new(st, "ancestors", ancestors);
        gw_status_push(out, cap, GW_BACKEND_LB_POLICY, p->obj, st);
    }
    sx_free(order);
}

void gw_lb_free(gw_ctx *c)
{
    for (size_t i = 0; i < c->n_lbs; i++)
        json_decref(c->lbs[i].lb);
    json_decref(c->lb_targets);
}

/*
 * val_names.c — the name tables of a validation run and reference resolution, exactly
 * as the Envoy translator resolves names in a group's merged snapshot.
 *
 * The tables hold every backend, secret, route and listener of the config and of its
 * peers, sorted by qualified name, so that a reference resolves to an object of this
 * config or of another config of its groups and the problem can say which. The rules
 * (qualified names, BackendRef namespace defaulting, bare listener-side references that
 * must be unambiguous) are server/translate/translate.c's; keep the two in step.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/base/sorted.h"
#include "server/base/num.h"
#include "server/validate/val_internal.h"

const char *val_qname(const char *ns, const char *name, char *buf, size_t n)
{
    if (ns == NULL || ns[0] == '\0')
        snprintf(buf, n, "%s", VAL_S(name));
    else
        snprintf(buf, n, "%s/%s", ns, VAL_S(name));
    return buf;
}

static int cmp_name(const void *a, const void *b)
{
    const val_name *x = a, *y = b;
    int c = strcmp(x->qname, y->qname);
    if (c || (c = SX_CMP(x->doc, y->doc)) || (c = SX_CMP(x->kind, y->kind)))
        return c;
    return SX_CMP(x->idx, y->idx);
}

typedef struct table_builder {
    val_table *t;
    size_t cap;
    size_t doc; /* of the routes push_route adds */
} table_builder;

static void push(table_builder *b, const char *ns, const char *name, size_t doc, int kind,
                 size_t idx)
{
    val_table *t = b->t;
    if (t->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        t->v = sx_realloc(t->v, b->cap * sizeof *t->v);
    }
    t->v[t->n++] = (val_name){
        .qname = ns && ns[0] ? sx_asprintf("%s/%s", ns, VAL_S(name)) : sx_strdup(VAL_S(name)),
        .name = VAL_S(name),
        .doc = doc,
        .kind = kind,
        .idx = idx,
    };
}

static void push_route(void *arg, const val_route *r)
{
    table_builder *b = arg;
    push(b, r->namespace_, r->name, b->doc, (int)r->kind, r->idx);
}

void val_names_build(val_ctx *c)
{
    table_builder b = {&c->backends, 0, 0}, s = {&c->secrets, 0, 0}, r = {&c->routes, 0, 0},
                  l = {&c->listeners, 0, 0};
    for (size_t d = 0; d < c->ndocs; d++) {
        const ir_snapshot *ir = c->docs[d].ir;
        for (size_t i = 0; i < ir->n_backends; i++)
            if (ir->backends[i])
                push(&b, ir->backends[i]->namespace_, ir->backends[i]->name, d, 0, i);
        for (size_t i = 0; i < ir->n_secrets; i++)
            if (ir->secrets[i])
                push(&s, ir->secrets[i]->namespace_, ir->secrets[i]->name, d, 0, i);
        r.doc = d;
        val_each_route(ir, VAL_KINDS_ALL, push_route, NULL, &r);
        for (size_t i = 0; i < ir->n_listeners; i++)
            if (ir->listeners[i])
                push(&l, NULL, ir->listeners[i]->name, d, 0, i);
    }
    val_table *all[] = {&c->backends, &c->secrets, &c->routes, &c->listeners};
    for (size_t i = 0; i < 4; i++)
        if (all[i]->n > 1)
            qsort(all[i]->v, all[i]->n, sizeof *all[i]->v, cmp_name);
}

void val_names_free(val_ctx *c)
{
    val_table *all[] = {&c->backends, &c->secrets, &c->routes, &c->listeners};
    for (size_t i = 0; i < 4; i++) {
        for (size_t k = 0; k < all[i]->n; k++)
            sx_free(all[i]->v[k].qname);
        sx_free(all[i]->v);
        all[i]->v = NULL;
        all[i]->n = 0;
    }
}

const val_name *val_find(const val_table *t, const char *qname, size_t *count)
{
    size_t lo = sx_sorted_first(t->v, t->n, sizeof(*t->v), offsetof(val_name, qname), qname);
    if (lo >= t->n || strcmp(t->v[lo].qname, qname) != 0) {
        if (count)
            *count = 0;
        return NULL;
    }
    size_t k = 1;
    while (lo + k < t->n && strcmp(t->v[lo + k].qname, qname) == 0)
        k++;
    if (count)
        *count = k;
    return &t->v[lo];
}

const val_name *val_resolve_backend(const val_ctx *c, const val_backend_ref *ref,
                                    const char *default_ns, char *why, size_t n)
{
    char q[VAL_PATH_MAX];
    const char *ns = ref->namespace_ && ref->namespace_[0] ? ref->namespace_ : default_ns;
    val_qname(ns, ref->name, q, sizeof q);
    const val_name *e = val_find(&c->backends, q, NULL);
    if (e)
        return e;
    /* Say where a backend of that bare name is, when there is one: the usual mistake is
     * a namespace left to default to the route's. */
    for (size_t i = 0; i < c->backends.n; i++) {
        if (strcmp(c->backends.v[i].name, VAL_S(ref->name)) != 0)
            continue;
        char where[VAL_PATH_MAX];
        snprintf(why, n, "unknown backend \"%s\" (there is a backend \"%s\" in %s)", q,
                 c->backends.v[i].qname,
                 val_doc_label(c, c->backends.v[i].doc, where, sizeof where));
        return NULL;
    }
    snprintf(why, n,
             "unknown backend \"%s\": neither this config nor another config of its groups has it",
             q);
    return NULL;
}

const val_name *val_resolve(const val_table *t, const char *ref, const char *what, size_t *count,
                            char *why, size_t n)
{
    *count = 0;
    if (ref == NULL || ref[0] == '\0') {
        snprintf(why, n, "%s reference must not be empty", what);
        return NULL;
    }
    const val_name *e = val_find(t, ref, count);
    if (e)
        return e;
    if (strchr(ref, '/') == NULL) {
        for (size_t i = 0; i < t->n; i++) {
            if (strcmp(t->v[i].name, ref) != 0)
                continue;
            if (e && strcmp(e->qname, t->v[i].qname) != 0) {
                snprintf(why, n,
                         "%s reference \"%s\" is ambiguous: \"%s\" and \"%s\" match; use the "
                         "qualified name",
                         what, ref, e->qname, t->v[i].qname);
                *count = 0;
                return NULL;
            }
            if (e == NULL)
                e = &t->v[i];
        }
        if (e)
            return val_find(t, e->qname, count);
    }
    snprintf(why, n,
             "unknown %s \"%s\": neither this config nor another config of its groups has it", what,
             ref);
    return NULL;
}

bool val_listener_proxyless(const val_listener *l)
{
    return l->protocol == VAL_P_GRPC && l->port == 0;
}

/*
 * status_store.c — the status written back to Kubernetes objects, kept in the database
 * (see status_store.h).
 *
 * A row's links are the configs.source_ref values of the Gateways it concerns, computed
 * from the status itself: a Gateway's own, and for a route or a policy the Gateways its
 * entries of our controller name (status.parents[].parentRef,
 * status.ancestors[].ancestorRef), so the links are what the cluster reads too.
 */
#include "server/k8s/status_store.h"

#include <string.h>

#include "server/base/arena.h"
#include "server/catalog.h"
#include "server/server.h"
#include "storage/repo_k8s_status.h"

/* Adds "Gateway <ns>/<name>" of the Gateway entries of controller in status[list]
 * (refs under ref_key; a reference without a namespace is in def_ns). */
static void add_entries(sx_arena *a, const json_t *status, const char *list, const char *ref_key,
                        const char *controller, const char *def_ns, const char ***refs, size_t *n,
                        size_t *cap)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(status, list), i, e)
    {
        const char *ctl = json_string_value(json_object_get(e, "controllerName"));
        const json_t *ref = json_object_get(e, ref_key);
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        const char *group = json_string_value(json_object_get(ref, "group"));
        const char *ns = json_string_value(json_object_get(ref, "namespace"));
        const char *name = json_string_value(json_object_get(ref, "name"));
        if (ctl == NULL || strcmp(ctl, controller) != 0 || name == NULL ||
            (kind && strcmp(kind, "Gateway") != 0) ||
            (group && strcmp(group, "gateway.networking.k8s.io") != 0))
            continue;
        const char *r = sx_arena_printf(a, "Gateway %s/%s", ns ? ns : def_ns, name);
        bool seen = false;
        for (size_t k = 0; k < *n && !seen; k++)
            seen = strcmp((*refs)[k], r) == 0;
        if (seen)
            continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 4;
            const char **g = sx_arena_alloc(a, nc * sizeof *g);
            if (*n)
                memcpy(g, *refs, *n * sizeof *g);
            *refs = g;
            *cap = nc;
        }
        (*refs)[(*n)++] = r;
    }
}

int k8s_sstore_put(struct sx_server *srv, const char *controller, const gw_status_out *s,
                   sx_err *err)
{
    sx_arena *a = sx_arena_create();
    const char **refs = NULL;
    size_t n = 0, cap = 0;
    const char *ns = s->ns ? s->ns : "";
    if (s->kind == GW_GATEWAY) {
        refs = sx_arena_alloc(a, sizeof *refs);
        refs[n++] = sx_arena_printf(a, "Gateway %s/%s", ns, s->name);
    } else if (controller) {
        add_entries(a, s->status, "parents", "parentRef", controller, ns, &refs, &n, &cap);
        add_entries(a, s->status, "ancestors", "ancestorRef", controller, ns, &refs, &n, &cap);
    }
    k8s_status_put p = {.kind = gw_kind_name(s->kind),
                        .ns = ns,
                        .name = s->name,
                        .generation = s->generation,
                        .status = s->status,
                        .source_refs = refs,
                        .n_source_refs = n};
    pg_conn *c = catalog_acquire(srv, err);
    int rc = catalog_release(srv, c, c ? k8s_status_repo_put(c, &p, err) : err->code);
    sx_arena_destroy(a);
    return rc;
}

int k8s_sstore_forget(struct sx_server *srv, const gw_status_out *s, sx_err *err)
{
    pg_conn *c = catalog_acquire(srv, err);
    return catalog_release(srv, c,
                           c ? k8s_status_repo_delete(c, gw_kind_name(s->kind), s->ns, s->name, err)
                             : err->code);
}

int k8s_sstore_sweep(struct sx_server *srv, const gw_output *out, sx_err *err)
{
    if (out->over_input)
        return 0;
    sx_arena *a = sx_arena_create();
    size_t n = out->n_statuses;
    const char **kinds = sx_arena_alloc(a, (n + 1) * sizeof *kinds);
    const char **nss = sx_arena_alloc(a, (n + 1) * sizeof *nss);
    const char **names = sx_arena_alloc(a, (n + 1) * sizeof *names);
    for (size_t i = 0; i < n; i++) {
        kinds[i] = gw_kind_name(out->statuses[i].kind);
        nss[i] = out->statuses[i].ns;
        names[i] = out->statuses[i].name;
    }
    pg_conn *c = catalog_acquire(srv, err);
    int rc = catalog_release(
        srv, c, c ? k8s_status_repo_keep(c, kinds, nss, names, n, a, NULL, err) : err->code);
    sx_arena_destroy(a);
    return rc;
}

/*
 * resources.c — builds the Envoy xDS resources of one snapshot version and shares them.
 *
 * A build runs the translators (translate_*.c) over the IR in a fresh context, packs
 * each resource once with protobuf-c and versions it by content (the first 16 hex
 * digits of the SHA-256 of its bytes), sorts every type by name and checks that names
 * are unique within a type. The result is immutable and reference-counted; streams
 * hold a reference while they send from it. Everything in the output is a function of
 * the IR alone (no clocks, no addresses, no hash-table order), so the same IR gives
 * the same bytes and versions on every replica, and a change to one backend's
 * endpoints changes that one ClusterLoadAssignment's version and nothing else.
 */
#include "server/translate/resources.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/base/sorted.h"
#include "server/translate/translate.h"

/* Each type's short name (metrics, logs), what one resource of it is (messages) and its
 * type URL. */
static const struct {
    const char *name, *what, *url;
} TYPES[TR_TYPE_COUNT] = {
    [TR_SDS] = {"sds", "secret",
                "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"},
    [TR_CDS] = {"cds", "cluster", "type.googleapis.com/envoy.config.cluster.v3.Cluster"},
    [TR_EDS] = {"eds", "load assignment",
                "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"},
    [TR_LDS] = {"lds", "listener", "type.googleapis.com/envoy.config.listener.v3.Listener"},
    [TR_RDS] = {"rds", "route configuration",
                "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"},
};

const char *tr_type_url(tr_type t)
{
    return (unsigned)t < TR_TYPE_COUNT ? TYPES[t].url : "";
}

const char *tr_type_name(tr_type t)
{
    return (unsigned)t < TR_TYPE_COUNT ? TYPES[t].name : "";
}

int tr_type_from_url(const char *type_url, tr_type *out)
{
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        if (type_url && strcmp(type_url, TYPES[t].url) == 0) {
            *out = (tr_type)t;
            return 0;
        }
    }
    return SX_ENOTFOUND;
}

static int cmp_resource(const void *a, const void *b)
{
    return strcmp(((const tr_resource *)a)->name, ((const tr_resource *)b)->name);
}

void tr_resource_items_free(tr_resource *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sx_free(items[i].name);
        sx_free(items[i].bytes);
    }
    sx_free(items);
}

int tr_resources_build(const ir_snapshot *ir, const char *group, long long version,
                       tr_resources **out, sx_err *err)
{
    *out = NULL;
    if (ir == NULL)
        return sx_err_set(err, SX_EINVAL, "no snapshot to translate");

    tr_ctx tr = {.ir = ir, .arena = sx_arena_create()};
    tr_index(&tr);
    tr_secrets(&tr);
    tr_routes(&tr);
    tr_listeners(&tr);
    tr_clusters(&tr);

    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        tr_out *o = &tr.out[t];
        if (o->count > 1)
            qsort(o->items, o->count, sizeof *o->items, cmp_resource);
        /* The translators keep names apart; this is the last line of defence, since
         * two resources of one name would make every client see only one of them. */
        for (size_t i = 1; i < o->count; i++)
            if (strcmp(o->items[i].name, o->items[i - 1].name) == 0)
                tr_error(&tr, TYPES[t].name, "two %ss are named \"%s\"", TYPES[t].what,
                         o->items[i].name);
    }

    int rc = 0;
    if (tr.errs.count > 0) {
        rc = sx_err_set(err, SX_EVALIDATION, "%s: %s", tr.errs.items[0].path,
                        tr.errs.items[0].message);
        if (tr.errs.count > 1) {
            char *all = sx_fielderrs_join(&tr.errs);
            if (tr.errs_unlisted)
                sx_err_detail(err, "The snapshot has %zu problems, the first %zu: %s.",
                              tr.errs.count + tr.errs_unlisted, tr.errs.count, all);
            else
                sx_err_detail(err, "The snapshot has %zu problems: %s.", tr.errs.count, all);
            sx_free(all);
        }
        for (int t = 0; t < TR_TYPE_COUNT; t++)
            tr_resource_items_free(tr.out[t].items, tr.out[t].count);
    } else {
        tr_resources *r = sx_calloc(1, sizeof *r);
        atomic_init(&r->refs, 1);
        r->group = sx_strdup(group ? group : "");
        r->version = version;
        snprintf(r->version_info, sizeof r->version_info, "%lld", version);
        for (int t = 0; t < TR_TYPE_COUNT; t++) {
            r->items[t] = tr.out[t].items;
            r->count[t] = tr.out[t].count;
        }
        *out = r;
    }
    sx_fielderrs_free(&tr.errs);
    sx_arena_destroy(tr.arena);
    return rc;
}

tr_resources *tr_resources_ref(tr_resources *r)
{
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void tr_resources_unref(tr_resources *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (int t = 0; t < TR_TYPE_COUNT; t++)
        tr_resource_items_free(r->items[t], r->count[t]);
    sx_free(r->group);
    sx_free(r);
}

const tr_resource *tr_resources_find(const tr_resources *r, tr_type t, const char *name)
{
    if (r == NULL || (unsigned)t >= TR_TYPE_COUNT || name == NULL)
        return NULL;
    size_t i = sx_sorted_first(r->items[t], r->count[t], sizeof *r->items[t],
                               offsetof(tr_resource, name), name);
    return i < r->count[t] && strcmp(r->items[t][i].name, name) == 0 ? &r->items[t][i] : NULL;
}

/*
 * compose.c — merges a proxy group's configs into one snapshot (see compose.h for
 * the merge order, which is part of the contract).
 *
 * Two forms of one merge: on JSON (the stored IR and its checksum) and on the decoded
 * messages (the encoded bytes), so that composing never decodes a spec again. The
 * decoded merge reproduces the JSON one exactly for plain specs and declines the rest:
 * a list key given null, or spelled in lowerCamelCase in one config and snake_case in
 * another, merges differently in JSON (null replaces, two spellings stay two keys).
 */
#include "server/snapshot/compose.h"

#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"

static int cmp_source(const void *a, const void *b)
{
    const snap_compose_input *x = *(const snap_compose_input *const *)a;
    const snap_compose_input *y = *(const snap_compose_input *const *)b;
    int c = strcmp(x->namespace, y->namespace);
    return c ? c : strcmp(x->name, y->name);
}

/* The sources in merge order; a new array the caller frees. */
static const snap_compose_input **merge_order(const snap_compose_input *sources, size_t n)
{
    const snap_compose_input **order = sx_calloc(n ? n : 1, sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] = &sources[i];
    qsort(order, n, sizeof(*order), cmp_source);
    return order;
}

/* Keys the composer sets itself, never taken from a config. */
static bool composer_key(const char *key)
{
    return strcmp(key, "id") == 0 || strcmp(key, "generated_at") == 0 ||
           strcmp(key, "generatedAt") == 0;
}

json_t *snap_compose_json(const snap_compose_input *sources, size_t n, const char *id,
                          const char *generated_at)
{
    const snap_compose_input **order = merge_order(sources, n);

    json_t *out = json_object();
    for (size_t i = 0; i < n; i++) {
        const json_t *spec = order[i]->spec;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)spec, key, val)
        {
            if (composer_key(key))
                continue;
            json_t *have = json_object_get(out, key);
            if (json_is_array(val)) {
                if (!json_is_array(have)) {
                    have = json_array();
                    json_object_set_new(out, key, have);
                }
                json_array_extend(have, val);
            } else if (json_is_object(val)) {
                if (!json_is_object(have)) {
                    have = json_object();
                    json_object_set_new(out, key, have);
                }
                json_object_update(have, val);
            } else {
                json_object_set(out, key, val);
            }
        }
    }
    sx_free(order);
    json_object_set_new(out, "id", json_string(id));
    if (generated_at)
        json_object_set_new(out, "generated_at", json_string(generated_at));
    return out;
}

/* Top-level keys of a ConfigSnapshot in the order snap_compose_ir reads them. */
enum { K_LISTENERS, K_HTTP, K_GRPC, K_STREAM, K_BACKENDS, K_SECRETS, K_LISTS };
static const char *const LIST_KEYS[K_LISTS] = {"listeners",     "http_routes", "grpc_routes",
                                               "stream_routes", "backends",    "secrets"};

/* Whether spec has the plain shape (see compose.h); *ext tells whether it has extensions. */
static bool plain_shape(const json_t *spec, bool *ext)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)spec, key, val)
    {
        if (composer_key(key))
            continue;
        if (strcmp(key, "extensions") == 0) {
            if (!json_is_object(val))
                return false;
            *ext = true;
            continue;
        }
        bool list = false;
        for (int k = 0; k < K_LISTS && !list; k++)
            list = strcmp(key, LIST_KEYS[k]) == 0;
        if (!list || !json_is_array(val))
            return false;
    }
    return true;
}

static const ir_snapshot *ordered_ir(const void *ctx, size_t i)
{
    const snap_compose_input *const *order = ctx;
    return order[i]->ir;
}

bool snap_compose_ir(const snap_compose_input *sources, size_t n, const char *id,
                     Google__Protobuf__Timestamp *generated_at, ir_snapshot *out)
{
    gateway__control__v1__config_snapshot__init(out);
    bool ext = false;
    for (size_t i = 0; i < n; i++)
        if (sources[i].ir == NULL || !json_is_object(sources[i].spec) ||
            !plain_shape(sources[i].spec, &ext))
            return false;
    const snap_compose_input **order = merge_order(sources, n);
    ir_snapshot_concat(out, n, ordered_ir, order);
    out->id = (char *)id;
    out->generated_at = generated_at;
    if (ext) {
        /* Key by key, a later config's value replacing an earlier one's in place, as
         * json_object_update does. */
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
            if (order[i]->ir->extensions)
                total += order[i]->ir->extensions->n_fields;
        Google__Protobuf__Struct *st = sx_malloc(sizeof(*st));
        google__protobuf__struct__init(st);
        st->fields = sx_calloc(total ? total : 1, sizeof(*st->fields));
        for (size_t i = 0; i < n; i++) {
            const Google__Protobuf__Struct *e = order[i]->ir->extensions;
            for (size_t j = 0; e && j < e->n_fields; j++) {
                size_t k = 0;
                while (k < st->n_fields && strcmp(st->fields[k]->key, e->fields[j]->key) != 0)
                    k++;
                st->fields[k] = e->fields[j];
                if (k == st->n_fields)
                    st->n_fields++;
            }
        }
        out->extensions = st;
    }
    sx_free(order);
    return true;
}

void snap_compose_ir_release(ir_snapshot *m)
{
    ir_snapshot_unconcat(m);
    if (m->extensions) {
        sx_free(m->extensions->fields);
        sx_free(m->extensions);
    }
    gateway__control__v1__config_snapshot__init(m);
}

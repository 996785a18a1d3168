/*
 * compose.c — merges a proxy group's configs into one snapshot (see compose.h for
 * the merge order, which is part of the contract).
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

json_t *snap_compose_json(const snap_compose_input *sources, size_t n, const char *id,
                          const char *generated_at)
{
    const snap_compose_input **order = sx_calloc(n ? n : 1, sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] = &sources[i];
    qsort(order, n, sizeof(*order), cmp_source);

    json_t *out = json_object();
    for (size_t i = 0; i < n; i++) {
        const json_t *spec = order[i]->spec;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)spec, key, val)
        {
            if (strcmp(key, "id") == 0 || strcmp(key, "generated_at") == 0 ||
                strcmp(key, "generatedAt") == 0)
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

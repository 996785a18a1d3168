/*
 * diff.c — structured JSON diff (see diff.h).
 *
 * A recursive walk over both documents that appends to three arrays. Paths are written
 * the way the proto3 JSON codec writes them (pbjson_path_*), built in one sx_buf that grows and
 * shrinks as the walk descends and returns, so no path string is allocated except the ones stored
 * in the result.
 */
#include "server/diff.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/ir/pbjson.h"

typedef struct diff_ctx {
    sx_buf path;
    json_t *added, *removed, *changed;
} diff_ctx;

static void walk(diff_ctx *d, const json_t *from, const json_t *to);

static bool is_identifier(const char *k)
{
    if (!((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z') || k[0] == '_'))
        return false;
    for (const char *p = k + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

/* A key as pbjson writes it in paths: ".key" when it is an identifier, else ["key"]. */
static void push_key(sx_buf *b, const char *key)
{
    if (is_identifier(key))
        pbjson_path_field(b, key);
    else
        pbjson_path_key(b, key);
}

static void add_entry(json_t *list, const sx_buf *path, const char *k1, const json_t *v1,
                      const char *k2, const json_t *v2)
{
    json_t *e = json_object();
    json_object_set_new(e, "path", json_string(sx_buf_cstr(path)));
    json_object_set_new(e, k1, json_deep_copy(v1));
    if (k2)
        json_object_set_new(e, k2, json_deep_copy(v2));
    json_array_append_new(list, e);
}

/* Whether every element is an object with a string "name", no name twice. */
static bool named_array(const json_t *arr)
{
    size_t n = json_array_size(arr);
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(arr, i), "name"));
        if (name == NULL)
            return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(name, json_string_value(json_object_get(json_array_get(arr, j), "name"))) ==
                0)
                return false;
    }
    return true;
}

static const json_t *find_named(const json_t *arr, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void walk_objects(diff_ctx *d, const json_t *from, const json_t *to)
{
    /* Keys of both, sorted, each once. */
    size_t n = json_object_size(from) + json_object_size(to), count = 0;
    const char **keys = malloc((n ? n : 1) * sizeof(*keys));
    if (keys == NULL)
        abort();
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)from, k, v)
    {
        keys[count++] = k;
    }
    json_object_foreach((json_t *)to, k, v)
    {
        if (json_object_get(from, k) == NULL)
            keys[count++] = k;
    }
    qsort(keys, count, sizeof(*keys), cmp_keys);
    size_t base = d->path.len;
    for (size_t i = 0; i < count; i++) {
        const json_t *a = json_object_get(from, keys[i]), *b = json_object_get(to, keys[i]);
        push_key(&d->path, keys[i]);
        if (a == NULL)
            add_entry(d->added, &d->path, "value", b, NULL, NULL);
        else if (b == NULL)
            add_entry(d->removed, &d->path, "value", a, NULL, NULL);
        else
            walk(d, a, b);
        pbjson_path_truncate(&d->path, base);
    }
    free(keys);
}

static void walk_named(diff_ctx *d, const json_t *from, const json_t *to)
{
    size_t base = d->path.len, i;
    const json_t *v;
    json_array_foreach(from, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (find_named(to, name) == NULL) {
            pbjson_path_key(&d->path, name);
            add_entry(d->removed, &d->path, "value", v, NULL, NULL);
            pbjson_path_truncate(&d->path, base);
        }
    }
    json_array_foreach(to, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        const json_t *old = find_named(from, name);
        pbjson_path_key(&d->path, name);
        if (old == NULL)
            add_entry(d->added, &d->path, "value", v, NULL, NULL);
        else
            walk(d, old, v);
        pbjson_path_truncate(&d->path, base);
    }
}

static void walk_indexed(diff_ctx *d, const json_t *from, const json_t *to)
{
    size_t base = d->path.len, nf = json_array_size(from), nt = json_array_size(to);
    size_t n = nf > nt ? nf : nt;
    for (size_t i = 0; i < n; i++) {
        pbjson_path_index(&d->path, i);
        if (i >= nf)
            add_entry(d->added, &d->path, "value", json_array_get(to, i), NULL, NULL);
        else if (i >= nt)
            add_entry(d->removed, &d->path, "value", json_array_get(from, i), NULL, NULL);
        else
            walk(d, json_array_get(from, i), json_array_get(to, i));
        pbjson_path_truncate(&d->path, base);
    }
}

static void walk(diff_ctx *d, const json_t *from, const json_t *to)
{
    if (json_is_object(from) && json_is_object(to)) {
        walk_objects(d, from, to);
    } else if (json_is_array(from) && json_is_array(to)) {
        /* An empty array counts as named, so adding the first listener says its name. */
        if ((json_array_size(from) || json_array_size(to)) && named_array(from) && named_array(to))
            walk_named(d, from, to);
        else
            walk_indexed(d, from, to);
    } else if (!json_equal((json_t *)from, (json_t *)to)) {
        add_entry(d->changed, &d->path, "old", from, "new", to);
    }
}

json_t *diff_json(const json_t *from, const json_t *to, const char *root)
{
    diff_ctx d = {.added = json_array(), .removed = json_array(), .changed = json_array()};
    if (root && root[0])
        sx_buf_puts(&d.path, root);
    walk(&d, from, to);
    sx_buf_free(&d.path);
    return json_pack("{s:o,s:o,s:o}", "added", d.added, "removed", d.removed, "changed", d.changed);
}

size_t diff_count(const json_t *diff)
{
    return json_array_size(json_object_get(diff, "added")) +
           json_array_size(json_object_get(diff, "removed")) +
           json_array_size(json_object_get(diff, "changed"));
}

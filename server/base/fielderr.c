/*
 * fielderr.c — list of path-precise validation errors.
 */
#include "server/base/fielderr.h"

#include <stdarg.h>
#include <stdio.h>

#include "server/base/buf.h"
#include "server/base/mem.h"

void sx_fielderrs_add(sx_fielderrs *l, const char *path, const char *fmt, ...)
{
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->items = sx_realloc(l->items, l->cap * sizeof(sx_fielderr));
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->items[l->count].path = sx_strdup(path ? path : "");
    l->items[l->count].message = sx_strdup(msg);
    l->count++;
}

json_t *sx_fielderrs_to_json(const sx_fielderrs *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->count; i++)
        json_array_append_new(
            a, json_pack("{s:s,s:s}", "path", l->items[i].path, "message", l->items[i].message));
    return a;
}

char *sx_fielderrs_join(const sx_fielderrs *l)
{
    sx_buf b = {0};
    for (size_t i = 0; i < l->count; i++) {
        if (i)
            sx_buf_puts(&b, "; ");
        if (l->items[i].path[0])
            sx_buf_printf(&b, "%s: ", l->items[i].path);
        sx_buf_puts(&b, l->items[i].message);
    }
    return sx_buf_steal(&b);
}

void sx_fielderrs_free(sx_fielderrs *l)
{
    for (size_t i = 0; i < l->count; i++) {
        sx_free(l->items[i].path);
        sx_free(l->items[i].message);
    }
    sx_free(l->items);
    l->items = NULL;
    l->count = l->cap = 0;
}

/*
 * strv.c — small sets of strings as arrays (see strv.h). Linear: the sets are a
 * config's groups, a handful.
 */
#include "server/base/strv.h"

#include <stdlib.h>
#include <string.h>

bool sx_strv_has(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

bool sx_strv_same_set(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    for (size_t i = 0; i < na; i++)
        if (!sx_strv_has(b, nb, a[i]))
            return false;
    for (size_t i = 0; i < nb; i++)
        if (!sx_strv_has(a, na, b[i]))
            return false;
    return true;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

size_t sx_strv_union(sx_arena *arena, const char *const *a, size_t na, const char *const *b,
                     size_t nb, const char ***out)
{
    const char **v = sx_arena_alloc(arena, (na + nb ? na + nb : 1) * sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < na; i++)
        if (!sx_strv_has(v, n, a[i]))
            v[n++] = a[i];
    for (size_t i = 0; i < nb; i++)
        if (!sx_strv_has(v, n, b[i]))
            v[n++] = b[i];
    qsort(v, n, sizeof(*v), cmp_str);
    *out = v;
    return n;
}

/*
 * subs.c — one stream's subscription to one xDS resource type (see subs.h).
 *
 * Names are kept in a sorted array: a stream names a handful to a few thousand
 * resources, lookups are binary searches, and a state-of-the-world request replaces
 * the whole array at once, so a hash table would buy nothing but memory per stream.
 * With a pool the array holds interned pointers, so a stream's subscription costs a
 * pointer per name; a changed state-of-the-world list interns the new names before it
 * releases the old ones, so names kept across the change are never freed and
 * re-created.
 */
#include "server/xds/subs.h"

#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/base/sorted.h"

static bool is_star(const char *name)
{
    return name[0] == '*' && name[1] == '\0';
}

static const char *name_copy(xds_subs *s, const char *name)
{
    return s->pool ? xds_names_intern(s->pool, name) : sx_strdup(name);
}

static void names_drop(xds_subs *s, const char **names, size_t n)
{
    if (s->pool) {
        xds_names_release_many(s->pool, names, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        sx_free((void *)names[i]);
}

/* Index of name, or of where it would go (*found false). */
static size_t search(const xds_subs *s, const char *name, bool *found)
{
    size_t i = sx_sorted_first(s->names, s->count, sizeof *s->names, 0, name);
    *found = i < s->count && strcmp(s->names[i], name) == 0;
    return i;
}

void xds_subs_clear(xds_subs *s)
{
    names_drop(s, s->names, s->count);
    sx_free(s->names);
    *s = (xds_subs){.pool = s->pool};
}

bool xds_subs_has(const xds_subs *s, const char *name)
{
    bool found;
    (void)search(s, name, &found);
    return found;
}

bool xds_subs_wants(const xds_subs *s, const char *name)
{
    return s->wildcard || xds_subs_has(s, name);
}

bool xds_subs_add(xds_subs *s, const char *name)
{
    if (is_star(name)) {
        bool changed = !s->wildcard;
        s->wildcard = true;
        return changed;
    }
    bool found;
    size_t at = search(s, name, &found);
    if (found)
        return false;
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4;
        s->names = sx_realloc(s->names, s->cap * sizeof(*s->names));
    }
    memmove(s->names + at + 1, s->names + at, (s->count - at) * sizeof(*s->names));
    s->names[at] = name_copy(s, name);
    s->count++;
    return true;
}

bool xds_subs_remove(xds_subs *s, const char *name)
{
    if (is_star(name)) {
        bool changed = s->wildcard;
        s->wildcard = false;
        return changed;
    }
    bool found;
    size_t at = search(s, name, &found);
    if (!found)
        return false;
    names_drop(s, &s->names[at], 1);
    memmove(s->names + at, s->names + at + 1, (s->count - at - 1) * sizeof(*s->names));
    s->count--;
    return true;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool xds_subs_set_sotw(xds_subs *s, bool legacy_wildcard, char *const *names, size_t n)
{
    bool first = !s->requested;
    s->requested = true;

    /* Every ACK repeats the list: when it is the current names in the same order (a
     * client that keeps them sorted), nothing changes and nothing needs sorting. */
    if (n > 0 && n == s->count && !s->wildcard) {
        size_t i = 0;
        while (i < n && strcmp(names[i], s->names[i]) == 0)
            i++;
        if (i == n) {
            s->explicit_ever = true;
            return first;
        }
    }

    bool wildcard = false;
    const char **sorted = n ? sx_malloc(n * sizeof(*sorted)) : NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_star(names[i]))
            wildcard = true;
        else
            sorted[m++] = names[i];
    }
    if (n == 0)
        wildcard = legacy_wildcard && !s->explicit_ever;
    else
        s->explicit_ever = true;
    if (m > 1)
        qsort(sorted, m, sizeof(*sorted), cmp_names);

    /* Compare with the current names, skipping duplicates in the request. */
    size_t uniq = 0;
    bool same = wildcard == s->wildcard;
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
            continue;
        if (same && (uniq >= s->count || strcmp(s->names[uniq], sorted[i]) != 0))
            same = false;
        uniq++;
    }
    if (uniq != s->count)
        same = false;

    if (!same) {
        /* Keep one of each name, then copy or intern them before dropping the old. */
        size_t k = 0;
        for (size_t i = 0; i < m; i++)
            if (k == 0 || strcmp(sorted[i], sorted[k - 1]) != 0)
                sorted[k++] = sorted[i];
        if (s->pool) {
            xds_names_intern_many(s->pool, sorted, k, sorted);
        } else {
            for (size_t i = 0; i < k; i++)
                sorted[i] = sx_strdup(sorted[i]);
        }
        names_drop(s, s->names, s->count);
        if (uniq > s->cap) {
            s->cap = uniq;
            s->names = sx_realloc(s->names, s->cap * sizeof(*s->names));
        }
        if (k > 0)
            memcpy(s->names, sorted, k * sizeof(*sorted));
        s->count = k;
        s->wildcard = wildcard;
    }
    sx_free(sorted);
    return first || !same;
}

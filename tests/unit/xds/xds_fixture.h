/*
 * xds_fixture.h — hand-made tr_resources for the protocol tests, so that the
 * subscription, nonce and ACK logic is tested without the translators.
 *
 * fx_res(version, spec) builds a set from a spec such as
 *   "cds:a=1,b=1;eds:a=1,b=2;lds:l=1;rds:r=1;sds:s=1"
 * naming, per type, resources and a content tag: equal tags give equal bytes and so
 * equal per-resource versions; changing a tag changes the resource. The set is freed
 * by tr_resources_unref like a built one.
 */
#ifndef SX_TESTS_XDS_FIXTURE_H
#define SX_TESTS_XDS_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/hash.h"
#include "server/base/mem.h"
#include "server/translate/resources.h"

static inline int fx_cmp(const void *a, const void *b)
{
    return strcmp(((const tr_resource *)a)->name, ((const tr_resource *)b)->name);
}

/* Ends s at its first sep and returns what follows it, or NULL when s has none. */
static inline char *fx_cut(char *s, char sep)
{
    char *at = strchr(s, sep);
    if (at)
        *at++ = '\0';
    return at;
}

static inline tr_resources *fx_res(long long version, const char *spec)
{
    static const char *const types[TR_TYPE_COUNT] = {"sds", "cds", "eds", "lds", "rds"};
    tr_resources *r = sx_calloc(1, sizeof(*r));
    atomic_init(&r->refs, 1);
    r->group = sx_strdup("g");
    r->version = version;
    snprintf(r->version_info, sizeof(r->version_info), "%lld", version);
    char *copy = sx_strdup(spec);
    char *part = copy;
    while (part && *part) {
        char *next_part = fx_cut(part, ';');
        char *item = fx_cut(part, ':');
        if (item == NULL)
            abort();
        int t = -1;
        for (int i = 0; i < TR_TYPE_COUNT; i++)
            if (strcmp(part, types[i]) == 0)
                t = i;
        if (t < 0)
            abort();
        while (item && *item) {
            char *next_item = fx_cut(item, ',');
            char *tag = fx_cut(item, '=');
            if (tag == NULL)
                abort();
            r->items[t] = sx_realloc(r->items[t], (r->count[t] + 1) * sizeof(tr_resource));
            tr_resource *x = &r->items[t][r->count[t]++];
            memset(x, 0, sizeof(*x));
            x->name = sx_strdup(item);
            char *bytes = sx_asprintf("%s/%s", item, tag);
            x->bytes = (uint8_t *)bytes;
            x->len = strlen(bytes);
            char hex[SX_SHA256_HEX_LEN + 1];
            sx_sha256_hex(x->bytes, x->len, hex);
            memcpy(x->version, hex, 16);
            x->version[16] = '\0';
            item = next_item;
        }
        qsort(r->items[t], r->count[t], sizeof(tr_resource), fx_cmp);
        part = next_part;
    }
    sx_free(copy);
    return r;
}

/* The version a resource has in r (for Delta expectations). */
static inline const char *fx_version(const tr_resources *r, tr_type t, const char *name)
{
    const tr_resource *x = tr_resources_find(r, t, name);
    return x ? x->version : "";
}

#endif

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
        char *next_part = strchr(part, ';');
        if (next_part)
            *next_part++ = '\0';
        char *colon = strchr(part, ':');
        if (colon == NULL)
            abort();
        *colon = '\0';
        int t = -1;
        for (int i = 0; i < TR_TYPE_COUNT; i++)
            if (strcmp(part, types[i]) == 0)
                t = i;
        if (t < 0)
            abort();
        char *item = colon + 1;
        while (item && *item) {
            char *next_item = strchr(item, ',');
            if (next_item)
                *next_item++ = '\0';
            char *eq = strchr(item, '=');
            if (eq == NULL)
                abort();
            *eq = '\0';
            r->items[t] = sx_realloc(r->items[t], (r->count[t] + 1) * sizeof(tr_resource));
            tr_resource *x = &r->items[t][r->count[t]++];
            memset(x, 0, sizeof(*x));
            x->name = sx_strdup(item);
            char *bytes = sx_asprintf("%s/%s", item, eq + 1);
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

/*
 * names.c — the server's table of interned resource names (see names.h).
 *
 * A chained hash table of entries that carry their text inline, so a name costs one
 * allocation shared by every stream that subscribes to it, and the entry of an
 * interned pointer is found without a lookup (it sits just before the text). The
 * table doubles when it holds more entries than buckets and never shrinks: resource
 * names number in the thousands per server, not per stream.
 */
#include "server/xds/names.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "server/base/mem.h"
#include "server/base/locked.h"

typedef struct entry {
    struct entry *next;
    uint32_t hash;
    uint32_t refs;
    char text[]; /* NUL-terminated */
} entry;

struct xds_names {
    pthread_mutex_t mu;
    entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
};

/* FNV-1a: names are short, and this only spreads them over the buckets. */
static uint32_t hash_of(const char *s, size_t *len)
{
    uint32_t h = 2166136261u;
    const unsigned char *p = (const unsigned char *)s;
    for (; *p; p++)
        h = (h ^ *p) * 16777619u;
    *len = (size_t)(p - (const unsigned char *)s);
    return h;
}

static entry *entry_of(const char *text)
{
    return (entry *)(void *)(text - offsetof(entry, text));
}

xds_names *xds_names_create(void)
{
    xds_names *t = sx_calloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    t->nbuckets = 256;
    t->buckets = sx_calloc(t->nbuckets, sizeof(*t->buckets));
    return t;
}

void xds_names_destroy(xds_names *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        entry *e = t->buckets[i];
        while (e) {
            entry *next = e->next;
            sx_free(e);
            e = next;
        }
    }
    sx_free(t->buckets);
    pthread_mutex_destroy(&t->mu);
    sx_free(t);
}

static void grow_locked(xds_names *t)
{
    size_t n = t->nbuckets * 2;
    entry **b = sx_calloc(n, sizeof(*b));
    for (size_t i = 0; i < t->nbuckets; i++) {
        entry *e = t->buckets[i];
        while (e) {
            entry *next = e->next;
            size_t k = e->hash & (n - 1);
            e->next = b[k];
            b[k] = e;
            e = next;
        }
    }
    sx_free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

static const char *intern_locked(xds_names *t, const char *name)
{
    size_t len;
    uint32_t h = hash_of(name, &len);
    entry **slot = &t->buckets[h & (t->nbuckets - 1)];
    for (entry *e = *slot; e; e = e->next) {
        if (e->hash == h && memcmp(e->text, name, len + 1) == 0) {
            e->refs++;
            return e->text;
        }
    }
    entry *e = sx_malloc(sizeof(*e) + len + 1);
    e->hash = h;
    e->refs = 1;
    memcpy(e->text, name, len + 1);
    e->next = *slot;
    *slot = e;
    if (++t->count > t->nbuckets)
        grow_locked(t);
    return e->text;
}

static void release_locked(xds_names *t, const char *name)
{
    entry *e = entry_of(name);
    if (--e->refs > 0)
        return;
    entry **p = &t->buckets[e->hash & (t->nbuckets - 1)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    t->count--;
    sx_free(e);
}

const char *xds_names_intern(xds_names *t, const char *name)
{
    pthread_mutex_lock(&t->mu);
    const char *r = intern_locked(t, name);
    pthread_mutex_unlock(&t->mu);
    return r;
}

void xds_names_intern_many(xds_names *t, const char *const *in, size_t n, const char **out)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < n; i++)
        out[i] = intern_locked(t, in[i]);
    pthread_mutex_unlock(&t->mu);
}

void xds_names_release(xds_names *t, const char *name)
{
    if (name == NULL)
        return;
    pthread_mutex_lock(&t->mu);
    release_locked(t, name);
    pthread_mutex_unlock(&t->mu);
}

void xds_names_release_many(xds_names *t, const char *const *names, size_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < n; i++)
        if (names[i])
            release_locked(t, names[i]);
    pthread_mutex_unlock(&t->mu);
}

size_t xds_names_count(xds_names *t)
{
    return sx_locked_size(&t->mu, &t->count);
}

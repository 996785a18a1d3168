/*
 * pins.c — the replica's pin table (see pins.h).
 */
#include "server/xds/pins.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/mem.h"

typedef struct pin {
    char *node_id;
    char *group;
    long long version;
} pin;

struct xds_pins {
    pthread_rwlock_t lock;
    pin *v; /* sorted by node_id (strcmp) */
    size_t n;
};

xds_pins *xds_pins_create(void)
{
    xds_pins *p = sx_calloc(1, sizeof(*p));
    pthread_rwlock_init(&p->lock, NULL);
    return p;
}

static void free_pins(pin *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sx_free(v[i].node_id);
        sx_free(v[i].group);
    }
    sx_free(v);
}

void xds_pins_destroy(xds_pins *p)
{
    if (p == NULL)
        return;
    free_pins(p->v, p->n);
    pthread_rwlock_destroy(&p->lock);
    sx_free(p);
}

static int cmp_pin(const void *a, const void *b)
{
    return strcmp(((const pin *)a)->node_id, ((const pin *)b)->node_id);
}

void xds_pins_free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sx_free(ids[i]);
    sx_free(ids);
}

size_t xds_pins_replace(xds_pins *p, const pin_record *in, size_t n, char ***changed)
{
    pin *v = n ? sx_calloc(n, sizeof(*v)) : NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i].node_id == NULL || in[i].group == NULL || in[i].version <= 0)
            continue;
        v[m++] = (pin){sx_strdup(in[i].node_id), sx_strdup(in[i].group), in[i].version};
    }
    if (m > 1)
        qsort(v, m, sizeof(*v), cmp_pin);

    pthread_rwlock_wrlock(&p->lock);
    pin *old = p->v;
    size_t nold = p->n;
    p->v = v;
    p->n = m;
    pthread_rwlock_unlock(&p->lock);

    /* Merge the two sorted tables: every node in only one, or in both but different. */
    char **ids = NULL;
    size_t count = 0, cap = 0, i = 0, j = 0;
    while (i < nold || j < m) {
        const char *id = NULL;
        int c = i >= nold ? 1 : j >= m ? -1 : strcmp(old[i].node_id, v[j].node_id);
        if (c < 0)
            id = old[i++].node_id;
        else if (c > 0)
            id = v[j++].node_id;
        else {
            if (old[i].version != v[j].version || strcmp(old[i].group, v[j].group) != 0)
                id = v[j].node_id;
            i++;
            j++;
        }
        if (id == NULL)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            ids = sx_realloc(ids, cap * sizeof(*ids));
        }
        ids[count++] = sx_strdup(id);
    }
    free_pins(old, nold);
    *changed = ids;
    return count;
}

long long xds_pins_get(xds_pins *p, const char *node_id, const char *group)
{
    if (node_id == NULL || group == NULL)
        return 0;
    long long version = 0;
    pthread_rwlock_rdlock(&p->lock);
    pin key = {(char *)node_id, NULL, 0};
    const pin *hit = p->n ? bsearch(&key, p->v, p->n, sizeof(*p->v), cmp_pin) : NULL;
    if (hit && strcmp(hit->group, group) == 0)
        version = hit->version;
    pthread_rwlock_unlock(&p->lock);
    return version;
}

bool xds_pins_uses(xds_pins *p, const char *group, long long version)
{
    bool used = false;
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n && !used; i++)
        used = p->v[i].version == version && strcmp(p->v[i].group, group) == 0;
    pthread_rwlock_unlock(&p->lock);
    return used;
}

size_t xds_pins_count(xds_pins *p)
{
    pthread_rwlock_rdlock(&p->lock);
    size_t n = p->n;
    pthread_rwlock_unlock(&p->lock);
    return n;
}

/*
 * streams.c — active xDS streams by node id and by group (see streams.h).
 *
 * Two chained hash tables under one mutex: node id → link (links are intrusive, so
 * registering allocates nothing), and group → slot holding a doubly linked list of
 * that group's links. Registration happens once per stream and fan-out once per
 * snapshot, so one lock is plenty; the expensive part of a fan-out (writing to the
 * streams) happens outside it, on the list the caller receives.
 */
#include "server/xds/streams.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "server/base/mem.h"
#include "server/base/locked.h"

struct xds_group_slot {
    char *name;
    sx_list members; /* its streams (xds_stream_link.group_link) */
    size_t count;
    xds_group_slot *next; /* bucket chain */
};

struct xds_streams {
    pthread_mutex_t mu;
    xds_streams_ops ops;
    xds_metrics *metrics;
    xds_stream_link **nodes; /* buckets */
    size_t nbuckets;         /* power of two */
    size_t count;
    xds_group_slot **groups; /* buckets */
    size_t ngroup_buckets;   /* power of two */
    size_t per_protocol[XDS_PROTO_COUNT];
    long long last_gen; /* generation of the last stream added */
};

static const char *const protocol_names[XDS_PROTO_COUNT] = {"ads-sotw", "ads-delta", "control-v1"};
static const char *const term_names[XDS_TERM_COUNT] = {
    "shutdown",   "client_disconnect", "stream_error",      "send_timeout", "ack_timeout",
    "superseded", "invalid_request",   "permission_denied", "other",
};

const char *xds_protocol_name(xds_protocol p)
{
    return p < XDS_PROTO_COUNT ? protocol_names[p] : "unknown";
}

const char *xds_term_name(xds_term r)
{
    return r < XDS_TERM_COUNT ? term_names[r] : "other";
}

/* FNV-1a. */
static uint64_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

xds_streams *xds_streams_create(const xds_streams_ops *ops, xds_metrics *metrics)
{
    xds_streams *r = sx_calloc(1, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    r->ops = *ops;
    r->metrics = metrics;
    r->nbuckets = 64;
    r->nodes = sx_calloc(r->nbuckets, sizeof(*r->nodes));
    r->ngroup_buckets = 64;
    r->groups = sx_calloc(r->ngroup_buckets, sizeof(*r->groups));
    if (metrics)
        for (int p = 0; p < XDS_PROTO_COUNT; p++)
            xds_metrics_set(metrics->streams, protocol_names[p], 0);
    return r;
}

void xds_streams_destroy(xds_streams *r)
{
    if (r == NULL)
        return;
    for (size_t b = 0; b < r->ngroup_buckets; b++) {
        xds_group_slot *g = r->groups[b];
        while (g) {
            xds_group_slot *next = g->next;
            sx_free(g->name);
            sx_free(g);
            g = next;
        }
    }
    sx_free(r->groups);
    sx_free(r->nodes);
    pthread_mutex_destroy(&r->mu);
    sx_free(r);
}

static void grow_nodes_locked(xds_streams *r)
{
    size_t n = r->nbuckets * 2;
    xds_stream_link **b = sx_calloc(n, sizeof(*b));
    for (size_t i = 0; i < r->nbuckets; i++) {
        xds_stream_link *l = r->nodes[i];
        while (l) {
            xds_stream_link *next = l->node_next;
            size_t at = hash_str(l->node_id) & (n - 1);
            l->node_next = b[at];
            b[at] = l;
            l = next;
        }
    }
    sx_free(r->nodes);
    r->nodes = b;
    r->nbuckets = n;
}

static xds_stream_link **node_slot_locked(xds_streams *r, const char *node_id)
{
    xds_stream_link **p = &r->nodes[hash_str(node_id) & (r->nbuckets - 1)];
    while (*p && strcmp((*p)->node_id, node_id) != 0)
        p = &(*p)->node_next;
    return p;
}

static xds_group_slot *group_find_locked(xds_streams *r, const char *group, bool create)
{
    size_t at = hash_str(group) & (r->ngroup_buckets - 1);
    for (xds_group_slot *g = r->groups[at]; g; g = g->next)
        if (strcmp(g->name, group) == 0)
            return g;
    if (!create)
        return NULL;
    xds_group_slot *g = sx_calloc(1, sizeof(*g));
    g->name = sx_strdup(group);
    g->next = r->groups[at];
    r->groups[at] = g;
    return g;
}

static void group_drop_locked(xds_streams *r, xds_group_slot *g)
{
    xds_group_slot **p = &r->groups[hash_str(g->name) & (r->ngroup_buckets - 1)];
    while (*p != g)
        p = &(*p)->next;
    *p = g->next;
    sx_free(g->name);
    sx_free(g);
}

static void update_gauge_locked(xds_streams *r, xds_protocol p)
{
    if (r->metrics)
        xds_metrics_set(r->metrics->streams, protocol_names[p], (double)r->per_protocol[p]);
}

/* Unlinks l from both tables; l must be registered. */
static void unlink_locked(xds_streams *r, xds_stream_link *l)
{
    xds_stream_link **p = node_slot_locked(r, l->node_id);
    if (*p == l)
        *p = l->node_next;
    xds_group_slot *g = l->slot;
    sx_list_remove(&g->members, &l->group_link);
    if (--g->count == 0)
        group_drop_locked(r, g);
    l->node_next = NULL;
    l->slot = NULL;
    l->registered = false;
    r->count--;
    r->per_protocol[l->protocol]--;
    update_gauge_locked(r, l->protocol);
}

void *xds_streams_add(xds_streams *r, xds_stream_link *l)
{
    bool full = false, conflict = false;
    return xds_streams_add_capped(r, l, 0, &full, &conflict);
}

/* Two identities are the same when both are absent or equal. */
static bool same_identity(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

void *xds_streams_add_capped(xds_streams *r, xds_stream_link *l, size_t cap, bool *full,
                             bool *conflict)
{
    void *superseded = NULL;
    *full = false;
    *conflict = false;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long now_us = (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
    pthread_mutex_lock(&r->mu);
    xds_stream_link **p = node_slot_locked(r, l->node_id);
    if (*p != NULL && !same_identity((*p)->identity, l->identity)) {
        pthread_mutex_unlock(&r->mu);
        *conflict = true;
        return NULL;
    }
    if (*p == NULL && cap > 0 && r->count >= cap) {
        pthread_mutex_unlock(&r->mu);
        *full = true;
        return NULL;
    }
    l->gen = now_us > r->last_gen ? now_us : r->last_gen + 1;
    r->last_gen = l->gen;
    if (*p != NULL) {
        xds_stream_link *old = *p;
        r->ops.ref(old->owner);
        superseded = old->owner;
        unlink_locked(r, old);
    }
    if (r->count + 1 > r->nbuckets)
        grow_nodes_locked(r);
    p = node_slot_locked(r, l->node_id);
    l->node_next = NULL;
    *p = l;
    xds_group_slot *g = group_find_locked(r, l->group, true);
    l->slot = g;
    sx_list_push_front(&g->members, &l->group_link);
    g->count++;
    l->registered = true;
    r->count++;
    r->per_protocol[l->protocol]++;
    update_gauge_locked(r, l->protocol);
    pthread_mutex_unlock(&r->mu);
    return superseded;
}

bool xds_streams_remove(xds_streams *r, xds_stream_link *l)
{
    pthread_mutex_lock(&r->mu);
    bool was = l->registered;
    if (was)
        unlink_locked(r, l);
    pthread_mutex_unlock(&r->mu);
    return was;
}

size_t xds_streams_list(xds_streams *r, const char *group, void ***out)
{
    *out = NULL;
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    if (group) {
        xds_group_slot *g = group_find_locked(r, group, false);
        if (g && g->count) {
            *out = sx_malloc(g->count * sizeof(void *));
            for (sx_link *k = g->members.head; k; k = k->next) {
                xds_stream_link *l = SX_CONTAINER(k, xds_stream_link, group_link);
                r->ops.ref(l->owner);
                (*out)[n++] = l->owner;
            }
        }
    } else if (r->count) {
        *out = sx_malloc(r->count * sizeof(void *));
        for (size_t b = 0; b < r->nbuckets; b++)
            for (xds_stream_link *l = r->nodes[b]; l; l = l->node_next) {
                r->ops.ref(l->owner);
                (*out)[n++] = l->owner;
            }
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

bool xds_streams_has_node(xds_streams *r, const char *node_id)
{
    pthread_mutex_lock(&r->mu);
    bool has = *node_slot_locked(r, node_id) != NULL;
    pthread_mutex_unlock(&r->mu);
    return has;
}

void *xds_streams_find(xds_streams *r, const char *node_id)
{
    pthread_mutex_lock(&r->mu);
    xds_stream_link *l = *node_slot_locked(r, node_id);
    void *owner = l ? l->owner : NULL;
    if (owner)
        r->ops.ref(owner);
    pthread_mutex_unlock(&r->mu);
    return owner;
}

size_t xds_streams_count(xds_streams *r)
{
    return sx_locked_size(&r->mu, &r->count);
}

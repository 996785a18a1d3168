/*
 * watchmap.c — watchable maps of Kubernetes objects (see watchmap.h).
 *
 * Design: a map is a jansson object (key → value) guarded by its table's one mutex; a
 * condition variable on the monotonic clock wakes every waiter of the table on each
 * change. Coalescing is per subscription: a change records key → newest value (or JSON
 * null for a deletion) in the subscription's pending object, which the next read takes
 * whole, so a subscription holds at most one entry per key however far behind it is.
 *
 * A state is built lazily by the first load after a change and cached in the map until
 * the next change, so any number of loads and subscribers between two changes share one
 * sorted array. States are reference-counted with atomics and copy the kind, so they may
 * outlive the table.
 */
#include "server/k8s/watchmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/clock.h"
#include "server/base/mem.h"
#include "server/base/locked.h"
#include "server/base/sorted.h"

/* A state and what it owns; pub is what callers see. */
typedef struct state_impl {
    wm_state pub;
    atomic_int refs;
    char *kind;
    char **keys;
    json_t **values;
} state_impl;

/* A snapshot and the pending object whose keys and values its updates borrow. */
typedef struct snapshot_impl {
    wm_snapshot pub;
    json_t *pending;
} snapshot_impl;

struct wm_sub {
    wm_map *m;       /* borrowed; the map outlives its subscriptions */
    wm_sub *next;    /* the map's list of subscriptions */
    json_t *pending; /* key → newest value, or JSON null when deleted, since the last read */
    bool read_once;  /* the first read has happened (it returns at once) */
    bool cancelled;  /* wm_sub_cancel was called */
};

struct wm_map {
    wm_table *t;
    char *kind;
    json_t *items;       /* key → value; values are immutable once stored */
    uint64_t generation; /* number of changes */
    state_impl *cached;  /* the state at generation, or NULL until a load builds it */
    wm_sub *subs;        /* open subscriptions */
};

struct wm_table {
    pthread_mutex_t mu; /* guards every field of the table, its maps and subscriptions */
    pthread_cond_t cv;  /* broadcast on every change, cancel and wake */
    uint64_t generation;
    uint64_t wakes; /* wm_table_wake calls */
    wm_map **maps;
    size_t nmaps;
};

/* ---------------------------------------------------------------- states */

typedef struct pair {
    const char *key;
    json_t *value;
} pair;

static int pair_cmp(const void *a, const void *b)
{
    return strcmp(((const pair *)a)->key, ((const pair *)b)->key);
}

/* Builds the state of m; the caller holds the lock. One reference, the caller's. */
static state_impl *state_build(wm_map *m)
{
    state_impl *s = sx_calloc(1, sizeof(*s));
    size_t n = json_object_size(m->items);
    pair *pairs = sx_calloc(n ? n : 1, sizeof(*pairs));
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(m->items, k, v)
    {
        pairs[i].key = k;
        pairs[i].value = v;
        i++;
    }
    qsort(pairs, n, sizeof(*pairs), pair_cmp);
    s->kind = sx_strdup(m->kind);
    s->keys = sx_calloc(n ? n : 1, sizeof(char *));
    s->values = sx_calloc(n ? n : 1, sizeof(json_t *));
    for (i = 0; i < n; i++) {
        s->keys[i] = sx_strdup(pairs[i].key);
        s->values[i] = json_incref(pairs[i].value);
    }
    sx_free(pairs);
    atomic_init(&s->refs, 1);
    s->pub.kind = s->kind;
    s->pub.generation = m->generation;
    s->pub.n = n;
    s->pub.keys = (const char *const *)s->keys;
    s->pub.values = (json_t *const *)s->values;
    return s;
}

wm_state *wm_state_retain(wm_state *s)
{
    state_impl *si = (state_impl *)s;
    atomic_fetch_add_explicit(&si->refs, 1, memory_order_relaxed);
    return s;
}

void wm_state_release(wm_state *s)
{
    if (s == NULL)
        return;
    state_impl *si = (state_impl *)s;
    if (atomic_fetch_sub_explicit(&si->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < s->n; i++) {
        sx_free(si->keys[i]);
        json_decref(si->values[i]);
    }
    sx_free(si->keys);
    sx_free(si->values);
    sx_free(si->kind);
    sx_free(si);
}

long wm_state_find(const wm_state *s, const char *key)
{
    size_t i = sx_sorted_first(s->keys, s->n, sizeof *s->keys, 0, key);
    return i < s->n && strcmp(s->keys[i], key) == 0 ? (long)i : -1;
}

/* The cached state of m with a new reference; the caller holds the lock. */
static wm_state *load_locked(wm_map *m)
{
    if (m->cached == NULL)
        m->cached = state_build(m);
    return wm_state_retain(&m->cached->pub);
}

/* ---------------------------------------------------------------- tables and maps */

wm_table *wm_table_create(void)
{
    wm_table *t = sx_calloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    sx_cond_init_monotonic(&t->cv);
    return t;
}

void wm_table_destroy(wm_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nmaps; i++) {
        wm_map *m = t->maps[i];
        json_decref(m->items);
        wm_state_release(m->cached ? &m->cached->pub : NULL);
        sx_free(m->kind);
        sx_free(m);
    }
    sx_free(t->maps);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    sx_free(t);
}

static wm_map *find_locked(wm_table *t, const char *kind)
{
    for (size_t i = 0; i < t->nmaps; i++)
        if (strcmp(t->maps[i]->kind, kind) == 0)
            return t->maps[i];
    return NULL;
}

wm_map *wm_table_add(wm_table *t, const char *kind)
{
    pthread_mutex_lock(&t->mu);
    wm_map *m = find_locked(t, kind);
    if (m == NULL) {
        m = sx_calloc(1, sizeof(*m));
        m->t = t;
        m->kind = sx_strdup(kind);
        m->items = json_object();
        t->maps = sx_realloc(t->maps, (t->nmaps + 1) * sizeof(*t->maps));
        t->maps[t->nmaps++] = m;
    }
    pthread_mutex_unlock(&t->mu);
    return m;
}

wm_map *wm_table_find(wm_table *t, const char *kind)
{
    pthread_mutex_lock(&t->mu);
    wm_map *m = find_locked(t, kind);
    pthread_mutex_unlock(&t->mu);
    return m;
}

const char *wm_map_kind(const wm_map *m)
{
    return m->kind;
}

/* ---------------------------------------------------------------- writing */

static void strip_managed_fields(json_t *value)
{
    json_t *md = json_object_get(value, "metadata");
    if (json_is_object(md))
        json_object_del(md, "managedFields");
}

/* Tells every subscription of m that key now holds value (NULL: deleted); the caller
 * holds the lock. */
static void note_change(wm_map *m, const char *key, json_t *value)
{
    for (wm_sub *s = m->subs; s; s = s->next)
        json_object_set(s->pending, key, value ? value : json_null());
}

/* Ends a batch of changes to m: new generation, no cached state, waiters woken. The
 * caller holds the lock. */
static void publish_locked(wm_map *m)
{
    m->generation++;
    m->t->generation++;
    if (m->cached) {
        wm_state_release(&m->cached->pub);
        m->cached = NULL;
    }
    pthread_cond_broadcast(&m->t->cv);
}

/* Stores without publishing; steals value; the caller holds the lock. Returns 1 when
 * key changed. */
static int store_locked(wm_map *m, const char *key, json_t *value)
{
    json_t *old = json_object_get(m->items, key);
    if (old && json_equal(old, value)) {
        json_decref(value);
        return 0;
    }
    note_change(m, key, value);
    json_object_set_new(m->items, key, value);
    return 1;
}

int wm_store(wm_map *m, const char *key, json_t *value)
{
    if (key == NULL || *key == '\0' || !json_is_object(value)) {
        json_decref(value);
        return SX_EINVAL;
    }
    strip_managed_fields(value);
    pthread_mutex_lock(&m->t->mu);
    int changed = store_locked(m, key, value);
    if (changed)
        publish_locked(m);
    pthread_mutex_unlock(&m->t->mu);
    return changed;
}

int wm_delete(wm_map *m, const char *key)
{
    pthread_mutex_lock(&m->t->mu);
    int changed = 0;
    if (json_object_get(m->items, key)) {
        note_change(m, key, NULL);
        json_object_del(m->items, key);
        publish_locked(m);
        changed = 1;
    }
    pthread_mutex_unlock(&m->t->mu);
    return changed;
}

int wm_replace(wm_map *m, json_t *items)
{
    if (!json_is_object(items)) {
        json_decref(items);
        return SX_EINVAL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(items, k, v)
    {
        if (!json_is_object(v) || *k == '\0') {
            json_decref(items);
            return SX_EINVAL;
        }
        strip_managed_fields(v);
    }
    pthread_mutex_lock(&m->t->mu);
    int changed = 0;
    void *tmp;
    json_object_foreach_safe(m->items, tmp, k, v)
    {
        if (json_object_get(items, k) == NULL) {
            note_change(m, k, NULL);
            json_object_del(m->items, k);
            changed++;
        }
    }
    json_object_foreach(items, k, v)
    {
        changed += store_locked(m, k, json_incref(v));
    }
    if (changed)
        publish_locked(m);
    pthread_mutex_unlock(&m->t->mu);
    json_decref(items);
    return changed;
}

/* ---------------------------------------------------------------- reading */

json_t *wm_get(wm_map *m, const char *key)
{
    pthread_mutex_lock(&m->t->mu);
    json_t *v = json_incref(json_object_get(m->items, key));
    pthread_mutex_unlock(&m->t->mu);
    return v;
}

size_t wm_size(wm_map *m)
{
    pthread_mutex_lock(&m->t->mu);
    size_t n = json_object_size(m->items);
    pthread_mutex_unlock(&m->t->mu);
    return n;
}

uint64_t wm_map_generation(wm_map *m)
{
    return sx_locked_u64(&m->t->mu, &m->generation);
}

wm_state *wm_map_load_all(wm_map *m)
{
    pthread_mutex_lock(&m->t->mu);
    wm_state *s = load_locked(m);
    pthread_mutex_unlock(&m->t->mu);
    return s;
}

uint64_t wm_table_generation(wm_table *t)
{
    return sx_locked_u64(&t->mu, &t->generation);
}

wm_table_state *wm_table_load_all(wm_table *t)
{
    wm_table_state *ts = sx_calloc(1, sizeof(*ts));
    pthread_mutex_lock(&t->mu);
    ts->generation = t->generation;
    ts->nmaps = t->nmaps;
    ts->maps = sx_calloc(t->nmaps ? t->nmaps : 1, sizeof(*ts->maps));
    for (size_t i = 0; i < t->nmaps; i++)
        ts->maps[i] = load_locked(t->maps[i]);
    pthread_mutex_unlock(&t->mu);
    return ts;
}

const wm_state *wm_table_state_find(const wm_table_state *ts, const char *kind)
{
    for (size_t i = 0; i < ts->nmaps; i++)
        if (strcmp(ts->maps[i]->kind, kind) == 0)
            return ts->maps[i];
    return NULL;
}

void wm_table_state_free(wm_table_state *ts)
{
    if (ts == NULL)
        return;
    for (size_t i = 0; i < ts->nmaps; i++)
        wm_state_release(ts->maps[i]);
    sx_free(ts->maps);
    sx_free(ts);
}

/* Waits on the table's condition until deadline (NULL: without limit); the caller holds
 * the lock. Returns false once the deadline has passed. */
static bool wait_locked(wm_table *t, const struct timespec *deadline)
{
    if (deadline == NULL) {
        pthread_cond_wait(&t->cv, &t->mu);
        return true;
    }
    return pthread_cond_timedwait(&t->cv, &t->mu, deadline) == 0;
}

uint64_t wm_table_wait(wm_table *t, uint64_t seen, int64_t timeout_ms)
{
    struct timespec deadline = sx_deadline_in(timeout_ms);
    pthread_mutex_lock(&t->mu);
    uint64_t wakes = t->wakes;
    while (t->generation == seen && t->wakes == wakes && timeout_ms != 0) {
        if (!wait_locked(t, timeout_ms < 0 ? NULL : &deadline))
            break;
    }
    uint64_t g = t->generation;
    pthread_mutex_unlock(&t->mu);
    return g;
}

void wm_table_wake(wm_table *t)
{
    pthread_mutex_lock(&t->mu);
    t->wakes++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* ---------------------------------------------------------------- subscriptions */

wm_sub *wm_subscribe(wm_map *m)
{
    wm_sub *s = sx_calloc(1, sizeof(*s));
    s->m = m;
    s->pending = json_object();
    pthread_mutex_lock(&m->t->mu);
    s->next = m->subs;
    m->subs = s;
    pthread_mutex_unlock(&m->t->mu);
    return s;
}

static int update_cmp(const void *a, const void *b)
{
    return strcmp(((const wm_update *)a)->key, ((const wm_update *)b)->key);
}

/* Takes the subscription's pending changes and the state into a snapshot; the caller
 * holds the lock. */
static wm_snapshot *take_locked(wm_sub *s)
{
    snapshot_impl *si = sx_calloc(1, sizeof(*si));
    si->pending = s->pending;
    s->pending = json_object();
    s->read_once = true;
    size_t n = json_object_size(si->pending);
    si->pub.state = load_locked(s->m);
    si->pub.nupdates = n;
    si->pub.updates = sx_calloc(n ? n : 1, sizeof(wm_update));
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(si->pending, k, v)
    {
        si->pub.updates[i].key = k;
        si->pub.updates[i].value = json_is_null(v) ? NULL : v;
        i++;
    }
    qsort(si->pub.updates, n, sizeof(wm_update), update_cmp);
    return &si->pub;
}

int wm_sub_next(wm_sub *s, int64_t timeout_ms, wm_snapshot **out)
{
    *out = NULL;
    wm_table *t = s->m->t;
    struct timespec deadline = sx_deadline_in(timeout_ms);
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    for (;;) {
        if (s->cancelled) {
            rc = SX_EUNAVAILABLE;
            break;
        }
        if (!s->read_once || json_object_size(s->pending) > 0) {
            *out = take_locked(s);
            break;
        }
        if (timeout_ms == 0 || !wait_locked(t, timeout_ms < 0 ? NULL : &deadline)) {
            /* One last look: the change may have come with the deadline. */
            if (!s->cancelled && json_object_size(s->pending) > 0)
                *out = take_locked(s);
            else
                rc = s->cancelled ? SX_EUNAVAILABLE : SX_ETIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void wm_sub_cancel(wm_sub *s)
{
    wm_table *t = s->m->t;
    pthread_mutex_lock(&t->mu);
    s->cancelled = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

void wm_sub_close(wm_sub *s)
{
    if (s == NULL)
        return;
    wm_table *t = s->m->t;
    pthread_mutex_lock(&t->mu);
    for (wm_sub **p = &s->m->subs; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&t->mu);
    json_decref(s->pending);
    sx_free(s);
}

void wm_snapshot_free(wm_snapshot *snap)
{
    if (snap == NULL)
        return;
    snapshot_impl *si = (snapshot_impl *)snap;
    wm_state_release(snap->state);
    sx_free(snap->updates);
    json_decref(si->pending);
    sx_free(si);
}

/* ---------------------------------------------------------------- keys */

char *wm_key_of(const json_t *object)
{
    json_t *md = json_object_get(object, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (name == NULL || *name == '\0')
        return NULL;
    if (ns == NULL || *ns == '\0')
        return sx_strdup(name);
    return sx_asprintf("%s/%s", ns, name);
}

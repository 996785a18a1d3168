/*
 * store.c — per-group current snapshots, kept in step with PostgreSQL by NOTIFY.
 *
 * Entries sit in a small array guarded by one mutex; groups number in the hundreds at
 * most, and lookups happen once per stream event, not per byte sent. Fetching from
 * Redis or PostgreSQL happens outside the lock, and the version check is redone under
 * the lock before a replacement, so concurrent refreshes cannot move a group back.
 */
#include "server/snapshot/store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/arena.h"
#include "server/base/log.h"
#include "server/base/mem.h"

#define MAX_WATCHERS 16

typedef struct watcher {
    int id; /* 0 = free slot */
    snap_store_watch_fn fn;
    void *ctx;
} watcher;

struct snap_store {
    pthread_mutex_t mu;
    snap_repo *repo;      /* borrowed */
    snap_entry **entries; /* one per group, each holding one reference */
    size_t count;
    size_t cap;
    atomic_bool loaded;   /* a load_all succeeded */
    atomic_size_t groups; /* count, for readers that take no lock */
    watcher watchers[MAX_WATCHERS];
    int next_watch_id;
    sx_metric *m_groups;
    sx_metric *m_updates;
};

snap_entry *snap_entry_ref(snap_entry *e)
{
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    return e;
}

void snap_entry_unref(snap_entry *e)
{
    if (e == NULL)
        return;
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1)
        return;
    sx_free(e->group);
    sx_free(e->checksum);
    sx_free(e->encoded);
    sx_free(e);
}

snap_store *snap_store_create(snap_repo *repo, sx_metrics *metrics)
{
    snap_store *s = sx_calloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->repo = repo;
    atomic_init(&s->loaded, false);
    atomic_init(&s->groups, 0);
    s->next_watch_id = 1;
    if (metrics) {
        s->m_groups = sx_metrics_gauge(metrics, "sextant_snapshot_groups",
                                       "Proxy groups with a snapshot held by this replica", NULL);
        s->m_updates = sx_metrics_counter(metrics, "sextant_snapshot_updates_total",
                                          "Snapshots this replica took in, by source", "source");
    }
    return s;
}

void snap_store_destroy(snap_store *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->count; i++)
        snap_entry_unref(s->entries[i]);
    sx_free(s->entries);
    pthread_mutex_destroy(&s->mu);
    sx_free(s);
}

static snap_entry *entry_from_record(const snap_record *r)
{
    snap_entry *e = sx_calloc(1, sizeof(*e));
    atomic_init(&e->refs, 1);
    e->group = sx_strdup(r->group);
    e->version = r->version;
    e->checksum = sx_strdup(r->checksum ? r->checksum : "");
    e->encoded_len = r->encoded_len;
    e->encoded = sx_malloc(r->encoded_len);
    if (r->encoded_len)
        memcpy(e->encoded, r->encoded, r->encoded_len);
    return e;
}

/* Installs e (taking over its reference) when newer than what group holds. Returns
 * whether it was installed; call with the lock held. */
static bool install_locked(snap_store *s, snap_entry *e)
{
    for (size_t i = 0; i < s->count; i++) {
        if (strcmp(s->entries[i]->group, e->group) != 0)
            continue;
        if (s->entries[i]->version >= e->version)
            return false;
        snap_entry_unref(s->entries[i]);
        s->entries[i] = e;
        return true;
    }
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->entries = sx_realloc(s->entries, s->cap * sizeof(*s->entries));
    }
    s->entries[s->count++] = e;
    atomic_store(&s->groups, s->count);
    return true;
}

/* Installs e and tells the watchers; consumes the caller's reference. */
static void publish(snap_store *s, snap_entry *e, const char *source)
{
    watcher ws[MAX_WATCHERS];
    pthread_mutex_lock(&s->mu);
    bool installed = install_locked(s, e);
    if (installed) {
        snap_entry_ref(e); /* for the watchers below */
        memcpy(ws, s->watchers, sizeof(ws));
    }
    size_t groups = s->count;
    pthread_mutex_unlock(&s->mu);
    if (!installed) {
        snap_entry_unref(e);
        return;
    }
    if (s->m_groups)
        sx_metric_set(s->m_groups, NULL, (double)groups);
    if (s->m_updates)
        sx_metric_inc(s->m_updates, (const char *[]){source});
    sx_log_fields(SX_LOG_INFO, "snapshots",
                  json_pack("{s:s,s:I,s:s}", "group", e->group, "version", (json_int_t)e->version,
                            "source", source),
                  "snapshot %s v%lld in force", e->group, e->version);
    for (int i = 0; i < MAX_WATCHERS; i++)
        if (ws[i].id)
            ws[i].fn(ws[i].ctx, e);
    snap_entry_unref(e);
}

int snap_store_load_all(snap_store *s, sx_err *err)
{
    sx_arena *a = sx_arena_create();
    snap_record *items = NULL;
    size_t n = 0;
    int rc = snap_repo_load_latest_all(s->repo, a, &items, &n, err);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            publish(s, entry_from_record(&items[i]), "load");
        atomic_store(&s->loaded, true);
    }
    sx_arena_destroy(a);
    return rc;
}

bool snap_store_loaded(snap_store *s)
{
    return atomic_load(&s->loaded);
}

/* Reads (group, version) through the repository (Redis, then PostgreSQL) into *out, a
 * new entry holding one reference; the repository's error otherwise (*out NULL). id is
 * the row id a notification announced (0 when unknown): the cache entry the writer put
 * before its commit is keyed by it. */
static int read_entry(snap_store *s, const char *group, long long version, long long id,
                      snap_entry **out, sx_err *err)
{
    sx_arena *a = sx_arena_create();
    snap_record *r = NULL;
    int rc = snap_repo_get_announced(s->repo, group, version, id, a, &r, err);
    *out = rc == 0 ? entry_from_record(r) : NULL;
    sx_arena_destroy(a);
    return rc;
}

int snap_store_refresh(snap_store *s, const char *group, long long version, long long id,
                       sx_err *err)
{
    snap_entry *have = snap_store_get(s, group);
    bool current = have && have->version >= version;
    snap_entry_unref(have);
    if (current)
        return 0;
    snap_entry *e = NULL;
    int rc = read_entry(s, group, version, id, &e, err);
    if (rc == 0)
        publish(s, e, "notify");
    return rc;
}

snap_entry *snap_store_fetch(snap_store *s, const char *group, long long version, sx_err *err)
{
    snap_entry *have = snap_store_get(s, group);
    if (have && have->version == version)
        return have;
    snap_entry_unref(have);
    snap_entry *e = NULL;
    (void)read_entry(s, group, version, 0, &e, err);
    return e;
}

int snap_store_behind(snap_store *s, sx_arena *a, snap_group **items, size_t *count, sx_err *err)
{
    snap_group *v;
    size_t n;
    *items = NULL;
    *count = 0;
    int rc = snap_repo_current_versions(s->repo, a, &v, &n, err);
    if (rc)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        snap_entry *e = snap_store_get(s, v[i].name);
        if (e == NULL || e->version < v[i].latest_version)
            v[k++] = v[i];
        snap_entry_unref(e);
    }
    *items = k ? v : NULL;
    *count = k;
    return 0;
}

snap_entry *snap_store_get(snap_store *s, const char *group)
{
    snap_entry *e = NULL;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->count; i++) {
        if (strcmp(s->entries[i]->group, group) == 0) {
            e = snap_entry_ref(s->entries[i]);
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return e;
}

size_t snap_store_group_count(snap_store *s)
{
    return atomic_load(&s->groups);
}

int snap_store_watch(snap_store *s, snap_store_watch_fn fn, void *ctx)
{
    int id = -1;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < MAX_WATCHERS; i++) {
        if (s->watchers[i].id == 0) {
            id = s->next_watch_id++;
            s->watchers[i] = (watcher){id, fn, ctx};
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return id;
}

void snap_store_unwatch(snap_store *s, int id)
{
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < MAX_WATCHERS; i++)
        if (s->watchers[i].id == id)
            s->watchers[i] = (watcher){0};
    pthread_mutex_unlock(&s->mu);
}

char *snap_store_notify_payload(const char *group, long long version, long long id)
{
    json_t *j = json_pack("{s:s,s:I}", "group", group, "version", (json_int_t)version);
    if (id > 0)
        json_object_set_new(j, "id", json_integer(id));
    char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    char *out = sx_strdup(text);
    free(text);
    return out;
}

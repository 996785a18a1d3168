/*
 * publisher.c — builds each new snapshot once and fans it out (see publisher.h).
 *
 * The store's watcher callback only queues: a per-group slot holding the newest
 * entry not yet built (an older pending one is replaced). One thread takes slots
 * one at a time, builds outside the lock, installs the result as the group's latest
 * (unless something newer got there first) and calls the fan-out. Groups number in
 * the hundreds, so both tables are plain arrays searched linearly.
 */
#include "server/xds/publisher.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/ir/ir.h"

typedef struct latest {
    char *group;
    xds_wire_snap *snap; /* one reference */
} latest;

typedef struct pending {
    snap_entry *e;        /* one reference */
    int64_t published_ms; /* when the store told us */
} pending;

struct xds_pub {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    xds_pub_options o;
    int watch_id; /* 0 when not watching */
    latest *latest;
    size_t nlatest;
    size_t caplatest;
    pending *pending;
    size_t npending;
    size_t cappending;
    pthread_t thread;
    bool started;
    bool stopping;
    xds_wire_snap **other; /* built versions that are not their group's latest (pins) */
    size_t nother;
    size_t capother;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static latest *find_latest_locked(xds_pub *p, const char *group)
{
    for (size_t i = 0; i < p->nlatest; i++)
        if (strcmp(p->latest[i].group, group) == 0)
            return &p->latest[i];
    return NULL;
}

/* Queues e (a reference is taken) unless the group already has it or newer. */
static void queue_locked(xds_pub *p, snap_entry *e, int64_t now_ms)
{
    latest *l = find_latest_locked(p, e->group);
    if (l && l->snap->entry->version >= e->version)
        return;
    for (size_t i = 0; i < p->npending; i++) {
        if (strcmp(p->pending[i].e->group, e->group) != 0)
            continue;
        if (p->pending[i].e->version >= e->version)
            return;
        /* A newer version arrived before the older one was built: build only it. */
        snap_entry_unref(p->pending[i].e);
        p->pending[i].e = snap_entry_ref(e);
        p->pending[i].published_ms = now_ms;
        return;
    }
    if (p->npending == p->cappending) {
        p->cappending = p->cappending ? p->cappending * 2 : 8;
        p->pending = sx_realloc(p->pending, p->cappending * sizeof(*p->pending));
    }
    p->pending[p->npending++] = (pending){snap_entry_ref(e), now_ms};
    pthread_cond_signal(&p->cv);
}

static void on_store(void *ctx, snap_entry *e)
{
    xds_pub *p = ctx;
    pthread_mutex_lock(&p->mu);
    queue_locked(p, e, sx_monotonic_ms());
    pthread_mutex_unlock(&p->mu);
}

int xds_pub_build(snap_entry *e, const xds_wire_snap *prev, int64_t published_ms,
                  xds_metrics *metrics, xds_wire_snap **out, sx_err *err)
{
    *out = NULL;
    double t0 = now_seconds();
    ir_snapshot *ir = NULL;
    int rc = ir_snapshot_unpack(e->encoded, e->encoded_len, &ir, err);
    if (rc != 0) {
        sx_err_prefix(err, "snapshot %s v%lld", e->group, e->version);
        return rc;
    }
    tr_resources *res = NULL;
    sx_err berr;
    sx_err_clear(&berr);
    rc = tr_resources_build(ir, e->group, e->version, &res, &berr);
    ir_snapshot_free(ir);
    xds_wire_res *w = NULL;
    if (rc == 0) {
        w = xds_wire_res_create(res);
        tr_resources_unref(res);
    } else {
        xds_wire_res *kept = prev ? prev->wire : NULL;
        sx_log_fields(SX_LOG_ERROR, "xds",
                      json_pack("{s:s,s:I,s:s,s:s,s:I}", "group", e->group, "version",
                                (json_int_t)e->version, "error", berr.message, "detail",
                                berr.detail, "kept_version",
                                (json_int_t)(kept ? kept->res->version : 0)),
                      "could not build the xDS resources of snapshot %s v%lld; ADS streams "
                      "keep the last good version",
                      e->group, e->version);
        if (metrics)
            xds_metrics_inc(metrics->build_failures, NULL);
    }
    *out = xds_wire_snap_create(e, w ? w : (prev ? prev->wire : NULL), published_ms);
    xds_wire_res_unref(w);
    if (metrics)
        xds_metrics_observe(metrics->build_seconds, NULL, now_seconds() - t0);
    return 0;
}

static void *run(void *arg)
{
    xds_pub *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        if (p->npending == 0) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        pending job = p->pending[0];
        memmove(p->pending, p->pending + 1, (p->npending - 1) * sizeof(*p->pending));
        p->npending--;
        latest *l = find_latest_locked(p, job.e->group);
        xds_wire_snap *prev = l ? xds_wire_snap_ref(l->snap) : NULL;
        pthread_mutex_unlock(&p->mu);

        xds_wire_snap *snap = NULL;
        sx_err err;
        sx_err_clear(&err);
        if (xds_pub_build(job.e, prev, job.published_ms, p->o.metrics, &snap, &err) != 0)
            sx_log_err(SX_LOG_ERROR, "xds", &err);
        xds_wire_snap_unref(prev);
        snap_entry_unref(job.e);

        pthread_mutex_lock(&p->mu);
        bool install = snap != NULL;
        if (install) {
            l = find_latest_locked(p, snap->entry->group);
            if (l && l->snap->entry->version >= snap->entry->version) {
                install = false;
            } else if (l) {
                xds_wire_snap_unref(l->snap);
                l->snap = xds_wire_snap_ref(snap);
            } else {
                if (p->nlatest == p->caplatest) {
                    p->caplatest = p->caplatest ? p->caplatest * 2 : 8;
                    p->latest = sx_realloc(p->latest, p->caplatest * sizeof(*p->latest));
                }
                p->latest[p->nlatest++] =
                    (latest){sx_strdup(snap->entry->group), xds_wire_snap_ref(snap)};
            }
        }
        pthread_mutex_unlock(&p->mu);
        if (install && p->o.fanout)
            p->o.fanout(p->o.ctx, snap);
        xds_wire_snap_unref(snap);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

xds_pub *xds_pub_create(const xds_pub_options *opt)
{
    xds_pub *p = sx_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->o = *opt;
    if (p->o.store)
        p->watch_id = snap_store_watch(p->o.store, on_store, p);
    return p;
}

int xds_pub_start(xds_pub *p, sx_err *err)
{
    p->stopping = false;
    if (pthread_create(&p->thread, NULL, run, p) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not start the xDS publisher thread");
    p->started = true;
    return 0;
}

void xds_pub_stop(xds_pub *p)
{
    if (p->watch_id) {
        snap_store_unwatch(p->o.store, p->watch_id);
        p->watch_id = 0;
    }
    sx_cond_raise(&p->mu, &p->cv, &p->stopping);
    if (p->started)
        pthread_join(p->thread, NULL);
    p->started = false;
}

void xds_pub_destroy(xds_pub *p)
{
    if (p == NULL)
        return;
    if (p->watch_id)
        snap_store_unwatch(p->o.store, p->watch_id);
    for (size_t i = 0; i < p->npending; i++)
        snap_entry_unref(p->pending[i].e);
    sx_free(p->pending);
    for (size_t i = 0; i < p->nlatest; i++) {
        sx_free(p->latest[i].group);
        xds_wire_snap_unref(p->latest[i].snap);
    }
    sx_free(p->latest);
    for (size_t i = 0; i < p->nother; i++)
        xds_wire_snap_unref(p->other[i]);
    sx_free(p->other);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    sx_free(p);
}

xds_wire_snap *xds_pub_get(xds_pub *p, const char *group)
{
    pthread_mutex_lock(&p->mu);
    latest *l = find_latest_locked(p, group);
    xds_wire_snap *s = l ? xds_wire_snap_ref(l->snap) : NULL;
    pthread_mutex_unlock(&p->mu);
    if (s || p->o.store == NULL)
        return s;
    /* Not built yet (the store loaded it before we watched, or a build is queued):
     * make sure it is queued; its fan-out reaches the caller's stream. */
    snap_entry *e = snap_store_get(p->o.store, group);
    if (e) {
        pthread_mutex_lock(&p->mu);
        queue_locked(p, e, sx_monotonic_ms());
        pthread_mutex_unlock(&p->mu);
        snap_entry_unref(e);
    }
    return NULL;
}

static xds_wire_snap *find_version_locked(xds_pub *p, const char *group, long long version)
{
    latest *l = find_latest_locked(p, group);
    if (l && l->snap->entry->version == version)
        return xds_wire_snap_ref(l->snap);
    for (size_t i = 0; i < p->nother; i++)
        if (p->other[i]->entry->version == version && strcmp(p->other[i]->entry->group, group) == 0)
            return xds_wire_snap_ref(p->other[i]);
    return NULL;
}

xds_wire_snap *xds_pub_get_version(xds_pub *p, const char *group, long long version, sx_err *err)
{
    pthread_mutex_lock(&p->mu);
    xds_wire_snap *s = find_version_locked(p, group, version);
    latest *l = s ? NULL : find_latest_locked(p, group);
    xds_wire_snap *prev = l ? xds_wire_snap_ref(l->snap) : NULL;
    pthread_mutex_unlock(&p->mu);
    if (s)
        return s;
    snap_entry *e = p->o.store ? snap_store_fetch(p->o.store, group, version, err) : NULL;
    if (e == NULL) {
        xds_wire_snap_unref(prev);
        if (p->o.store == NULL)
            sx_err_set(err, SX_ENOTFOUND, "no snapshot store");
        return NULL;
    }
    int rc = xds_pub_build(e, prev, sx_monotonic_ms(), p->o.metrics, &s, err);
    snap_entry_unref(e);
    xds_wire_snap_unref(prev);
    if (rc != 0)
        return NULL;
    pthread_mutex_lock(&p->mu);
    xds_wire_snap *raced = find_version_locked(p, group, version);
    if (raced) {
        xds_wire_snap_unref(s);
        s = raced;
    } else {
        if (p->nother == p->capother) {
            p->capother = p->capother ? p->capother * 2 : 8;
            p->other = sx_realloc(p->other, p->capother * sizeof(*p->other));
        }
        p->other[p->nother++] = xds_wire_snap_ref(s);
    }
    pthread_mutex_unlock(&p->mu);
    return s;
}

void xds_pub_prune_versions(xds_pub *p, bool (*keep)(void *ctx, const char *group, long long v),
                            void *ctx)
{
    pthread_mutex_lock(&p->mu);
    size_t n = 0;
    for (size_t i = 0; i < p->nother; i++) {
        if (keep(ctx, p->other[i]->entry->group, p->other[i]->entry->version))
            p->other[n++] = p->other[i];
        else
            xds_wire_snap_unref(p->other[i]);
    }
    p->nother = n;
    pthread_mutex_unlock(&p->mu);
}

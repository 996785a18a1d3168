/*
 * loader.c — takes snapshot fetches and NOTIFY-driven reloads off the LISTEN thread.
 *
 * One mutex guards three kinds of pending work: a "reload everything" flag, an array of
 * per-group fetches (each the newest version announced, with its retry time) and, per
 * subscription, the newest undelivered notification or resync. The listener's callbacks
 * only record work under the mutex and signal the condition variable. The worker picks
 * the first job that is due — the reload first (it covers every group), then the fetches,
 * then the subscriptions, then the periodic check — runs it without the mutex, and
 * records a failure by making the job due again after a back-off (the database link's
 * bounds). When the database link reports that a connection succeeded again, every job
 * waiting out a back-off is made due at once. Jobs are small in number (one per group
 * at most), so a linear scan is enough.
 *
 * The periodic check asks the database for every group's current version (one query)
 * and queues a fetch of each group the store is behind on, and a resync of every
 * subscription that can (the rollout pins). The groups found behind are
 * remembered, with the time they were first seen so, until the store catches up: their
 * number is sextant_snapshot_stale_groups, and one behind for longer than three check
 * intervals makes the component "freshness" (and so /readyz) not ready.
 */
#include "server/snapshot/loader.h"

#include <jansson.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "server/base/arena.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/base/locked.h"

#define COMPONENT           "snapshots"
#define POLL_MS             100   /* waiting for the database and the listener */
#define STALE_AFTER_CHECKS  3     /* a group behind this many intervals is not fresh */
#define DEFAULT_INTERVAL_MS 10000 /* snapshots.check_interval */

/* A pending fetch of one group's snapshot. */
typedef struct fetch {
    char *group;       /* owned */
    long long version; /* the newest version announced */
    long long id;      /* its row id, as the notification named it (0: not named) */
    int64_t due_ms;    /* monotonic time it may run; 0: now */
    int backoff_ms;    /* the next retry's delay */
} fetch;

/* What a subscription has waiting for the worker. */
typedef enum { SUB_IDLE, SUB_NOTIFY, SUB_RESYNC } sub_pending;

/* A channel subscribed through snap_loader_subscribe. */
typedef struct sub {
    snap_loader *loader; /* borrowed; the listener's ctx for this subscription */
    char *channel;       /* owned */
    snap_loader_notify_fn on_notify;
    snap_loader_resync_fn on_resync; /* NULL allowed */
    void *ctx;
    sub_pending pending; /* (mu) */
    char *payload;       /* (mu) owned; the newest undelivered payload */
    int64_t due_ms;      /* (mu) when a failed call may run again; 0: now */
    int backoff_ms;      /* (mu) the next retry's delay */
} sub;

/* A group the periodic check found behind the database. */
typedef struct stale {
    char *group;       /* owned */
    long long version; /* the database's current version when last checked */
    int64_t since_ms;  /* monotonic time it was first found behind */
} stale;

struct snap_loader {
    snap_loader_options o;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when work arrives or stop begins */
    bool stopping;     /* (mu) */
    bool reload;       /* (mu) every group must be (re)loaded: start-up or a resync */
    int64_t reload_due_ms;
    int reload_backoff_ms;
    fetch *fetches; /* (mu) */
    size_t nfetches, cap_fetches;
    sub **subs; /* grows before start only */
    size_t nsubs;
    int64_t interval_ms;  /* snapshots.check_interval */
    int64_t check_due_ms; /* (mu) next periodic check; 0: as soon as the first load is held */
    stale *stale;         /* (mu) groups found behind, until the store catches up */
    size_t nstale, cap_stale;
    int min_ms, max_ms; /* back-off bounds */
    sup_thread thread;  /* runs worker */
    sx_metric *m_fetch_errors;
    sx_metric *m_stale;
};

/* ------------------------------------------------------------------ listener side */

/* The pending fetch of group, added (version 0, due now) when there is none. Call with
 * the mutex held. */
static fetch *fetch_of(snap_loader *l, const char *group)
{
    for (size_t i = 0; i < l->nfetches; i++)
        if (strcmp(l->fetches[i].group, group) == 0)
            return &l->fetches[i];
    if (l->nfetches == l->cap_fetches) {
        l->cap_fetches = l->cap_fetches ? l->cap_fetches * 2 : 16;
        l->fetches = sx_realloc(l->fetches, l->cap_fetches * sizeof(*l->fetches));
    }
    fetch *f = &l->fetches[l->nfetches++];
    *f = (fetch){.group = sx_strdup(group), .backoff_ms = l->min_ms};
    return f;
}

/* Records (group, version, row id) unless a newer fetch of group is already pending. A
 * newer version is worth trying at once, even while an older one backs off. */
static void want_fetch(snap_loader *l, const char *group, long long version, long long id)
{
    pthread_mutex_lock(&l->mu);
    fetch *f = fetch_of(l, group);
    if (version > f->version)
        *f = (fetch){.group = f->group, .version = version, .id = id, .backoff_ms = l->min_ms};
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static void on_snapshot_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    json_error_t jerr;
    json_t *j = json_loads(payload, 0, &jerr);
    const char *group = json_string_value(json_object_get(j, "group"));
    json_t *v = json_object_get(j, "version");
    if (group == NULL || !json_is_integer(v) || json_integer_value(v) < 1)
        sx_log(SX_LOG_WARN, COMPONENT, "ignoring malformed snapshot notification: %.200s", payload);
    else /* "id" names the row whose cache entry the writer put before its commit */
        want_fetch(ctx, group, json_integer_value(v), json_integer_value(json_object_get(j, "id")));
    json_decref(j);
}

static void on_snapshot_resync(void *ctx)
{
    snap_loader *l = ctx;
    pthread_mutex_lock(&l->mu);
    l->reload = true;
    l->reload_due_ms = 0;
    l->reload_backoff_ms = l->min_ms;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static void mark_sub(sub *s, sub_pending what, const char *payload)
{
    snap_loader *l = s->loader;
    pthread_mutex_lock(&l->mu);
    if (what == SUB_RESYNC || s->pending != SUB_RESYNC) {
        s->pending = what;
        sx_free(s->payload);
        s->payload = payload ? sx_strdup(payload) : NULL;
    }
    s->due_ms = 0; /* news: worth trying at once, even while a failed call backs off */
    s->backoff_ms = l->min_ms;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static void on_sub_notify(void *ctx, const char *channel, const char *payload)
{
    (void)channel;
    mark_sub(ctx, SUB_NOTIFY, payload);
}

static void on_sub_resync(void *ctx)
{
    mark_sub(ctx, SUB_RESYNC, NULL);
}

/* The database link's watcher: a connection succeeded again, so every job waiting out
 * a back-off is due now (a resync waits for a usable connection, not for its timer). */
static void on_link_up(void *ctx)
{
    snap_loader *l = ctx;
    pthread_mutex_lock(&l->mu);
    l->reload_due_ms = 0;
    for (size_t i = 0; i < l->nfetches; i++)
        l->fetches[i].due_ms = 0;
    for (size_t i = 0; i < l->nsubs; i++)
        l->subs[i]->due_ms = 0;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* ------------------------------------------------------------------ worker side */

/* The job the worker runs next, taken from the pending state under the mutex. */
typedef struct job {
    enum { JOB_NONE, JOB_RELOAD, JOB_FETCH, JOB_SUB, JOB_CHECK } kind;
    char *group; /* JOB_FETCH; owned */
    long long version;
    long long id;    /* JOB_FETCH: the announced row id (0: not named) */
    int backoff_ms;  /* JOB_FETCH: the delay before a retry */
    sub *s;          /* JOB_SUB */
    bool resync;     /* JOB_SUB: call on_resync rather than on_notify */
    char *payload;   /* JOB_SUB notify; owned */
    int64_t wait_ms; /* JOB_NONE: how long nothing is due (-1: until signalled) */
} job;

static bool dependencies_ready(snap_loader *l)
{
    return pg_listener_connected(l->o.listener) &&
           (l->o.database_ready == NULL || l->o.database_ready(l->o.database_ctx));
}

static void shorten_wait(job *j, int64_t due, int64_t now)
{
    int64_t w = due > now ? due - now : 0;
    if (j->wait_ms < 0 || w < j->wait_ms)
        j->wait_ms = w;
}

/* Takes the first due job off the pending state. Call with the mutex held. */
static job take_job(snap_loader *l, bool deps_ready)
{
    job j = {.kind = JOB_NONE, .wait_ms = -1};
    int64_t now = sx_monotonic_ms();
    if (l->reload) {
        if (!deps_ready) {
            shorten_wait(&j, now + POLL_MS, now);
        } else if (l->reload_due_ms <= now) {
            l->reload = false;
            j.kind = JOB_RELOAD;
            return j;
        } else {
            shorten_wait(&j, l->reload_due_ms, now);
        }
    }
    for (size_t i = 0; i < l->nfetches; i++) {
        fetch *f = &l->fetches[i];
        if (f->due_ms > now) {
            shorten_wait(&j, f->due_ms, now);
            continue;
        }
        j = (job){.kind = JOB_FETCH,
                  .group = f->group,
                  .version = f->version,
                  .id = f->id,
                  .backoff_ms = f->backoff_ms};
        l->fetches[i] = l->fetches[--l->nfetches];
        return j;
    }
    for (size_t i = 0; i < l->nsubs; i++) {
        sub *s = l->subs[i];
        if (s->pending == SUB_IDLE)
            continue;
        if (s->due_ms > now) {
            shorten_wait(&j, s->due_ms, now);
            continue;
        }
        j = (job){.kind = JOB_SUB,
                  .s = s,
                  .resync = s->pending == SUB_RESYNC,
                  .payload = s->payload,
                  .backoff_ms = s->backoff_ms};
        s->pending = SUB_IDLE;
        s->payload = NULL;
        return j;
    }
    /* The periodic check, once the first load is held (before, the reload covers it). */
    if (deps_ready && l->interval_ms > 0 && snap_store_loaded(l->o.store)) {
        if (l->check_due_ms == 0)
            l->check_due_ms = now + l->interval_ms;
        if (l->check_due_ms <= now) {
            l->check_due_ms = now + l->interval_ms;
            j = (job){.kind = JOB_CHECK};
            return j;
        }
        shorten_wait(&j, l->check_due_ms, now);
    }
    return j;
}

static void prune_stale_locked(snap_loader *l);

static void count_failure(snap_loader *l, const sx_err *err)
{
    if (l->m_fetch_errors && snap_store_loaded(l->o.store))
        sx_metric_inc(l->m_fetch_errors, NULL);
    sx_log_err(SX_LOG_WARN, COMPONENT, err);
}

/* Makes every subscription that can resync do so (under l->mu). */
static void resync_subs_locked(snap_loader *l)
{
    for (size_t i = 0; i < l->nsubs; i++) {
        sub *su = l->subs[i];
        if (su->on_resync == NULL)
            continue;
        su->pending = SUB_RESYNC;
        sx_free(su->payload);
        su->payload = NULL;
    }
}

static void run_reload(snap_loader *l)
{
    sx_err err;
    sx_err_clear(&err);
    bool first = !snap_store_loaded(l->o.store);
    if (snap_store_load_all(l->o.store, &err) == 0) {
        if (first)
            sx_log_fields(
                SX_LOG_INFO, COMPONENT,
                json_pack("{s:I}", "groups", (json_int_t)snap_store_group_count(l->o.store)),
                "snapshots loaded");
        pthread_mutex_lock(&l->mu);
        l->reload_backoff_ms = l->min_ms;
        if (l->nstale)
            prune_stale_locked(l);
        /* The listener resyncs its subscribers only after a reconnect, so state kept
         * beside the snapshots (the rollout pins) would otherwise wait for its next
         * NOTIFY: a replica started during a rollout would serve pinned nodes their
         * group's current snapshot. Once the first load is held, every subscription
         * that can resync does. */
        if (first)
            resync_subs_locked(l);
        pthread_mutex_unlock(&l->mu);
        return;
    }
    count_failure(l, &err); /* the first load's failures are not counted: nothing was held */
    pthread_mutex_lock(&l->mu);
    l->reload = true;
    l->reload_due_ms = sx_monotonic_ms() + l->reload_backoff_ms;
    l->reload_backoff_ms = sx_backoff_next(l->reload_backoff_ms, l->min_ms, l->max_ms);
    pthread_mutex_unlock(&l->mu);
}

static void run_fetch(snap_loader *l, const job *j)
{
    sx_err err;
    sx_err_clear(&err);
    int rc = snap_store_refresh(l->o.store, j->group, j->version, j->id, &err);
    if (rc == 0) {
        pthread_mutex_lock(&l->mu);
        if (l->nstale)
            prune_stale_locked(l);
        pthread_mutex_unlock(&l->mu);
        return;
    }
    count_failure(l, &err);
    if (rc == SX_ENOTFOUND)
        return; /* nothing to retry: a later notification or resync brings what exists */
    pthread_mutex_lock(&l->mu);
    fetch *f = fetch_of(l, j->group);
    if (f->version <= j->version) /* else a newer one was announced meanwhile: it runs now */
        *f = (fetch){.group = f->group,
                     .version = j->version,
                     .id = j->id,
                     .due_ms = sx_monotonic_ms() + j->backoff_ms,
                     .backoff_ms = sx_backoff_next(j->backoff_ms, l->min_ms, l->max_ms)};
    pthread_mutex_unlock(&l->mu);
}

/* Calls a subscription; a failure runs it again after a back-off, unless newer work
 * for it arrived meanwhile (which runs now, and supersedes it). */
static void run_sub(snap_loader *l, job *j)
{
    sub *s = j->s;
    int rc = j->resync ? s->on_resync(s->ctx)
                       : s->on_notify(s->ctx, s->channel, j->payload ? j->payload : "");
    if (rc == 0) {
        sx_free(j->payload);
        return;
    }
    pthread_mutex_lock(&l->mu);
    if (s->pending == SUB_IDLE) {
        s->pending = j->resync ? SUB_RESYNC : SUB_NOTIFY;
        s->payload = j->payload; /* handed back */
        j->payload = NULL;
        s->due_ms = sx_monotonic_ms() + j->backoff_ms;
        s->backoff_ms = sx_backoff_next(j->backoff_ms, l->min_ms, l->max_ms);
    }
    pthread_mutex_unlock(&l->mu);
    sx_free(j->payload);
}

static stale *stale_of(snap_loader *l, const char *group)
{
    for (size_t i = 0; i < l->nstale; i++)
        if (strcmp(l->stale[i].group, group) == 0)
            return &l->stale[i];
    return NULL;
}

/* Forgets the stale groups the store has caught up with. Call with the mutex held. */
static void prune_stale_locked(snap_loader *l)
{
    for (size_t i = 0; i < l->nstale;) {
        snap_entry *e = snap_store_get(l->o.store, l->stale[i].group);
        bool caught_up = e && e->version >= l->stale[i].version;
        snap_entry_unref(e);
        if (caught_up) {
            sx_free(l->stale[i].group);
            l->stale[i] = l->stale[--l->nstale];
        } else {
            i++;
        }
    }
    if (l->m_stale)
        sx_metric_set(l->m_stale, NULL, (double)l->nstale);
}

/* The periodic check: every group the store is behind on is remembered as stale and
 * fetched (the version the database holds as current); and every subscription that can
 * resyncs (the rollout pins: one query, and only what differs is applied), so state
 * kept beside the snapshots does not wait for a NOTIFY that was lost either. */
static void run_check(snap_loader *l)
{
    sx_err err;
    sx_err_clear(&err);
    sx_arena *a = sx_arena_create();
    snap_group *v = NULL;
    size_t n = 0;
    int rc = snap_store_behind(l->o.store, a, &v, &n, &err);
    if (rc != 0) {
        sx_log_err(SX_LOG_WARN, COMPONENT, &err);
        sx_arena_destroy(a);
        return; /* runs again at the next interval (or sooner, once the database is back) */
    }
    int64_t now = sx_monotonic_ms();
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < n; i++) {
        stale *st = stale_of(l, v[i].name);
        if (st == NULL) {
            if (l->nstale == l->cap_stale) {
                l->cap_stale = l->cap_stale ? l->cap_stale * 2 : 8;
                l->stale = sx_realloc(l->stale, l->cap_stale * sizeof(*l->stale));
            }
            st = &l->stale[l->nstale++];
            *st = (stale){.group = sx_strdup(v[i].name), .since_ms = now};
            sx_log_fields(SX_LOG_WARN, COMPONENT,
                          json_pack("{s:s,s:I}", "group", v[i].name, "version",
                                    (json_int_t)v[i].latest_version),
                          "snapshot %s v%lld is in the database but not served here: loading it",
                          v[i].name, v[i].latest_version);
        }
        st->version = v[i].latest_version;
        fetch *f = fetch_of(l, v[i].name);
        if (v[i].latest_version > f->version)
            *f =
                (fetch){.group = f->group, .version = v[i].latest_version, .backoff_ms = l->min_ms};
    }
    prune_stale_locked(l);
    resync_subs_locked(l);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    sx_arena_destroy(a);
}

static void *worker(void *arg)
{
    snap_loader *l = arg;
    for (;;) {
        /* Checked outside the mutex: the listener's and the database's state have locks
         * of their own. */
        bool deps = dependencies_ready(l);
        pthread_mutex_lock(&l->mu);
        if (l->stopping) {
            pthread_mutex_unlock(&l->mu);
            return NULL;
        }
        job j = take_job(l, deps);
        if (j.kind == JOB_NONE) {
            if (j.wait_ms < 0) {
                pthread_cond_wait(&l->cv, &l->mu);
            } else if (j.wait_ms > 0) {
                struct timespec ts = sx_deadline_in(j.wait_ms);
                pthread_cond_timedwait(&l->cv, &l->mu, &ts);
            }
            pthread_mutex_unlock(&l->mu);
            continue;
        }
        pthread_mutex_unlock(&l->mu);
        switch (j.kind) {
        case JOB_RELOAD:
            run_reload(l);
            break;
        case JOB_FETCH:
            run_fetch(l, &j);
            sx_free(j.group);
            break;
        case JOB_SUB:
            run_sub(l, &j);
            break;
        case JOB_CHECK:
            run_check(l);
            break;
        case JOB_NONE:
            break;
        }
    }
}

/* ------------------------------------------------------------------ component */

/* Makes the worker return once the job in hand is done. */
static void loader_wake(void *ctx)
{
    snap_loader *l = ctx;
    sx_cond_raise(&l->mu, &l->cv, &l->stopping);
}

static bool loader_ready(void *ctx)
{
    snap_loader *l = ctx;
    return snap_store_loaded(l->o.store);
}

sup_thread *snap_loader_component(snap_loader *l)
{
    return &l->thread;
}

bool snap_loader_fresh(snap_loader *l)
{
    int64_t limit = sx_monotonic_ms() - STALE_AFTER_CHECKS * l->interval_ms;
    pthread_mutex_lock(&l->mu);
    bool fresh = true;
    for (size_t i = 0; i < l->nstale && fresh; i++)
        fresh = l->stale[i].since_ms > limit;
    pthread_mutex_unlock(&l->mu);
    return fresh;
}

size_t snap_loader_stale_groups(snap_loader *l)
{
    return sx_locked_size(&l->mu, &l->nstale);
}

int snap_loader_create(const snap_loader_options *opt, snap_loader **out, sx_err *err)
{
    *out = NULL;
    if (opt->store == NULL || opt->listener == NULL)
        return sx_err_set(err, SX_EINVAL, "the snapshot loader needs a store and a listener");
    snap_loader *l = sx_calloc(1, sizeof(*l));
    l->o = *opt;
    l->thread = (sup_thread){.run = worker,
                             .wake = loader_wake,
                             .ready = loader_ready,
                             .ctx = l,
                             .what = "the snapshot loader"};
    l->interval_ms = opt->check_interval_ms > 0 ? opt->check_interval_ms : DEFAULT_INTERVAL_MS;
    if (opt->check_interval_ms < 0)
        l->interval_ms = 0; /* no periodic check */
    l->min_ms = opt->link ? pg_link_backoff_min(opt->link) : 50;
    l->max_ms = opt->link ? pg_link_backoff_max(opt->link) : 1000;
    pthread_mutex_init(&l->mu, NULL);
    sx_cond_init_monotonic(&l->cv);
    l->reload = true; /* the first load, once the database and the listener are up */
    l->reload_backoff_ms = l->min_ms;
    if (opt->metrics) {
        l->m_fetch_errors =
            sx_metrics_counter(opt->metrics, "sextant_snapshot_fetch_errors_total",
                               "Snapshot fetches that failed (each is retried)", NULL);
        l->m_stale = sx_metrics_gauge(opt->metrics, "sextant_snapshot_stale_groups",
                                      "Groups whose current snapshot in the database this "
                                      "replica was found not to serve yet",
                                      NULL);
        sx_metric_set(l->m_stale, NULL, 0);
    }
    if (opt->link && pg_link_watch(opt->link, on_link_up, l) != 0)
        SX_WARN(COMPONENT, "too many watchers of the database link: failed fetches wait out "
                           "their back-off");
    int rc = pg_listener_subscribe(opt->listener, SNAP_NOTIFY_CHANNEL, on_snapshot_notify,
                                   on_snapshot_resync, l, err);
    if (rc != 0) {
        snap_loader_destroy(l);
        return rc;
    }
    *out = l;
    return 0;
}

int snap_loader_subscribe(snap_loader *l, const char *channel, snap_loader_notify_fn on_notify,
                          snap_loader_resync_fn on_resync, void *ctx, sx_err *err)
{
    if (on_notify == NULL)
        return sx_err_set(err, SX_EINVAL, "subscription needs a notification callback");
    sub *s = sx_calloc(1, sizeof(*s));
    *s = (sub){.loader = l,
               .channel = sx_strdup(channel),
               .on_notify = on_notify,
               .on_resync = on_resync,
               .ctx = ctx};
    int rc = pg_listener_subscribe(l->o.listener, channel, on_sub_notify,
                                   on_resync ? on_sub_resync : NULL, s, err);
    if (rc != 0) {
        sx_free(s->channel);
        sx_free(s);
        return rc;
    }
    pthread_mutex_lock(&l->mu);
    l->subs = sx_realloc(l->subs, (l->nsubs + 1) * sizeof(*l->subs));
    l->subs[l->nsubs++] = s;
    pthread_mutex_unlock(&l->mu);
    return 0;
}

void snap_loader_destroy(snap_loader *l)
{
    if (l == NULL)
        return;
    if (l->o.link)
        pg_link_unwatch(l->o.link, on_link_up, l);
    for (size_t i = 0; i < l->nstale; i++)
        sx_free(l->stale[i].group);
    sx_free(l->stale);
    for (size_t i = 0; i < l->nfetches; i++)
        sx_free(l->fetches[i].group);
    sx_free(l->fetches);
    for (size_t i = 0; i < l->nsubs; i++) {
        sx_free(l->subs[i]->channel);
        sx_free(l->subs[i]->payload);
        sx_free(l->subs[i]);
    }
    sx_free(l->subs);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    sx_free(l);
}

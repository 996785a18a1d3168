/*
 * datastore.c — creates and supervises the storage components (see datastore.h).
 *
 * Two worker threads do the waiting so that start() never blocks: the database
 * watcher pings PostgreSQL and checks for pending migrations with back-off, and the
 * snapshot loader waits for the database and the listener before loading every
 * group's latest snapshot. The listener is subscribed before the first load, so a
 * snapshot committed while loading is either in the load or announced by NOTIFY.
 */
#include "server/datastore.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/events.h"
#include "server/events_feed.h"
#include "server/fleet.h"
#include "server/rollout/driver.h"
#include "server/nodes/status.h"
#include "server/server.h"
#include "server/snapshot/store.h"
#include "storage/migrate.h"
#include "storage/pg_listener.h"
#include "storage/pg_pool.h"
#include "storage/redis_cache.h"
#include "storage/repo_snapshots.h"

#define WATCH_INTERVAL_MS 5000
#define BACKOFF_MIN_MS    100
#define BACKOFF_MAX_MS    5000

typedef struct datastore {
    struct sx_server *srv; /* borrowed */
    pthread_t db_thread;   /* database watcher */
    pthread_t snap_thread; /* snapshot loader */
    bool db_started;
    bool snap_started;
    atomic_bool db_ready;     /* the database watcher's verdict */
    fleet_monitor *fleet;     /* the sextant_proxies gauge (server/fleet.h) */
    rollout_driver *rollouts; /* moves deployments forward (server/rollout/driver.h) */
} datastore;

/* ------------------------------------------------------------------ database */

static void *db_watch(void *arg)
{
    datastore *d = arg;
    struct sx_server *srv = d->srv;
    int backoff = BACKOFF_MIN_MS;
    char last[SX_ERR_MESSAGE_MAX] = "";
    for (;;) {
        sx_err err;
        sx_err_clear(&err);
        int pending = 0;
        int rc = pg_pool_ping(srv->db, &err);
        if (rc == 0 && (rc = migrate_status(srv->db, &pending, &err)) == 0 && pending > 0) {
            rc = sx_err_set(&err, SX_EUNAVAILABLE, "%d migration%s pending", pending,
                            pending == 1 ? " is" : "s are");
            sx_err_hint(&err, "Run `sextant migrate`.");
        }
        bool ok = rc == 0;
        bool was = atomic_exchange(&d->db_ready, ok);
        sup_set_ready(srv->sup, "database", ok);
        if (ok && !was) {
            sx_log(SX_LOG_INFO, "storage", "database ready");
            last[0] = '\0';
        } else if (!ok && strcmp(last, err.message) != 0) {
            /* One line per distinct problem, not one per retry. */
            sx_log_err(SX_LOG_WARN, "storage", &err);
            snprintf(last, sizeof(last), "%s", err.message);
        }
        int wait = ok ? WATCH_INTERVAL_MS : backoff;
        backoff =
            ok ? BACKOFF_MIN_MS : (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2);
        if (!sup_sleep(srv->sup, wait))
            return NULL;
    }
}

static int db_start(void *ctx, sx_err *err)
{
    datastore *d = ctx;
    if (pthread_create(&d->db_thread, NULL, db_watch, d) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not start the database watcher thread");
    d->db_started = true;
    return 0;
}

static void db_stop(void *ctx)
{
    datastore *d = ctx;
    if (d->db_started)
        pthread_join(d->db_thread, NULL);
    d->db_started = false;
}

/* ------------------------------------------------------------------ listener */

static int listener_start(void *ctx, sx_err *err)
{
    datastore *d = ctx;
    return pg_listener_start(d->srv->listener, err);
}

static void listener_stop(void *ctx)
{
    datastore *d = ctx;
    pg_listener_stop(d->srv->listener);
}

static bool listener_ready(void *ctx)
{
    datastore *d = ctx;
    return pg_listener_connected(d->srv->listener);
}

/* ------------------------------------------------------------------ snapshots */

static void *snap_load(void *arg)
{
    datastore *d = arg;
    struct sx_server *srv = d->srv;
    int backoff = BACKOFF_MIN_MS;
    for (;;) {
        /* Waiting for the dependencies is a cheap check, so it is polled quickly;
         * only failed loads back off. */
        int wait = BACKOFF_MIN_MS;
        if (atomic_load(&d->db_ready) && pg_listener_connected(srv->listener)) {
            sx_err err;
            sx_err_clear(&err);
            if (snap_store_load_all(srv->snapshots, &err) == 0) {
                sx_log_fields(SX_LOG_INFO, "snapshots",
                              json_pack("{s:I}", "groups",
                                        (json_int_t)snap_store_group_count(srv->snapshots)),
                              "snapshots loaded");
                sup_set_ready(srv->sup, "snapshots", true);
                return NULL;
            }
            sx_log_err(SX_LOG_WARN, "snapshots", &err);
            wait = backoff;
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        }
        if (!sup_sleep(srv->sup, wait))
            return NULL;
    }
}

static int snap_start(void *ctx, sx_err *err)
{
    datastore *d = ctx;
    if (pthread_create(&d->snap_thread, NULL, snap_load, d) != 0)
        return sx_err_set(err, SX_EINTERNAL, "could not start the snapshot loader thread");
    d->snap_started = true;
    return 0;
}

static void snap_stop(void *ctx)
{
    datastore *d = ctx;
    if (d->snap_started)
        pthread_join(d->snap_thread, NULL);
    d->snap_started = false;
}

/* ------------------------------------------------------------------ wiring */

static const sup_ops db_ops = {db_start, db_stop, NULL};
static const sup_ops listener_ops = {listener_start, listener_stop, listener_ready};
static const sup_ops snap_ops = {snap_start, snap_stop, NULL};

int datastore_register(struct sx_server *srv, sx_err *err)
{
    const sextant_config *cfg = srv->config;
    pg_pool_options po = {
        .url = cfg->database.url,
        .size = (int)cfg->database.pool_size,
        .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
        .statement_timeout_ms = (int)cfg->database.statement_timeout_ms,
        .application_name = cfg->replica.id,
        .metrics = srv->metrics,
    };
    int rc = pg_pool_create(&po, &srv->db, err);
    if (rc)
        return rc;
    redis_cache_options ro = {
        .url = cfg->redis.url,
        .timeout_ms = (int)cfg->redis.timeout_ms,
        .key_prefix = cfg->redis.key_prefix,
        .metrics = srv->metrics,
    };
    if ((rc = redis_cache_create(&ro, &srv->cache, err)) != 0)
        goto fail;
    pg_listener_options lo = {
        .url = cfg->database.url,
        .application_name = "sextant-listener",
        .connect_timeout_ms = (int)cfg->database.connect_timeout_ms,
        .metrics = srv->metrics,
    };
    if ((rc = pg_listener_create(&lo, &srv->listener, err)) != 0)
        goto fail;
    srv->snap_repo = snap_repo_create(srv->db, srv->cache);
    srv->snapshots = snap_store_create(srv->snap_repo, srv->metrics);
    if ((rc = pg_listener_subscribe(srv->listener, SNAP_NOTIFY_CHANNEL, snap_store_on_notify,
                                    snap_store_on_resync, srv->snapshots, err)) != 0)
        goto fail;

    node_status_options no = {
        .pool = srv->db,
        .replica_id = cfg->replica.id,
        .flush_interval_ms = (int)cfg->nodes.flush_interval_ms,
        .max_pending = (int)cfg->nodes.max_pending,
        .metrics = srv->metrics,
    };
    if ((rc = node_status_create(&no, &srv->nodes, err)) != 0)
        goto fail;

    events_feed_options eo = {
        .pool = srv->db,
        .keepalive_ms = (int)cfg->events.keepalive_ms,
        .max_streams = (int)cfg->events.max_streams,
        .metrics = srv->metrics,
    };
    if ((rc = events_feed_create(&eo, &srv->events, err)) != 0 ||
        (rc = pg_listener_subscribe(srv->listener, EVENTS_NOTIFY_CHANNEL, events_feed_on_notify,
                                    events_feed_on_resync, srv->events, err)) != 0)
        goto fail;

    datastore *d = sx_calloc(1, sizeof(*d));
    d->srv = srv;
    d->fleet = fleet_create(srv);
    d->rollouts = rollout_driver_create(srv);
    srv->datastore = d;
    if ((rc = sup_register(srv->sup, "database", &db_ops, d, err)) != 0 ||
        (rc = sup_register(srv->sup, "listener", &listener_ops, d, err)) != 0 ||
        (rc = sup_register(srv->sup, "snapshots", &snap_ops, d, err)) != 0 ||
        (rc = sup_register(srv->sup, "events", &events_feed_sup_ops, srv->events, err)) != 0 ||
        (rc = fleet_register(d->fleet, err)) != 0 ||
        (rc = rollout_driver_register(d->rollouts, err)) != 0)
        goto fail;
    return 0;
fail:
    datastore_release(srv);
    return rc;
}

void datastore_release(struct sx_server *srv)
{
    /* First: its last flush still needs the pool. */
    node_status_destroy(srv->nodes);
    srv->nodes = NULL;
    pg_listener_destroy(srv->listener);
    srv->listener = NULL;
    /* After the listener (its callbacks use the feed) and the HTTP server (its streams
     * hold subscriptions). */
    events_feed_destroy(srv->events);
    srv->events = NULL;
    snap_store_destroy(srv->snapshots);
    srv->snapshots = NULL;
    snap_repo_destroy(srv->snap_repo);
    srv->snap_repo = NULL;
    redis_cache_destroy(srv->cache);
    srv->cache = NULL;
    pg_pool_destroy(srv->db);
    srv->db = NULL;
    if (srv->datastore) {
        fleet_destroy(srv->datastore->fleet);
        rollout_driver_destroy(srv->datastore->rollouts);
    }
    sx_free(srv->datastore);
    srv->datastore = NULL;
}

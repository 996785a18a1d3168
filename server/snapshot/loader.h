/*
 * loader.h — the snapshot loader: the one worker that fetches snapshots (and runs the
 * other reloads NOTIFY asks for) off the LISTEN thread.
 *
 * The listener thread (storage/pg_listener.h) only enqueues: a notification on
 * SNAP_NOTIFY_CHANNEL becomes a pending fetch of (group, version), a resync becomes a
 * pending reload of every group, and a notification on a channel subscribed through
 * snap_loader_subscribe becomes a pending call of its callback. The worker thread takes
 * them one at a time, so a slow fetch delays the worker's other jobs but never the
 * listener, and no other channel's notifications wait for it.
 *
 * Pending work coalesces: one fetch per group, whose version is the newest announced
 * (an older one is never fetched after a newer one was asked for); one reload of
 * everything however many resyncs arrived; one call per subscription with the newest
 * payload (a resync of a subscription supersedes its notifications). The guarantees of
 * the store hold: versions only move forward (snap_store_refresh re-checks under the
 * store's lock), a failed fetch, reload or subscription call is retried with back-off
 * (the database link's bounds: 50 ms doubling to 1 s by default) until it succeeds or
 * newer work makes it moot, and a resync reloads every group. When the database link
 * reports a connection made again (storage/pg_link.h), every retry waiting out its
 * back-off runs at once, so a resync after the listener reconnects waits for a usable
 * connection rather than failing on the pool's back-off.
 *
 * Safety net: every check_interval the worker compares every group's current version in
 * the database (one query on proxy_groups) with the store, and fetches what it lacks,
 * which repairs a notification lost in transit or a change the retries above missed.
 * Groups found behind count in sextant_snapshot_stale_groups until the store catches up;
 * one behind for three intervals makes the component "freshness" not ready (/readyz,
 * not /readyz/xds: the replica still serves what it holds).
 *
 * Start-up is the first "reload everything": it waits until the database is ready
 * (options.database_ready) and the listener is connected, so that nothing committed
 * falls between the load and the LISTEN (pg_listener.h). The component "snapshots" is
 * ready once that load has succeeded (snap_store_loaded).
 *
 * Thread safety: subscribe before the component starts (main thread); the listener
 * callbacks and the component ops may run on any thread.
 */
#ifndef SX_SNAPSHOT_LOADER_H
#define SX_SNAPSHOT_LOADER_H

#include <stdbool.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "server/snapshot/store.h"
#include "server/supervisor.h"
#include "storage/pg_listener.h"

typedef struct snap_loader snap_loader;

typedef struct snap_loader_options {
    snap_store *store;     /* borrowed; required: where snapshots go */
    pg_listener *listener; /* borrowed; required: SNAP_NOTIFY_CHANNEL is subscribed on it */
    /* Whether the database can serve the first load (it answers, no migration pending);
     * polled every 100 ms until then. NULL: only the listener is waited for. */
    bool (*database_ready)(void *ctx);
    void *database_ctx;
    sx_metrics *metrics;       /* NULL allowed: sextant_snapshot_fetch_errors_total,
                                * sextant_snapshot_stale_groups */
    pg_link *link;             /* borrowed, NULL allowed: back-off bounds, and a connection made
                                * again ends every back-off; NULL: 50 ms to 1 s, timers only */
    int64_t check_interval_ms; /* the periodic check; 0 = 10 s; negative: none */
} snap_loader_options;

/* A subscription's callbacks through the loader: 0 when done; an error code makes the
 * loader call again after a back-off (unless newer work for it supersedes the call). */
typedef int (*snap_loader_notify_fn)(void *ctx, const char *channel, const char *payload);
typedef int (*snap_loader_resync_fn)(void *ctx);

/* Creates a stopped loader and subscribes it to SNAP_NOTIFY_CHANNEL on the listener.
 * SX_EINVAL without a store or listener, or as pg_listener_subscribe. *out is freed with
 * snap_loader_destroy, after the listener has been stopped (its callbacks enqueue here),
 * and before the link. */
int snap_loader_create(const snap_loader_options *opt, snap_loader **out, sx_err *err) SX_MUSTCHECK;

/* Drops pending work and frees the loader; its thread must have stopped. NULL allowed. */
void snap_loader_destroy(snap_loader *l);

/* The component "snapshots", for sup_register with sup_thread_ops: start runs the
 * worker thread; ready once every group's snapshot has been loaded once; stop wakes
 * the worker, lets it finish the job in hand and joins it. */
sup_thread *snap_loader_component(snap_loader *l);

/* Whether no group has been known to be behind the database for three check intervals
 * (the component "freshness" of /readyz), and how many groups are known to be behind
 * (the gauge). Any thread. */
bool snap_loader_fresh(snap_loader *l);
size_t snap_loader_stale_groups(snap_loader *l);

/*
 * Subscribes to channel on the loader's listener, with on_notify and on_resync (may be
 * NULL) called on the loader's worker instead of the listener thread; a call that
 * returns an error is made again after a back-off. For channels whose
 * notification means "reload": a notification not yet delivered is replaced by a newer
 * one (only the newest payload is delivered), and a pending resync swallows pending
 * notifications. ctx must stay valid until the loader's component has stopped. Call
 * before the component starts. Errors as pg_listener_subscribe.
 */
int snap_loader_subscribe(snap_loader *l, const char *channel, snap_loader_notify_fn on_notify,
                          snap_loader_resync_fn on_resync, void *ctx, sx_err *err) SX_MUSTCHECK;

#endif

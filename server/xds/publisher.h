/*
 * publisher.h — turns each new snapshot of the store into what the streams send, once
 * per (group, version), and hands it to the fan-out.
 *
 * It watches the snapshot store. For every new (group, version) it decodes the
 * ConfigSnapshot, builds the Envoy resources (tr_resources_build) and their shared
 * wire bytes (xds_wire_res), keeps the result as the group's latest xds_wire_snap,
 * and calls the fan-out callback with it, which pushes it to the group's streams.
 * The work happens on the publisher's own thread, never on the store's (the LISTEN
 * thread): a build of 100,000 endpoints must not hold up notifications. Versions that
 * arrive while a build runs are coalesced per group: only the newest is built.
 *
 * When the Envoy resources of a version cannot be built, the failure is logged and
 * counted, gateway.control.v1 streams still receive the version (its IR is valid),
 * and ADS streams keep the last resources that could be built.
 *
 * Thread safety: all functions are thread-safe; the fan-out callback runs on the
 * publisher thread.
 */
#ifndef SX_XDS_PUBLISHER_H
#define SX_XDS_PUBLISHER_H

#include "server/base/err.h"
#include "server/snapshot/store.h"
#include "server/xds/metrics.h"
#include "server/xds/wire.h"

typedef struct xds_pub xds_pub;

/* Called with each newly built snapshot (borrowed: take a reference to keep it). */
typedef void (*xds_pub_fanout_fn)(void *ctx, xds_wire_snap *snap);

typedef struct xds_pub_options {
    snap_store *store;        /* borrowed; must outlive the publisher */
    xds_metrics *metrics;     /* borrowed; NULL allowed */
    xds_pub_fanout_fn fanout; /* NULL allowed (nothing is pushed) */
    void *ctx;
} xds_pub_options;

/* Creates the publisher and starts watching the store at once, so that snapshots
 * loaded before xds_pub_start are queued, not missed. Never NULL. */
xds_pub *xds_pub_create(const xds_pub_options *opt);
/* Starts the publisher thread. Returns 0 or SX_EINTERNAL. */
int xds_pub_start(xds_pub *p, sx_err *err) SX_MUSTCHECK;
/* Stops watching the store and joins the thread (pending builds are dropped). */
void xds_pub_stop(xds_pub *p);
/* Frees the publisher (stopped or never started) and the snapshots it holds. NULL ok. */
void xds_pub_destroy(xds_pub *p);

/* The latest built snapshot of group with a reference (release with
 * xds_wire_snap_unref), or NULL. When the store has a snapshot of the group that was
 * not built yet, a build is queued and its fan-out will follow. */
xds_wire_snap *xds_pub_get(xds_pub *p, const char *group);

/* Built snapshot (group, version) with a reference, whether or not it is the group's
 * latest (a rollout pins nodes to staged and baseline versions): the latest when it is
 * that version, else a version built earlier, else fetched from the store and built
 * synchronously now (blocking on the database: not for gRPC threads) and kept until
 * xds_pub_prune_versions drops it. NULL with err set when it cannot be read or built. */
xds_wire_snap *xds_pub_get_version(xds_pub *p, const char *group, long long version, sx_err *err);
/* Drops the kept non-latest versions for which keep(ctx, group, version) is false. */
void xds_pub_prune_versions(xds_pub *p, bool (*keep)(void *ctx, const char *group, long long v),
                            void *ctx);

/* Builds one snapshot entry synchronously (no publishing): decode, translate, encode.
 * prev (NULL allowed) supplies the ADS resources to keep when the translation fails;
 * published_ms is the monotonic time the version became known. Returns 0 and *out,
 * or a negative code when the entry cannot even be decoded. */
int xds_pub_build(snap_entry *e, const xds_wire_snap *prev, int64_t published_ms,
                  xds_metrics *metrics, xds_wire_snap **out, sx_err *err) SX_MUSTCHECK;

#endif

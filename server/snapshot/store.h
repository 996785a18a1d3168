/*
 * store.h — this replica's copy of every proxy group's current snapshot.
 *
 * PostgreSQL holds the truth; the store holds, per group, the newest snapshot this
 * replica knows: its version, checksum and encoded bytes, shared read-only by every
 * stream that serves it (snap_entry is reference-counted and immutable). It is filled
 * at start-up by snap_store_load_all, then kept current by NOTIFY: every write path
 * NOTIFYs SNAP_NOTIFY_CHANNEL with {"group":…,"version":…[,"id":…]} after its commit,
 * and the snapshot loader (server/snapshot/loader.h) fetches that snapshot with
 * snap_store_refresh on its own thread (Redis first — the entry the writer put before
 * its commit when the payload names the row id — PostgreSQL on a miss). When the
 * listener had to reconnect, the loader reloads everything, because notifications sent
 * while it was away are lost.
 *
 * Versions only move forward: an entry is replaced only by a higher version of its
 * group, so a late or duplicated notification never takes a group back in time.
 * Watchers (the xDS streams' publisher) are called after each replacement, outside
 * the store's lock, with a reference they must take themselves if they keep it.
 *
 * Thread safety: all functions are thread-safe.
 */
#ifndef SX_SNAPSHOT_STORE_H
#define SX_SNAPSHOT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "server/base/err.h"
#include "server/base/metrics.h"
#include "storage/repo_snapshots.h"

/* The NOTIFY channel announcing a committed snapshot. */
#define SNAP_NOTIFY_CHANNEL "sextant_snapshots"

/* One group's snapshot; immutable once published, shared by reference count. */
typedef struct snap_entry {
    atomic_int refs;    /* use snap_entry_ref/unref */
    char *group;        /* proxy group */
    long long version;  /* per-group version, from 1 */
    char *checksum;     /* sha256 hex of the canonical IR JSON */
    uint8_t *encoded;   /* the encoded gateway.control.v1.ConfigSnapshot */
    size_t encoded_len; /* bytes of encoded */
} snap_entry;

/* Takes a reference; returns e. */
snap_entry *snap_entry_ref(snap_entry *e);
/* Drops a reference, freeing the entry with the last one. NULL allowed. */
void snap_entry_unref(snap_entry *e);

typedef struct snap_store snap_store;
typedef void (*snap_store_watch_fn)(void *ctx, snap_entry *e);

/* Creates an empty store reading through repo (borrowed; must outlive the store).
 * metrics may be NULL. Never NULL. */
snap_store *snap_store_create(snap_repo *repo, sx_metrics *metrics);
/* Drops every entry and frees the store. Watchers must be gone. NULL allowed. */
void snap_store_destroy(snap_store *s);

/* Loads the newest snapshot of every group (newer versions replace what is held),
 * then marks the store loaded. Fails with the repository's error, keeping what it
 * held before. */
int snap_store_load_all(snap_store *s, sx_err *err) SX_MUSTCHECK;
/* Whether a load_all has succeeded at least once (readiness). */
bool snap_store_loaded(snap_store *s);

/* Fetches (group, version), announced with row id (0 = not named; see
 * snap_repo_get_announced), and publishes it when newer than what is held. */
int snap_store_refresh(snap_store *s, const char *group, long long version, long long id,
                       sx_err *err) SX_MUSTCHECK;

/* The current entry of group with a reference taken (release with snap_entry_unref),
 * or NULL when the group has no snapshot. */
snap_entry *snap_store_get(snap_store *s, const char *group);
/* Snapshot (group, version) with a reference, whether or not it is the group's current
 * one (a rollout's staged or baseline snapshot): the held entry when it is that version,
 * else read through the repository (Redis, then PostgreSQL) without publishing it. NULL
 * with err set when it cannot be read. Blocks on the database: not for gRPC threads. */
snap_entry *snap_store_fetch(snap_store *s, const char *group, long long version, sx_err *err);
/* The groups whose current version in the database is newer than the one held (one
 * query, no snapshot read): *items in a (name and the database's latest_version), NULL
 * and 0 when the store is up to date. Fails with the repository's error. */
int snap_store_behind(snap_store *s, sx_arena *a, snap_group **items, size_t *count,
                      sx_err *err) SX_MUSTCHECK;
/* Number of groups held. */
size_t snap_store_group_count(snap_store *s);

/* Calls fn(ctx, entry) after every replacement, from the thread that published it.
 * Returns a watch id for snap_store_unwatch. */
int snap_store_watch(snap_store *s, snap_store_watch_fn fn, void *ctx);
void snap_store_unwatch(snap_store *s, int id);

/* The NOTIFY payload for (group, version) and the snapshot's row id (0 = leave it out):
 * a new string the caller frees. */
char *snap_store_notify_payload(const char *group, long long version, long long id);

#endif

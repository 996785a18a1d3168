/*
 * watchmap.h — watchable maps: one typed in-process map per Kubernetes kind, keyed by
 * "namespace/name" (plain "name" for cluster-scoped objects), whose values are the objects
 * as the API server sent them, minus metadata.managedFields.
 *
 * The publisher (the Kubernetes client) only stores and deletes; it keeps no record of
 * what it published, because storing a value deep-equal (json_equal) to the one already
 * held is a no-op that notifies nobody. Readers either load a map's state whenever they
 * like, or subscribe: the first read of a subscription returns the current state at once,
 * and each later read returns when the map has changed since the previous read, with the
 * newest full state and one entry per key that changed in between. A slow subscriber
 * therefore never meets a backlog: however many mutations happened, it reads one snapshot.
 *
 * Maps live in a table, and every map of a table shares the table's lock, so that
 * wm_table_load_all returns the states of all maps as they were at one instant (what a
 * translator needs so that a route is never seen without the Service it was stored with),
 * and wm_table_wait lets one thread wait for a change in any of them.
 *
 * Values are immutable once stored: the map, every state and every snapshot share them by
 * reference count (jansson's counts are atomic), and nobody may modify them. States and
 * snapshots are immutable too and may be read from any thread.
 *
 * Thread safety: every function may be called from any thread, except that wm_table_add
 * must not race with wm_table_destroy, and a subscription must not be closed while
 * another thread waits on it (cancel it, let the waiter return, then close it).
 */
#ifndef SX_K8S_WATCHMAP_H
#define SX_K8S_WATCHMAP_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/base/err.h"

typedef struct wm_table wm_table;
typedef struct wm_map wm_map;
typedef struct wm_sub wm_sub;

/* A map's content at one generation: keys sorted (strcmp), values[i] is the value of
 * keys[i]. Immutable; obtained with a reference, released with wm_state_release. The
 * arrays, keys and values belong to the state: a caller that keeps a value past the
 * release takes its own reference (json_incref). */
typedef struct wm_state {
    const char *kind;    /* the map's kind */
    uint64_t generation; /* the map's generation this state shows (see wm_map_generation) */
    size_t n;            /* number of entries */
    const char *const *keys;
    json_t *const *values;
} wm_state;

/* One key that changed between two reads of a subscription. */
typedef struct wm_update {
    const char *key; /* owned by the snapshot */
    json_t *value;   /* the newest value (borrowed from the snapshot), NULL when deleted */
} wm_update;

/* What one read of a subscription returns; free with wm_snapshot_free. */
typedef struct wm_snapshot {
    wm_state *state; /* the newest full state (a reference the snapshot holds) */
    size_t nupdates; /* keys changed since the previous read, sorted by key; on the first
                        read, only changes made after wm_subscribe (what the map held at
                        subscription time is in state, not in updates) */
    wm_update *updates;
} wm_snapshot;

/* All maps of a table at one instant; free with wm_table_state_free. */
typedef struct wm_table_state {
    uint64_t generation; /* the table's generation (see wm_table_generation) */
    size_t nmaps;
    wm_state **maps; /* in the order the maps were added; each a reference held here */
} wm_table_state;

/* ---------------------------------------------------------------- tables and maps */

/* A new empty table; never NULL. */
wm_table *wm_table_create(void);
/* Frees the table, its maps and their values. Every subscription must have been closed;
 * states and snapshots may outlive the table. NULL allowed. */
void wm_table_destroy(wm_table *t);
/* The map of kind (copied), created empty when the table has none yet; owned by the
 * table and valid until wm_table_destroy. Never NULL. */
wm_map *wm_table_add(wm_table *t, const char *kind);
/* The map of kind, or NULL when none was added. */
wm_map *wm_table_find(wm_table *t, const char *kind);
/* The kind a map was created for. */
const char *wm_map_kind(const wm_map *m);

/* ---------------------------------------------------------------- writing */

/* Stores value under key. Takes ownership of value (one reference, also on failure);
 * removes metadata.managedFields from it first, so the caller must not share it with code
 * that still reads it. A value json_equal to the one held changes nothing and notifies
 * nobody. Returns 1 when the map changed, 0 for a no-op, SX_EINVAL (nothing changed)
 * when key is empty or value is not an object. */
int wm_store(wm_map *m, const char *key, json_t *value);
/* Removes key. Returns 1 when it was there, 0 when not (a no-op). */
int wm_delete(wm_map *m, const char *key);
/* Makes the map hold exactly items, an object of key → value (after a relist): keys
 * absent from items are deleted, the others stored as by wm_store, all under one lock
 * so that readers see the old or the new content, never a mix. Takes ownership of items
 * (also on failure). Returns the number of keys that changed (0: a no-op), or SX_EINVAL
 * (nothing changed) when items is not an object or holds a value that is not one. */
int wm_replace(wm_map *m, json_t *items);

/* ---------------------------------------------------------------- reading */

/* The value under key with a new reference (json_decref it), or NULL. */
json_t *wm_get(wm_map *m, const char *key);
/* Number of entries. */
size_t wm_size(wm_map *m);
/* Counts the map's changes: 0 while nothing was ever stored, one more for each store,
 * delete or replace that changed something. */
uint64_t wm_map_generation(wm_map *m);
/* The current content, as a reference to release with wm_state_release. Loading twice
 * without a change in between returns the same state. Never NULL. */
wm_state *wm_map_load_all(wm_map *m);
/* A new reference to s (returned for convenience). */
wm_state *wm_state_retain(wm_state *s);
/* Drops a reference; NULL allowed. */
void wm_state_release(wm_state *s);
/* The index of key in s, or -1 (binary search). */
long wm_state_find(const wm_state *s, const char *key);

/* The table's generation: the sum of its maps' generations. */
uint64_t wm_table_generation(wm_table *t);
/* The states of every map of the table at one instant; never NULL. */
wm_table_state *wm_table_load_all(wm_table *t);
/* The state of kind in ts (borrowed), or NULL. */
const wm_state *wm_table_state_find(const wm_table_state *ts, const char *kind);
/* Frees ts and its references; NULL allowed. */
void wm_table_state_free(wm_table_state *ts);
/* Waits until the table's generation differs from seen, timeout_ms passes (a negative
 * timeout waits without limit) or wm_table_wake is called; returns the generation then.
 * The caller decides what the return means by comparing it with seen. */
uint64_t wm_table_wait(wm_table *t, uint64_t seen, int64_t timeout_ms);
/* Makes every wm_table_wait in progress return now (for a caller that stops). */
void wm_table_wake(wm_table *t);

/* ---------------------------------------------------------------- subscriptions */

/* A new subscription to m; its first wm_sub_next returns at once. Close it with
 * wm_sub_close. Never NULL. */
wm_sub *wm_subscribe(wm_map *m);
/*
 * Reads the subscription: returns 0 with *out (free it with wm_snapshot_free) at once on
 * the first read, and later as soon as the map has changed since the previous read.
 * Waits at most timeout_ms (negative: without limit; 0: only looks). SX_ETIMEOUT when
 * nothing changed in time, SX_EUNAVAILABLE when the subscription was cancelled; *out is
 * NULL then.
 */
int wm_sub_next(wm_sub *s, int64_t timeout_ms, wm_snapshot **out) SX_MUSTCHECK;
/* Makes a wm_sub_next in progress, and every later one, return SX_EUNAVAILABLE. Any
 * thread. */
void wm_sub_cancel(wm_sub *s);
/* Ends the subscription and frees it; no thread may be waiting on it. NULL allowed. */
void wm_sub_close(wm_sub *s);
/* Frees a snapshot; NULL allowed. */
void wm_snapshot_free(wm_snapshot *snap);

/* ---------------------------------------------------------------- keys */

/* The key of a Kubernetes object: "namespace/name", or "name" when metadata.namespace
 * is absent or empty (cluster-scoped). A new string (free it), or NULL when
 * metadata.name is missing or empty. */
char *wm_key_of(const json_t *object);

#endif

/*
 * writer.h — the snapshot writer: the one way a proxy group's next snapshot is written
 * (compose, checksum, encode, store, cache, NOTIFY), for every source of configuration.
 *
 * The REST write paths (server/apply.c) call it today; the Kubernetes translator
 * (Gateway API objects -> IR) calls the same functions, so every snapshot is versioned,
 * stored, cached and announced the same way whatever produced it.
 *
 * A write happens inside the caller's transaction. snap_writer_tx runs that
 * transaction: it gives the body a writer, reruns the body after a serialization
 * failure, and settles the cache afterwards. Snapshot versions come from
 * snap_repo_reserve_version, which locks the group's row until the transaction ends,
 * so the version a snapshot's id names is the version it is stored under.
 *
 * Cache before NOTIFY: a direct (not staged) snapshot is put in Redis inside the
 * transaction, before the COMMIT that delivers its NOTIFY, so a replica hearing the
 * NOTIFY finds it in Redis instead of reading PostgreSQL. The entry is keyed by the
 * snapshot's row id (a sequence value, never handed out twice, even by a transaction
 * that rolled back) and the NOTIFY names that id; the reader accepts only the entry of
 * the id it was told about. A transaction that fails after the SET can therefore leave
 * nothing behind that a reader would take for the snapshot that later gets the same
 * version number: see snap_repo_cache_stage. Redis trouble costs the write nothing (the
 * cache skips calls while Redis is down, bounded by its timeout otherwise).
 *
 * Thread safety: a writer belongs to one transaction on one thread.
 */
#ifndef SX_SNAPSHOT_WRITER_H
#define SX_SNAPSHOT_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/base/hash.h"
#include "server/snapshot/compose.h"
#include "storage/pg_pool.h"
#include "storage/repo_snapshots.h"

typedef struct snap_writer snap_writer;

/* One snapshot to write; pointers borrowed for the call. */
typedef struct snap_write {
    const char *group;            /* required */
    const snap_compose_input *in; /* the group's configs (or one whole snapshot) */
    size_t n;                     /* entries of in */
    const snap_source *sources;   /* config versions it is built from; NULL = none */
    size_t nsources;              /* entries of sources */
    const char *reason;           /* NULL = "" */
    const char *author;           /* required */
    const char *staged_for;       /* NULL: becomes current; else the deployment it is staged
                                     for (not current, not announced, not cached here) */
} snap_write;

/* The body of a writing transaction: runs on c with the writer w; may be rerun. */
typedef int (*snap_writer_fn)(pg_conn *c, snap_writer *w, void *ctx, sx_err *err);

/*
 * Runs fn in one transaction on pool (pg_tx: rerun after a serialization failure), with
 * a writer that caches through snaps (NULL: no cache). After a commit, every snapshot
 * written is settled in the cache (snap_repo_cache_settle); after a failure, the cache
 * entries the attempts put are dropped. Returns fn's or the commit's code.
 */
int snap_writer_tx(pg_pool *pool, snap_repo *snaps, sx_arena *a, snap_writer_fn fn, void *ctx,
                   sx_err *err) SX_MUSTCHECK;

/* A writer for a transaction the caller runs itself (rollouts), allocated in a; it
 * caches nothing, so the caller puts *written in the cache after its commit. */
snap_writer *snap_writer_plain(sx_arena *a);

/*
 * Writes w->group's next snapshot on c: composes the inputs, names the snapshot
 * "<group>:<version>", checks and encodes it, and inserts it. A direct write then puts
 * it in the cache (snap_writer_tx's writers), NOTIFYs it and releases the pins finished
 * deployments left on the group (NOTIFYing those). When the content equals the group's
 * current snapshot nothing is written and *written is NULL. SX_EVALIDATION with verrs
 * (paths start at groups["<group>"]) when the composed snapshot fails the codec;
 * database errors otherwise. *written lives in the writer's arena.
 */
int snap_writer_write(snap_writer *w, pg_conn *c, const snap_write *req, sx_fielderrs *verrs,
                      snap_record **written, sx_err *err) SX_MUSTCHECK;

/* A direct write of a group that no config change locked yet (a whole snapshot
 * published, a group rolled back, later a Kubernetes build): locks req->group, refuses
 * with SX_ECONFLICT (snap_writer_refuse_held) when a deployment holds it, sets *before
 * (NULL allowed) to its current version, then snap_writer_write. */
int snap_writer_publish(snap_writer *w, pg_conn *c, const snap_write *req, long long *before,
                        sx_fielderrs *verrs, snap_record **written, sx_err *err) SX_MUSTCHECK;

/* Makes the staged (group, version) the group's current snapshot on c and NOTIFYs it;
 * nothing when version is not positive or already current. */
int snap_writer_promote(pg_conn *c, const char *group, long long version, sx_arena *a,
                        sx_err *err) SX_MUSTCHECK;

/* Locks the rows of groups (sorted by name, so that two writers never wait on each
 * other in a cycle) for the rest of c's transaction. */
int snap_writer_lock_groups(pg_conn *c, const char *const *groups, size_t n,
                            sx_err *err) SX_MUSTCHECK;

/* A deployment in progress holds its groups: a direct change of one of them would move
 * nodes the deployment pins, or be overwritten when it completes. SX_ECONFLICT naming the
 * deployment when one of groups is held; 0 otherwise. */
int snap_writer_refuse_held(pg_conn *c, sx_arena *a, const char *const *groups, size_t n,
                            sx_err *err) SX_MUSTCHECK;

/* sha256 of composed content, leaving out its id and generation time, so that composing
 * the same configs twice gives the same checksum. */
void snap_writer_checksum(const json_t *composed, char out[SX_SHA256_HEX_LEN + 1]);

/* Composes in[0..n) for a dry run named "<group>:dry-run" and checks it with the codec,
 * appending problems (paths start at groups["<group>"]) to verrs. Returns the composed
 * JSON, owned by a. */
json_t *snap_writer_dry_run(sx_arena *a, const char *group, const snap_compose_input *in, size_t n,
                            sx_fielderrs *verrs);

#endif

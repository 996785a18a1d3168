/*
 * repo_snapshots.h — immutable per-group snapshots (tables proxy_groups, snapshots),
 * read through the Redis cache.
 *
 * Versions of a group are 1, 2, 3, ... without gaps: snap_repo_insert increments
 * proxy_groups.latest_snapshot_version under that row's lock, which it holds until the
 * caller's transaction ends, so concurrent inserts for one group serialise and a
 * rolled-back insert gives its number back.
 *
 * Current and staged: the snapshot a group's nodes receive is its current one
 * (proxy_groups.current_snapshot_version), which an insert moves to the new version —
 * unless the insert is staged by a deployment: then the version is taken but only the
 * nodes the deployment pins to it receive it, until snap_repo_set_current promotes it.
 * "Latest" in the names below means current.
 *
 * Cache: Redis keys (under the cache's prefix) "snapshot:<group>:<version>" hold the
 * metadata and the encoded bytes (not the IR) for a day, and "snapshot:<group>:latest"
 * holds the newest version for a minute. Write path: insert inside the transaction,
 * snap_repo_cache_stage (an entry keyed by the row id), commit, then
 * snap_repo_cache_settle, which renames that entry to the version key — so a version
 * key never holds a snapshot that PostgreSQL does not (snap_repo_cache_put, after the
 * commit, serves writers that stage nothing). Reads try Redis first; on a miss,
 * or when Redis is down, they read PostgreSQL and refill Redis. A version key is
 * immutable and always right; the latest key can lag a concurrent write by at most
 * its TTL (snap_repo_load_latest_all and the IR reads take "latest" from PostgreSQL).
 * Redis trouble is never an error: the cache degrades to PostgreSQL.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h); copy the
 * encoded bytes into a longer-lived, shared object to keep them. Thread safety: a
 * snap_repo may be used from any number of threads.
 */
#ifndef SX_STORAGE_REPO_SNAPSHOTS_H
#define SX_STORAGE_REPO_SNAPSHOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"
#include "storage/redis_cache.h"

typedef struct snap_repo snap_repo;

/* One config version a snapshot was built from. */
typedef struct snap_source {
    char *config_id;
    int version;
} snap_source;

typedef struct snap_record {
    long long id;           /* snapshots.id (global, for GET /snapshots/{id}) */
    char *group;            /* proxy group */
    long long version;      /* per-group version, from 1 */
    json_t *ir;             /* the IR; NULL unless read with SNAP_REPO_WITH_IR or inserted */
    unsigned char *encoded; /* encoded ConfigSnapshot; NULL in list results */
    size_t encoded_len;     /* byte length (also set in list results) */
    char *checksum;         /* sha256 hex */
    snap_source *sources;   /* config versions it was built from; NULL when none */
    size_t source_count;
    char *reason;        /* why it was built */
    char *created_by;    /* user or component */
    char *created_at;    /* RFC 3339 UTC */
    char *deployment_id; /* the deployment that staged it; NULL when published directly */
} snap_record;

/* Input of snap_repo_insert; the pointers are borrowed for the call. */
typedef struct snap_new {
    const char *group;          /* required, 1..253 bytes */
    const json_t *ir;           /* required */
    const char *ir_text;        /* ir as compact JSON text, when the caller has it; or NULL */
    const void *encoded;        /* may be NULL when encoded_len is 0 */
    size_t encoded_len;         /* bytes of encoded */
    const char *checksum;       /* sha256 hex; NULL = sha256 of the canonical IR JSON */
    const snap_source *sources; /* may be NULL when source_count is 0 */
    size_t source_count;
    const char *reason;     /* NULL = "" */
    const char *created_by; /* required */
    /* NULL: the snapshot becomes the group's current one. Else staged for that
     * deployment: it takes the next version, and only nodes pinned to it receive it. */
    const char *deployment_id;
} snap_new;

typedef struct snap_group {
    char *name;
    long long latest_version;
    char *updated_at; /* when the latest snapshot was written */
} snap_group;

/* A page of snap_group: ordered by name. */
REPO_LIST(snap_group_list, snap_group);

/* A page of snap_record: newest first; ir and encoded are NULL. */
REPO_LIST(snap_list, snap_record);

/* Flag for reads: also return the IR (always read from PostgreSQL). */
#define SNAP_REPO_WITH_IR 0x1u

/* Creates the repository over a pool and a cache (NULL = no cache); both are borrowed
 * and must outlive it. Never fails; free with snap_repo_destroy. */
snap_repo *snap_repo_create(pg_pool *pool, redis_cache *cache);
/* Frees the repository (not the pool or cache). NULL allowed. */
void snap_repo_destroy(snap_repo *r);

/* Inserts the next snapshot of in->group on c, normally inside the caller's
 * transaction (the group's row stays locked until it ends), creating the group on
 * first use. *out (NULL allowed) is the stored snapshot with its new id and version.
 * SX_EINVAL for bad input; database errors otherwise. Call snap_repo_cache_put with
 * *out after the transaction commits. */
int snap_repo_insert(pg_conn *c, const snap_new *in, sx_arena *a, snap_record **out,
                     sx_err *err) SX_MUSTCHECK;

/* Locks group's row for the rest of c's transaction (creating the group on first use)
 * and sets *next to the version the next snap_repo_insert on c will get, so a caller
 * can name that version inside the snapshot before encoding it. Rolling back, or
 * committing without an insert, gives the number back. */
int snap_repo_reserve_version(pg_conn *c, const char *group, long long *next,
                              sx_err *err) SX_MUSTCHECK;
/* The checksum of (group, version) read on c (inside the caller's transaction, without
 * the cache), into a; SX_ENOTFOUND when there is no such snapshot. */
int snap_repo_checksum(pg_conn *c, const char *group, long long version, sx_arena *a,
                       char **checksum, sx_err *err) SX_MUSTCHECK;
/* The current version of group read on c (0 when the group has none). */
int snap_repo_current_version(pg_conn *c, const char *group, long long *version,
                              sx_err *err) SX_MUSTCHECK;
/* The IR of (group, version) read on c; SX_ENOTFOUND. */
int snap_repo_ir_on(pg_conn *c, const char *group, long long version, sx_arena *a, json_t **ir,
                    sx_err *err) SX_MUSTCHECK;
/* Makes (group, version) the group's current snapshot on c; SX_ENOTFOUND when there is
 * no such snapshot. Call snap_repo_cache_current after the commit. */
int snap_repo_set_current(pg_conn *c, const char *group, long long version, sx_arena *a,
                          sx_err *err) SX_MUSTCHECK;
/* Points the cache's latest key of group at version after a commit that made it current. */
void snap_repo_cache_current(snap_repo *r, const char *group, long long version);
/* Writes a committed snapshot to the cache (version key, and the latest key when it
 * is newer than what the cache holds and not staged). Never fails: skipped when Redis is down. */
void snap_repo_cache_put(snap_repo *r, const snap_record *s);

/*
 * Puts s, inserted by the caller's still-open transaction, in the cache before the
 * COMMIT whose NOTIFY names it, so that replicas hearing the NOTIFY read it from Redis.
 * The key carries the row id ("snapshot:<group>:<version>#<id>", ten minutes' TTL), not
 * only the version: the transaction can still fail, and the group's next writer then
 * reuses the version number, but never the id (a sequence value, not reused even when
 * its transaction rolls back). Only a NOTIFY of the committed row names its id
 * (snap_repo_get_announced checks it), and version keys hold committed rows only, so an
 * entry a failed transaction leaves behind (its deletion failed too) is never read as
 * another snapshot; it expires. Never fails: skipped when Redis is down.
 */
void snap_repo_cache_stage(snap_repo *r, const snap_record *s);
/* After the transaction of a snap_repo_cache_stage: committed, the entry becomes the
 * version key (renamed in Redis; the bytes are not sent again) and the latest key is
 * bumped unless s is staged by a deployment; not committed, the entry is deleted. Never
 * fails. r NULL allowed. */
void snap_repo_cache_settle(snap_repo *r, const snap_record *s, bool committed);
/* (group, version) as a NOTIFY naming row id announced it: the entry
 * snap_repo_cache_stage put when the cache holds it for that id, else as snap_repo_get
 * (flags 0). id 0 = not named. */
int snap_repo_get_announced(snap_repo *r, const char *group, long long version, long long id,
                            sx_arena *a, snap_record **out, sx_err *err) SX_MUSTCHECK;

/* The snapshot (group, version): from the cache, else PostgreSQL (then cached).
 * SX_ENOTFOUND when there is no such snapshot. */
int snap_repo_get(snap_repo *r, const char *group, long long version, unsigned flags, sx_arena *a,
                  snap_record **out, sx_err *err) SX_MUSTCHECK;

/* The newest snapshot of group; SX_ENOTFOUND when the group has none. */
int snap_repo_get_latest(snap_repo *r, const char *group, unsigned flags, sx_arena *a,
                         snap_record **out, sx_err *err) SX_MUSTCHECK;

/* The snapshot with that global id, IR included (PostgreSQL); SX_ENOTFOUND. */
int snap_repo_get_by_id(snap_repo *r, long long id, sx_arena *a, snap_record **out,
                        sx_err *err) SX_MUSTCHECK;

/* One page of the groups that have snapshots, with their latest version. */
int snap_repo_list_groups(snap_repo *r, int limit, const char *cursor, sx_arena *a,
                          snap_group_list *out, sx_err *err) SX_MUSTCHECK;

/* One page of a group's snapshots, newest first, metadata only (PostgreSQL). An
 * unknown group gives an empty list. */
int snap_repo_list_versions(snap_repo *r, const char *group, int limit, const char *cursor,
                            sx_arena *a, snap_list *out, sx_err *err) SX_MUSTCHECK;

/* One page of every group's snapshots, newest first (by id), metadata only
 * (PostgreSQL). */
int snap_repo_list_all(snap_repo *r, int limit, const char *cursor, sx_arena *a, snap_list *out,
                       sx_err *err) SX_MUSTCHECK;

/* The current version of every group that has one (one query on proxy_groups, no
 * snapshot bytes), ordered by name: *items in a (name and latest_version set,
 * updated_at NULL); NULL and 0 when there are none. For the periodic check that repairs
 * what a lost notification missed. */
int snap_repo_current_versions(snap_repo *r, sx_arena *a, snap_group **items, size_t *count,
                               sx_err *err) SX_MUSTCHECK;

/* The newest snapshot of every group (without IR), ordered by group name, for
 * start-up: the versions come from PostgreSQL, the bytes from the cache when it has
 * them. *items is NULL and *count 0 when there are none. */
int snap_repo_load_latest_all(snap_repo *r, sx_arena *a, snap_record **items, size_t *count,
                              sx_err *err) SX_MUSTCHECK;

#endif

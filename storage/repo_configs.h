/*
 * repo_configs.h — configs and their immutable versions (tables configs,
 * config_versions).
 *
 * A config is a named, namespaced spec (a JSON object of IR) applied to proxy groups.
 * Every change adds a version; versions are never rewritten (a rollback adds a version
 * that copies an older spec, recording it in source_version). The config's
 * latest_version is the optimistic-concurrency token: cfg_repo_add_version and
 * cfg_repo_delete take the version the caller last saw and fail with
 * SX_EPRECONDITION when another writer got there first. live_version is the newest
 * non-draft version, the one snapshots are composed from. A config's source says who
 * writes its versions: the REST API (and the import command), or a source of
 * configuration that manages it (Kubernetes), which records in source_ref the object it
 * is translated from; the repository stores both, the write path (server/apply.h)
 * decides who may change what.
 *
 * Memory: results live in the caller's sx_arena (see storage/repo_common.h); nothing
 * is freed individually. Every function takes a pg_conn: it runs inside the caller's
 * transaction when there is one, and each function is a single atomic statement
 * otherwise. Failures: SX_EINVAL for bad input (message names the field), SX_ENOTFOUND,
 * SX_ECONFLICT, SX_EPRECONDITION as documented, SX_EUNAVAILABLE / SX_ETIMEOUT from the
 * database; *out is left NULL (or the list empty) on failure.
 */
#ifndef SX_STORAGE_REPO_CONFIGS_H
#define SX_STORAGE_REPO_CONFIGS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/hash.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

/* Who writes a config's versions (configs.source). */
typedef enum cfg_source {
    CFG_SOURCE_REST = 0,   /* the REST API, the web UI, `sextant import` */
    CFG_SOURCE_KUBERNETES, /* translated from a Gateway of the Kubernetes Gateway API */
} cfg_source;

/* The stored name of a source: "rest", "kubernetes". */
const char *cfg_source_name(cfg_source s);
/* The source named s into *out; SX_EINVAL for an unknown name. */
int cfg_source_parse(const char *s, cfg_source *out) SX_MUSTCHECK;

typedef struct cfg_record {
    char *id;           /* UUID */
    char *ns;           /* namespace */
    char *name;         /* unique per namespace among live configs */
    char **groups;      /* proxy groups it applies to; NULL when none */
    size_t group_count; /* entries in groups */
    int latest_version; /* highest version, drafts included */
    int live_version;   /* newest non-draft version; 0 when every version is a draft */
    char *created_by;
    char *created_at; /* RFC 3339 UTC */
    char *updated_at;
    char *deleted_at;  /* NULL while live */
    cfg_source source; /* who writes its versions */
    char *source_ref;  /* what a managed config is translated from ("Gateway default/web");
                          NULL for CFG_SOURCE_REST */
} cfg_record;

typedef struct cfg_version {
    char *config_id;
    int version;        /* 1, 2, 3, ... per config */
    json_t *spec;       /* the spec object; NULL in list results */
    char *checksum;     /* sha256 hex of the canonical spec (cfg_repo_checksum) */
    char *author;       /* who made the change */
    char *message;      /* change description; "" when none */
    bool draft;         /* stored but not applied */
    int source_version; /* for a rollback, the version copied; 0 otherwise */
    char *created_at;
} cfg_version;

/* Input of cfg_repo_create; the pointers are borrowed for the call. */
typedef struct cfg_new {
    const char *ns;            /* required, 1..253 bytes */
    const char *name;          /* required, 1..253 bytes */
    const char *const *groups; /* may be NULL when group_count is 0 */
    size_t group_count;
    const json_t *spec; /* required JSON object: version 1's spec */
    const char *author; /* required */
    const char *message;
    bool draft;
    cfg_source source;      /* CFG_SOURCE_REST when zero */
    const char *source_ref; /* required for a managed source, NULL for REST; 1..1024 bytes */
} cfg_new;

/* Input of cfg_repo_add_version; the pointers are borrowed for the call. */
typedef struct cfg_change {
    const json_t *spec; /* required JSON object */
    const char *author; /* required */
    const char *message;
    bool draft;
    int source_version; /* a rollback's copied version; 0 otherwise */
    const char *name;   /* rename; NULL keeps the name */
    bool set_groups;    /* replace groups with the list below */
    const char *const *groups;
    size_t group_count;
    const char *source_ref; /* a managed config: replaces its source_ref; NULL keeps it */
} cfg_change;

typedef struct cfg_filter {
    const char *ns;       /* NULL = every namespace */
    const char *group;    /* NULL = any; else configs applying to this group */
    const char *source;   /* NULL = any; else configs of this source ("rest", "kubernetes") */
    bool include_deleted; /* also list soft-deleted configs */
    int limit;            /* page size, see repo_limit */
    const char *cursor;   /* NULL for the first page, else a next_cursor */
} cfg_filter;

/* A page of cfg_record: ordered by namespace, name, id. */
REPO_LIST(cfg_list, cfg_record);

/* A page of cfg_version: newest first; spec is NULL. */
REPO_LIST(cfg_version_list, cfg_version);

/* Lowercase hex SHA-256 of the canonical JSON of spec (jansson json_dumps with
 * JSON_SORT_KEYS | JSON_COMPACT) into out. */
void cfg_repo_checksum(const json_t *spec, char out[SX_SHA256_HEX_LEN + 1]);

/* Creates a config with version 1 (draft or not) in one statement. *out is the new
 * config. SX_ECONFLICT when a live config of that namespace and name exists. */
int cfg_repo_create(pg_conn *c, const cfg_new *in, sx_arena *a, cfg_record **out,
                    sx_err *err) SX_MUSTCHECK;

/* The config with that id; soft-deleted ones only when include_deleted. SX_EINVAL for
 * an id that is not a UUID, SX_ENOTFOUND when there is none. */
int cfg_repo_get(pg_conn *c, const char *id, bool include_deleted, sx_arena *a, cfg_record **out,
                 sx_err *err) SX_MUSTCHECK;

/* The live config with that namespace and name; SX_ENOTFOUND when there is none. */
int cfg_repo_get_by_name(pg_conn *c, const char *ns, const char *name, sx_arena *a,
                         cfg_record **out, sx_err *err) SX_MUSTCHECK;

/* One page of configs matching f (f NULL = all live configs, default page size). */
int cfg_repo_list(pg_conn *c, const cfg_filter *f, sx_arena *a, cfg_list *out,
                  sx_err *err) SX_MUSTCHECK;

/* Adds version expected_latest + 1 when the config's latest version is still
 * expected_latest, optionally renaming it and replacing its groups; a non-draft
 * version also becomes live_version. *out (NULL allowed) is the new version.
 * SX_EPRECONDITION when latest_version moved on (detail says to what), SX_ENOTFOUND
 * for a missing or deleted config, SX_ECONFLICT when the new name is taken. */
int cfg_repo_add_version(pg_conn *c, const char *id, int expected_latest, const cfg_change *in,
                         sx_arena *a, cfg_version **out, sx_err *err) SX_MUSTCHECK;

/* One version with its spec; SX_ENOTFOUND when the config or version does not exist
 * (versions of deleted configs stay readable). */
int cfg_repo_get_version(pg_conn *c, const char *id, int version, sx_arena *a, cfg_version **out,
                         sx_err *err) SX_MUSTCHECK;

/* The newest version of config id that author wrote as a change of its own: neither a
 * rollback (source_version set) nor a draft; without its spec. *out is NULL (and 0
 * returned) when author wrote none. How a managed source tells its own last translation
 * from what an operator made live since (server/apply.h). SX_EINVAL for a malformed id
 * or an empty author. */
int cfg_repo_newest_own_version(pg_conn *c, const char *id, const char *author, sx_arena *a,
                                cfg_version **out, sx_err *err) SX_MUSTCHECK;

/* One page of a config's versions, newest first, without specs. SX_ENOTFOUND when the
 * config does not exist. */
int cfg_repo_list_versions(pg_conn *c, const char *id, int limit, const char *cursor, sx_arena *a,
                           cfg_version_list *out, sx_err *err) SX_MUSTCHECK;

/* The live version (with spec) of every live config applying to group, ordered by
 * namespace then name: the configs a group's snapshot is composed from, in the order
 * they are merged. Configs whose versions are all drafts are left out. */
int cfg_repo_live_for_group(pg_conn *c, const char *group, sx_arena *a, cfg_version **out,
                            size_t *count, sx_err *err) SX_MUSTCHECK;

/* A live config with its live version, as validation and composition read it. */
typedef struct cfg_live {
    char *id;
    char *ns;
    char *name;
    char **groups;
    size_t group_count;
    int version;  /* its live_version */
    json_t *spec; /* that version's spec */
} cfg_live;

/* The live configs (with their live, non-draft version and spec) that apply to any of
 * the n groups, except exclude_id (NULL = none), ordered by namespace then name — the
 * merge order of composition. *out is NULL and *count 0 when there are none. One
 * statement; inside a transaction that locked the groups' rows (snap_repo_reserve_version)
 * the answer cannot change before it ends. */
int cfg_repo_live_in_groups(pg_conn *c, const char *const *groups, size_t n, const char *exclude_id,
                            sx_arena *a, cfg_live **out, size_t *count, sx_err *err) SX_MUSTCHECK;

/* Locks the name ns/name until the caller's transaction ends (an advisory lock: no row
 * needs to exist), so that two writers that create or replace the config of one name
 * queue instead of racing on its insert. The caller must be in a transaction. */
int cfg_repo_lock_name(pg_conn *c, const char *ns, const char *name, sx_err *err) SX_MUSTCHECK;

/* Reads the live config with that id and locks its row (SELECT ... FOR UPDATE) until the
 * caller's transaction ends, so that concurrent changes of one config queue here.
 * SX_EINVAL for a malformed id, SX_ENOTFOUND for a missing or deleted config. */
int cfg_repo_lock(pg_conn *c, const char *id, sx_arena *a, cfg_record **out,
                  sx_err *err) SX_MUSTCHECK;

/* Makes version (0 = none) the config's live version, without writing a version: a
 * rollout promotes a draft, or restores the live version it replaced. SX_ENOTFOUND for
 * a missing or deleted config or version. */
int cfg_repo_set_live(pg_conn *c, const char *id, int version, sx_err *err) SX_MUSTCHECK;

/* Soft-deletes a config (its versions stay). expected_latest < 0 skips the version
 * check. SX_ENOTFOUND when missing or already deleted, SX_EPRECONDITION when stale. */
int cfg_repo_delete(pg_conn *c, const char *id, int expected_latest, sx_err *err) SX_MUSTCHECK;

#endif

/*
 * apply.h — the write paths of configuration: a config change: validate, store a new config
 * version, recompose the snapshot of every affected proxy group, audit, NOTIFY — all
 * in one transaction — then fill the cache after the commit.
 *
 * Every way configuration enters Sextant (the `sextant import` command, the REST
 * API) goes through here, so every change is versioned, audited and announced the
 * same way. A change whose spec and groups equal the live version writes nothing new
 * (no version, no snapshot) but is still audited, which makes re-running an import
 * safe. A group's snapshot is rewritten only when its composed content changed.
 */
#ifndef SX_SERVER_APPLY_H
#define SX_SERVER_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "storage/pg_pool.h"
#include "storage/repo_snapshots.h"

/* A change to one config; pointers are borrowed for the call. */
typedef struct apply_request {
    const char *ns;            /* config namespace; required */
    const char *name;          /* config name; required */
    const char *const *groups; /* proxy groups it applies to; at least one */
    size_t group_count;
    const json_t *spec;     /* the config's IR (a ConfigSnapshot in JSON); required */
    const char *author;     /* who makes the change; required */
    const char *actor_role; /* for the audit log; NULL = "" */
    const char *message;    /* change description; NULL = "" */
    const char *action;     /* audit action, e.g. "config.import"; required */
    const char *request_id; /* NULL = none */
    const char *source_ip;  /* NULL = none */
} apply_request;

/* One snapshot written by a change. */
typedef struct apply_snapshot {
    char *group;
    long long version;
} apply_snapshot;

typedef struct apply_result {
    char *config_id;           /* UUID of the config */
    int version;               /* its live version after the change */
    bool created;              /* the config did not exist before */
    bool changed;              /* a new version was written */
    apply_snapshot *snapshots; /* snapshots written (none when nothing changed) */
    size_t snapshot_count;
} apply_result;

/*
 * Applies req. On success returns 0 and fills *out (allocated in a). Failures:
 * SX_EVALIDATION when the spec or a composed group snapshot is invalid (every
 * problem in verrs, paths starting at "spec"); SX_EINVAL for missing fields;
 * database errors as storage reports them. Nothing is written on failure.
 */
int apply_config(pg_pool *pool, snap_repo *snaps, const apply_request *req, sx_arena *a,
                 apply_result *out, sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

/* A whole snapshot for one group, bypassing configs (`sextant publish`). */
typedef struct apply_publish_request {
    const char *group;      /* proxy group; required */
    const json_t *spec;     /* the ConfigSnapshot in IR JSON; its id and generated_at are
                               replaced by "<group>:<version>" and the time of writing */
    const char *author;     /* required */
    const char *actor_role; /* NULL = "" */
    const char *message;    /* reason recorded with the snapshot; NULL = "" */
} apply_publish_request;

/*
 * Validates req->spec and writes it as the group's next snapshot, audited
 * ("snapshot.publish") and NOTIFYd in one transaction, then caches it. *version is the
 * new version, or 0 when the content equals the group's current snapshot (nothing is
 * written but the audit entry). Errors as apply_config (paths start at "snapshot").
 */
int apply_publish(pg_pool *pool, snap_repo *snaps, const apply_publish_request *req, sx_arena *a,
                  long long *version, sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

#endif

/*
 * apply.h — the write paths of configuration: a config change: validate, store a new config
 * version, recompose the snapshot of every affected proxy group (through the snapshot
 * writer, server/snapshot/writer.h, which caches and NOTIFYs them), audit — all in one
 * transaction. The spec and the other configs of its groups are decoded once per change
 * and the decoded forms are what validation reads and composition merges.
 *
 * Every way configuration enters Sextant (the `sextant import` command, the REST
 * API, the Kubernetes source) goes through here, so every change is versioned, audited
 * and announced the same way. A change whose spec and groups equal the latest version
 * writes nothing new (no version, no snapshot) but is still audited, which makes
 * re-running an import safe. A managed source's change (req->source not
 * CFG_SOURCE_REST) is unchanged when its spec and groups equal the newest version the
 * source wrote itself (cfg_repo_newest_own_version: not a rollback, whoever is live),
 * and then writes nothing at all, not even its audit row: a translation repeated on
 * every resync leaves no trace, and a rollback or rollout an operator made of the
 * config holds until the source's translation changes. A group's snapshot is
 * rewritten only when its composed content changed.
 *
 * Group names: every group a change names must pass val_group_name_problem
 * (server/validate/validate.h), else SX_EVALIDATION with a schema problem at
 * "groups[i]"; a group's rollback and a published snapshot answer SX_EINVAL.
 *
 * Ownership: a config belongs to the source that created it (configs.source). A change
 * from the REST API (or an import) of a managed config is refused with SX_EMANAGED,
 * whose message names what the config is translated from; a rollback (APPLY_ROLLBACK)
 * is not refused, and rollouts (apply_stage) work on every config. A managed source's
 * change of a REST config is refused with SX_ECONFLICT, so that it never takes over a
 * config someone wrote by hand.
 *
 * Concurrency: an UPSERT first locks the config's name (two writers creating one config
 * queue instead of one failing on the insert); a change of an existing config first
 * locks the config's row, then the
 * rows of every affected proxy group in name order (snap_repo_reserve_version), and
 * only then reads the other configs of those groups and validates against them. Two
 * changes of one config therefore queue (the second sees the first's version: a stale
 * If-Match fails with SX_EPRECONDITION), and two changes of different configs sharing a
 * group cannot both pass the conflict check against each other's old content.
 */
#ifndef SX_SERVER_APPLY_H
#define SX_SERVER_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "server/base/fielderr.h"
#include "server/idem.h"
#include "server/validate/validate.h"
#include "storage/pg_pool.h"
#include "storage/repo_configs.h"
#include "storage/repo_snapshots.h"

/* What a change does. */
typedef enum apply_op {
    APPLY_UPSERT = 0, /* by namespace and name: create, or add a version (sextant import) */
    APPLY_CREATE,     /* a new config; SX_ECONFLICT when a live one has that name */
    APPLY_UPDATE,     /* a new version of config_id (name NULL and no groups keep them) */
    APPLY_DELETE,     /* soft-delete config_id and recompose its groups */
    APPLY_ROLLBACK,   /* a new version of config_id whose spec is version rollback_to's */
} apply_op;

/* A change to one config; pointers are borrowed for the call. A zero-initialised
 * request plus ns, name, groups, spec, author and action is an UPSERT. */
typedef struct apply_request {
    const char *ns;            /* config namespace; required for UPSERT and CREATE */
    const char *name;          /* config name; required for UPSERT and CREATE; UPDATE:
                                  NULL keeps the name, else renames */
    const char *const *groups; /* proxy groups it applies to; at least one (UPDATE: none
                                  keeps the config's groups) */
    size_t group_count;
    const json_t *spec;            /* the config's IR (a ConfigSnapshot in JSON); required but
                                      for DELETE and ROLLBACK */
    const char *author;            /* who makes the change; required */
    const char *actor_role;        /* for the audit log; NULL = "" */
    const char *message;           /* change description; NULL = "" */
    const char *action;            /* audit action, e.g. "config.import"; required */
    const char *request_id;        /* NULL = none */
    const char *client_request_id; /* the client's X-Request-Id, for the audit row; NULL = none */
    const char *source_ip;         /* NULL = none */

    apply_op op;           /* APPLY_UPSERT when zero */
    const char *config_id; /* UPDATE, DELETE, ROLLBACK: the config (a UUID) */
    int if_match;          /* > 0: the config's latest version must still be this one, else
                              SX_EPRECONDITION; 0: no check */
    bool draft;            /* store the version without making it live (no recompose) */
    int rollback_to;       /* ROLLBACK: the version whose spec is copied */
    /* Non-NULL: run the whole validation pipeline (val_run) inside the transaction
     * against the other live configs of the groups; NULL: only the IR codec's checks. */
    const val_limits *limits;
    long long now_unix; /* with limits: the time certificates are checked at; 0 = now */
    /* With limits: receives every problem of a refused change (SX_EVALIDATION or
     * SX_ECONFLICT); the caller frees it with val_result_free. NULL allowed. */
    val_result *problems;
    /* Who makes the change (see Ownership above): CFG_SOURCE_REST when zero. A managed
     * source's UPSERT compares the spec with the newest version it wrote itself (not the
     * live or latest one, which may be an operator's rollback) and writes no drafts. */
    cfg_source source;
    const char *source_ref; /* a managed source: what the config is translated from,
                               such as "Gateway default/web"; required for its UPSERT and
                               CREATE, NULL for CFG_SOURCE_REST */
    /* Non-NULL: the change is made under a client's key (server/idem.h); its render
     * gets the apply_result, with record and record_latest read back in the
     * transaction. When the key is answered already, apply_config returns 0 with
     * idem->replayed true and *out zeroed: nothing was done. */
    idem_request *idem;
    /* Non-NULL: the group scope of the caller's role that allowed the change, kept in the
     * audit row as details.scope. */
    const json_t *audit_scope;
} apply_request;

/* One snapshot written by a change. */
typedef struct apply_snapshot {
    char *group;
    long long version;
} apply_snapshot;

typedef struct apply_result {
    char *config_id;           /* UUID of the config */
    int version;               /* its live version after the change (0: only drafts) */
    int before_version;        /* its latest version before the change; 0 when created */
    int latest_version;        /* its latest version after (drafts included): the ETag */
    bool created;              /* the config did not exist before */
    bool changed;              /* a new version was written (or the config deleted) */
    apply_snapshot *snapshots; /* snapshots written (none when nothing changed) */
    size_t snapshot_count;
    cfg_record *record;         /* with req->idem: the config as the change left it */
    cfg_version *record_latest; /* with req->idem: its latest version */
} apply_result;

/*
 * Applies req. On success returns 0 and fills *out (allocated in a). Failures:
 * SX_EVALIDATION when a group name, the spec or a composed group snapshot is invalid
 * (the codec's problems in verrs, paths starting at "spec"; with req->limits the
 * pipeline's in req->problems; bad group names in req->problems at "groups[i]", else
 * the first in err's detail); SX_ECONFLICT when the pipeline found only conflicts with
 * other configs (req->problems names them) or a live config already has the name;
 * SX_ENOTFOUND for a missing or deleted config_id or rollback version;
 * SX_EPRECONDITION for a stale if_match; SX_EMANAGED when the REST API changes a managed
 * config, SX_ECONFLICT when a managed source changes a REST config (see Ownership);
 * SX_EINVAL for missing fields; database errors as storage reports them. Nothing is
 * written on failure.
 */
int apply_config(pg_pool *pool, snap_repo *snaps, const apply_request *req, sx_arena *a,
                 apply_result *out, sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

/*
 * The dry run of a create or update: runs what apply_config would run before writing —
 * the pipeline with req->limits (required) against the other live configs of the groups,
 * then the composition of each group with this spec in place and the codec's check of
 * it — and writes nothing. The config the spec would replace (left out of the peers) is
 * req->config_id, or else the live config named req->ns/req->name if there is one; with
 * no groups in req, that config's groups are used. Returns 0 when it would pass,
 * SX_EVALIDATION or SX_ECONFLICT with every problem in req->problems (pipeline) and
 * verrs (composition, paths starting at groups["name"]), SX_EINVAL for missing fields,
 * SX_ENOTFOUND for an unknown config_id, database errors otherwise.
 */
int apply_validate(pg_pool *pool, const apply_request *req, sx_arena *a, sx_fielderrs *verrs,
                   sx_err *err) SX_MUSTCHECK;

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
 * ("snapshot.publish"), cached and NOTIFYd in one transaction. *version is the
 * new version, or 0 when the content equals the group's current snapshot (nothing is
 * written but the audit entry). Errors as apply_config (paths start at "snapshot").
 */
int apply_publish(pg_pool *pool, snap_repo *snaps, const apply_publish_request *req, sx_arena *a,
                  long long *version, sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

/* ------------------------------------------------------------------ rollouts */

/* Staging a config version for a deployment; pointers borrowed for the call. */
typedef struct apply_stage_request {
    const char *config_id;     /* required */
    int version;               /* required: the version to roll out (often a draft) */
    const char *const *groups; /* groups of the config to stage; NULL/0 = all of them */
    size_t group_count;
    const char *deployment_id; /* NULL: dry run (compose and check, write nothing) */
    const char *author;        /* required */
    const val_limits *limits;  /* the pipeline's limits (required) */
    long long now_unix;        /* 0 = now */
    val_result *problems;      /* receives the pipeline's problems; NULL allowed */
} apply_stage_request;

typedef struct apply_stage_group {
    char *group;
    long long from_version; /* the group's current snapshot (0 = none) */
    long long to_version;   /* the staged snapshot; from_version when the content does not
                               change; 0 in a dry run that would write one */
    json_t *from_ir;        /* NULL when the group has no snapshot */
    json_t *to_ir;
    json_t *diff; /* diff_json of the two contents (id and generation time left out) */
    bool changed;
} apply_stage_group;

typedef struct apply_stage_result {
    cfg_record *config;        /* locked for the rest of the transaction */
    cfg_version *version;      /* the staged version */
    apply_stage_group *groups; /* sorted by name */
    size_t group_count;
    snap_record **written; /* staged snapshots, for snap_repo_cache_put after the commit */
    size_t nwritten;
} apply_stage_result;

/*
 * Inside the caller's transaction on c: locks the config and the groups, refuses
 * (SX_ECONFLICT) when a deployment in progress already changes one of them, runs the
 * validation pipeline on the version against the other live configs of the config's
 * groups, composes each group with the version in place and, unless dry run, writes a
 * staged snapshot for req->deployment_id where the content changes. Errors as
 * apply_config; SX_ENOTFOUND for an unknown config, version, or a group the config does
 * not apply to.
 */
int apply_stage(pg_conn *c, const apply_stage_request *req, sx_arena *a, apply_stage_result *out,
                sx_fielderrs *verrs, sx_err *err) SX_MUSTCHECK;

struct deploy_record;
/* Completion of deployment d inside the caller's transaction: every staged snapshot
 * becomes its group's current one (NOTIFYd) and the version the config's live one. */
int apply_promote(pg_conn *c, const struct deploy_record *d, sx_arena *a, sx_err *err) SX_MUSTCHECK;
/* Undoing a promoted deployment d inside the caller's transaction: the config's live
 * version goes back to the one d replaced and its groups are recomposed from their live
 * configs (new current snapshots, NOTIFYd; *written for the cache after the commit). */
int apply_unpromote(pg_conn *c, const struct deploy_record *d, const char *author, sx_arena *a,
                    snap_record ***written, size_t *nwritten, sx_fielderrs *verrs,
                    sx_err *err) SX_MUSTCHECK;

#endif

/*
 * repo_deployments.h — rollout plans and their live state (tables deployments,
 * deployment_waves).
 *
 * All rollout state is here so any replica can continue a rollout another started.
 * State changes are compare-and-set: the caller names the state it believes the
 * deployment (or wave) is in, and gets SX_EPRECONDITION when another replica moved it
 * first — the caller then re-reads instead of overwriting. Which replica drives a
 * deployment is a lease (deploy_repo_claim): the owner renews it; once it lapses any
 * replica may take the deployment over.
 *
 * States are stored as snake_case text ("in_progress", "rolled_back"), the seed's
 * Pending, InProgress, Paused, Completed, Failed, Canceling, RollingBack, RolledBack,
 * RollbackFailed; the enums below convert. This module does not decide which
 * transitions are legal: the rollout driver's one state-change function does.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Every
 * function takes a pg_conn and is atomic on its own. Failures: SX_EINVAL for bad input,
 * SX_ENOTFOUND, SX_EPRECONDITION as documented, database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_DEPLOYMENTS_H
#define SX_STORAGE_REPO_DEPLOYMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

typedef enum deploy_state {
    DEPLOY_PENDING = 0,         /* planned, not started */
    DEPLOY_IN_PROGRESS = 1,     /* waves advancing */
    DEPLOY_PAUSED = 2,          /* held by an operator; resumable */
    DEPLOY_COMPLETED = 3,       /* every wave ACKed */
    DEPLOY_FAILED = 4,          /* halted (NACK threshold, timeout, health) */
    DEPLOY_CANCELING = 5,       /* cancel requested, being unwound */
    DEPLOY_ROLLING_BACK = 6,    /* nodes being returned to their previous snapshots */
    DEPLOY_ROLLED_BACK = 7,     /* every node back on its previous snapshot */
    DEPLOY_ROLLBACK_FAILED = 8, /* rollback could not finish; needs an operator */
} deploy_state;
#define DEPLOY_STATE_COUNT 9

typedef enum deploy_wave_state {
    DEPLOY_WAVE_PENDING = 0,
    DEPLOY_WAVE_IN_PROGRESS = 1,
    DEPLOY_WAVE_COMPLETED = 2,
    DEPLOY_WAVE_FAILED = 3,
    DEPLOY_WAVE_CANCELED = 4,
    DEPLOY_WAVE_ROLLED_BACK = 5,
} deploy_wave_state;
#define DEPLOY_WAVE_STATE_COUNT 6

/* Stored names ("in_progress"); "" for an out-of-range value. */
const char *deploy_state_name(deploy_state s);
const char *deploy_wave_state_name(deploy_wave_state s);
/* Parses a stored name; SX_EINVAL for anything else. */
int deploy_state_parse(const char *s, deploy_state *out) SX_MUSTCHECK;
int deploy_wave_state_parse(const char *s, deploy_wave_state *out) SX_MUSTCHECK;
/* Completed, Failed, RolledBack, RollbackFailed: nothing drives it any more. */
bool deploy_state_final(deploy_state s);

typedef struct deploy_wave {
    int index; /* 0-based */
    deploy_wave_state state;
    char **node_ids; /* NULL when the wave has no nodes */
    size_t node_count;
    json_t *target_snapshots;   /* {"group": version} the wave moves to */
    json_t *baseline_snapshots; /* {"node_id": version} the nodes had before */
    int acks;
    int nacks;
    json_t *errors;   /* [{"node_id", "version", "error", "at"}, ...], at most 100 kept */
    char *started_at; /* RFC 3339 UTC; NULL until started */
    char *completed_at;
    double started_age_s;   /* seconds since started_at by the database clock; 0 if none */
    double completed_age_s; /* seconds since completed_at; 0 if none */
} deploy_wave;

typedef struct deploy_record {
    char *id;
    char *config_id;
    int config_version;
    json_t *selector; /* {"node_ids", "groups", "labels", "namespaces"} */
    json_t *strategy; /* {"type": "all_at_once" | "rolling" | "canary", ...} */
    deploy_state state;
    char *state_reason; /* why it reached its state ("nack rate 12% over 5%"), or "" */
    double nack_threshold;
    int nack_min_sample;
    long long wave_timeout_ms;
    int current_wave; /* -1 before the first wave */
    char *created_by;
    char *reason;        /* the operator's reason for the rollout */
    char *owner_replica; /* NULL when nobody drives it */
    char *lease_until;
    char *created_at;
    char *started_at;
    char *finished_at; /* when it last reached a final state */
    char *updated_at;
    char **groups; /* proxy groups it changes */
    size_t group_count;
    json_t *target_snapshots;   /* {"group": staged version} */
    json_t *baseline_snapshots; /* {"group": current version when created} */
    int previous_live_version;  /* the config's live version before; 0 = none */
    bool promote;               /* completion makes the version live group-wide */
    bool promoted;              /* ... and it did */
    int health_failure_limit;   /* not-ready reports from wave nodes that halt it */
    json_t *skipped_nodes;      /* [{"node_id", "reason"}] the plan left out */
    char *resumed_at;           /* last resume, or NULL */
    double state_age_s;         /* seconds in its state, by the database clock */
    double resumed_age_s;       /* seconds since resumed_at (huge when never) */
    json_t *progress;   /* {"waves", "waves_completed", "nodes", "acks", "nacks"} over its waves */
    deploy_wave *waves; /* by index; NULL in list results */
    size_t wave_count;
} deploy_record;

/* One planned wave; pointers borrowed. */
typedef struct deploy_wave_new {
    const char *const *node_ids;
    size_t node_count;
    const json_t *target_snapshots;   /* object; NULL = {} */
    const json_t *baseline_snapshots; /* object; NULL = {} */
} deploy_wave_new;

/* Input of deploy_repo_create; pointers borrowed. */
typedef struct deploy_new {
    const char *id;            /* NULL = a new random id */
    const char *config_id;     /* required */
    int config_version;        /* required, must exist */
    const json_t *selector;    /* object; NULL = {} */
    const json_t *strategy;    /* object; NULL = {} */
    double nack_threshold;     /* 0..1; < 0 = default 0.05 */
    int nack_min_sample;       /* < 0 = default 10 */
    long long wave_timeout_ms; /* <= 0 = default 10 minutes */
    const char *created_by;    /* required */
    const char *reason;
    const deploy_wave_new *waves;
    size_t wave_count;
    const char *const *groups; /* the proxy groups it changes */
    size_t group_count;
    const json_t *target_snapshots;   /* {"group": version}; NULL = {} */
    const json_t *baseline_snapshots; /* {"group": version}; NULL = {} */
    int previous_live_version;        /* 0 = none */
    bool no_promote;                  /* completion leaves the group's current alone */
    int health_failure_limit;         /* <= 0 = default 3 */
    const json_t *skipped_nodes;      /* array; NULL = [] */
} deploy_new;

typedef struct deploy_filter {
    unsigned state_mask;   /* bit (1u << state) per wanted state; 0 = any */
    const char *config_id; /* NULL = any */
    int limit;
    const char *cursor;
} deploy_filter;

/* A page of deploy_record: newest first; waves are not loaded. */
REPO_LIST(deploy_list, deploy_record);

/* A change to one wave; fields left at their "unchanged" value are kept. */
typedef struct deploy_wave_update {
    int expected_state;         /* -1 = any; else the deploy_wave_state it must be in */
    int state;                  /* -1 = unchanged; entering in_progress sets started_at, a final
                                   state sets completed_at */
    int acks;                   /* -1 = unchanged; else the new total */
    int nacks;                  /* -1 = unchanged; else the new total */
    const json_t *append_error; /* NULL = none; appended to errors (first 100 kept) */
    const json_t *baseline_snapshots; /* NULL = unchanged */
} deploy_wave_update;

/* Initialiser leaving every field unchanged. */
#define DEPLOY_WAVE_UPDATE_INIT                                                                    \
    {                                                                                              \
        -1, -1, -1, -1, NULL, NULL                                                                 \
    }

/* Creates a deployment (state pending) with its waves in one statement; *out (NULL
 * allowed) is the stored deployment with its waves. SX_ENOTFOUND when the config
 * version does not exist. */
int deploy_repo_create(pg_conn *c, const deploy_new *in, sx_arena *a, deploy_record **out,
                       sx_err *err) SX_MUSTCHECK;

/* A deployment with its waves; SX_EINVAL for a malformed id, SX_ENOTFOUND. */
int deploy_repo_get(pg_conn *c, const char *id, sx_arena *a, deploy_record **out,
                    sx_err *err) SX_MUSTCHECK;

/* deploy_repo_get with the deployment's row locked for the rest of c's transaction:
 * the driver and the REST actions change a deployment only under this lock. */
int deploy_repo_lock(pg_conn *c, const char *id, sx_arena *a, deploy_record **out,
                     sx_err *err) SX_MUSTCHECK;

/* The oldest deployment that is not final and changes one of groups (other than
 * except_id, NULL allowed): *id and *group (NULL allowed) in a, or *id NULL. */
int deploy_repo_active_in_groups(pg_conn *c, const char *const *groups, size_t n,
                                 const char *except_id, sx_arena *a, char **id, char **group,
                                 sx_err *err) SX_MUSTCHECK;

typedef enum deploy_mark {
    DEPLOY_MARK_PROMOTED, /* promoted = true */
    DEPLOY_MARK_RESUMED,  /* resumed_at = now() */
} deploy_mark;
int deploy_repo_mark(pg_conn *c, const char *id, deploy_mark m, sx_err *err) SX_MUSTCHECK;

/* How many deployments are in each state. */
int deploy_repo_count_states(pg_conn *c, long long counts[DEPLOY_STATE_COUNT],
                             sx_err *err) SX_MUSTCHECK;

/* A new random UUID from the database, into a (a deployment's id is known before its
 * row is written, so that the snapshots it stages can name it). */
int deploy_repo_new_id(pg_conn *c, sx_arena *a, char **id, sx_err *err) SX_MUSTCHECK;

/* One page of deployments matching f (NULL = all), newest first, without waves. */
int deploy_repo_list(pg_conn *c, const deploy_filter *f, sx_arena *a, deploy_list *out,
                     sx_err *err) SX_MUSTCHECK;

/* Moves the deployment from expected to next (setting started_at on the first
 * in_progress and finished_at on a final state) and records reason (NULL keeps the
 * previous one). SX_EPRECONDITION when it is not in expected any more (the message
 * says which state it is in), SX_ENOTFOUND. */
int deploy_repo_set_state(pg_conn *c, const char *id, deploy_state expected, deploy_state next,
                          const char *reason, sx_err *err) SX_MUSTCHECK;

/* Sets current_wave while the deployment is in expected; errors as set_state. */
int deploy_repo_set_current_wave(pg_conn *c, const char *id, deploy_state expected, int wave,
                                 sx_err *err) SX_MUSTCHECK;

/* Applies u to wave index of deployment id. SX_EPRECONDITION when u->expected_state
 * does not hold, SX_ENOTFOUND for a missing deployment or wave. */
int deploy_repo_update_wave(pg_conn *c, const char *id, int index, const deploy_wave_update *u,
                            sx_err *err) SX_MUSTCHECK;

/* Takes or renews the lease on a deployment that still needs driving (pending,
 * in_progress, canceling, rolling_back) for lease_ms: granted when nobody holds it,
 * replica already holds it, or the holder's lease has lapsed. *claimed tells whether
 * replica now owns it. */
int deploy_repo_claim(pg_conn *c, const char *id, const char *replica, long long lease_ms,
                      bool *claimed, sx_err *err) SX_MUSTCHECK;

#endif

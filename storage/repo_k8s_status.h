/*
 * repo_k8s_status.h — the k8s_status table: the status the leader last wrote to each
 * Kubernetes object it judges, as the cluster got it (migrations/0022_k8s_status.sql).
 *
 * The controller stores a status in the same step as its patch (k8s_status_repo_put),
 * drops the row of an object that is gone (k8s_status_repo_delete) and, after a
 * complete pass, the rows of every object it no longer judges (k8s_status_repo_keep);
 * the REST API reads the rows of one managed config (k8s_status_repo_for_ref).
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Every function
 * is one statement. Failures: SX_EINVAL for bad input (message names the field),
 * database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_K8S_STATUS_H
#define SX_STORAGE_REPO_K8S_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* One object's status as written; pointers borrowed. */
typedef struct k8s_status_put {
    const char *kind;               /* "Gateway", "HTTPRoute", ... (1..64 bytes) */
    const char *ns;                 /* NULL or "" for a cluster-scoped object */
    const char *name;               /* 1..253 bytes */
    int64_t generation;             /* metadata.generation the status observed (>= 0) */
    const json_t *status;           /* a JSON object */
    const char *const *source_refs; /* the Gateways' configs.source_ref it concerns */
    size_t n_source_refs;
} k8s_status_put;

typedef struct k8s_status_record {
    char *kind;
    char *ns; /* "" for a cluster-scoped object */
    char *name;
    long long generation;
    json_t *status; /* owned by the arena */
    char **source_refs;
    size_t n_source_refs;
    char *written_at; /* RFC 3339 UTC */
} k8s_status_record;

/* Creates or replaces the row of p's object; written_at moves only when the status or
 * the generation differs from the row's. */
int k8s_status_repo_put(pg_conn *c, const k8s_status_put *p, sx_err *err) SX_MUSTCHECK;

/* Deletes the row of one object (none: nothing happens). */
int k8s_status_repo_delete(pg_conn *c, const char *kind, const char *ns, const char *name,
                           sx_err *err) SX_MUSTCHECK;

/* Deletes every row whose object is not among the n listed (kinds[i], nss[i] (NULL or ""
 * for cluster-scoped), names[i]); *deleted (NULL allowed) gets how many went. */
int k8s_status_repo_keep(pg_conn *c, const char *const *kinds, const char *const *nss,
                         const char *const *names, size_t n, sx_arena *a, int *deleted,
                         sx_err *err) SX_MUSTCHECK;

/* Every row concerning source_ref (a configs.source_ref such as "Gateway default/web"):
 * Gateways first, then by kind, namespace and name; at most 1000. */
int k8s_status_repo_for_ref(pg_conn *c, const char *source_ref, sx_arena *a,
                            k8s_status_record **out, size_t *count, sx_err *err) SX_MUSTCHECK;

#endif

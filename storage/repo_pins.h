/*
 * repo_pins.h — which snapshot each node is assigned during rollouts (node_status
 * desired_group / desired_snapshot_version / deployment_id), and what rollouts read
 * about nodes: who a selector picks, and what each node of a wave answered.
 *
 * A pin is (node, group, version): while the node is in that group it is served that
 * version instead of the group's current one. Pins are written only by rollouts, in
 * the transaction of the step that decides them, which NOTIFYs PINS_NOTIFY_CHANNEL so
 * that every replica reloads them (pin_repo_load) and re-serves the nodes whose
 * assignment changed.
 *
 * Memory: results live in the caller's sx_arena. Every function takes a pg_conn (run
 * it inside the caller's transaction when it is part of one).
 */
#ifndef SX_STORAGE_REPO_PINS_H
#define SX_STORAGE_REPO_PINS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* NOTIFY channel announcing that pins changed (payload: the deployment id, or ""). */
#define PINS_NOTIFY_CHANNEL "sextant_assignments"

typedef struct pin_record {
    char *node_id;
    char *group;
    long long version;
    char *deployment_id; /* NULL when none */
} pin_record;

/* Pins each of the n nodes to versions[its group] ({"group": version}); nodes whose
 * group has no entry are left alone. *updated (NULL allowed) gets how many were pinned.
 * Nodes without a node_status row get one. */
int pin_repo_set(pg_conn *c, const char *const *node_ids, size_t n, const json_t *versions,
                 const char *deployment_id, int *updated, sx_err *err) SX_MUSTCHECK;

/* Releases every pin set by deployment_id: those nodes follow their group again. */
int pin_repo_release_deployment(pg_conn *c, const char *deployment_id, int *released,
                                sx_err *err) SX_MUSTCHECK;

/* Releases the pins of nodes of the given groups that no active deployment holds (a
 * finished deployment's, or none): a direct change of those groups reaches them again. */
int pin_repo_release_finished(pg_conn *c, const char *const *groups, size_t n, int *released,
                              sx_err *err) SX_MUSTCHECK;

/* Every pin, ordered by node id. */
int pin_repo_load(pg_conn *c, sx_arena *a, pin_record **out, size_t *n, sx_err *err) SX_MUSTCHECK;

/* A node a selector may pick. */
typedef struct pin_candidate {
    char *node_id;
    char *group;
    char *ns;
    bool connected;
} pin_candidate;

/* The nodes of groups that match the selector's other parts, ordered by node id:
 * node_ids (NULL/0 = any), labels (object of strings that must all match; NULL = any),
 * namespaces (NULL/0 = any). */
int pin_repo_select(pg_conn *c, const char *const *groups, size_t ngroups,
                    const char *const *node_ids, size_t nnodes, const json_t *labels,
                    const char *const *namespaces, size_t nns, sx_arena *a, pin_candidate **out,
                    size_t *n, sx_err *err) SX_MUSTCHECK;

/* What a node of a wave answered. */
typedef struct pin_answer {
    char *node_id;
    char *group;
    bool connected;
    long long acked;     /* acked_snapshot_version; 0 = none */
    long long nacked;    /* last_nack_version; 0 = none */
    char *nack_error;    /* last NACK's error, or NULL */
    char *nack_at;       /* RFC 3339, or NULL */
    double nack_age_s;   /* seconds since the last NACK (large when none) */
    int report_ready;    /* last status report: -1 none, 0 not ready, 1 ready */
    double report_age_s; /* seconds since the last report (large when none) */
} pin_answer;

/* The answers of the n nodes (unknown nodes are left out), ordered by node id. */
int pin_repo_answers(pg_conn *c, const char *const *node_ids, size_t n, sx_arena *a,
                     pin_answer **out, size_t *count, sx_err *err) SX_MUSTCHECK;

#endif

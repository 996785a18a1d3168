/*
 * repo_groups.h — the settings of a proxy group kept in its proxy_groups row: the data
 * planes it serves (migrations/0012_group_data_planes.sql).
 *
 * A group's row is created by its first snapshot or by the first setting written to it,
 * whichever comes first; a group without a row has every setting at its default. Data
 * planes travel as their names ("envoy", "grpc", "control"); what they mean is the
 * domain's (server/groups.h). Results live in the caller's arena (repo_common.h).
 */
#ifndef SX_STORAGE_REPO_GROUPS_H
#define SX_STORAGE_REPO_GROUPS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* One group's settings as stored. */
typedef struct group_settings {
    char *name;
    char **data_planes; /* NULL when the group uses the default */
    size_t n_data_planes;
    bool exists;               /* the group has a row (snapshots or settings) */
    long long current_version; /* snapshot its nodes receive; 0: none */
    char *updated_at;          /* RFC 3339; NULL without a row */
} group_settings;

/* The settings of the n groups, in *out (n entries, in the order given; a group without a
 * row has exists false and default settings). */
int group_repo_get(pg_conn *c, const char *const *groups, size_t n, sx_arena *a,
                   group_settings **out, sx_err *err) SX_MUSTCHECK;

/* Creates the group's row when it has none and locks it until the transaction ends;
 * *before receives its settings at that moment. */
int group_repo_lock(pg_conn *c, const char *group, sx_arena *a, group_settings *before,
                    sx_err *err) SX_MUSTCHECK;

/* Sets the group's data planes (names[0..n); n 0: back to the default) on its row, which
 * group_repo_lock created. */
int group_repo_set_planes(pg_conn *c, const char *group, const char *const *names, size_t n,
                          sx_arena *a, sx_err *err) SX_MUSTCHECK;

#endif

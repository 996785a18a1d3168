/*
 * repo_search.h — finding things by a fragment of their name or id: proxies (node id),
 * configs (namespace/name or id), proxy groups (name) and deployments (id, or the
 * namespace/name of the config they roll out), for the search box of the web UI.
 *
 * The fragment is matched case-insensitively anywhere in the text (ILIKE), with the
 * wildcards % and _ and the escape character \ taken literally. Each kind contributes at
 * most limit matches: exact matches first, then those starting with the fragment, then
 * the rest, each by name. Deleted configs are not found.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). One statement.
 * Failures: SX_EINVAL for bad input (message names the field), database errors
 * otherwise.
 */
#ifndef SX_STORAGE_REPO_SEARCH_H
#define SX_STORAGE_REPO_SEARCH_H

#include <stddef.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* The longest fragment searched for, in bytes. */
#define SEARCH_QUERY_MAX 200
/* The most matches of one kind. */
#define SEARCH_LIMIT_MAX 50

typedef struct search_hit {
    char *kind;    /* "proxy", "config", "group" or "deployment" */
    char *id;      /* what the kind's page is named by: node id, config id, group name,
                      deployment id */
    char *label;   /* what a person reads: node id, namespace/name, group name,
                      namespace/name vN of a deployment's config */
    char *detail;  /* a proxy's group, a config's groups, a deployment's state, "" */
    char *ns;      /* a config's namespace; NULL for the other kinds */
    char **groups; /* the groups it belongs to (its own name for a group) */
    size_t group_count;
} search_hit;

typedef struct search_list {
    search_hit *items; /* proxies, configs, groups, deployments, in that order */
    size_t count;
} search_list;

/* The hits of fragment q (1..SEARCH_QUERY_MAX bytes, not blank): at most limit
 * (1..SEARCH_LIMIT_MAX) of each kind. */
int search_repo_find(pg_conn *c, const char *q, int limit, sx_arena *a, search_list *out,
                     sx_err *err) SX_MUSTCHECK;

#endif

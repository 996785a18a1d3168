/*
 * repo_search.c — one statement that finds proxies, configs, groups and deployments by
 * a fragment of their name or id (see repo_search.h).
 */
#include "storage/repo_search.h"

#include <string.h>

#include "storage/repo_common.h"

/* Columns: kind, id, label, detail, namespace, groups (JSON array). */
static int read_hit(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    search_hit *o = item;
    memset(o, 0, sizeof(*o));
    REPO_STRS(a, r, row, 0, &o->kind, &o->id, &o->label, &o->detail, &o->ns);
    return repo_strv(a, r, row, 5, &o->groups, &o->group_count, err);
}

/* Exact matches of the fragment first, then those starting with it, then the rest. */
#define RANK(col) "lower(" col ") <> p.q, NOT starts_with(lower(" col "), p.q)"

/* $1 the fragment, $2 the limit per kind. p.pat is the ILIKE pattern with the
 * fragment's \ % _ escaped. Column 7 orders the kinds, column 8 the hits of a kind. */
// clang-format off
#define FIND_SQL                                                                                   \
    "WITH p AS (SELECT '%' || replace(replace(replace($1::text, '\\', '\\\\'), '%', '\\%'),"      \
    "                   '_', '\\_') || '%' AS pat, lower($1::text) AS q)"                            \
    "(SELECT 'proxy', n.node_id, n.node_id, n.group_name, NULL::text,"                               \
    "        to_jsonb(ARRAY[n.group_name]), 0,"                                                     \
    "        row_number() OVER (ORDER BY " RANK("n.node_id") ", n.node_id)"                         \
    "   FROM proxy_nodes n, p WHERE n.node_id ILIKE p.pat"                                          \
    "  ORDER BY 8"                                                                                  \
    "  LIMIT $2::int)"                                                                              \
    " UNION ALL "                                                                                   \
    "(SELECT 'config', c.id::text, c.namespace || '/' || c.name,"                                   \
    "        array_to_string(c.groups, ', '), c.namespace, to_jsonb(c.groups), 1,"                \
    "        row_number() OVER (ORDER BY " RANK("c.name") ", c.namespace, c.name)"                  \
    "   FROM configs c, p"                                                                          \
    "  WHERE c.deleted_at IS NULL"                                                                  \
    "    AND (c.namespace || '/' || c.name ILIKE p.pat OR c.id::text ILIKE p.pat)"                \
    "  ORDER BY 8"                                                                                  \
    "  LIMIT $2::int)"                                                                              \
    " UNION ALL "                                                                                   \
    "(SELECT 'group', g.name, g.name, '', NULL::text, to_jsonb(ARRAY[g.name]), 2,"               \
    "        row_number() OVER (ORDER BY " RANK("g.name") ", g.name)"                               \
    "   FROM (SELECT name FROM proxy_groups UNION SELECT group_name FROM proxy_nodes) g, p"        \
    "  WHERE g.name ILIKE p.pat"                                                                    \
    "  ORDER BY 8"                                                                                  \
    "  LIMIT $2::int)"                                                                              \
    " UNION ALL "                                                                                   \
    "(SELECT 'deployment', d.id::text,"                                                             \
    "        c.namespace || '/' || c.name || ' v' || d.config_version, d.state, NULL::text,"       \
    "        to_jsonb(d.groups), 3,"                                                               \
    "        row_number() OVER (ORDER BY d.created_at DESC, d.id)"                                  \
    "   FROM deployments d JOIN configs c ON c.id = d.config_id, p"                                \
    "  WHERE d.id::text ILIKE p.pat OR c.namespace || '/' || c.name ILIKE p.pat"                  \
    "  ORDER BY 8"                                                                                  \
    "  LIMIT $2::int)"                                                                              \
    " ORDER BY 7, 8"
// clang-format on

int search_repo_find(pg_conn *c, const char *q, int limit, sx_arena *a, search_list *out,
                     sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (q == NULL || q[strspn(q, " \t\r\n")] == '\0')
        return sx_err_set(err, SX_EINVAL, "q must not be empty");
    if (strlen(q) > SEARCH_QUERY_MAX)
        return sx_err_set(err, SX_EINVAL, "q must be at most %d bytes", SEARCH_QUERY_MAX);
    if (limit < 1 || limit > SEARCH_LIMIT_MAX)
        return sx_err_set(err, SX_EINVAL, "limit must be 1..%d", SEARCH_LIMIT_MAX);
    const char *p[] = {q, repo_i64_param(a, limit)};
    return repo_query_rows(c, a, FIND_SQL, 2, p, sizeof(search_hit), read_hit, &out->items,
                           &out->count, err);
}

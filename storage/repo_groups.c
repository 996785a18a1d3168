/*
 * repo_groups.c — a proxy group's settings in its proxy_groups row (see repo_groups.h).
 *
 * The data planes column is a text[] whose NULL means "the configured default"; arrays
 * travel as JSON text both ways (repo_common.h).
 */
#include "storage/repo_groups.h"

#include <string.h>

#include "storage/repo_common.h"

#define SETTINGS_COLS                                                                              \
    "to_jsonb(g.data_planes), g.current_snapshot_version, " REPO_TS("g.updated_at")

static int read_settings(sx_arena *a, const PGresult *r, int row, int col, group_settings *s,
                         sx_err *err)
{
    s->exists = true;
    int rc = repo_strv(a, r, row, col, &s->data_planes, &s->n_data_planes, err);
    if (rc == 0)
        rc = repo_i64(r, row, col + 1, 0, &s->current_version, err);
    s->updated_at = repo_str(a, r, row, col + 2);
    return rc;
}

int group_repo_get(pg_conn *c, const char *const *groups, size_t n, sx_arena *a,
                   group_settings **out, sx_err *err)
{
    group_settings *v = sx_arena_alloc(a, (n ? n : 1) * sizeof(*v));
    memset(v, 0, (n ? n : 1) * sizeof(*v));
    *out = v;
    for (size_t i = 0; i < n; i++)
        v[i].name = (char *)groups[i];
    if (n == 0)
        return 0;
    const char *p[] = {repo_strv_param(a, groups, n)};
    PGresult *r;
    int rc = repo_query(c, a,
                        "SELECT g.name, " SETTINGS_COLS " FROM proxy_groups g"
                        " WHERE g.name IN (SELECT jsonb_array_elements_text($1::jsonb))",
                        1, p, &r, err);
    if (rc)
        return rc;
    for (int row = 0; row < PQntuples(r); row++) {
        const char *name = PQgetvalue(r, row, 0);
        for (size_t i = 0; i < n; i++)
            if (strcmp(groups[i], name) == 0 && (rc = read_settings(a, r, row, 1, &v[i], err)))
                return rc;
    }
    return 0;
}

int group_repo_lock(pg_conn *c, const char *group, sx_arena *a, group_settings *before, sx_err *err)
{
    memset(before, 0, sizeof(*before));
    before->name = (char *)group;
    /* DO UPDATE (not DO NOTHING) so the existing row is locked as well. */
    const char *p[] = {group};
    PGresult *r;
    int rc =
        repo_query(c, a,
                   "INSERT INTO proxy_groups AS g (name, latest_snapshot_version) VALUES ($1, 0)"
                   " ON CONFLICT (name) DO UPDATE SET name = g.name RETURNING " SETTINGS_COLS,
                   1, p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) != 1)
        return sx_err_set(err, SX_EINTERNAL, "could not lock proxy group %s", group);
    return read_settings(a, r, 0, 0, before, err);
}

int group_repo_set_planes(pg_conn *c, const char *group, const char *const *names, size_t n,
                          sx_arena *a, sx_err *err)
{
    const char *p[] = {group, n ? repo_strv_param(a, names, n) : NULL};
    return repo_exec_one(c,
                         "UPDATE proxy_groups SET data_planes = CASE WHEN $2::jsonb IS NULL"
                         " THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text($2::jsonb))"
                         " END WHERE name = $1",
                         2, p, err, "proxy group %s does not exist", group);
}

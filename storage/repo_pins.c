/*
 * repo_pins.c — rollout assignments and the node reads of rollouts (see repo_pins.h).
 *
 * Arrays and objects go in as JSON parameters (repo_common.h). The states that still
 * hold a deployment's pins are listed once, in ACTIVE_STATES.
 */
#include "storage/repo_pins.h"

#include <stdlib.h>
#include <string.h>

#include "storage/repo_common.h"

#define ACTIVE_STATES "('pending', 'in_progress', 'paused', 'canceling', 'rolling_back')"

int pin_repo_set(pg_conn *c, const char *const *node_ids, size_t n, const json_t *versions,
                 const char *deployment_id, int *updated, sx_err *err)
{
    if (updated)
        *updated = 0;
    if (n == 0)
        return 0;
    if (!json_is_object(versions))
        return sx_err_set(err, SX_EINVAL, "pin versions must be an object of group -> version");
    if (deployment_id && !repo_is_uuid(deployment_id))
        return sx_err_set(err, SX_EINVAL, "invalid deployment id");
    sx_arena *a = sx_arena_create();
    const char *p[] = {repo_strv_param(a, node_ids, n), repo_json_param(a, versions),
                       deployment_id};
    int rc = repo_exec_count(
        c,
        "INSERT INTO node_status AS ns (node_id, desired_group, desired_snapshot_version,"
        "   deployment_id, updated_at)"
        " SELECT pn.node_id, pn.group_name, ($2::jsonb ->> pn.group_name)::bigint, $3::uuid, now()"
        " FROM proxy_nodes pn"
        " WHERE pn.node_id IN (SELECT jsonb_array_elements_text($1::jsonb))"
        "   AND $2::jsonb ? pn.group_name"
        " ON CONFLICT (node_id) DO UPDATE SET desired_group = EXCLUDED.desired_group,"
        "   desired_snapshot_version = EXCLUDED.desired_snapshot_version,"
        "   deployment_id = EXCLUDED.deployment_id, updated_at = now()",
        3, p, updated, err);
    sx_arena_destroy(a);
    return rc;
}

int pin_repo_release_deployment(pg_conn *c, const char *deployment_id, int *released, sx_err *err)
{
    if (released)
        *released = 0;
    if (!repo_is_uuid(deployment_id))
        return sx_err_set(err, SX_EINVAL, "invalid deployment id");
    const char *p[] = {deployment_id};
    return repo_exec_count(
        c,
        "UPDATE node_status SET desired_group = NULL,"
        "   desired_snapshot_version = NULL, deployment_id = NULL, updated_at = now()"
        " WHERE deployment_id = $1::uuid",
        1, p, released, err);
}

int pin_repo_release_finished(pg_conn *c, const char *const *groups, size_t n, int *released,
                              sx_err *err)
{
    if (released)
        *released = 0;
    if (n == 0)
        return 0;
    sx_arena *a = sx_arena_create();
    const char *p[] = {repo_strv_param(a, groups, n)};
    int rc = repo_exec_count(
        c,
        "UPDATE node_status ns SET desired_group = NULL, desired_snapshot_version = NULL,"
        "   deployment_id = NULL, updated_at = now()"
        " WHERE ns.desired_snapshot_version IS NOT NULL"
        "   AND ns.desired_group IN (SELECT jsonb_array_elements_text($1::jsonb))"
        "   AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = ns.deployment_id"
        "     AND d.state IN " ACTIVE_STATES ")",
        1, p, released, err);
    sx_arena_destroy(a);
    return rc;
}

static int read_pin(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    pin_record *v = item;
    REPO_STRS(a, r, row, 0, &v->node_id, &v->group);
    v->deployment_id = repo_str(a, r, row, 3);
    return repo_i64(r, row, 2, 0, &v->version, err);
}

int pin_repo_load(pg_conn *c, sx_arena *a, pin_record **out, size_t *n, sx_err *err)
{
    return repo_query_rows(c, a,
                           "SELECT node_id, desired_group, desired_snapshot_version, deployment_id"
                           " FROM node_status WHERE desired_snapshot_version IS NOT NULL"
                           "   AND desired_group IS NOT NULL ORDER BY node_id",
                           0, NULL, sizeof(pin_record), read_pin, out, n, err);
}

static int read_candidate(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    (void)err;
    pin_candidate *v = item;
    REPO_STRS(a, r, row, 0, &v->node_id, &v->group, &v->ns);
    v->connected = repo_bool(r, row, 3);
    return 0;
}

int pin_repo_select(pg_conn *c, const char *const *groups, size_t ngroups,
                    const char *const *node_ids, size_t nnodes, const json_t *labels,
                    const char *const *namespaces, size_t nns, sx_arena *a, pin_candidate **out,
                    size_t *n, sx_err *err)
{
    *out = NULL;
    *n = 0;
    if (labels && !json_is_object(labels))
        return sx_err_set(err, SX_EINVAL, "labels must be an object");
    const char *p[] = {
        repo_strv_param(a, groups, ngroups),
        nnodes ? repo_strv_param(a, node_ids, nnodes) : NULL,
        labels && json_object_size(labels) ? repo_json_param(a, labels) : NULL,
        nns ? repo_strv_param(a, namespaces, nns) : NULL,
    };
    return repo_query_rows(c, a,
                           "SELECT node_id, group_name, namespace, connected FROM proxy_nodes"
                           " WHERE group_name IN (SELECT jsonb_array_elements_text($1::jsonb))"
                           "   AND ($2::jsonb IS NULL OR node_id IN"
                           "     (SELECT jsonb_array_elements_text($2::jsonb)))"
                           "   AND ($3::jsonb IS NULL OR labels @> $3::jsonb)"
                           "   AND ($4::jsonb IS NULL OR namespace IN"
                           "     (SELECT jsonb_array_elements_text($4::jsonb)))"
                           " ORDER BY node_id",
                           4, p, sizeof(pin_candidate), read_candidate, out, n, err);
}

static int read_answer(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    pin_answer *v = item;
    REPO_STRS(a, r, row, 0, &v->node_id, &v->group);
    v->connected = repo_bool(r, row, 2);
    int rc;
    if ((rc = repo_i64(r, row, 3, 0, &v->acked, err)) ||
        (rc = repo_i64(r, row, 4, 0, &v->nacked, err)))
        return rc;
    REPO_STRS(a, r, row, 5, &v->nack_error, &v->nack_at);
    v->nack_age_s = strtod(PQgetvalue(r, row, 7), NULL);
    v->report_ready = PQgetisnull(r, row, 8) ? -1 : repo_bool(r, row, 8) ? 1 : 0;
    v->report_age_s = strtod(PQgetvalue(r, row, 9), NULL);
    return 0;
}

int pin_repo_answers(pg_conn *c, const char *const *node_ids, size_t n, sx_arena *a,
                     pin_answer **out, size_t *count, sx_err *err)
{
    *out = NULL;
    *count = 0;
    if (n == 0)
        return 0;
    const char *p[] = {repo_strv_param(a, node_ids, n)};
    return repo_query_rows(
        c, a,
        "SELECT pn.node_id, pn.group_name, pn.connected, s.acked_snapshot_version,"
        "   s.last_nack_version, s.last_nack_error, " REPO_TS(
            "s.last_nack_at") ","
                              "   COALESCE(extract(epoch FROM now() - s.last_nack_at), 1e12),"
                              "   s.report_ready, COALESCE(extract(epoch FROM now() - "
                              "s.reported_at), 1e12)"
                              " FROM proxy_nodes pn LEFT JOIN node_status s ON s.node_id = "
                              "pn.node_id"
                              " WHERE pn.node_id IN (SELECT jsonb_array_elements_text($1::jsonb))"
                              " ORDER BY pn.node_id",
        1, p, sizeof(pin_answer), read_answer, out, count, err);
}

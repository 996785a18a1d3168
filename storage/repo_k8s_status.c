/*
 * repo_k8s_status.c — the status written back to Kubernetes objects (see
 * repo_k8s_status.h).
 *
 * Design: one row per object keyed by (kind, namespace, name), upserted with the status
 * of each patch; the upsert leaves written_at alone when nothing it records changed, so
 * a resync that finds the status as it was does not claim to have written it again.
 * Arrays travel as JSON text (repo_common.h).
 */
#include "storage/repo_k8s_status.h"

#include <string.h>

#include "storage/repo_common.h"

#define KIND_MAX     64
#define NAME_MAX_LEN 253
#define REF_MAX      1024
#define FOR_REF_MAX  1000

static int check_key(const char *kind, const char *ns, const char *name, sx_err *err)
{
    if (kind == NULL || kind[0] == '\0' || strlen(kind) > KIND_MAX)
        return sx_err_set(err, SX_EINVAL, "kind must be 1 to %d bytes", KIND_MAX);
    if (ns && strlen(ns) > NAME_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "namespace is longer than %d bytes", NAME_MAX_LEN);
    if (name == NULL || name[0] == '\0' || strlen(name) > NAME_MAX_LEN)
        return sx_err_set(err, SX_EINVAL, "name must be 1 to %d bytes", NAME_MAX_LEN);
    return 0;
}

int k8s_status_repo_put(pg_conn *c, const k8s_status_put *p, sx_err *err)
{
    int rc = check_key(p->kind, p->ns, p->name, err);
    if (rc)
        return rc;
    if (p->generation < 0)
        return sx_err_set(err, SX_EINVAL, "generation must not be negative");
    if (!json_is_object(p->status))
        return sx_err_set(err, SX_EINVAL, "status must be a JSON object");
    for (size_t i = 0; i < p->n_source_refs; i++)
        if (p->source_refs[i] == NULL || p->source_refs[i][0] == '\0' ||
            strlen(p->source_refs[i]) > REF_MAX)
            return sx_err_set(err, SX_EINVAL, "source_refs[%zu] must be 1 to %d bytes", i, REF_MAX);
    sx_arena *a = sx_arena_create();
    const char *prm[] = {p->kind,
                         p->ns ? p->ns : "",
                         p->name,
                         repo_i64_param(a, p->generation),
                         repo_json_param(a, p->status),
                         repo_strv_param(a, p->source_refs, p->n_source_refs)};
    rc = repo_exec_count(
        c,
        "INSERT INTO k8s_status AS k (kind, namespace, name, generation, status, source_refs,"
        "   written_at)"
        " VALUES ($1, $2, $3, $4::bigint, $5::jsonb,"
        "   ARRAY(SELECT DISTINCT r FROM jsonb_array_elements_text($6::jsonb) r ORDER BY r),"
        "   now())"
        " ON CONFLICT (kind, namespace, name) DO UPDATE SET generation = EXCLUDED.generation,"
        "   status = EXCLUDED.status, source_refs = EXCLUDED.source_refs,"
        "   written_at = CASE WHEN k.status = EXCLUDED.status"
        "                      AND k.generation = EXCLUDED.generation"
        "                     THEN k.written_at ELSE now() END"
        " WHERE k.status IS DISTINCT FROM EXCLUDED.status"
        "    OR k.generation IS DISTINCT FROM EXCLUDED.generation"
        "    OR k.source_refs IS DISTINCT FROM EXCLUDED.source_refs",
        6, prm, NULL, err);
    sx_arena_destroy(a);
    return rc;
}

int k8s_status_repo_delete(pg_conn *c, const char *kind, const char *ns, const char *name,
                           sx_err *err)
{
    int rc = check_key(kind, ns, name, err);
    if (rc)
        return rc;
    const char *p[] = {kind, ns ? ns : "", name};
    return repo_exec_count(c,
                           "DELETE FROM k8s_status WHERE kind = $1 AND namespace = $2"
                           " AND name = $3",
                           3, p, NULL, err);
}

int k8s_status_repo_keep(pg_conn *c, const char *const *kinds, const char *const *nss,
                         const char *const *names, size_t n, sx_arena *a, int *deleted, sx_err *err)
{
    if (deleted)
        *deleted = 0;
    json_t *keys = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(keys, json_pack("[s,s,s]", kinds[i], nss[i] ? nss[i] : "", names[i]));
    const char *p[] = {repo_json_param(a, keys)};
    json_decref(keys);
    return repo_exec_count(c,
                           "DELETE FROM k8s_status k WHERE NOT EXISTS ("
                           " SELECT 1 FROM jsonb_array_elements($1::jsonb) e"
                           " WHERE e->>0 = k.kind AND e->>1 = k.namespace AND e->>2 = k.name)",
                           1, p, deleted, err);
}

/* Columns: kind, namespace, name, generation, status, source_refs, written_at. */
static int read_row(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    k8s_status_record *o = item;
    REPO_STRS(a, r, row, 0, &o->kind, &o->ns, &o->name);
    int rc = repo_i64(r, row, 3, 0, &o->generation, err);
    if (rc == 0)
        rc = repo_json(a, r, row, 4, &o->status, err);
    if (rc == 0)
        rc = repo_strv(a, r, row, 5, &o->source_refs, &o->n_source_refs, err);
    o->written_at = repo_str(a, r, row, 6);
    return rc;
}

int k8s_status_repo_for_ref(pg_conn *c, const char *source_ref, sx_arena *a,
                            k8s_status_record **out, size_t *count, sx_err *err)
{
    *out = NULL;
    *count = 0;
    if (source_ref == NULL || source_ref[0] == '\0' || strlen(source_ref) > REF_MAX)
        return sx_err_set(err, SX_EINVAL, "source_ref must be 1 to %d bytes", REF_MAX);
    const char *p[] = {source_ref, repo_i64_param(a, FOR_REF_MAX)};
    return repo_query_rows(
        c, a,
        "SELECT kind, namespace, name, generation, status::text,"
        " to_jsonb(source_refs)::text, " REPO_TS(
            "written_at") " FROM k8s_status WHERE $1 = ANY(source_refs)"
                          " ORDER BY kind <> 'Gateway', kind, namespace, name LIMIT $2::int",
        2, p, sizeof(k8s_status_record), read_row, out, count, err);
}

/*
 * changes.c — the write side of the domain (see changes.h).
 *
 * Thin on purpose: the work of a change is in server/apply.c, which owns its
 * transaction; this module is where the REST API's requests and a managed source's
 * translations meet the daemon's pool, its snapshot repository and its configured
 * limits, so that no handler or controller holds a database connection or reads the
 * validation settings itself. Both go through the same apply_config; what differs is
 * the source the request names, which decides who may change a config (apply.h).
 */
#include "server/changes.h"

#include <string.h>

#include "server/config.h"
#include "server/server.h"
#include "storage/pg_pool.h"

int changes_ready(const struct sx_server *srv, sx_err *err)
{
    if (srv && srv->db && srv->snap_repo)
        return 0;
    return sx_err_set(err, SX_EUNAVAILABLE, "the database is not available");
}

int changes_apply(struct sx_server *srv, apply_request *req, sx_arena *a, apply_result *out,
                  sx_fielderrs *verrs, sx_err *err)
{
    int rc = changes_ready(srv, err);
    if (rc)
        return rc;
    val_limits limits = val_limits_from_config(srv->config);
    req->limits = &limits;
    rc = apply_config(srv->db, srv->snap_repo, req, a, out, verrs, err);
    req->limits = NULL;
    return rc;
}

int changes_validate(struct sx_server *srv, apply_request *req, sx_arena *a, sx_fielderrs *verrs,
                     sx_err *err)
{
    int rc = changes_ready(srv, err);
    if (rc)
        return rc;
    val_limits limits = val_limits_from_config(srv->config);
    req->limits = &limits;
    rc = apply_validate(srv->db, req, a, verrs, err);
    req->limits = NULL;
    return rc;
}

int changes_rollback_group(struct sx_server *srv, rollback_group_request *req, sx_arena *a,
                           rollback_group_result *out, sx_fielderrs *verrs, sx_err *err)
{
    int rc = changes_ready(srv, err);
    if (rc)
        return rc;
    val_limits limits = val_limits_from_config(srv->config);
    req->limits = &limits;
    rc = rollback_group(srv->db, srv->snap_repo, req, a, out, verrs, err);
    req->limits = NULL;
    return rc;
}

int changes_set_group_planes(struct sx_server *srv, groups_set_request *req, sx_arena *a,
                             groups_info *out, val_result *problems, sx_err *err)
{
    int rc = changes_ready(srv, err);
    if (rc)
        return rc;
    req->default_planes = srv->config->groups.default_planes;
    return groups_set_planes(srv->db, req, a, out, problems, err);
}

int changes_put_managed(struct sx_server *srv, const changes_managed *m, sx_arena *a,
                        apply_result *out, val_result *problems, sx_fielderrs *verrs, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    apply_request req = {
        .op = APPLY_UPSERT,
        .ns = m->ns,
        .name = m->name,
        .groups = m->groups,
        .group_count = m->group_count,
        .spec = m->spec,
        .author = CHANGES_KUBERNETES_ACTOR,
        .actor_role = "",
        .message = m->message,
        .action = "config.sync",
        .problems = problems,
        .source = CFG_SOURCE_KUBERNETES,
        .source_ref = m->source_ref,
    };
    return changes_apply(srv, &req, a, out, verrs, err);
}

int changes_delete_managed(struct sx_server *srv, const char *ns, const char *name,
                           const char *message, sx_arena *a, apply_result *out, sx_fielderrs *verrs,
                           sx_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = changes_ready(srv, err);
    if (rc)
        return rc;
    if (ns == NULL || ns[0] == '\0' || name == NULL || name[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "a config needs a namespace and a name");
    pg_conn *c = NULL;
    cfg_record *cfg = NULL;
    if ((rc = pg_acquire(srv->db, &c, err)) == 0)
        rc = cfg_repo_get_by_name(c, ns, name, a, &cfg, err);
    pg_release(srv->db, c);
    if (rc == SX_ENOTFOUND) {
        sx_err_clear(err);
        return 0;
    }
    if (rc)
        return rc;
    apply_request req = {
        .op = APPLY_DELETE,
        .config_id = cfg->id,
        .author = CHANGES_KUBERNETES_ACTOR,
        .actor_role = "",
        .message = message,
        .action = "config.delete",
        .source = CFG_SOURCE_KUBERNETES,
    };
    rc = changes_apply(srv, &req, a, out, verrs, err);
    if (rc == SX_ENOTFOUND) { /* deleted meanwhile: what was asked for is done */
        sx_err_clear(err);
        memset(out, 0, sizeof(*out));
        return 0;
    }
    return rc;
}

int changes_audit(struct sx_server *srv, const audit_new *row, sx_err *err)
{
    if (srv == NULL || srv->db == NULL)
        return sx_err_set(err, SX_EUNAVAILABLE, "no database is configured");
    pg_conn *c = NULL;
    long long id;
    int rc = pg_acquire(srv->db, &c, err);
    if (rc == 0)
        rc = audit_repo_append(c, row, &id, err);
    pg_release(srv->db, c);
    return rc;
}

json_t *changes_problems_json(const val_result *problems, const sx_fielderrs *verrs,
                              const char *stage)
{
    json_t *d = json_array();
    for (size_t i = 0; problems && i < problems->count; i++) {
        const val_problem *p = &problems->items[i];
        json_t *e = json_pack("{s:s,s:s,s:s}", "stage", val_stage_name(p->stage), "path",
                              p->path ? p->path : "", "message", p->message ? p->message : "");
        if (p->conflict_with)
            json_object_set_new(e, "conflict_with", json_string(p->conflict_with));
        if (p->data_plane)
            json_object_set_new(e, "data_plane", json_string(p->data_plane));
        json_array_append_new(d, e);
    }
    for (size_t i = 0; verrs && i < verrs->count; i++)
        json_array_append_new(d,
                              json_pack("{s:s,s:s,s:s}", "stage", stage, "path",
                                        verrs->items[i].path, "message", verrs->items[i].message));
    return d;
}

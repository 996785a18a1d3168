/*
 * handlers_snapshots.c — /api/v1/snapshots and /api/v1/groups: the composed snapshots
 * of the proxy groups (list, one with its IR and the config versions it was built
 * from), the groups themselves, and a group's rollback to one of its snapshots.
 *
 * Snapshots are immutable, so reads need no transaction; the rollback goes through
 * apply_group_rollback (server/apply.h), which writes the new version, its audit row
 * and the NOTIFY in one transaction.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers_routes.h"
#include "api/handlers_common.h"
#include "server/apply.h"
#include "server/server.h"

void api_snapshots_list(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int limit;
    const char *cursor;
    if (!api_page_or_respond(req, &limit, &cursor))
        return;
    struct sx_server *srv = rest_server(api);
    if (srv->snap_repo == NULL) {
        http_req_set_header(req, "Retry-After", "1");
        http_respond_error(req, SX_EUNAVAILABLE, "the database is not available", NULL);
        return;
    }
    const char *group = http_req_query(req, "group");
    snap_list list;
    sx_err err;
    sx_err_clear(&err);
    int rc = group && group[0] ? snap_repo_list_versions(srv->snap_repo, group, limit, cursor,
                                                         http_req_arena(req), &list, &err)
                               : snap_repo_list_all(srv->snap_repo, limit, cursor,
                                                    http_req_arena(req), &list, &err);
    if (rc) {
        api_respond_err(req, &err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < list.count; i++)
        json_array_append_new(items, api_snapshot_json(&list.items[i]));
    http_respond_json(req, 200, api_page(items, list.next_cursor));
}

void api_snapshot_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *ids = http_req_param(req, "id");
    long long id;
    if (!api_parse_positive(ids, &id)) {
        char msg[128];
        snprintf(msg, sizeof(msg), "snapshot %.32s does not exist", ids ? ids : "");
        json_t *d = json_array();
        api_detail(d, "id", "a snapshot id is a positive integer");
        http_respond_error(req, SX_ENOTFOUND, msg, d);
        return;
    }
    struct sx_server *srv = rest_server(api);
    sx_arena *a = http_req_arena(req);
    snap_record *s = NULL;
    sx_err err;
    sx_err_clear(&err);
    if (srv->snap_repo == NULL) {
        sx_err_set(&err, SX_EUNAVAILABLE, "the database is not available");
        api_respond_err(req, &err);
        return;
    }
    /* Before taking a connection here: the repository takes its own. */
    if (snap_repo_get_by_id(srv->snap_repo, id, a, &s, &err) != 0) {
        api_respond_err(req, &err);
        return;
    }
    pg_conn *c = api_conn_or_respond(req, api);
    if (c == NULL)
        return;
    json_t *body = api_snapshot_json(s);
    /* Name each source config; a deleted config keeps its name. */
    json_t *sources = json_object_get(body, "sources");
    for (size_t i = 0; i < s->source_count; i++) {
        cfg_record *cfg = NULL;
        sx_err ignored;
        if (cfg_repo_get(c, s->sources[i].config_id, true, a, &cfg, &ignored) == 0) {
            json_t *e = json_array_get(sources, i);
            json_object_set_new(e, "namespace", json_string(cfg->ns));
            json_object_set_new(e, "name", json_string(cfg->name));
        }
    }
    pg_release(srv->db, c);
    http_respond_json(req, 200, body);
}

void api_groups_list(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int limit;
    const char *cursor;
    if (!api_page_or_respond(req, &limit, &cursor))
        return;
    struct sx_server *srv = rest_server(api);
    if (srv->snap_repo == NULL) {
        http_req_set_header(req, "Retry-After", "1");
        http_respond_error(req, SX_EUNAVAILABLE, "the database is not available", NULL);
        return;
    }
    snap_group_list list;
    sx_err err;
    sx_err_clear(&err);
    if (snap_repo_list_groups(srv->snap_repo, limit, cursor, http_req_arena(req), &list, &err)) {
        api_respond_err(req, &err);
        return;
    }
    /* Fleet health of the page's groups, one query for all of them. */
    sx_arena *a = http_req_arena(req);
    node_state_counts *counts = NULL;
    if (list.count) {
        const char **names = sx_arena_alloc(a, list.count * sizeof(*names));
        for (size_t i = 0; i < list.count; i++)
            names[i] = list.items[i].name;
        counts = sx_arena_alloc(a, list.count * sizeof(*counts));
        pg_conn *c = api_conn_or_respond(req, api);
        if (c == NULL)
            return;
        node_thresholds t = api_fleet_thresholds(srv);
        int rc = node_repo_count_groups(c, &t, names, list.count, counts, &err);
        pg_release(srv->db, c);
        if (rc) {
            api_respond_err(req, &err);
            return;
        }
    }
    json_t *items = json_array();
    for (size_t i = 0; i < list.count; i++) {
        const node_state_counts *k = &counts[i];
        json_array_append_new(
            items,
            json_pack("{s:s,s:I,s:s,s:{s:I,s:I,s:I,s:I},s:f}", "name", list.items[i].name,
                      "latest_version", (json_int_t)list.items[i].latest_version, "updated_at",
                      list.items[i].updated_at, "proxies", "connected", (json_int_t)k->connected,
                      "stale", (json_int_t)k->stale, "disconnected", (json_int_t)k->disconnected,
                      "nacking", (json_int_t)k->nacking, "nack_rate",
                      k->responded ? (double)k->nacking / (double)k->responded : 0.0));
    }
    http_respond_json(req, 200, api_page(items, list.next_cursor));
}

static const api_field rollback_fields[] = {
    {"snapshot_version", API_INT, true},
    {"message", API_STRING, false},
};

void api_group_rollback(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *group = http_req_param(req, "group");
    api_change ch = {req, api, "group.rollback", "group", group};
    struct sx_server *srv = rest_server(api);
    if (srv->db == NULL || srv->snap_repo == NULL) {
        http_req_set_header(req, "Retry-After", "1");
        http_respond_error(req, SX_EUNAVAILABLE, "the database is not available", NULL);
        return;
    }
    json_t *body;
    if (!api_body_or_respond(req, &ch, rollback_fields, 2, &body))
        return;
    json_int_t v = json_integer_value(json_object_get(body, "snapshot_version"));
    if (v < 1) {
        json_t *d = json_array();
        api_detail(d, "snapshot_version", "must be a positive integer (a version of the group)");
        api_fail(req, &ch, SX_EINVAL, "the request body has 1 problem", d);
        return;
    }
    apply_group_rollback_request gr = {
        .group = group,
        .snapshot_version = v,
        .author = api_user(req),
        .actor_role = api_role(req),
        .message = api_str(body, "message"),
        .request_id = http_req_id(req),
        .source_ip = rest_source_ip(req),
    };
    apply_group_rollback_result res;
    sx_fielderrs verrs = {0};
    sx_err err;
    sx_err_clear(&err);
    int rc =
        apply_group_rollback(srv->db, srv->snap_repo, &gr, http_req_arena(req), &res, &verrs, &err);
    if (rc == SX_EVALIDATION) {
        api_change_fail(&ch, 422, sx_code_name(rc), err.message,
                        api_problem_details(NULL, &verrs, "schema"));
    } else if (rc) {
        api_change_fail_err(&ch, &err);
    } else {
        http_respond_json(req, 200,
                          json_pack("{s:s,s:I,s:I,s:I,s:b}", "group", group, "snapshot_version",
                                    (json_int_t)v, "before_version", (json_int_t)res.before_version,
                                    "version", (json_int_t)res.version, "changed", res.changed));
    }
    sx_fielderrs_free(&verrs);
}

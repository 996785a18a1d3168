/*
 * handlers_snapshots.c — /api/v1/snapshots and /api/v1/groups: the composed snapshots
 * of the proxy groups (list, one with its IR and the config versions it was built
 * from), the groups themselves, and a group's rollback to one of its snapshots.
 *
 * Snapshots are immutable, so reads need no transaction (server/catalog.h); the
 * rollback goes through changes_rollback_group (server/changes.h), which writes the new version,
 * its audit row and the NOTIFY in one transaction.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers_routes.h"
#include "api/handlers_common.h"
#include "api/idempotency.h"
#include "server/catalog.h"
#include "server/base/arena.h"
#include "server/changes.h"

static json_t *snapshot_item(const void *s)
{
    return api_snapshot_json(s);
}

static policy_object snapshot_scope(const void *item)
{
    const snap_record *s = item;
    return (policy_object){(const char *const *)&s->group, 1, NULL};
}

int api_snapshots_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    snap_list list;
    int rc = catalog_snapshots(rest_server(api), http_req_query(req, "group"), page->limit,
                               page->cursor, http_req_arena(req), &list, err);
    /* Only the snapshots of the groups in the caller's scope stay on the page. */
    return API_PAGE_SCOPED(page, rc, list, snapshot_item, req, api, "snapshots", snapshot_scope);
}

void api_snapshot_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *ids = http_req_param(req, "id");
    long long id;
    sx_err err;
    sx_err_clear(&err);
    if (!api_parse_positive(ids, &id)) {
        sx_err_set(&err, SX_ENOTFOUND, "snapshot %.32s does not exist", ids ? ids : "");
        api_refuse(req, NULL, &err, api_details1("id", "a snapshot id is a positive integer"));
        return;
    }
    snap_record *s = NULL;
    cfg_record **cfgs = NULL;
    if (catalog_snapshot(rest_server(api), id, http_req_arena(req), &s, &cfgs, &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    const char *g = s->group;
    policy_object obj = {&g, 1, NULL};
    if (!api_scope_or_respond(req, api, NULL, "snapshots", "read", &obj,
                              sx_arena_printf(http_req_arena(req), "snapshot %lld", id)))
        return;
    json_t *body = api_snapshot_json(s);
    /* Name each source config; a deleted config keeps its name. */
    json_t *sources = json_object_get(body, "sources");
    for (size_t i = 0; i < s->source_count; i++) {
        if (cfgs[i] == NULL)
            continue;
        json_t *e = json_array_get(sources, i);
        json_object_set_new(e, "namespace", json_string(cfgs[i]->ns));
        json_object_set_new(e, "name", json_string(cfgs[i]->name));
    }
    http_respond_json(req, 200, body);
}

int api_groups_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err)
{
    snap_group_list list;
    node_state_counts *counts = NULL;
    int rc = catalog_groups(rest_server(api), page->limit, page->cursor, http_req_arena(req), &list,
                            &counts, err);
    if (rc)
        return rc;
    const char **names = sx_arena_alloc(http_req_arena(req), (list.count + 1) * sizeof(*names));
    for (size_t i = 0; i < list.count; i++)
        names[i] = list.items[i].name;
    unsigned *planes = NULL;
    if ((rc = catalog_group_planes(rest_server(api), names, list.count, http_req_arena(req),
                                   &planes, err)) != 0)
        return rc;
    for (size_t i = 0; i < list.count; i++) {
        const node_state_counts *k = &counts[i];
        policy_object obj = {&names[i], 1, NULL};
        if (!api_scope_reads(req, api, "groups", &obj))
            continue; /* outside the caller's scope: not on its page */
        json_array_append_new(
            page->items,
            json_pack("{s:s,s:I,s:s,s:{s:I,s:I,s:I,s:I},s:f}", "name", list.items[i].name,
                      "latest_version", (json_int_t)list.items[i].latest_version, "updated_at",
                      list.items[i].updated_at, "proxies", "connected", (json_int_t)k->connected,
                      "stale", (json_int_t)k->stale, "disconnected", (json_int_t)k->disconnected,
                      "nacking", (json_int_t)k->nacking, "nack_rate",
                      k->responded ? (double)k->nacking / (double)k->responded : 0.0));
        json_object_set_new(json_array_get(page->items, json_array_size(page->items) - 1),
                            "data_planes", val_planes_json(planes[i]));
    }
    page->next_cursor = list.next_cursor;
    return 0;
}

static const api_field rollback_fields[] = {
    {"snapshot_version", API_INT, true},
    {"message", API_STRING, false},
    {"force", API_BOOL, false},
};

/* What a group's rollback answers with, for its rendering. */
typedef struct group_answer {
    const char *group;
    long long snapshot_version;
} group_answer;

static json_t *group_rollback_json(const group_answer *g, const rollback_group_result *res)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:b,s:b}", "group", g->group, "snapshot_version",
                     (json_int_t)g->snapshot_version, "before_version",
                     (json_int_t)res->before_version, "version", (json_int_t)res->version,
                     "changed", res->changed, "forced", res->forced);
}

/* idem_render_fn of a keyed rollback: result is the rollback_group_result, ud the
 * group_answer. */
static json_t *render_group_rollback(const void *result, void *ud, int *status)
{
    *status = 200;
    return group_rollback_json(ud, result);
}

void api_group_rollback(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *group = http_req_param(req, "group");
    api_change ch = {req, api, "group.rollback", "group", group};
    group_answer ans = {group, 0};
    idem_request *idem;
    json_t *body;
    if (!api_change_open_or_respond(req, &ch, render_group_rollback, &ans, rollback_fields, 3,
                                    &idem, &body))
        return;
    struct sx_server *srv = rest_server(api);
    sx_err err;
    sx_err_clear(&err);
    bool force = json_is_true(json_object_get(body, "force"));
    if (force && !rest_allows(api, api_role(req), "groups", API_GROUP_FORCE_ACTION)) {
        sx_err_set(&err, SX_EFORBIDDEN, "your role may not force a rollback");
        sx_err_detail(&err,
                      "Republishing a snapshot that validation refuses needs the \"%s\" "
                      "action on groups.",
                      API_GROUP_FORCE_ACTION);
        api_refuse(req, &ch, &err, NULL);
        return;
    }
    json_int_t v = json_integer_value(json_object_get(body, "snapshot_version"));
    ans.snapshot_version = v;
    if (v < 1) {
        sx_err_set(&err, SX_EINVAL, "the request body has 1 problem");
        api_refuse(req, &ch, &err,
                   api_details1("snapshot_version",
                                "must be a positive integer (a version of the group)"));
        return;
    }
    val_result problems = {0};
    rollback_group_request gr = {
        .group = group,
        .snapshot_version = v,
        .force = force,
        .problems = &problems,
        .author = api_user(req),
        .actor_role = api_role(req),
        .message = api_str(body, "message"),
        .request_id = http_req_id(req),
        .client_request_id = http_req_client_id(req),
        .source_ip = rest_source_ip(req),
        .idem = idem,
    };
    rollback_group_result res;
    sx_fielderrs verrs = {0};
    int rc = changes_rollback_group(srv, &gr, http_req_arena(req), &res, &verrs, &err);
    if (rc) {
        err.code = rc;
        json_t *details = NULL;
        if (rc == SX_EVALIDATION) {
            details = changes_problems_json(&problems, &verrs, "schema");
            if (problems.count > 0 && err.hint[0])
                json_array_append_new(details,
                                      json_pack("{s:s,s:s}", "path", "force", "message", err.hint));
        }
        api_refuse(req, &ch, &err, details);
    } else if (!api_idem_respond(req, idem)) {
        http_respond_json(req, 200, group_rollback_json(&ans, &res));
    }
    sx_fielderrs_free(&verrs);
    val_result_free(&problems);
}

/*
 * handlers_groups.c — /api/v1/groups/{group}: one proxy group and its settings (the
 * data planes it serves), read and changed.
 *
 * A group is any valid name: a config that names it makes it, so reading one that has
 * neither settings nor snapshots answers its defaults rather than 404. A change goes
 * through changes_set_group_planes (server/changes.h), which checks the group's live
 * configs against the new data planes and writes the setting and its audit row in one
 * transaction; a refusal lists every problem with its path and the data plane that
 * cannot take it.
 */
#include <string.h>

#include "api/handlers_common.h"
#include "api/handlers_routes.h"
#include "api/idempotency.h"
#include "server/catalog.h"
#include "server/changes.h"

static json_t *group_json(const groups_info *g)
{
    return json_pack("{s:s,s:o,s:b,s:I}", "name", g->name, "data_planes",
                     val_planes_json(g->planes), "data_planes_default", g->planes_default,
                     "current_version", (json_int_t)g->current_version);
}

void api_group_get(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    sx_err err;
    sx_err_clear(&err);
    groups_info g;
    if (catalog_group(rest_server(api), http_req_param(req, "group"), http_req_arena(req), &g,
                      &err) != 0) {
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    http_respond_json(req, 200, group_json(&g));
}

static const api_field put_fields[] = {
    {"data_planes", API_STRINGS, false},
    {"use_default", API_BOOL, false},
};

/* idem_render_fn of a keyed change: result is the groups_info. */
static json_t *render_group(const void *result, void *ud, int *status)
{
    (void)ud;
    *status = 200;
    return group_json(result);
}

void api_group_put(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *group = http_req_param(req, "group");
    api_change ch = {req, api, "group.update", "group", group};
    idem_request *idem;
    json_t *body;
    if (!api_change_open_or_respond(req, &ch, render_group, NULL, put_fields, 2, &idem, &body))
        return;
    struct sx_server *srv = rest_server(api);
    sx_err err;
    sx_err_clear(&err);
    bool reset = json_is_true(json_object_get(body, "use_default"));
    bool has_planes = json_object_get(body, "data_planes") != NULL;
    if (reset == has_planes) {
        sx_err_set(&err, SX_EINVAL, "the request body has 1 problem");
        api_refuse(req, &ch, &err,
                   api_details1("data_planes", "give data_planes (envoy, grpc, control) or "
                                               "use_default: true, not both"));
        return;
    }
    const char **names = NULL;
    size_t n = api_strv(req, body, "data_planes", &names);
    groups_set_request gr = {
        .group = group,
        .planes = names,
        .nplanes = n,
        .reset = reset,
        .author = api_user(req),
        .actor_role = api_role(req),
        .request_id = http_req_id(req),
        .client_request_id = http_req_client_id(req),
        .source_ip = rest_source_ip(req),
        .idem = idem,
    };
    groups_info g;
    val_result problems = {0};
    int rc = changes_set_group_planes(srv, &gr, http_req_arena(req), &g, &problems, &err);
    if (rc) {
        err.code = rc;
        api_refuse(req, &ch, &err,
                   rc == SX_EVALIDATION ? changes_problems_json(&problems, NULL, "semantic")
                                        : NULL);
    } else if (!api_idem_respond(req, idem)) {
        http_respond_json(req, 200, group_json(&g));
    }
    val_result_free(&problems);
}

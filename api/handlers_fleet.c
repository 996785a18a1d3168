/*
 * handlers_fleet.c — the fleet views: /api/v1/fleet/topology (groups → replicas →
 * proxy counts and each group's version distribution), /api/v1/fleet/health (proxy
 * health per minute), /api/v1/fleet/metrics (ACKs, NACKs, publish → ACK latency and
 * open streams per replica per minute) and /api/v1/deployments/{id}/timeline (the ACKs
 * of each wave as they arrived, NACK errors grouped by message).
 *
 * The answers are aggregates computed by the database (server/fleetview.h); a caller
 * whose role is scoped to some groups sees only those groups' rows, and the metrics,
 * which mix every group, only when its role is not scoped.
 */
#include <string.h>

#include "api/handlers_routes.h"
#include "api/handlers_common.h"
#include "server/fleetview.h"
#include "storage/repo_common.h"

/* The window query parameter (minutes, 1..FLEET_REPO_MINUTES_MAX, default
 * FLEETVIEW_WINDOW_DEFAULT), or false with a 400 answered. */
static bool window_or_respond(http_request *req, int *minutes)
{
    const char *w = http_req_query(req, "window");
    long long v = FLEETVIEW_WINDOW_DEFAULT;
    if (w == NULL || w[0] == '\0' || (api_parse_positive(w, &v) && v <= FLEET_REPO_MINUTES_MAX)) {
        *minutes = (int)v;
        return true;
    }
    sx_err err;
    sx_err_set(&err, SX_EINVAL, "invalid query parameter window");
    api_refuse(req, NULL, &err,
               api_details1("window", "must be a number of minutes from 1 to 1440"));
    return false;
}

/* The group query parameter; NULL when absent or empty. */
static const char *group_param(http_request *req)
{
    const char *g = http_req_query(req, "group");
    return g && g[0] ? g : NULL;
}

/* Keeps the entries of array arr whose member key names a group the caller may read. */
static void keep_readable(http_request *req, rest_api *api, json_t *arr, const char *key)
{
    for (size_t i = json_array_size(arr); i-- > 0;) {
        const char *g = json_string_value(json_object_get(json_array_get(arr, i), key));
        policy_object obj = {&g, 1, NULL};
        if (g == NULL || !api_scope_reads(req, api, "proxies", &obj))
            json_array_remove(arr, i);
    }
}

/* True when the caller reads proxies under no group scope: an unscoped rule allows it
 * (a scoped one names its scope). */
static bool reads_every_group(http_request *req, rest_api *api)
{
    json_t *scope = NULL;
    policy_object all = {NULL, 0, NULL};
    bool ok = rest_allows_object(api, req, "proxies", "read", &all, &scope) && scope == NULL;
    json_decref(scope);
    return ok;
}

/* Answers 200 with body (a reference of the request's arena), or err. */
static void answer(http_request *req, int rc, json_t *body, const sx_err *err)
{
    if (rc != 0)
        api_refuse(req, NULL, err, NULL);
    else
        http_respond_json(req, 200, json_incref(body));
}

/* The named group of a scoped caller outside its scope is answered as unknown. */
static bool group_readable_or_respond(http_request *req, rest_api *api, const char *group)
{
    if (group == NULL)
        return true;
    policy_object obj = {&group, 1, NULL};
    return api_scope_or_respond(req, api, NULL, "proxies", "read", &obj,
                                sx_arena_printf(http_req_arena(req), "proxy group %s", group));
}

void api_fleet_topology(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *group = group_param(req);
    if (!group_readable_or_respond(req, api, group))
        return;
    json_t *groups = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = fleetview_topology(rest_server(api), group, http_req_arena(req), &groups, &err);
    if (rc == 0)
        keep_readable(req, api, groups, "group");
    json_t *body = rc == 0 ? json_pack("{s:O}", "groups", groups) : NULL;
    answer(req, rc, repo_own_json(http_req_arena(req), body), &err);
}

void api_fleet_health(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int minutes;
    const char *group = group_param(req);
    if (!window_or_respond(req, &minutes) || !group_readable_or_respond(req, api, group))
        return;
    json_t *doc = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = fleetview_health(rest_server(api), minutes, group, http_req_arena(req), &doc, &err);
    if (rc == 0) {
        keep_readable(req, api, json_object_get(doc, "groups"), "group");
        /* Replicas serve every group: their stream counts are for unscoped callers. */
        if (!reads_every_group(req, api))
            json_object_set_new(doc, "replicas", json_array());
    }
    answer(req, rc, doc, &err);
}

void api_fleet_metrics(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    int minutes;
    if (!window_or_respond(req, &minutes))
        return;
    if (!reads_every_group(req, api)) {
        /* The figures mix every group: a scoped role is answered as for a read out of
         * its scope. */
        sx_err err;
        sx_err_set(&err, SX_ENOTFOUND, "fleet metrics does not exist");
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    json_t *doc = NULL;
    sx_err err;
    sx_err_clear(&err);
    int rc = fleetview_metrics(rest_server(api), minutes, http_req_arena(req), &doc, &err);
    answer(req, rc, doc, &err);
}

void api_deployment_timeline(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const char *id = http_req_param(req, "id");
    sx_err err;
    sx_err_clear(&err);
    if (!repo_is_uuid(id)) {
        sx_err_set(&err, SX_ENOTFOUND, "deployment %.40s does not exist", id ? id : "");
        api_refuse(req, NULL, &err, api_details1("id", "a deployment id is a UUID"));
        return;
    }
    deploy_record *d = NULL;
    json_t *doc = NULL;
    int rc = fleetview_timeline(rest_server(api), id, http_req_arena(req), &d, &doc, &err);
    if (rc == 0) {
        policy_object obj = {(const char *const *)d->groups, d->group_count, NULL};
        if (!api_scope_or_respond(req, api, NULL, "deployments", "read", &obj,
                                  sx_arena_printf(http_req_arena(req), "deployment %s", id)))
            return;
        json_object_set_new(doc, "deployment_id", json_string(d->id));
    }
    answer(req, rc, doc, &err);
}

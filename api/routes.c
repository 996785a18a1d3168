/*
 * routes.c — the table of every /api/v1 route of the product, registered with the REST
 * pipeline (api/rest.h) in one place.
 *
 * Each row names the method and path pattern, what the RBAC policy is asked about
 * (resource type and action) and the handler. The table is also what the OpenAPI
 * document (api/openapi.c) is checked against: a test walks both and fails when a route
 * is missing from either, so the document cannot drift from the router.
 */
#include <string.h>
#include <jansson.h>

#include "api/dev_sign_in.h"
#include "api/handlers_routes.h"
#include "api/rest.h"

static json_t *permissions_of(const rest_api *api, const char *role);

/* GET /api/v1/whoami: {"user", "role", "permissions"} of the caller; permissions maps
 * each resource type of the route table to the actions the caller's role may do on it
 * ({"configs": ["read", "create", ...]}), so a client (the web UI) offers only what the
 * policy in force allows. */
static void handle_whoami(http_request *req, rest_api *api, void *ud)
{
    (void)ud;
    const rest_principal *who = rest_principal_of(req);
    http_respond_json(req, 200,
                      json_pack("{s:s,s:s,s:o}", "user", who->user, "role", who->role,
                                "permissions", permissions_of(api, who->role)));
}

static const api_route routes[] = {
    {"GET", "/api/v1/whoami", "auth", "read", handle_whoami, NULL},
    {"GET", "/api/v1/openapi.json", "openapi", "read", api_openapi, NULL},

    {"GET", "/api/v1/configs", "configs", "read", NULL, api_configs_page},
    {"POST", "/api/v1/configs", "configs", "create", api_configs_create, NULL},
    {"POST", "/api/v1/configs/validate", "configs", "validate", api_configs_validate, NULL},
    {"GET", "/api/v1/configs/{id}", "configs", "read", api_config_get, NULL},
    {"PUT", "/api/v1/configs/{id}", "configs", "update", api_config_put, NULL},
    {"DELETE", "/api/v1/configs/{id}", "configs", "delete", api_config_delete, NULL},
    {"GET", "/api/v1/configs/{id}/versions", "configs", "read", api_config_versions, NULL},
    {"GET", "/api/v1/configs/{id}/versions/{v}", "configs", "read", api_config_version, NULL},
    {"GET", "/api/v1/configs/{id}/diff", "configs", "read", api_config_diff, NULL},
    {"POST", "/api/v1/configs/{id}/rollback", "configs", "rollback", api_config_rollback, NULL},
    {"POST", "/api/v1/configs/{id}/apply", "configs", "apply", api_config_apply, NULL},
    {"GET", "/api/v1/configs/{id}/kubernetes", "configs", "read", api_config_kubernetes, NULL},

    {"GET", "/api/v1/deployments", "deployments", "read", NULL, api_deployments_page},
    {"GET", "/api/v1/deployments/{id}", "deployments", "read", api_deployment_get, NULL},
    {"POST", "/api/v1/deployments/{id}/pause", "deployments", "pause", api_deployment_act, NULL},
    {"POST", "/api/v1/deployments/{id}/resume", "deployments", "resume", api_deployment_act, NULL},
    {"POST", "/api/v1/deployments/{id}/cancel", "deployments", "cancel", api_deployment_act, NULL},
    {"POST", "/api/v1/deployments/{id}/rollback", "deployments", "rollback", api_deployment_act,
     NULL},
    {"POST", "/api/v1/deployments/{id}/promote", "deployments", "promote", api_deployment_act,
     NULL},

    {"GET", "/api/v1/snapshots", "snapshots", "read", NULL, api_snapshots_page},
    {"GET", "/api/v1/snapshots/{id}", "snapshots", "read", api_snapshot_get, NULL},

    {"GET", "/api/v1/groups", "groups", "read", NULL, api_groups_page},
    {"POST", "/api/v1/groups/{group}/rollback", "groups", "rollback", api_group_rollback, NULL},
    {"GET", "/api/v1/groups/{group}", "groups", "read", api_group_get, NULL},
    {"PUT", "/api/v1/groups/{group}", "groups", "update", api_group_put, NULL},

    {"GET", "/api/v1/proxies", "proxies", "read", NULL, api_proxies_page},
    {"GET", "/api/v1/proxies/{node_id}", "proxies", "read", api_proxy_get, NULL},
    {"GET", "/api/v1/proxies/{node_id}/config", "proxies", "read", api_proxy_config, NULL},
    {"GET", "/api/v1/proxies/{node_id}/nacks", "proxies", "read", NULL, api_proxy_nacks_page},

    {"GET", "/api/v1/fleet/topology", "proxies", "read", api_fleet_topology, NULL},
    {"GET", "/api/v1/fleet/health", "proxies", "read", api_fleet_health, NULL},
    {"GET", "/api/v1/fleet/metrics", "proxies", "read", api_fleet_metrics, NULL},
    {"GET", "/api/v1/deployments/{id}/timeline", "deployments", "read", api_deployment_timeline,
     NULL},

    {"GET", "/api/v1/replicas", "replicas", "read", NULL, api_replicas_page},

    {"GET", "/api/v1/search", "search", "read", api_search, NULL},
    {"GET", "/api/v1/alerts", "alerts", "read", NULL, api_alerts_page},

    {"GET", "/api/v1/audit", "audit", "read", NULL, api_audit_page},

    {"GET", "/api/v1/events", "events", "read", api_events_stream, NULL},
};

static json_t *permissions_of(const rest_api *api, const char *role)
{
    json_t *perms = json_object();
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const api_route *r = &routes[i];
        json_t *actions = json_object_get(perms, r->resource_type);
        if (actions == NULL) {
            actions = json_array();
            json_object_set_new(perms, r->resource_type, actions);
        }
        bool listed = false;
        size_t k;
        json_t *v;
        json_array_foreach(actions, k, v) listed =
            listed || strcmp(json_string_value(v), r->action) == 0;
        if (!listed && rest_allows(api, role, r->resource_type, r->action))
            json_array_append_new(actions, json_string(r->action));
    }
    /* Actions a handler checks besides its route's. */
    if (rest_allows(api, role, "groups", API_GROUP_FORCE_ACTION))
        json_array_append_new(json_object_get(perms, "groups"),
                              json_string(API_GROUP_FORCE_ACTION));
    return perms;
}

const api_route *api_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

/* A paginated list route: ud is its api_route. */
static void handle_list(http_request *req, rest_api *api, void *ud)
{
    api_list(req, api, ((const api_route *)ud)->list);
}

int rest_register_all(rest_api *api, sx_err *err)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const api_route *r = &routes[i];
        int rc = rest_route(api, r->method, r->pattern, r->resource_type, r->action,
                            r->list ? handle_list : r->fn, (void *)r, err);
        if (rc)
            return rc;
    }
    /* Outside the table: unauthenticated, and only on a development server. */
    return dev_sign_in_register(api, err);
}

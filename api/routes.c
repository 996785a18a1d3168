/*
 * routes.c — the table of every /api/v1 route of the product, registered with the REST
 * pipeline (api/rest.h) in one place.
 *
 * Each row names the method and path pattern, what the RBAC policy is asked about
 * (resource type and action) and the handler. The table is also what the OpenAPI
 * document (api/openapi.c) is checked against: a test walks both and fails when a route
 * is missing from either, so the document cannot drift from the router.
 */
#include <jansson.h>

#include "api/handlers_routes.h"
#include "api/rest.h"

/* GET /api/v1/whoami: {"user": ..., "role": ...} of the caller. */
static void handle_whoami(http_request *req, rest_api *api, void *ud)
{
    (void)api;
    (void)ud;
    const rest_principal *who = rest_principal_of(req);
    http_respond_json(req, 200, json_pack("{s:s,s:s}", "user", who->user, "role", who->role));
}

static const api_route routes[] = {
    {"GET", "/api/v1/whoami", "auth", "read", handle_whoami},
    {"GET", "/api/v1/openapi.json", "openapi", "read", api_openapi},

    {"GET", "/api/v1/configs", "configs", "read", api_configs_list},
    {"POST", "/api/v1/configs", "configs", "create", api_configs_create},
    {"POST", "/api/v1/configs/validate", "configs", "validate", api_configs_validate},
    {"GET", "/api/v1/configs/{id}", "configs", "read", api_config_get},
    {"PUT", "/api/v1/configs/{id}", "configs", "update", api_config_put},
    {"DELETE", "/api/v1/configs/{id}", "configs", "delete", api_config_delete},
    {"GET", "/api/v1/configs/{id}/versions", "configs", "read", api_config_versions},
    {"GET", "/api/v1/configs/{id}/versions/{v}", "configs", "read", api_config_version},
    {"GET", "/api/v1/configs/{id}/diff", "configs", "read", api_config_diff},
    {"POST", "/api/v1/configs/{id}/rollback", "configs", "rollback", api_config_rollback},

    {"GET", "/api/v1/snapshots", "snapshots", "read", api_snapshots_list},
    {"GET", "/api/v1/snapshots/{id}", "snapshots", "read", api_snapshot_get},

    {"GET", "/api/v1/groups", "groups", "read", api_groups_list},
    {"POST", "/api/v1/groups/{group}/rollback", "groups", "rollback", api_group_rollback},

    {"GET", "/api/v1/proxies", "proxies", "read", api_proxies_list},
    {"GET", "/api/v1/proxies/{node_id}", "proxies", "read", api_proxy_get},
    {"GET", "/api/v1/proxies/{node_id}/config", "proxies", "read", api_proxy_config},

    {"GET", "/api/v1/audit", "audit", "read", api_audit_list},
};

const api_route *api_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

int rest_register_all(rest_api *api, sx_err *err)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const api_route *r = &routes[i];
        int rc =
            rest_route(api, r->method, r->pattern, r->resource_type, r->action, r->fn, NULL, err);
        if (rc)
            return rc;
    }
    return 0;
}

/*
 * handlers_routes.h — the REST API's handlers, its route table and its OpenAPI document.
 *
 * api/routes.c owns the table of every /api/v1 route (method, pattern, the RBAC
 * resource type and action, handler) and registers it with the pipeline of api/rest.h;
 * a paginated list names the function that reads one page (api_list_fn), and the one
 * list runner of api/handlers_common.h does the rest;
 * the handlers live in api/handlers_<resource>.c; api/openapi.c describes the same
 * routes as an OpenAPI 3 document, and a test checks that the two agree.
 */
#ifndef SX_API_HANDLERS_H
#define SX_API_HANDLERS_H

#include <stddef.h>
#include <jansson.h>

#include "api/handlers_common.h"
#include "api/rest.h"

/* One route of the REST API. */
typedef struct api_route {
    const char *method;        /* "GET", "POST", "PUT", "DELETE" */
    const char *pattern;       /* "/api/v1/configs/{id}" */
    const char *resource_type; /* what the RBAC policy is asked about: "configs", ... */
    const char *action;        /* "read", "create", "update", "delete", "rollback" */
    rest_handler_fn fn;        /* the handler; NULL for a paginated list */
    api_list_fn list;          /* a paginated list: api_list runs it; NULL otherwise */
} api_route;

/* The route table (static, never NULL); *n gets its length. */
const api_route *api_routes(size_t *n);

/* The OpenAPI 3.0 document of the REST API (api/openapi.json with the build's version).
 * New reference owned by the caller; NULL only when out of memory. */
json_t *openapi_document(void);

/* configs (api/handlers_configs.c) */
int api_configs_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);
void api_configs_create(http_request *req, rest_api *api, void *ud);
void api_configs_validate(http_request *req, rest_api *api, void *ud);
void api_config_get(http_request *req, rest_api *api, void *ud);
void api_config_put(http_request *req, rest_api *api, void *ud);
void api_config_delete(http_request *req, rest_api *api, void *ud);
void api_config_versions(http_request *req, rest_api *api, void *ud);
void api_config_version(http_request *req, rest_api *api, void *ud);
void api_config_diff(http_request *req, rest_api *api, void *ud);
void api_config_rollback(http_request *req, rest_api *api, void *ud);
void api_config_kubernetes(http_request *req, rest_api *api, void *ud);

/* snapshots and groups (api/handlers_snapshots.c) */
int api_snapshots_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);
void api_snapshot_get(http_request *req, rest_api *api, void *ud);
int api_groups_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);
void api_group_rollback(http_request *req, rest_api *api, void *ud);
/* The action on "groups" that a rollback with "force": true needs besides "rollback":
 * republishing content that validation refuses. Not a route of its own; whoami lists
 * it for the roles that have it. */
#define API_GROUP_FORCE_ACTION "force_rollback"

/* one group and its settings (api/handlers_groups.c) */
void api_group_get(http_request *req, rest_api *api, void *ud);
void api_group_put(http_request *req, rest_api *api, void *ud);

/* proxies (api/handlers_proxies.c) */
int api_proxies_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);
void api_proxy_get(http_request *req, rest_api *api, void *ud);
void api_proxy_config(http_request *req, rest_api *api, void *ud);
int api_proxy_nacks_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);

/* the fleet views and a deployment's timeline (api/handlers_fleet.c) */
void api_fleet_topology(http_request *req, rest_api *api, void *ud);
void api_fleet_health(http_request *req, rest_api *api, void *ud);
void api_fleet_metrics(http_request *req, rest_api *api, void *ud);
void api_deployment_timeline(http_request *req, rest_api *api, void *ud);

/* replicas (api/handlers_replicas.c) */
int api_replicas_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);

/* search (api/handlers_search.c) */
void api_search(http_request *req, rest_api *api, void *ud);
/* alerts (api/handlers_alerts.c) */
int api_alerts_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);

/* audit log (api/handlers_audit.c) */
int api_audit_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);

/* live events as server-sent events (api/handlers_events.c) */
void api_events_stream(http_request *req, rest_api *api, void *ud);

/* handlers_deployments.c */
void api_config_apply(http_request *req, rest_api *api, void *ud);
int api_deployments_page(http_request *req, rest_api *api, api_list_page *page, sx_err *err);
void api_deployment_get(http_request *req, rest_api *api, void *ud);
/* POST /api/v1/deployments/{id}/<action>: ud is the route, whose RBAC action names the
 * operator action (rollout_action_name: pause, resume, cancel, rollback). */
void api_deployment_act(http_request *req, rest_api *api, void *ud);

/* the OpenAPI document itself (api/openapi.c) */
void api_openapi(http_request *req, rest_api *api, void *ud);

#endif

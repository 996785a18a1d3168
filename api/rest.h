/*
 * rest.h — the REST API's request pipeline: every /api/v1 route is registered through
 * rest_route, which wraps its handler with authentication (JWT bearer), authorization
 * (the RBAC policy: role × resource × action), the per-user rate limit, and the audit of
 * every refusal (401, 403, 429 each write one audit_log row). The handler runs only when
 * all of them pass and then finds the caller with rest_principal.
 *
 * Health, readiness and metrics are not REST routes and stay unauthenticated.
 */
#ifndef SX_API_REST_H
#define SX_API_REST_H

#include <stdbool.h>
#include <stdint.h>

#include "api/http.h"
#include "api/policy.h"
#include "server/base/err.h"

struct sx_server;

/* What the caller is, once authenticated. */
typedef struct rest_principal {
    const char *user; /* the token's "sub" claim */
    const char *role; /* "admin", "operator" or "viewer" */
    int64_t expires;  /* the token's "exp", seconds since the epoch; 0 with auth off */
} rest_principal;

/* The REST context shared by all routes (auth keys, policy, rate limiter, server). */
typedef struct rest_api rest_api;

/* Creates the pipeline for srv (borrowed): loads the JWT keys and the RBAC policy from
 * srv->config (auth.*), the rate limits (ratelimit.*). Logs a warning when auth is
 * disabled. Fails with SX_EINVAL naming the bad key or file. */
int rest_create(struct sx_server *srv, rest_api **out, sx_err *err) SX_MUSTCHECK;
void rest_destroy(rest_api *api);

/*
 * Registers method+pattern with the pipeline. resource_type ("configs", "snapshots",
 * "proxies", "groups", "audit", "deployments") and action ("read", "create", "update",
 * "delete", "rollback", "apply", ...) are what the RBAC policy is asked about; writes
 * (any method but GET/HEAD) draw from the user's write bucket, reads from the read
 * bucket. fn runs only for an authenticated, authorized, not rate-limited caller.
 */
typedef void (*rest_handler_fn)(http_request *req, rest_api *api, void *ud);
int rest_route(rest_api *api, const char *method, const char *pattern, const char *resource_type,
               const char *action, rest_handler_fn fn, void *ud, sx_err *err) SX_MUSTCHECK;

/* Inside a handler: the authenticated caller (never NULL there). */
const rest_principal *rest_principal_of(http_request *req);
/* The server the API belongs to (pool, cache, snapshot repo, config). */
struct sx_server *rest_server(rest_api *api);
/* The caller's source IP as text. */
const char *rest_source_ip(http_request *req);

/* True when role may do action on resource_type (collection-wide: no id) under the
 * policy in force; always true when auth.enabled is false (everyone is admin then). */
bool rest_allows(const rest_api *api, const char *role, const char *resource_type,
                 const char *action);
/* Inside a handler: true when the caller may do action on the object obj of
 * resource_type ("configs", "snapshots", ...) under the group scopes of its role
 * (policy_allows_object); always true with auth.enabled false. *scope (NULL allowed)
 * receives the scope that decided, a new reference or NULL, for the audit row. */
bool rest_allows_object(const rest_api *api, http_request *req, const char *resource_type,
                        const char *action, const policy_object *obj, json_t **scope);
/* True when the policy in force defines role. */
bool rest_has_role(const rest_api *api, const char *role);
/* The policy's role names, comma-separated, in file order, into out; returns out. */
const char *rest_role_names(const rest_api *api, char *out, size_t outlen);

/* Registers every /api/v1 route of the product (configs, snapshots, proxies, groups,
 * audit, openapi) on api. */
int rest_register_all(rest_api *api, sx_err *err) SX_MUSTCHECK;

#endif

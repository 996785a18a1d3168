/*
 * dev_sign_in.c — POST /api/v1/auth/dev-sign-in: a one-click sign-in for the local
 * demo, minting a short-lived HS256 token for a role of the RBAC policy.
 *
 * The routes are registered straight with the HTTP router, not through the REST
 * pipeline (api/rest.h): their whole point is to be callable without a token. They are
 * not in the route table of api/routes.c nor in the OpenAPI document, which describe
 * the authenticated API; they exist only on a server configured for development
 * (auth.dev_sign_in), like /healthz exists outside /api/v1's rules. What keeps them
 * safe to leave in the binary: they are absent unless the operator turns them on, the
 * daemon warns at start when they are on, every token they mint is audited, and tokens
 * live an hour.
 */
#include "api/dev_sign_in.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/auth.h"
#include "api/handlers_common.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/changes.h"
#include "server/server.h"

#define PATH "/api/v1/auth/dev-sign-in"

static const api_field sign_in_fields[] = {
    {"role", API_STRING, true},
    {"user", API_STRING, false},
};

/* The policy's role names as a JSON array. */
static json_t *roles_json(const rest_api *api)
{
    char names[1024];
    rest_role_names(api, names, sizeof(names));
    json_t *a = json_array();
    for (char *p = names; *p;) {
        size_t n = strcspn(p, ",");
        json_array_append_new(a, json_stringn(p, n));
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return a;
}

static void handle_get(http_request *req, void *ud)
{
    rest_api *api = ud;
    http_req_set_header(req, "Cache-Control", "no-store");
    http_respond_json(
        req, 200,
        json_pack("{s:o,s:i}", "roles", roles_json(api), "ttl_seconds", DEV_SIGN_IN_TTL_SECONDS));
}

static void handle_post(http_request *req, void *ud)
{
    rest_api *api = ud;
    struct sx_server *srv = rest_server(api);
    sx_arena *a = http_req_arena(req);
    api_change ch = {req, api, "auth.dev_sign_in", "auth", ""};
    json_t *body;
    if (!api_body_or_respond(req, &ch, sign_in_fields, 2, &body))
        return;
    const char *role = api_str(body, "role");
    const char *user = api_str(body, "user");
    if (user == NULL || user[0] == '\0')
        user = sx_arena_printf(a, "dev-%s", role);
    ch.resource_id = user;
    sx_err err;
    sx_err_clear(&err);
    if (!rest_has_role(api, role)) {
        char names[512];
        sx_err_set(&err, SX_EINVAL, "unknown role %.64s", role);
        api_refuse(
            req, &ch, &err,
            api_details1("role", sx_arena_printf(a, "must be a role of the RBAC policy: %s",
                                                 rest_role_names(api, names, sizeof(names)))));
        return;
    }

    /* HS256 whatever else is configured: this route exists because a secret is set. */
    sextant_config hs = *srv->config;
    hs.auth.rs256_private_key_pem = NULL;
    char *token = NULL;
    if (auth_mint(&hs, user, role, DEV_SIGN_IN_TTL_SECONDS, &token, &err) != 0) {
        err.code = err.code == SX_EINVAL ? SX_EINVAL : SX_EINTERNAL;
        api_refuse(req, &ch, &err, api_details1("user", err.message));
        return;
    }
    time_t exp = time(NULL) + DEV_SIGN_IN_TTL_SECONDS;
    struct tm tm;
    char expires[32];
    gmtime_r(&exp, &tm);
    strftime(expires, sizeof(expires), "%Y-%m-%dT%H:%M:%SZ", &tm);

    /* The audit row first: a token nobody can account for is not handed out. */
    json_t *details = json_pack("{s:s,s:i,s:s}", "role", role, "ttl_seconds",
                                DEV_SIGN_IN_TTL_SECONDS, "expires_at", expires);
    const char *ip = rest_source_ip(req);
    audit_new in = {.actor = user,
                    .actor_role = role,
                    .action = ch.action,
                    .resource_type = ch.resource_type,
                    .resource_id = user,
                    .result = AUDIT_SUCCESS,
                    .status_code = 200,
                    .request_id = http_req_id(req),
                    .client_request_id = http_req_client_id(req),
                    .source_ip = ip[0] ? ip : NULL,
                    .details = details};
    int rc = changes_audit(srv, &in, &err);
    json_decref(details);
    if (rc != 0) {
        explicit_bzero(token, strlen(token));
        sx_free(token);
        sx_log_fields(SX_LOG_WARN, "auth", json_pack("{s:s}", "request_id", http_req_id(req)),
                      "dev sign-in refused: could not write its audit row: %s", err.message);
        sx_err_set(&err, SX_EUNAVAILABLE,
                   "the sign-in could not be audited: the database is not available");
        api_refuse(req, NULL, &err, NULL);
        return;
    }
    sx_log_fields(SX_LOG_INFO, "auth",
                  json_pack("{s:s,s:s,s:s}", "user", user, "role", role, "remote", ip),
                  "dev sign-in: token for %s (%s)", user, role);
    http_req_set_header(req, "Cache-Control", "no-store");
    http_respond_json(req, 200,
                      json_pack("{s:s,s:s,s:s,s:s}", "token", token, "user", user, "role", role,
                                "expires_at", expires));
    explicit_bzero(token, strlen(token));
    sx_free(token);
}

int dev_sign_in_register(rest_api *api, sx_err *err)
{
    const sextant_config *cfg = rest_server(api)->config;
    if (!cfg->auth.dev_sign_in)
        return 0;
    if (!cfg->auth.enabled) {
        SX_WARN("auth", "auth.dev_sign_in is ignored: auth.enabled is false, so the API needs "
                        "no token anyway");
        return 0;
    }
    if (cfg->auth.hs256_secret == NULL) {
        SX_WARN("auth", "auth.dev_sign_in is ignored: it mints HS256 tokens and no "
                        "auth.hs256_secret (or auth.hs256_secret_file) is configured");
        return 0;
    }
    http_server *http = rest_server(api)->http;
    int rc = http_route(http, "GET", PATH, handle_get, api, err);
    if (rc == 0)
        rc = http_route(http, "POST", PATH, handle_post, api, err);
    if (rc)
        return rc;
    sx_log_fields(SX_LOG_WARN, "auth",
                  json_pack("{s:s,s:i}", "route", PATH, "ttl_seconds", DEV_SIGN_IN_TTL_SECONDS),
                  "auth.dev_sign_in is on: anyone who reaches %s gets a token of any role; "
                  "local development only",
                  PATH);
    return 0;
}

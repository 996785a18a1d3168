/*
 * rest.c — the REST API's request pipeline: authentication, authorization, rate limit
 * and the audit of every refusal, in front of every /api/v1 handler.
 *
 * rest_route registers a small wrapper with the HTTP router for each route; the wrapper
 * runs, in order: the JWT check (api/auth.h; 401 when it fails, 429 with Retry-After
 * once the client address is past its bucket of failed authentications), the user's
 * read or write token bucket (api/ratelimit.h; 429 with Retry-After), then the RBAC
 * check of the token's role against the route's resource type and action
 * (api/policy.h; 403). Only then does the handler run, with the principal attached to
 * the request. Every bucket is shared by the replicas through Redis (per replica while
 * Redis does not answer). Each refusal is answered in the common error shape and
 * counted in sextant_api_requests_denied_total{status}. A refusal that a caller can
 * repeat as fast as it likes is audited in aggregate; any other is written as one
 * audit_log row (changes_audit, on a connection of its own) before the answer goes out,
 * so an auditor who sees the answer can find the row. A refusal whose row cannot be
 * written (database down) is still refused: the failure is logged, never turned into an
 * allow.
 *
 * Refusals cannot grow the audit log without bound:
 *  - a failed authentication (401) spends a token of its client address's
 *    failed-authentication bucket (ratelimit.auth_fail_*); once that bucket is empty,
 *    failures are 429s; the address's valid tokens are not refused, so a flood from
 *    behind a shared address locks no one else out. Both, and a user's 429s from its
 *    read or write bucket, are recorded in aggregate (server/denials.h, the mechanism
 *    the xDS server records refused proxies with): one row per client address, status,
 *    user (for a user's 429s) and api.refusal_interval, action "api.authenticate" (401
 *    and its 429) or "api.request" (a user's 429), whose details.count is how many
 *    refusals it stands for; the first of each interval is logged at info, the rest at
 *    debug;
 *  - a write over http.max_body_bytes (413, refused before any of this) spends a token
 *    of the failed-authentication bucket to be written, and is still answered 413 but
 *    not written without;
 *  - a 403 comes after the user's bucket has allowed the request, so its rows are
 *    bounded by the user's rate.
 *
 * Authentication comes first so that nothing about the policy or the rate limits is
 * revealed to a caller without a valid token; the user's bucket comes before the policy
 * so that refusals by the policy are rate-limited too.
 */
#include "api/rest.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/auth.h"
#include "api/policy.h"
#include "api/ratelimit.h"
#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/base/mem.h"
#include "server/changes.h"
#include "server/denials.h"
#include "server/revocations.h"
#include "server/secrets.h"
#include "server/server.h"
#include "storage/repo_audit.h"
#include "storage/repo_common.h"

#define ANONYMOUS "anonymous"

/* One registered route: what the wrapper needs to check and call. */
typedef struct rest_route_ctx {
    rest_api *api;
    char *resource_type;
    char *action;
    bool write; /* draws from the write bucket */
    rest_handler_fn fn;
    void *ud;
} rest_route_ctx;

struct rest_api {
    struct sx_server *srv;   /* borrowed */
    bool auth_enabled;       /* auth.enabled */
    auth_verifier *auth;     /* owned */
    policy *policy;          /* owned; the file's or the built-in */
    ratelimit *limits;       /* owned */
    denials *refusals;       /* owned; 401s and 429s, audited in aggregate */
    rest_route_ctx **routes; /* owned; kept until rest_destroy */
    size_t nroutes;
    sx_metric *m_denied; /* sextant_api_requests_denied_total{status} */
};

/*
 * A request the HTTP layer refused before routing (a body over the limit, a path that is
 * not UTF-8 text). Writes on /api/v1 are mutating requests, so the refusal is audited
 * like any other: the caller as its token says (when it verifies), the resource type
 * from the path, action "<type>.request_too_large" (413) or "<type>.malformed_request"
 * (400), result "denied" — while the client address's failure
 * bucket has a token (see the top of this file).
 */
static const char *audit_type(const char *resource_type);
static const char *route_resource_id(const http_request *req);

/* Appends the audit row of a request with result (details taken); a row that cannot be
 * written is logged, never answered. */
static void audit_append(rest_api *api, http_request *req, const char *user, const char *role,
                         const char *action, const char *type, const char *result, int status,
                         json_t *details)
{
    const char *ip = rest_source_ip(req);
    audit_new in = {.actor = user,
                    .actor_role = role,
                    .action = action,
                    .resource_type = type,
                    .resource_id = route_resource_id(req),
                    .result = result,
                    .status_code = status,
                    .request_id = http_req_id(req),
                    .client_request_id = http_req_client_id(req),
                    .source_ip = ip[0] ? ip : NULL,
                    .details = details};
    sx_err err;
    sx_err_clear(&err);
    if (changes_audit(api->srv, &in, &err) != 0) {
        sx_err_prefix(&err, "could not audit the %d answer to %s by %s (request %s)", status,
                      action, user, http_req_id(req));
        sx_log_err(SX_LOG_ERROR, "audit", &err);
    }
    json_decref(details);
}

/* The "denied" row of a refused request (details taken). */
static void audit_denied(rest_api *api, http_request *req, const char *user, const char *role,
                         const char *action, const char *type, int status, json_t *details)
{
    audit_append(api, req, user, role, action, type, AUDIT_DENIED, status, details);
}

static void audit_refused_request(http_request *req, int status, const char *reason, void *ud)
{
    rest_api *api = ud;
    const char *path = http_req_path(req);
    const char *method = http_req_method(req);
    static const char prefix[] = "/api/v1/";
    if (strncmp(path, prefix, sizeof(prefix) - 1) != 0 || strcmp(method, "GET") == 0 ||
        strcmp(method, "HEAD") == 0)
        return;
    /* Refused before authentication, like a bad token: only as many rows as the
     * address's failure bucket allows, the ones skipped counted into the next row. */
    ratelimit_verdict v;
    ratelimit_check(api->limits, rest_source_ip(req), RATELIMIT_AUTH_FAIL, &v);
    if (!v.allowed)
        return;
    sx_arena *a = http_req_arena(req);
    const char *seg = path + sizeof(prefix) - 1;
    const char *slash = strchr(seg, '/');
    char *collection = sx_arena_strndup(a, seg, slash ? (size_t)(slash - seg) : strlen(seg));
    const char *type = audit_type(collection);
    const char *user = ANONYMOUS, *role = "";
    auth_identity id;
    sx_err err;
    sx_err_clear(&err);
    if (api->auth_enabled && auth_verify(api->auth, http_req_header(req, "Authorization"),
                                         (int64_t)time(NULL), a, &id, &err) == 0) {
        user = id.user;
        role = id.role;
    }
    audit_denied(api, req, user, role,
                 sx_arena_printf(a, "%s.%s", type,
                                 status == 413 ? "request_too_large" : "malformed_request"),
                 type, status,
                 json_pack("{s:s,s:s,s:s,s:I}", "reason", reason, "method", method, "path", path,
                           "suppressed", (json_int_t)v.refused));
}

/* The rows of refusals recorded in aggregate, through the write side of the domain. */
static int audit_refusals(void *ctx, const audit_new *row, sx_err *err)
{
    return changes_audit(ctx, row, err);
}

int rest_create(struct sx_server *srv, rest_api **out, sx_err *err)
{
    *out = NULL;
    const sextant_config *cfg = srv->config;
    policy *pol = NULL;
    if (cfg->auth.policy_file) {
        int rc = policy_load_file(cfg->auth.policy_file, &pol, NULL, err);
        if (rc != 0) {
            sx_err_prefix(err, "auth.policy_file");
            if (err)
                err->code = SX_EINVAL;
            return SX_EINVAL;
        }
    } else {
        pol = policy_builtin();
    }
    rest_api *api = sx_calloc(1, sizeof(*api));
    api->srv = srv;
    api->auth_enabled = cfg->auth.enabled;
    api->auth = auth_verifier_create(cfg);
    if (srv->revocations)
        auth_verifier_set_revoked(api->auth, revocations_check, srv->revocations);
    api->policy = pol;
    ratelimit_options ro = {.read_rate = cfg->ratelimit.read_rate,
                            .read_burst = cfg->ratelimit.read_burst,
                            .write_rate = cfg->ratelimit.write_rate,
                            .write_burst = cfg->ratelimit.write_burst,
                            .auth_rate = cfg->ratelimit.auth_fail_rate,
                            .auth_burst = cfg->ratelimit.auth_fail_burst,
                            .shared = srv->limits};
    api->limits = ratelimit_create(&ro, srv->metrics);
    api->refusals = denials_create(cfg->api.refusal_interval_ms, "routes", audit_refusals, srv);
    int rc = denials_start(api->refusals, err);
    if (rc != 0) {
        denials_destroy(api->refusals);
        ratelimit_destroy(api->limits);
        auth_verifier_destroy(api->auth);
        policy_free(pol);
        sx_free(api);
        return rc;
    }
    api->m_denied = sx_metrics_counter(srv->metrics, "sextant_api_requests_denied_total",
                                       "API requests refused by authentication (401), "
                                       "authorization (403) or the rate limit (429)",
                                       "status");

    char roles[256];
    if (!api->auth_enabled) {
        sx_log_fields(SX_LOG_WARN, "auth", json_pack("{s:b}", "auth_enabled", 0),
                      "authentication is disabled (auth.enabled=false): anyone who can reach "
                      "the API acts as an admin; never run like this outside development");
    } else if (!auth_has_keys(api->auth)) {
        SX_WARN("auth", "no token verification key is configured (auth.hs256_secret, "
                        "auth.hs256_secret_file or auth.rs256_public_key_file): every /api/v1 "
                        "request will be refused with 401");
    } else {
        sx_log_fields(SX_LOG_INFO, "auth",
                      json_pack("{s:b,s:b,s:s?,s:s?,s:s,s:s}", "hs256",
                                cfg->auth.hs256_secret != NULL, "rs256",
                                cfg->auth.rs256_public_key_pem != NULL, "issuer", cfg->auth.issuer,
                                "audience", cfg->auth.audience, "policy",
                                cfg->auth.policy_file ? cfg->auth.policy_file : "built-in", "roles",
                                policy_role_names(pol, roles, sizeof(roles))),
                      "API authentication enabled");
    }
    http_set_refusal_hook(srv->http, audit_refused_request, api);
    *out = api;
    return 0;
}

void rest_destroy(rest_api *api)
{
    if (api == NULL)
        return;
    for (size_t i = 0; i < api->nroutes; i++) {
        sx_free(api->routes[i]->resource_type);
        sx_free(api->routes[i]->action);
        sx_free(api->routes[i]);
    }
    sx_free(api->routes);
    denials_destroy(api->refusals); /* writes the rows still open */
    ratelimit_destroy(api->limits);
    policy_free(api->policy);
    auth_verifier_destroy(api->auth);
    sx_free(api);
}

struct sx_server *rest_server(rest_api *api)
{
    return api->srv;
}

const rest_principal *rest_principal_of(http_request *req)
{
    return http_req_app_data(req);
}

const char *rest_source_ip(http_request *req)
{
    return http_req_remote_ip(req);
}

bool rest_allows(const rest_api *api, const char *role, const char *resource_type,
                 const char *action)
{
    return !api->auth_enabled || policy_allows(api->policy, role, resource_type, NULL, action);
}

bool rest_has_role(const rest_api *api, const char *role)
{
    return policy_has_role(api->policy, role);
}

const char *rest_role_names(const rest_api *api, char *out, size_t outlen)
{
    return policy_role_names(api->policy, out, outlen);
}

bool rest_allows_object(const rest_api *api, http_request *req, const char *resource_type,
                        const char *action, const policy_object *obj, json_t **scope)
{
    if (scope)
        *scope = NULL;
    if (!api->auth_enabled)
        return true;
    const rest_principal *who = rest_principal_of(req);
    return who &&
           policy_allows_object(api->policy, who->role, resource_type, NULL, action, obj, scope);
}

/* ------------------------------------------------------------------ refusals */

/* The id the route names, for the audit row: {id}, {node_id} or {group}; NULL if none. */
static const char *route_resource_id(const http_request *req)
{
    static const char *const names[] = {"id", "node_id", "group"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = http_req_param(req, names[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

/* The audit log names resource types in the singular ("config", as the write path
 * does); routes name the collection ("configs"). */
static const char *audit_type(const char *resource_type)
{
    static const struct {
        const char *route, *audit;
    } names[] = {{"configs", "config"},
                 {"snapshots", "snapshot"},
                 {"proxies", "proxy"},
                 {"groups", "group"},
                 {"deployments", "deployment"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(resource_type, names[i].route) == 0)
            return names[i].audit;
    return resource_type;
}

/* How a refusal is recorded: a row of its own, or in aggregate (server/denials.h). */
typedef struct denial_audit {
    const char *aggregate; /* NULL: a row of its own; else the aggregate row's action */
    bool known;            /* the aggregate is the caller's (a user's 429) */
    json_t *scope;         /* the group scope that refused, for details.scope; NULL none */
} denial_audit;

/* Records a refusal before it is answered: audit row, metric, log line, and for a 401
 * the challenge. code is SX_EUNAUTH, SX_EFORBIDDEN or SX_ERATELIMIT. */
static void record_denial(rest_route_ctx *rc, http_request *req, const char *user, const char *role,
                          int code, const char *message, const denial_audit *da)
{
    int status = sx_code_http_status(code);
    const char *type = audit_type(rc->resource_type);
    bool logged = true;
    if (da->aggregate) {
        const char *ip = rest_source_ip(req);
        denial in = {.action = da->aggregate,
                     .resource_type = "api",
                     .status_code = status,
                     .source = ip,
                     .actor = da->known ? user : NULL,
                     .actor_role = da->known ? role : NULL,
                     .reason = message,
                     .target = sx_arena_printf(http_req_arena(req), "%s %s", http_req_method(req),
                                               http_req_route(req))};
        if (!da->known) /* the reason names how the token failed, not the token */
            in.reason = code == SX_ERATELIMIT ? "too many failed authentications" : message;
        logged = denials_note(rc->api->refusals, &in, sx_monotonic_ms());
    } else {
        json_t *details =
            json_pack("{s:s,s:s,s:s,s:s}", "reason", message, "method", http_req_method(req),
                      "path", http_req_path(req), "route", http_req_route(req));
        if (da->scope)
            json_object_set(details, "scope", da->scope);
        audit_denied(rc->api, req, user, role,
                     sx_arena_printf(http_req_arena(req), "%s.%s", type, rc->action), type, status,
                     details);
    }
    char st[8];
    snprintf(st, sizeof(st), "%d", status);
    const char *label[] = {st};
    sx_metric_inc(rc->api->m_denied, label);
    /* The first refusal of an aggregate's interval is logged; the rest at debug. */
    sx_log_fields(logged ? SX_LOG_INFO : SX_LOG_DEBUG, "auth",
                  json_pack("{s:s,s:s,s:s,s:i,s:s,s:s}", "user", user, "role", role, "action",
                            rc->action, "status", status, "request_id", http_req_id(req), "remote",
                            rest_source_ip(req)),
                  "refused %s %s: %s", http_req_method(req), http_req_path(req), message);
    if (code == SX_EUNAUTH) {
        /* RFC 6750: a request without credentials gets the bare challenge. */
        char challenge[256];
        if (strcmp(message, "missing bearer token") == 0)
            snprintf(challenge, sizeof(challenge), "Bearer realm=\"sextant\"");
        else
            snprintf(challenge, sizeof(challenge),
                     "Bearer realm=\"sextant\", error=\"invalid_token\", "
                     "error_description=\"%s\"",
                     message);
        http_req_set_header(req, "WWW-Authenticate", challenge);
    }
}

/* With audit.reads: the row of a read that was answered (2xx or 3xx; refusals have
 * theirs already, and a failed read changes nothing). A stream is audited when it opens. */
static void audit_read(rest_route_ctx *rc, http_request *req, const rest_principal *who)
{
    int status = http_req_status(req);
    if (status < 200 || status >= 400)
        return;
    const char *type = audit_type(rc->resource_type);
    audit_append(rc->api, req, who->user, who->role,
                 sx_arena_printf(http_req_arena(req), "%s.%s", type, rc->action), type,
                 AUDIT_SUCCESS, status,
                 json_pack("{s:s,s:s}", "path", http_req_path(req), "route", http_req_route(req)));
}

/* ------------------------------------------------------------------ the pipeline */

static void set_retry_after(http_request *req, int retry)
{
    char secs[16];
    snprintf(secs, sizeof(secs), "%d", retry);
    http_req_set_header(req, "Retry-After", secs);
}

/* Authenticates, rate-limits and authorizes the caller of rc: 0 with *who, or the
 * refusal's code with err, *who as far as known and how to audit it in *da. */
static int admit(rest_route_ctx *rc, http_request *req, rest_principal *who, denial_audit *da,
                 sx_err *err)
{
    rest_api *api = rc->api;
    sx_arena *a = http_req_arena(req);
    who->user = ANONYMOUS;
    who->role = "";
    who->expires = 0;
    da->aggregate = NULL;
    da->known = false;
    da->scope = NULL;
    const char *bucket_key;
    auth_identity id = {0};
    ratelimit_verdict v;
    if (!api->auth_enabled) {
        who->role = "admin";
        /* Without identities, callers are told apart by address. */
        bucket_key = sx_arena_printf(a, "%s@%s", ANONYMOUS, rest_source_ip(req));
    } else {
        if (auth_verify(api->auth, http_req_header(req, "Authorization"), (int64_t)time(NULL), a,
                        &id, err) != 0) {
            char why[SX_ERR_MESSAGE_MAX];
            snprintf(why, sizeof(why), "%s", err->message);
            ratelimit_check(api->limits, rest_source_ip(req), RATELIMIT_AUTH_FAIL, &v);
            da->aggregate = "api.authenticate";
            if (!v.allowed) {
                set_retry_after(req, v.retry_after_s);
                return sx_err_set(err, SX_ERATELIMIT,
                                  "too many failed authentications from this address: retry in "
                                  "%d second%s",
                                  v.retry_after_s, v.retry_after_s == 1 ? "" : "s");
            }
            return sx_err_set(err, SX_EUNAUTH, "%s", why);
        }
        who->user = id.user;
        who->role = id.role;
        who->expires = id.expires;
        bucket_key = id.user;
    }
    ratelimit_check(api->limits, bucket_key, rc->write ? RATELIMIT_WRITE : RATELIMIT_READ, &v);
    if (!v.allowed) {
        da->aggregate = "api.request";
        da->known = true;
        set_retry_after(req, v.retry_after_s);
        return sx_err_set(err, SX_ERATELIMIT, "too many %s requests: retry in %d second%s",
                          rc->write ? "write" : "read", v.retry_after_s,
                          v.retry_after_s == 1 ? "" : "s");
    }
    if (api->auth_enabled) {
        if (!policy_has_role(api->policy, id.role))
            return sx_err_set(err, SX_EFORBIDDEN, "role \"%s\" is not defined by the RBAC policy",
                              id.role);
        const char *rid = route_resource_id(req);
        if (!policy_allows(api->policy, id.role, rc->resource_type, rid, rc->action))
            return sx_err_set(err, SX_EFORBIDDEN, "role %s may not %s %s", id.role, rc->action,
                              rc->resource_type);
        /* A group route names its object: its scope is checked here, for every handler. */
        if (strcmp(rc->resource_type, "groups") == 0 && rid) {
            policy_object obj = {&rid, 1, NULL};
            if (!policy_allows_object(api->policy, id.role, "groups", rid, rc->action, &obj,
                                      &da->scope)) {
                repo_own_json(a, da->scope);
                return sx_err_set(err, SX_EFORBIDDEN, "role %s may not %s group %s", id.role,
                                  rc->action, rid);
            }
            json_decref(da->scope);
            da->scope = NULL;
        }
    }
    return 0;
}

static void pipeline(http_request *req, void *ud)
{
    rest_route_ctx *rc = ud;
    rest_principal *who = sx_arena_alloc(http_req_arena(req), sizeof(*who));
    denial_audit da;
    sx_err err;
    sx_err_clear(&err);
    if (admit(rc, req, who, &da, &err) != 0) {
        record_denial(rc, req, who->user, who->role, err.code, err.message, &da);
        http_respond_err(req, &err, json_array());
        return;
    }
    http_req_set_app_data(req, who);
    /* Private keys in answers read "[redacted]" unless the role may read secrets. */
    if (!rest_allows(rc->api, who->role, POLICY_SECRETS, "read"))
        http_req_set_json_filter(req, secrets_redacted);
    rc->fn(req, rc->api, rc->ud);
    if (!rc->write && rc->api->srv->config->audit.reads)
        audit_read(rc, req, who);
}

static bool is_read_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

int rest_route(rest_api *api, const char *method, const char *pattern, const char *resource_type,
               const char *action, rest_handler_fn fn, void *ud, sx_err *err)
{
    if (resource_type == NULL || *resource_type == '\0' || action == NULL || *action == '\0' ||
        fn == NULL || method == NULL)
        return sx_err_set(err, SX_EINVAL,
                          "route %s %s needs a resource type, an action and a "
                          "handler",
                          method ? method : "(null)", pattern ? pattern : "(null)");
    rest_route_ctx *rc = sx_calloc(1, sizeof(*rc));
    rc->api = api;
    rc->resource_type = sx_strdup(resource_type);
    rc->action = sx_strdup(action);
    rc->write = !is_read_method(method);
    rc->fn = fn;
    rc->ud = ud;
    int rc_route = http_route(api->srv->http, method, pattern, pipeline, rc, err);
    if (rc_route != 0) {
        sx_free(rc->resource_type);
        sx_free(rc->action);
        sx_free(rc);
        return rc_route;
    }
    api->routes = sx_realloc(api->routes, (api->nroutes + 1) * sizeof(*api->routes));
    api->routes[api->nroutes++] = rc;
    return 0;
}

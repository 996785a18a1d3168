/*
 * openapi.c — the OpenAPI 3 document of the REST API, served at
 * GET /api/v1/openapi.json.
 *
 * The document is written out path by path here (not generated from the route table),
 * so that it says what each route takes and answers; the integration test
 * tests/integration/api/test_openapi_routes.c checks that its paths and methods are
 * exactly the routes of api/routes.c, so neither can change without the other.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/handlers_routes.h"

static json_t *ref(const char *kind, const char *name)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "#/components/%s/%s", kind, name);
    return json_pack("{s:s}", "$ref", buf);
}

static json_t *schema(const char *name)
{
    return ref("schemas", name);
}

static json_t *json_content(json_t *sch)
{
    return json_pack("{s:{s:o}}", "application/json", "schema", sch);
}

/* A response with a JSON body; headers (taken, NULL allowed). */
static json_t *resp(const char *description, json_t *sch, json_t *headers)
{
    json_t *r = json_pack("{s:s,s:o}", "description", description, "content", json_content(sch));
    if (headers)
        json_object_set_new(r, "headers", headers);
    return r;
}

static json_t *etag_header(void)
{
    return json_pack("{s:{s:s,s:{s:s}}}", "ETag", "description",
                     "The config's latest version as an entity tag, \"N\"; send it back in "
                     "If-Match",
                     "schema", "type", "string");
}

static json_t *created_headers(void)
{
    json_t *h = etag_header();
    json_object_set_new(h, "Location",
                        json_pack("{s:s,s:{s:s}}", "description", "/api/v1/configs/{id}", "schema",
                                  "type", "string"));
    return h;
}

/* Adds the error responses named by the status codes in codes ("400 404 ..."). */
static void add_errors(json_t *responses, const char *codes)
{
    static const struct {
        const char *code, *name;
    } known[] = {
        {"400", "BadRequest"},      {"401", "Unauthorized"},     {"403", "Forbidden"},
        {"404", "NotFound"},        {"409", "Conflict"},         {"412", "PreconditionFailed"},
        {"413", "PayloadTooLarge"}, {"415", "UnsupportedMedia"}, {"422", "Unprocessable"},
        {"429", "TooManyRequests"}, {"503", "Unavailable"},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strstr(codes, known[i].code))
            json_object_set_new(responses, known[i].code, ref("responses", known[i].name));
}

/* One operation. params (taken, NULL = none) is an array; body (taken, NULL = none) the
 * request body schema; ok the success responses (taken); errors the error statuses. */
static json_t *op(const char *id, const char *tag, const char *summary, json_t *params,
                  json_t *body, json_t *ok, const char *errors)
{
    json_t *o = json_pack("{s:s,s:[s],s:s}", "operationId", id, "tags", tag, "summary", summary);
    if (params)
        json_object_set_new(o, "parameters", params);
    if (body)
        json_object_set_new(o, "requestBody",
                            json_pack("{s:b,s:o}", "required", 1, "content", json_content(body)));
    /* Every /api/v1 route passes authentication, authorization and the rate limit. */
    char all[96];
    snprintf(all, sizeof(all), "%s 401 403 429", errors);
    add_errors(ok, all);
    json_object_set_new(o, "responses", ok);
    return o;
}

static json_t *param(const char *name)
{
    return ref("parameters", name);
}

static json_t *query(const char *name, const char *type, const char *description)
{
    return json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", name, "in", "query", "description",
                     description, "schema", "type", type);
}

static json_t *path_param(const char *name, const char *type, const char *description)
{
    return json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", name, "in", "path", "required", 1,
                     "description", description, "schema", "type", type);
}

static json_t *page_of(const char *item)
{
    return json_pack("{s:s,s:[s,s],s:{s:{s:s,s:o},s:{s:s,s:b,s:s}}}", "type", "object", "required",
                     "items", "next_cursor", "properties", "items", "type", "array", "items",
                     schema(item), "next_cursor", "type", "string", "nullable", 1, "description",
                     "pass as cursor for the next page; null on the last page");
}

/* ------------------------------------------------------------------ components */

static json_t *obj(const char *required_csv, json_t *props)
{
    json_t *o = json_pack("{s:s,s:o}", "type", "object", "properties", props);
    if (required_csv && required_csv[0]) {
        json_t *req = json_array();
        for (const char *p = required_csv;;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            json_array_append_new(req, json_stringn(p, n));
            if (comma == NULL)
                break;
            p = comma + 1;
        }
        json_object_set_new(o, "required", req);
    }
    return o;
}

static json_t *t(const char *type)
{
    return json_pack("{s:s}", "type", type);
}

static json_t *tn(const char *type)
{
    return json_pack("{s:s,s:b}", "type", type, "nullable", 1);
}

static json_t *strings(void)
{
    return json_pack("{s:s,s:{s:s}}", "type", "array", "items", "type", "string");
}

static json_t *schemas(void)
{
    json_t *s = json_object();
    json_object_set_new(
        s, "ErrorDetail",
        obj("path,message",
            json_pack("{s:o,s:o,s:o,s:o}", "path", t("string"), "message", t("string"), "stage",
                      json_pack("{s:s,s:[s,s,s,s,s,s,s,s]}", "type", "string", "enum", "schema",
                                "semantic", "dependency", "security", "quota", "conflict", "traps",
                                "compose"),
                      "conflict_with", t("string"))));
    json_object_set_new(
        s, "Error",
        obj("error", json_pack("{s:o}", "error",
                               obj("code,message,details",
                                   json_pack("{s:o,s:o,s:{s:s,s:o}}", "code", t("string"),
                                             "message", t("string"), "details", "type", "array",
                                             "items", schema("ErrorDetail"))))));
    json_object_set_new(
        s, "Spec",
        json_pack("{s:s,s:s,s:{s:o,s:o,s:o,s:o,s:o,s:o,s:o}}", "type", "object", "description",
                  "A gateway.control.v1 ConfigSnapshot in its JSON mapping: the "
                  "listeners, routes, backends and secrets of one config",
                  "properties", "listeners", t("array"), "http_routes", t("array"), "grpc_routes",
                  t("array"), "stream_routes", t("array"), "backends", t("array"), "secrets",
                  t("array"), "extensions", t("object")));
    json_object_set_new(
        s, "ConfigInput",
        obj("name,groups,spec",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "namespace",
                      json_pack("{s:s,s:s}", "type", "string", "default", "default"), "name",
                      t("string"), "groups", strings(), "spec", schema("Spec"), "message",
                      t("string"), "draft", t("boolean"))));
    json_object_set_new(
        s, "ConfigUpdate",
        obj("spec", json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "namespace", t("string"), "name",
                              t("string"), "groups", strings(), "spec", schema("Spec"), "message",
                              t("string"), "draft", t("boolean"))));
    json_object_set_new(
        s, "ValidateInput",
        obj("spec", json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id", t("string"), "namespace",
                              t("string"), "name", t("string"), "groups", strings(), "spec",
                              schema("Spec"), "message", t("string"), "draft", t("boolean"))));
    json_object_set_new(
        s, "Valid",
        obj("valid", json_pack("{s:o,s:o}", "valid", t("boolean"), "groups", strings())));
    json_object_set_new(
        s, "Config",
        obj("id,namespace,name,groups,version",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id",
                      t("string"), "namespace", t("string"), "name", t("string"), "groups",
                      strings(), "version", t("integer"), "live_version", tn("integer"),
                      "created_by", t("string"), "created_at", t("string"), "updated_at",
                      t("string"), "deleted_at", t("string"), "checksum", t("string"), "author",
                      t("string"), "message", t("string"), "draft", t("boolean"), "source_version",
                      tn("integer"), "spec", schema("Spec"))));
    json_object_set_new(s, "ChangeResult",
                        json_pack("{s:[o,{s:s,s:{s:o,s:{s:s,s:{s:s,s:{s:o,s:o}}},s:o}}]}", "allOf",
                                  schema("Config"), "type", "object", "properties", "changed",
                                  t("boolean"), "snapshots", "type", "array", "items", "type",
                                  "object", "properties", "group", t("string"), "version",
                                  t("integer"), "rollback",
                                  obj("", json_pack("{s:o,s:o,s:o}", "source_version", t("integer"),
                                                    "before_version", t("integer"), "after_version",
                                                    t("integer")))));
    json_object_set_new(
        s, "ConfigVersion",
        obj("config_id,version,checksum,author",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "config_id", t("string"), "version",
                      t("integer"), "checksum", t("string"), "author", t("string"), "message",
                      t("string"), "draft", t("boolean"), "source_version", tn("integer"),
                      "created_at", t("string"), "spec", schema("Spec"))));
    json_object_set_new(
        s, "DiffEntry",
        obj("path", json_pack("{s:o,s:o,s:o,s:o}", "path", t("string"), "value", json_object(),
                              "old", json_object(), "new", json_object())));
    json_object_set_new(
        s, "Diff",
        obj("config_id,from,to,added,removed,changed",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:{s:s,s:o},s:{s:s,s:o},s:{s:s,s:o}}", "config_id",
                      t("string"), "from", t("integer"), "to", t("integer"), "from_checksum",
                      t("string"), "to_checksum", t("string"), "added", "type", "array", "items",
                      schema("DiffEntry"), "removed", "type", "array", "items", schema("DiffEntry"),
                      "changed", "type", "array", "items", schema("DiffEntry"))));
    json_object_set_new(s, "RollbackInput",
                        obj("version", json_pack("{s:{s:s,s:i},s:o}", "version", "type", "integer",
                                                 "minimum", 1, "message", t("string"))));
    json_object_set_new(
        s, "GroupRollbackInput",
        obj("snapshot_version", json_pack("{s:{s:s,s:i},s:o}", "snapshot_version", "type",
                                          "integer", "minimum", 1, "message", t("string"))));
    json_object_set_new(
        s, "GroupRollbackResult",
        obj("group,snapshot_version,before_version,version,changed",
            json_pack("{s:o,s:o,s:o,s:o,s:o}", "group", t("string"), "snapshot_version",
                      t("integer"), "before_version", t("integer"), "version", t("integer"),
                      "changed", t("boolean"))));
    json_object_set_new(
        s, "Snapshot",
        obj("id,group,version,checksum",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:{s:s,s:{s:s,s:{s:o,s:o,s:o,s:o}}},s:o,s:o,s:o,s:o}",
                      "id", t("integer"), "group", t("string"), "version", t("integer"), "checksum",
                      t("string"), "size_bytes", t("integer"), "sources", "type", "array", "items",
                      "type", "object", "properties", "config_id", t("string"), "version",
                      t("integer"), "namespace", t("string"), "name", t("string"), "reason",
                      t("string"), "created_by", t("string"), "created_at", t("string"), "ir",
                      schema("Spec"))));
    json_object_set_new(
        s, "Group",
        obj("name,latest_version,proxies,nack_rate",
            json_pack(
                "{s:o,s:o,s:o,s:o,s:o}", "name", t("string"), "latest_version", t("integer"),
                "updated_at", t("string"), "proxies",
                obj("connected,stale,disconnected,nacking",
                    json_pack("{s:o,s:o,s:o,s:o}", "connected", t("integer"), "stale", t("integer"),
                              "disconnected", t("integer"), "nacking", t("integer"))),
                "nack_rate", t("number"))));
    json_object_set_new(
        s, "Proxy",
        obj("node_id,group,connected,state,nacking",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
                      "s:o,s:o,s:o,s:{s:s,s:[s,s,s]},s:o}",
                      "node_id", t("string"), "group", t("string"), "namespace", t("string"),
                      "client", t("string"), "protocol", t("string"), "labels", t("object"),
                      "metadata", t("object"), "locality", t("object"), "connected", t("boolean"),
                      "replica_id", tn("string"), "disconnect_reason", tn("string"), "first_seen",
                      t("string"), "last_seen", t("string"), "desired_version", tn("integer"),
                      "sent_version", tn("integer"), "acked_version", tn("integer"), "acked_at",
                      tn("string"), "last_nack",
                      json_pack("{s:s,s:b,s:{s:o,s:o,s:o}}", "type", "object", "nullable", 1,
                                "properties", "version", tn("integer"), "error", tn("string"), "at",
                                tn("string")),
                      "nack_count", t("integer"), "status_report", tn("object"), "deployment_id",
                      tn("string"), "state", "type", "string", "enum", "connected", "stale",
                      "disconnected", "nacking", t("boolean"))));
    json_object_set_new(
        s, "ProxyConfig",
        obj("node_id,group,desired,acked,in_sync",
            json_pack("{s:o,s:o,s:{s:s,s:[s,s]},s:o,s:{s:[o],s:b},s:{s:[o],s:b},s:o}", "node_id",
                      t("string"), "group", t("string"), "assignment", "type", "string", "enum",
                      "pinned", "group_latest", "acked_version", tn("integer"), "desired", "allOf",
                      schema("Snapshot"), "nullable", 1, "acked", "allOf", schema("Snapshot"),
                      "nullable", 1, "in_sync", t("boolean"))));
    json_object_set_new(
        s, "AuditEntry",
        obj("id,at,user,action,resource_type,result",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:s,s:[s,s,s]},s:o,s:o,s:o,s:o}", "id",
                      t("integer"), "at", t("string"), "user", t("string"), "role", t("string"),
                      "action", t("string"), "resource_type", t("string"), "resource_id",
                      t("string"), "result", "type", "string", "enum", "success", "denied",
                      "failed", "status_code", tn("integer"), "request_id", tn("string"),
                      "source_ip", tn("string"), "details", t("object"))));
    json_object_set_new(
        s, "Whoami",
        obj("user,role,permissions",
            json_pack("{s:o,s:o,s:{s:s,s:s,s:{s:s,s:{s:s}}}}", "user", t("string"), "role",
                      t("string"), "permissions", "description",
                      "What the caller's role may do: each resource type of the API mapped to "
                      "the actions allowed on it, {\"configs\": [\"read\", \"update\"]}",
                      "type", "object", "additionalProperties", "type", "array", "items", "type",
                      "string")));
    json_object_set_new(s, "ConfigPage", page_of("Config"));
    json_object_set_new(s, "VersionPage", page_of("ConfigVersion"));
    json_object_set_new(s, "SnapshotPage", page_of("Snapshot"));
    json_object_set_new(s, "GroupPage", page_of("Group"));
    json_object_set_new(s, "ProxyPage", page_of("Proxy"));
    json_object_set_new(s, "AuditPage", page_of("AuditEntry"));
    json_object_set_new(
        s, "Event",
        obj("id,type,at",
            json_pack("{s:o,s:{s:s,s:[s,s,s,s,s,s,s,s,s,s,s,s,s,s]},s:{s:s,s:s},s:o,s:o,s:o,s:o,s:"
                      "o,s:o,s:o,s:o}",
                      "id", t("integer"), "type", "type", "string", "enum", "config_applied",
                      "config_rejected", "wave_started", "wave_completed", "rollout_completed",
                      "rollout_failed", "rollback_started", "rollback_completed", "rollout_paused",
                      "rollout_resumed", "rollout_canceled", "proxy_connected",
                      "proxy_disconnected", "proxy_stale", "at", "type", "string", "format",
                      "date-time", "deployment_id", tn("string"), "node_id", tn("string"), "group",
                      tn("string"), "version", t("integer"), "error", t("string"), "reason",
                      t("string"), "protocol", t("string"), "client", t("string"))));
    json_object_set_new(
        s, "ApplyInput",
        obj("version",
            json_pack("{s:{s:s,s:i},s:{s:s,s:s,s:{s:o,s:o,s:{s:s,s:{s:s}},s:o}},s:{s:s,s:s,s:{s:{s:"
                      "s,s:[s,"
                      "s,s]},s:o,s:o,s:o,s:o,s:o,s:o}},s:o,s:o,s:{s:s,s:i,s:i},s:o,s:o,s:o,s:o}",
                      "version", "type", "integer", "minimum", 1, "selector", "type", "object",
                      "description", "which nodes of the config's groups; empty = all of them",
                      "properties", "node_ids", strings(), "groups", strings(), "labels", "type",
                      "object", "additionalProperties", "type", "string", "namespaces", strings(),
                      "strategy", "type", "object", "description",
                      "all_at_once | rolling (wave_size or wave_percent, pause) | canary "
                      "(initial_percent, increment_percent, interval)",
                      "properties", "type", "type", "string", "enum", "all_at_once", "rolling",
                      "canary", "wave_size", t("integer"), "wave_percent", t("number"), "pause",
                      t("string"), "initial_percent", t("number"), "increment_percent", t("number"),
                      "interval", t("string"), "dry_run", t("boolean"), "reason", t("string"),
                      "nack_threshold", "type", "number", "minimum", 0, "maximum", 1,
                      "nack_min_sample", t("integer"), "wave_timeout", t("string"),
                      "health_failures", t("integer"), "promote", t("boolean"))));
    json_object_set_new(
        s, "Plan",
        obj("plan,validation",
            json_pack("{s:{s:s,s:s},s:{s:s,s:{s:o,s:{s:s,s:o}}}}", "plan", "type", "object",
                      "description",
                      "waves (index, node_ids), groups (group, from_version, to_version, changed, "
                      "diff), skipped nodes, strategy and policy",
                      "validation", "type", "object", "properties", "valid", t("boolean"),
                      "problems", "type", "array", "items", schema("ErrorDetail"))));
    json_object_set_new(
        s, "Deployment",
        obj("id,config_id,config_version,state,waves",
            json_pack("{s:o,s:o,s:o,s:{s:s,s:[s,s,s,s,s,s,s,s,s]},s:o,s:o,s:o,s:o,s:o,s:o,s:{s:s,"
                      "s:{s:s,s:s}}}",
                      "id", t("string"), "config_id", t("string"), "config_version", t("integer"),
                      "state", "type", "string", "enum", "pending", "in_progress", "paused",
                      "completed", "failed", "canceling", "rolling_back", "rolled_back",
                      "rollback_failed", "state_reason", t("string"), "current_wave", t("integer"),
                      "target_snapshots", t("object"), "baseline_snapshots", t("object"),
                      "strategy", t("object"), "selector", t("object"), "waves", "type", "array",
                      "items", "type", "object", "description",
                      "index, state, node_ids, acks, nacks, errors (node_id, version, error, "
                      "at), started_at, completed_at, duration_seconds")));
    json_object_set_new(
        json_object_get(json_object_get(s, "Deployment"), "properties"), "progress",
        json_pack("{s:s,s:s}", "type", "object", "description",
                  "summed over the waves: waves, waves_completed, nodes, acks, nacks"));
    json_object_set_new(s, "DeploymentPage", page_of("Deployment"));
    json_object_set_new(s, "ActionInput", obj("", json_pack("{s:o}", "reason", t("string"))));
    return s;
}

static json_t *error_response(const char *description)
{
    return resp(description, schema("Error"), NULL);
}

static json_t *components(void)
{
    json_t *responses = json_object();
    json_object_set_new(responses, "BadRequest",
                        error_response("Malformed JSON, wrong field types, unknown fields or bad "
                                       "query parameters; details name each field"));
    json_object_set_new(responses, "Unauthorized",
                        error_response("No valid bearer token (missing, expired, bad signature, "
                                       "wrong issuer or audience)"));
    json_object_set_new(responses, "Forbidden",
                        error_response("The token's role may not do this (RBAC policy)"));
    json_object_set_new(responses, "NotFound", error_response("No such resource"));
    json_object_set_new(responses, "Conflict",
                        error_response("The name is taken, or the config conflicts with another "
                                       "config of a group (details name it in conflict_with)"));
    json_object_set_new(responses, "PreconditionFailed",
                        error_response("If-Match names a version that is no longer the latest"));
    json_object_set_new(responses, "PayloadTooLarge",
                        error_response("The body is larger than http.max_body_bytes"));
    json_object_set_new(responses, "UnsupportedMedia",
                        error_response("The body is not sent as application/json"));
    json_object_set_new(responses, "Unprocessable",
                        error_response("The config fails validation; details hold every "
                                       "problem with its stage and path"));
    json_object_set_new(
        responses, "TooManyRequests",
        resp("The user's rate limit is exhausted", schema("Error"),
             json_pack("{s:{s:s,s:{s:s}}}", "Retry-After", "description",
                       "seconds until a request may succeed", "schema", "type", "integer")));
    json_object_set_new(responses, "Unavailable",
                        error_response("The database cannot be reached; retry later"));

    json_t *params = json_object();
    json_object_set_new(params, "limit",
                        json_pack("{s:s,s:s,s:s,s:{s:s,s:i,s:i,s:i}}", "name", "limit", "in",
                                  "query", "description", "page size", "schema", "type", "integer",
                                  "minimum", 1, "maximum", 1000, "default", 100));
    json_object_set_new(params, "cursor",
                        query("cursor", "string", "next_cursor of the previous page"));
    json_object_set_new(params, "configId", path_param("id", "string", "config id (a UUID)"));
    json_object_set_new(
        params, "ifMatch",
        json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", "If-Match", "in", "header", "required", 0,
                  "description",
                  "the ETag of the version the change is based on (\"N\" or *); a stale one "
                  "gets 412",
                  "schema", "type", "string"));

    return json_pack("{s:o,s:o,s:o,s:{s:{s:s,s:s,s:s}}}", "schemas", schemas(), "responses",
                     responses, "parameters", params, "securitySchemes", "bearerAuth", "type",
                     "http", "scheme", "bearer", "bearerFormat", "JWT");
}

/* ------------------------------------------------------------------ paths */

static json_t *paging(void)
{
    return json_pack("[o,o]", param("limit"), param("cursor"));
}

static json_t *paths(void)
{
    json_t *p = json_object();

    json_object_set_new(
        p, "/api/v1/whoami",
        json_pack("{s:o}", "get",
                  op("whoami", "auth", "Who the bearer token speaks for", NULL, NULL,
                     json_pack("{s:o}", "200", resp("The caller", schema("Whoami"), NULL)), "")));
    json_object_set_new(
        p, "/api/v1/openapi.json",
        json_pack("{s:o}", "get",
                  op("getOpenApi", "meta", "This document", NULL, NULL,
                     json_pack("{s:o}", "200", resp("OpenAPI 3 document", t("object"), NULL)),
                     "")));

    /* configs */
    json_t *list_params = paging();
    json_array_append_new(list_params, query("namespace", "string", "only this namespace"));
    json_array_append_new(list_params, query("group", "string", "only configs of this group"));
    json_object_set_new(
        p, "/api/v1/configs",
        json_pack(
            "{s:o,s:o}", "get",
            op("listConfigs", "configs", "List live configs, by namespace and name", list_params,
               NULL, json_pack("{s:o}", "200", resp("One page", schema("ConfigPage"), NULL)),
               "400 503"),
            "post",
            op("createConfig", "configs",
               "Create a config: validated against the other configs of its groups, stored as "
               "version 1, its groups recomposed, audited",
               NULL, schema("ConfigInput"),
               json_pack(
                   "{s:o}", "201",
                   resp("Created; Location names it", schema("ChangeResult"), created_headers())),
               "400 409 413 415 422 503")));
    json_object_set_new(
        p, "/api/v1/configs/validate",
        json_pack("{s:o}", "post",
                  op("validateConfig", "configs",
                     "Dry run of the whole validation pipeline against the current configs; "
                     "nothing is written",
                     NULL, schema("ValidateInput"),
                     json_pack("{s:o}", "200", resp("Valid", schema("Valid"), NULL)),
                     "400 404 409 413 415 422 503")));
    json_object_set_new(
        p, "/api/v1/configs/{id}",
        json_pack(
            "{s:o,s:o,s:o}", "get",
            op("getConfig", "configs", "A config with its latest version's spec",
               json_pack("[o]", param("configId")), NULL,
               json_pack("{s:o}", "200", resp("The config", schema("Config"), etag_header())),
               "404 503"),
            "put",
            op("updateConfig", "configs",
               "Store a new version (validated, groups recomposed, audited); If-Match optional",
               json_pack("[o,o]", param("configId"), param("ifMatch")), schema("ConfigUpdate"),
               json_pack(
                   "{s:o}", "200",
                   resp("The config after the change", schema("ChangeResult"), etag_header())),
               "400 404 409 412 413 415 422 503"),
            "delete",
            op("deleteConfig", "configs",
               "Soft-delete a config and recompose its groups (audited); If-Match optional",
               json_pack("[o,o,o]", param("configId"), param("ifMatch"),
                         query("message", "string", "why, kept in the audit log")),
               NULL,
               json_pack("{s:o}", "200",
                         resp("The deleted config", schema("ChangeResult"), etag_header())),
               "400 404 412 503")));
    json_object_set_new(
        p, "/api/v1/configs/{id}/versions",
        json_pack("{s:o}", "get",
                  op("listConfigVersions", "configs", "A config's versions, newest first",
                     json_pack("[o,o,o]", param("configId"), param("limit"), param("cursor")), NULL,
                     json_pack("{s:o}", "200", resp("One page", schema("VersionPage"), NULL)),
                     "400 404 503")));
    json_object_set_new(
        p, "/api/v1/configs/{id}/versions/{v}",
        json_pack(
            "{s:o}", "get",
            op("getConfigVersion", "configs", "One version with its spec",
               json_pack("[o,o]", param("configId"), path_param("v", "integer", "version number")),
               NULL, json_pack("{s:o}", "200", resp("The version", schema("ConfigVersion"), NULL)),
               "404 503")));
    json_object_set_new(
        p, "/api/v1/configs/{id}/diff",
        json_pack(
            "{s:o}", "get",
            op("diffConfigVersions", "configs",
               "Structured diff between two versions' specs (default: the latest against "
               "the one before)",
               json_pack("[o,o,o]", param("configId"), query("from", "integer", "older version"),
                         query("to", "integer", "newer version")),
               NULL, json_pack("{s:o}", "200", resp("The diff", schema("Diff"), NULL)),
               "400 404 503")));
    json_object_set_new(
        p, "/api/v1/configs/{id}/rollback",
        json_pack("{s:o}", "post",
                  op("rollbackConfig", "configs",
                     "New version whose spec is version N's, re-validated against today's "
                     "rules, audited with before and after versions",
                     json_pack("[o,o]", param("configId"), param("ifMatch")),
                     schema("RollbackInput"),
                     json_pack("{s:o}", "200",
                               resp("The config after the rollback", schema("ChangeResult"),
                                    etag_header())),
                     "400 404 409 412 413 415 422 503")));

    /* snapshots and groups */
    json_t *snap_params = paging();
    json_array_append_new(snap_params, query("group", "string", "only this proxy group"));
    json_object_set_new(
        p, "/api/v1/snapshots",
        json_pack("{s:o}", "get",
                  op("listSnapshots", "snapshots", "Composed snapshots, newest first", snap_params,
                     NULL,
                     json_pack("{s:o}", "200", resp("One page", schema("SnapshotPage"), NULL)),
                     "400 503")));
    json_object_set_new(
        p, "/api/v1/snapshots/{id}",
        json_pack("{s:o}", "get",
                  op("getSnapshot", "snapshots",
                     "One snapshot: its IR and the config versions it was built from",
                     json_pack("[o]", path_param("id", "integer", "snapshot id")), NULL,
                     json_pack("{s:o}", "200", resp("The snapshot", schema("Snapshot"), NULL)),
                     "404 503")));
    json_object_set_new(
        p, "/api/v1/groups",
        json_pack("{s:o}", "get",
                  op("listGroups", "groups", "Proxy groups with their newest snapshot version",
                     paging(), NULL,
                     json_pack("{s:o}", "200", resp("One page", schema("GroupPage"), NULL)),
                     "400 503")));
    json_object_set_new(
        p, "/api/v1/groups/{group}/rollback",
        json_pack(
            "{s:o}", "post",
            op("rollbackGroup", "groups",
               "Republish snapshot N's content as the group's newest version (audited)",
               json_pack("[o]", path_param("group", "string", "proxy group")),
               schema("GroupRollbackInput"),
               json_pack("{s:o}", "200",
                         resp("The group after the rollback", schema("GroupRollbackResult"), NULL)),
               "400 404 413 415 422 503")));

    /* rollouts */
    json_object_set_new(
        p, "/api/v1/configs/{id}/apply",
        json_pack("{s:o}", "post",
                  op("applyConfig", "deployments",
                     "Roll a config version out to the selected nodes in waves gated on their ACKs "
                     "(dry_run: the plan, nothing written)",
                     json_pack("[o]", param("configId")), schema("ApplyInput"),
                     json_pack("{s:o,s:o}", "200", resp("The plan (dry run)", schema("Plan"), NULL),
                               "201", resp("The deployment, pending", schema("Deployment"), NULL)),
                     "400 404 409 413 415 422 503")));
    json_t *dep_params = paging();
    json_array_append_new(dep_params,
                          query("state", "string", "comma-separated states, e.g. in_progress"));
    json_array_append_new(dep_params, query("config_id", "string", "only this config"));
    json_object_set_new(
        p, "/api/v1/deployments",
        json_pack("{s:o}", "get",
                  op("listDeployments", "deployments", "Deployments, newest first", dep_params,
                     NULL,
                     json_pack("{s:o}", "200", resp("One page", schema("DeploymentPage"), NULL)),
                     "400 503")));
    json_object_set_new(
        p, "/api/v1/deployments/{id}",
        json_pack("{s:o}", "get",
                  op("getDeployment", "deployments",
                     "One deployment with its waves: ACKs, NACKs, errors and timings",
                     json_pack("[o]", path_param("id", "string", "deployment id")), NULL,
                     json_pack("{s:o}", "200", resp("The deployment", schema("Deployment"), NULL)),
                     "404 503")));
    static const char *const actions[][3] = {
        {"pause", "pauseDeployment", "Hold an in-progress deployment before its next wave"},
        {"resume", "resumeDeployment", "Continue a paused deployment"},
        {"cancel", "cancelDeployment",
         "Stop a pending, in-progress or paused deployment and return its nodes"},
        {"rollback", "rollbackDeployment",
         "Return every node the deployment moved to what it had (undoing a promotion)"},
    };
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/api/v1/deployments/{id}/%s", actions[i][0]);
        json_object_set_new(
            p, path,
            json_pack("{s:o}", "post",
                      op(actions[i][1], "deployments", actions[i][2],
                         json_pack("[o]", path_param("id", "string", "deployment id")),
                         schema("ActionInput"),
                         json_pack("{s:o}", "200",
                                   resp("The deployment after it", schema("Deployment"), NULL)),
                         "400 404 409 415 503")));
    }

    /* proxies */
    json_t *proxy_params = paging();
    json_array_append_new(proxy_params, query("group", "string", "only this proxy group"));
    json_array_append_new(proxy_params,
                          query("connected", "boolean", "only connected (true) or not (false)"));
    json_array_append_new(
        proxy_params,
        query("state", "string", "only nodes in this state: connected, stale or disconnected"));
    json_object_set_new(
        p, "/api/v1/proxies",
        json_pack("{s:o}", "get",
                  op("listProxies", "proxies", "Every proxy seen, by node id", proxy_params, NULL,
                     json_pack("{s:o}", "200", resp("One page", schema("ProxyPage"), NULL)),
                     "400 503")));
    json_object_set_new(
        p, "/api/v1/proxies/{node_id}",
        json_pack("{s:o}", "get",
                  op("getProxy", "proxies", "One proxy: identity, status, acked version, last NACK",
                     json_pack("[o]", path_param("node_id", "string", "xDS node id")), NULL,
                     json_pack("{s:o}", "200", resp("The proxy", schema("Proxy"), NULL)),
                     "404 503")));
    json_object_set_new(
        p, "/api/v1/proxies/{node_id}/config",
        json_pack("{s:o}", "get",
                  op("getProxyConfig", "proxies",
                     "The snapshot the proxy should have and the one it acknowledged",
                     json_pack("[o]", path_param("node_id", "string", "xDS node id")), NULL,
                     json_pack("{s:o}", "200", resp("Both snapshots", schema("ProxyConfig"), NULL)),
                     "404 503")));

    json_t *nack_params = paging();
    json_array_insert_new(nack_params, 0, path_param("node_id", "string", "xDS node id"));
    json_object_set_new(
        p, "/api/v1/proxies/{node_id}/nacks",
        json_pack("{s:o}", "get",
                  op("listProxyNacks", "proxies",
                     "The proxy's NACKs, newest first: at, group, version, error, replica "
                     "(kept for events.retention)",
                     nack_params, NULL,
                     json_pack("{s:o}", "200",
                               resp("One page", json_pack("{s:s}", "type", "object"), NULL)),
                     "400 404 503")));

    /* audit */
    json_t *audit_params = paging();
    json_array_append_new(audit_params, query("user", "string", "who (the token's subject)"));
    json_array_append_new(audit_params, query("action", "string", "e.g. config.update"));
    json_array_append_new(audit_params, query("resource_type", "string", "e.g. config, group"));
    json_array_append_new(audit_params, query("resource_id", "string", "e.g. a config id"));
    json_array_append_new(audit_params, query("result", "string", "success, denied or failed"));
    json_array_append_new(audit_params, query("since", "string", "RFC 3339; at or after"));
    json_array_append_new(audit_params, query("until", "string", "RFC 3339; before"));
    json_object_set_new(
        p, "/api/v1/audit",
        json_pack("{s:o}", "get",
                  op("listAudit", "audit", "The audit log, newest first", audit_params, NULL,
                     json_pack("{s:o}", "200", resp("One page", schema("AuditPage"), NULL)),
                     "400 503")));

    /* live events */
    json_t *event_params = json_array();
    json_array_append_new(
        event_params, query("types", "string",
                            "comma-separated event types; default: every type the caller's role "
                            "may read (deployment events need deployments read, the others "
                            "proxies read)"));
    json_array_append_new(event_params,
                          query("since", "integer",
                                "resume strictly after this event id, for clients that cannot "
                                "send Last-Event-ID (the header wins)"));
    json_array_append_new(
        event_params,
        json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", "Last-Event-ID", "in", "header", "required",
                  0, "description",
                  "resume strictly after this event id; without it (and since) the stream "
                  "starts at the newest event and replays nothing older",
                  "schema", "type", "integer"));
    json_object_set_new(
        p, "/api/v1/events",
        json_pack("{s:o}", "get",
                  op("streamEvents", "events",
                     "Live events of every replica as server-sent events (text/event-stream): "
                     "\"id: N\", \"event: TYPE\", \"data: {...}\" per event, a \": keep-alive\" "
                     "comment every events.keepalive",
                     event_params, NULL,
                     json_pack("{s:{s:s,s:{s:{s:o}}}}", "200", "description",
                               "The stream; each data line is one Event", "content",
                               "text/event-stream", "schema", schema("Event")),
                     "400 503")));
    return p;
}

json_t *openapi_document(void)
{
    return json_pack(
        "{s:s,s:{s:s,s:s,s:s},s:[{s:s}],s:[{s:[]}],s:o,s:o}", "openapi", "3.0.3", "info", "title",
        "Sextant REST API", "version", SEXTANT_VERSION, "description",
        "Configs, versions, validation, snapshots, proxies, rollback and audit of the Sextant "
        "xDS control plane. Errors are {\"error\":{\"code\",\"message\",\"details\":[{\"path\","
        "\"message\"}]}}; lists take limit and cursor and answer next_cursor.",
        "servers", "url", "/", "security", "bearerAuth", "components", components(), "paths",
        paths());
}

void api_openapi(http_request *req, rest_api *api, void *ud)
{
    (void)api;
    (void)ud;
    http_req_set_header(req, "Cache-Control", "no-cache");
    http_respond_json(req, 200, openapi_document());
}

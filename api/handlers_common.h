/*
 * handlers_common.h — what every REST handler shares: strict JSON bodies, pagination
 * and query parameters, entity tags, error answers in the one error shape, audit rows
 * for refused changes, and the JSON form of each stored record.
 *
 * Functions named ..._or_respond answer the request themselves when they fail and
 * return false; the handler then returns without answering again.
 */
#ifndef SX_API_HANDLERS_COMMON_H
#define SX_API_HANDLERS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "api/http.h"
#include "api/rest.h"
#include "server/validate/validate.h"
#include "storage/pg_pool.h"
#include "storage/repo_audit.h"
#include "storage/repo_configs.h"
#include "storage/repo_nodes.h"
#include "storage/repo_snapshots.h"

struct sx_server;

/* ---- answering */

/* Answers with err in the error shape: its status and code name, its message, and its
 * detail and hint as details entries {"path": "", "message": ...}. 503 answers carry
 * Retry-After. */
void api_respond_err(http_request *req, const sx_err *err);

/* A details array entry {"path": path, "message": message} appended to details. */
void api_detail(json_t *details, const char *path, const char *message);

/* ---- request bodies */

/* Field rules for api_body_or_respond: name, expected JSON type, whether required. */
typedef enum api_type {
    API_STRING,
    API_OBJECT,
    API_BOOL,
    API_INT,     /* a JSON integer */
    API_NUMBER,  /* a JSON number */
    API_STRINGS, /* an array of non-empty strings */
} api_type;

typedef struct api_field {
    const char *name;
    api_type type;
    bool required;
} api_field;

/*
 * Reads the request body as a JSON object with exactly the given fields (n of them):
 * 415 unless Content-Type is application/json; 400 for an empty or malformed body, or
 * one that is not an object; 400 with every bad field as a details entry (path = field
 * name) for unknown fields, missing required ones and wrong types. A refusal is audited
 * when ch is not NULL (see api_change_fail). On success *out is the object (owned by
 * the request's arena) and true is returned.
 */
struct api_change;
bool api_body_or_respond(http_request *req, const struct api_change *ch, const api_field *fields,
                         size_t n, json_t **out);

/* A field's string value, NULL when absent. */
const char *api_str(const json_t *body, const char *name);

/* The strings of an API_STRINGS field as an array in the request's arena (NULL, 0
 * when absent). */
size_t api_strv(http_request *req, const json_t *body, const char *name, const char ***out);

/* ---- query parameters */

/* limit (1..1000, default repo default) and cursor; 400 for a bad limit. */
bool api_page_or_respond(http_request *req, int *limit, const char **cursor);

/* A positive integer from text (a path segment or query value); false when it is not
 * one. */
bool api_parse_positive(const char *s, long long *out);

/* Query parameter name as a boolean ("true"/"false"; -1 when absent); 400 otherwise. */
bool api_query_bool_or_respond(http_request *req, const char *name, int *out);

/* ---- entity tags */

/* Sets ETag: "<version>". */
void api_set_etag(http_request *req, int version);

/* Reads If-Match: *version is 0 when absent or "*", else the version of its one strong
 * entity tag "N". 400 for anything else (weak tags, lists, malformed), audited when ch
 * is not NULL. */
bool api_if_match_or_respond(http_request *req, const struct api_change *ch, int *version);

/* ---- database */

/* A pooled connection, or 503/504 answered. Release with pg_release. */
pg_conn *api_conn_or_respond(http_request *req, rest_api *api);

/* ---- the caller and audit */

const char *api_user(http_request *req);
const char *api_role(http_request *req);

/* A change request being answered: what the audit row of a refusal names. */
struct api_change {
    http_request *req;
    rest_api *api;
    const char *action;        /* "config.update" */
    const char *resource_type; /* "config", "group" */
    const char *resource_id;   /* "" when there is none yet */
};
typedef struct api_change api_change;

/* Answers a refused change with the error shape and appends one audit row with result
 * "failed", the status, the request id and source IP, and details {"code", "message",
 * "problems"} (a copy of details). Takes ownership of details (NULL: []). When the
 * database is down the row cannot be written; that is logged. */
void api_change_fail(const api_change *ch, int status, const char *code_name, const char *message,
                     json_t *details);
/* Same for an sx_err. */
void api_change_fail_err(const api_change *ch, const sx_err *err);

/* Answers an error with code's status and name: through api_change_fail when ch is not
 * NULL (audited), else directly. Takes ownership of details (NULL: []). */
void api_fail(http_request *req, const api_change *ch, int code, const char *message,
              json_t *details);

/* ---- validation */

/* The pipeline's limits and policies from the daemon's configuration. */
val_limits api_limits(const struct sx_server *srv);

/* The details array for a refused config: every pipeline problem as {"stage", "path",
 * "message"[, "conflict_with"]} and every field error as {"stage": stage, "path",
 * "message"}. problems and verrs may be NULL. */
json_t *api_problem_details(const val_result *problems, const sx_fielderrs *verrs,
                            const char *stage);

/* ---- JSON forms */

json_t *api_config_json(const cfg_record *c, const cfg_version *latest);
json_t *api_version_json(const cfg_version *v);
json_t *api_snapshot_json(const snap_record *s);
json_t *api_node_json(const node_record *n);

struct sx_server;
/* The fleet.stale_after / fleet.disconnected_after thresholds of the server's
 * configuration (zeros, meaning the defaults, when there is none). */
node_thresholds api_fleet_thresholds(const struct sx_server *srv);
json_t *api_audit_json(const audit_entry *e);
/* {"items": items, "next_cursor": cursor or null}; takes items. */
json_t *api_page(json_t *items, const char *next_cursor);

#endif

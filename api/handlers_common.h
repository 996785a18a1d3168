/*
 * handlers_common.h — what every REST handler shares: strict JSON bodies, pagination
 * and query parameters, entity tags, error answers in the one error shape, audit rows
 * for refused changes, and the JSON form of each stored record.
 *
 * Functions named ..._or_respond answer the request themselves when they fail and
 * return false; the handler then returns without answering again. Every error answer
 * goes through api_refuse, which audits refused changes and hands the rest to
 * http_respond_err; no handler holds a database connection: reads go to
 * server/catalog.h, changes to server/changes.h and server/rollout/rollout.h.
 */
#ifndef SX_API_HANDLERS_COMMON_H
#define SX_API_HANDLERS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "api/http.h"
#include "api/rest.h"
#include "server/validate/validate.h"
#include "storage/repo_audit.h"
#include "storage/repo_configs.h"
#include "storage/repo_nodes.h"
#include "storage/repo_snapshots.h"

struct sx_server;

/* ---- answering errors */

/* A details array entry {"path": path, "message": message} appended to details. */
void api_detail(json_t *details, const char *path, const char *message);
/* A new details array with the one entry {"path": path, "message": message}. */
json_t *api_details1(const char *path, const char *message);

struct api_change;
/* Answers err in the error shape (http_respond_err: its status and code name, its
 * message, details, Retry-After on 503). details is taken over; NULL gives err's detail
 * and hint as {"path": "", "message": ...} entries. When ch is not NULL the request is
 * a refused change: one audit row with result "failed", the status, the request id and
 * source IP, and details {"code", "message", "problems"} (a copy of details) is written
 * first, on a connection of its own (not for 503s, which mean there is no database to
 * write it to; a row that cannot be written is logged). */
void api_refuse(http_request *req, const struct api_change *ch, const sx_err *err, json_t *details);

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
 * when ch is not NULL (see api_refuse). On success *out is the object (owned by
 * the request's arena) and true is returned.
 */
bool api_body_or_respond(http_request *req, const struct api_change *ch, const api_field *fields,
                         size_t n, json_t **out);

/* A field's string value, NULL when absent. */
const char *api_str(const json_t *body, const char *name);

/* The strings of an API_STRINGS field as an array in the request's arena (NULL, 0
 * when absent). */
size_t api_strv(http_request *req, const json_t *body, const char *name, const char ***out);

/* ---- lists */

/* One page of a list, between api_list and the function that reads it. */
typedef struct api_list_page {
    int limit;               /* in: 1..1000, or 0 for the default page size */
    const char *cursor;      /* in: NULL for the first page */
    json_t *items;           /* out: the page's items, appended in order */
    const char *next_cursor; /* out: NULL on the last page */
    json_t *details;         /* out on failure: the error's details (taken), NULL for the
                                error's detail and hint */
} api_list_page;

/* Reads the query's filters, calls the domain for one page and appends its items to
 * page->items; returns 0, or a negative code with err (and page->details) to answer. */
typedef int (*api_list_fn)(http_request *req, rest_api *api, api_list_page *page, sx_err *err);

/* Renders one item of a page; item points into the array the domain returned. */
typedef json_t *(*api_item_fn)(const void *item);

/* The tail of an api_list_fn: appends render(item) for each of the count items of the
 * array items (size bytes each) to page->items, sets page->next_cursor, and returns rc
 * (0: items are read; else nothing is). */
int api_page_fill(api_list_page *page, int rc, const void *items, size_t count, size_t size,
                  api_item_fn render, const char *next_cursor);
/* api_page_fill from a list that has items, count and next_cursor (the storage list
 * structs, one per item type). */
#define API_PAGE_FILL(page, rc, list, render)                                                      \
    api_page_fill(page, rc, (list).items, (list).count, sizeof(*(list).items), render,             \
                  (list).next_cursor)

/* API_PAGE_FILL of the items the caller may read as type (api_scope_keep with scope_of):
 * a list whose rows the role's group scopes cut. */
#define API_PAGE_SCOPED(page, rc, list, render, req, api, type, scope_of)                          \
    api_page_fill(page, rc, (list).items,                                                          \
                  (rc) ? 0                                                                         \
                       : api_scope_keep(req, api, type, (list).items, (list).count,                \
                                        sizeof(*(list).items), scope_of),                          \
                  sizeof(*(list).items), render, (list).next_cursor)

/* Runs a paginated list: reads limit (1..1000; 400 otherwise) and cursor from the query,
 * calls fn, and answers 200 {"items": [...], "next_cursor": text or null}, or fn's
 * error. */
void api_list(http_request *req, rest_api *api, api_list_fn fn);

/* ---- query parameters */

/* An integer of at least min (0 or more) from text (a path segment, query value or
 * header) written in decimal digits only; false when it is not one. */
bool api_parse_at_least(const char *s, long long min, long long *out);
/* api_parse_at_least(s, 1, out). */
bool api_parse_positive(const char *s, long long *out);

/* Query parameter name as a boolean into *out (1 "true", 0 "false", -1 when absent);
 * anything else is SX_EINVAL "invalid <name>" with *details (new) naming it. */
int api_query_bool(http_request *req, const char *name, int *out, json_t **details,
                   sx_err *err) SX_MUSTCHECK;

/* ---- entity tags */

/* Sets ETag: "<version>". */
void api_set_etag(http_request *req, int version);

/* Reads If-Match: *version is 0 when absent or "*", else the version of its one strong
 * entity tag "N". 400 for anything else (weak tags, lists, malformed), audited when ch
 * is not NULL. */
bool api_if_match_or_respond(http_request *req, const struct api_change *ch, int *version);

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

/* ---- group scopes (api/policy.h) */

/*
 * True when the caller may do action on the object obj of type (rest_allows_object).
 * Otherwise answers and returns false: a read (ch NULL) as 404 "<what> does not exist",
 * so that what lies outside a role's scope is not even known to exist; a change as 403
 * with an audit row (result "denied") whose details.scope names the scope that refused.
 */
bool api_scope_or_respond(http_request *req, rest_api *api, const api_change *ch, const char *type,
                          const char *action, const policy_object *obj, const char *what);

/* True when the caller may read the object obj of type: what a list keeps on its page. */
bool api_scope_reads(http_request *req, rest_api *api, const char *type, const policy_object *obj);

/* The object a page item stands for: its groups (and namespace), as the scopes see it. */
typedef policy_object (*api_scope_of_fn)(const void *item);

/* A list's page cut to the caller's scope: keeps, in order and in place, those of the
 * count items (each size bytes) at items whose object (scope_of) the caller may read as
 * type; returns how many it kept. The page's cursor goes on past what it drops. */
size_t api_scope_keep(http_request *req, rest_api *api, const char *type, void *items, size_t count,
                      size_t size, api_scope_of_fn scope_of);

/* ---- JSON forms */

json_t *api_config_json(const cfg_record *c, const cfg_version *latest);
json_t *api_version_json(const cfg_version *v);
json_t *api_snapshot_json(const snap_record *s);
json_t *api_node_json(const node_record *n);
json_t *api_audit_json(const audit_entry *e);

#endif

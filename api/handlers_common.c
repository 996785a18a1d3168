/*
 * handlers_common.c — shared pieces of the REST handlers (see handlers_common.h).
 *
 * Request bodies are strict: a change request that carries a field the API does not
 * know is refused rather than half-understood, and every problem of the body is
 * reported at once with its field as the path. Refused changes are audited (through
 * server/changes.h, on a connection of its own) before the answer goes out, so a
 * client that reads the audit log right after its refusal finds the row.
 */
#include "api/handlers_common.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/base/log.h"
#include "server/base/num.h"
#include "server/changes.h"
#include "storage/repo_common.h"

#define COMPONENT "api"
/* Longest string field of a request body (a change message, a name). */
#define API_STRING_MAX 4096

/* ------------------------------------------------------------------ answering */

void api_detail(json_t *details, const char *path, const char *message)
{
    json_array_append_new(details, json_pack("{s:s,s:s}", "path", path ? path : "", "message",
                                             message ? message : ""));
}

json_t *api_details1(const char *path, const char *message)
{
    json_t *d = json_array();
    api_detail(d, path, message);
    return d;
}

/* The audit row of a refused change; failures are logged, never answered. */
static void audit_refusal(const api_change *ch, int status, const char *code_name,
                          const char *message, const json_t *details, const json_t *scope)
{
    json_t *meta =
        json_pack("{s:s,s:s,s:O}", "code", code_name, "message", message, "problems", details);
    if (scope)
        json_object_set(meta, "scope", (json_t *)scope);
    audit_new an = {
        .actor = api_user(ch->req),
        .actor_role = api_role(ch->req),
        .action = ch->action,
        .resource_type = ch->resource_type,
        .resource_id = ch->resource_id ? ch->resource_id : "",
        .result = status == 403 ? AUDIT_DENIED : AUDIT_FAILED,
        .status_code = status,
        .request_id = http_req_id(ch->req),
        .client_request_id = http_req_client_id(ch->req),
        .source_ip = rest_source_ip(ch->req),
        .details = meta,
    };
    sx_err err;
    sx_err_clear(&err);
    if (changes_audit(rest_server(ch->api), &an, &err) != 0)
        sx_log_fields(
            SX_LOG_WARN, COMPONENT,
            json_pack("{s:s,s:s}", "request_id", http_req_id(ch->req), "action", ch->action),
            "could not audit a refused change: %s", err.message);
    json_decref(meta);
}

void api_refuse(http_request *req, const api_change *ch, const sx_err *err, json_t *details)
{
    if (details == NULL) {
        details = json_array();
        if (err->detail[0])
            api_detail(details, "", err->detail);
        if (err->hint[0])
            api_detail(details, "", err->hint);
    }
    int code = err->code == SX_OK ? SX_EINTERNAL : err->code;
    int status = sx_code_http_status(code);
    if (ch && status != 503)
        audit_refusal(ch, status, sx_code_name(code),
                      err->message[0] ? err->message : sx_code_name(code), details, NULL);
    http_respond_err(req, err, details);
}

/* ------------------------------------------------------------------ scopes */

bool api_scope_or_respond(http_request *req, rest_api *api, const api_change *ch, const char *type,
                          const char *action, const policy_object *obj, const char *what)
{
    json_t *scope = NULL;
    if (rest_allows_object(api, req, type, action, obj, &scope)) {
        json_decref(scope);
        return true;
    }
    repo_own_json(http_req_arena(req), scope);
    sx_err err;
    if (ch == NULL) {
        sx_err_set(&err, SX_ENOTFOUND, "%s does not exist", what);
        api_refuse(req, NULL, &err, json_array());
        return false;
    }
    sx_err_set(&err, SX_EFORBIDDEN, "role %s may not %s %s: outside the groups of its role",
               api_role(req), action, what);
    json_t *details = json_array();
    audit_refusal(ch, 403, sx_code_name(SX_EFORBIDDEN), err.message, details, scope);
    http_respond_err(req, &err, details);
    return false;
}

bool api_scope_reads(http_request *req, rest_api *api, const char *type, const policy_object *obj)
{
    return rest_allows_object(api, req, type, "read", obj, NULL);
}

size_t api_scope_keep(http_request *req, rest_api *api, const char *type, void *items, size_t count,
                      size_t size, api_scope_of_fn scope_of)
{
    char *p = items;
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        policy_object obj = scope_of(p + i * size);
        if (!api_scope_reads(req, api, type, &obj))
            continue;
        if (kept != i)
            memcpy(p + kept * size, p + i * size, size);
        kept++;
    }
    return kept;
}

/* ------------------------------------------------------------------ bodies */

static void decref_json(void *p)
{
    json_decref(p);
}

/* application/json, any case, optionally followed by parameters. */
static bool is_json_media_type(const char *ct)
{
    while (*ct == ' ' || *ct == '\t')
        ct++;
    static const char want[] = "application/json";
    if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return false;
    char next = ct[sizeof(want) - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* The JSON types (bits 1 << json_type) each field type takes, and what a value of
 * another type is told. */
static const struct {
    unsigned json_types;
    const char *phrase;
} TYPES[] = {
    [API_STRING] = {1u << JSON_STRING, "must be a string"},
    [API_OBJECT] = {1u << JSON_OBJECT, "must be a JSON object"},
    [API_BOOL] = {1u << JSON_TRUE | 1u << JSON_FALSE, "must be true or false"},
    [API_INT] = {1u << JSON_INTEGER, "must be an integer"},
    [API_NUMBER] = {1u << JSON_INTEGER | 1u << JSON_REAL, "must be a number"},
    [API_STRINGS] = {1u << JSON_ARRAY, "must be an array of strings"},
};

/* Appends to details what is wrong with value v of field f. */
static void check_field(json_t *details, const api_field *f, const json_t *v)
{
    if (v == NULL || !(TYPES[f->type].json_types & (1u << json_typeof(v)))) {
        api_detail(details, f->name, TYPES[f->type].phrase);
    } else if (f->type == API_STRING) {
        if (f->required && json_string_length(v) == 0)
            api_detail(details, f->name, "must not be empty");
        else if (json_string_length(v) > API_STRING_MAX)
            api_detail(details, f->name, "must be at most 4096 bytes");
    } else if (f->type == API_STRINGS) {
        if (f->required && json_array_size(v) == 0)
            api_detail(details, f->name, "must name at least one");
        char path[128];
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            if (!json_is_string(e) || json_string_length(e) == 0) {
                snprintf(path, sizeof(path), "%s[%zu]", f->name, i);
                api_detail(details, path, "must be a non-empty string");
            }
        }
    }
}

bool api_body_or_respond(http_request *req, const api_change *ch, const api_field *fields, size_t n,
                         json_t **out)
{
    *out = NULL;
    const char *ct = http_req_header(req, "Content-Type");
    sx_err err;
    if (ct == NULL || !is_json_media_type(ct)) {
        sx_err_set(&err, SX_EUNSUPPORTED, "%s Content-Type: the body must be application/json",
                   ct ? "unsupported" : "missing");
        api_refuse(req, ch, &err, NULL);
        return false;
    }
    size_t len = 0;
    const char *text = http_req_body(req, &len);
    if (len == 0) {
        sx_err_set(&err, SX_EINVAL, "a JSON request body is required");
        api_refuse(req, ch, &err, NULL);
        return false;
    }
    json_error_t jerr;
    json_t *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL) {
        char where[64];
        snprintf(where, sizeof(where), "line %d, column %d", jerr.line, jerr.column);
        sx_err_set(&err, SX_EINVAL, "malformed JSON: %s", jerr.text);
        api_refuse(req, ch, &err, api_details1("", where));
        return false;
    }
    sx_arena_defer(http_req_arena(req), decref_json, body);
    if (!json_is_object(body)) {
        sx_err_set(&err, SX_EINVAL, "the request body must be a JSON object");
        api_refuse(req, ch, &err, NULL);
        return false;
    }
    json_t *details = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(fields[i].name, key) == 0;
        if (!known)
            api_detail(details, key, "unknown field");
    }
    for (size_t i = 0; i < n; i++) {
        v = json_object_get(body, fields[i].name);
        if (v == NULL) {
            if (fields[i].required)
                api_detail(details, fields[i].name, "is required");
            continue;
        }
        check_field(details, &fields[i], v);
    }
    if (json_array_size(details) > 0) {
        sx_err_set(&err, SX_EINVAL, "the request body has %zu problem%s", json_array_size(details),
                   json_array_size(details) == 1 ? "" : "s");
        api_refuse(req, ch, &err, details);
        return false;
    }
    json_decref(details);
    *out = body;
    return true;
}

const char *api_str(const json_t *body, const char *name)
{
    return json_string_value(json_object_get(body, name));
}

size_t api_strv(http_request *req, const json_t *body, const char *name, const char ***out)
{
    const json_t *arr = json_object_get(body, name);
    size_t n = json_array_size(arr);
    *out = NULL;
    if (n == 0)
        return 0;
    const char **v = sx_arena_alloc(http_req_arena(req), n * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i));
    *out = v;
    return n;
}

/* ------------------------------------------------------------------ query parameters */

bool api_parse_at_least(const char *s, long long min, long long *out)
{
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < min)
        return false;
    *out = v;
    return true;
}

bool api_parse_positive(const char *s, long long *out)
{
    return api_parse_at_least(s, 1, out);
}

int api_page_fill(api_list_page *page, int rc, const void *items, size_t count, size_t size,
                  api_item_fn render, const char *next_cursor)
{
    if (rc)
        return rc;
    for (size_t i = 0; i < count; i++)
        json_array_append_new(page->items, render((const char *)items + i * size));
    page->next_cursor = next_cursor;
    return 0;
}

void api_list(http_request *req, rest_api *api, api_list_fn fn)
{
    api_list_page page = {.limit = 0};
    sx_err err;
    sx_err_clear(&err);
    const char *l = http_req_query(req, "limit");
    if (l) {
        long long v;
        if (!api_parse_positive(l, &v) || v > REPO_LIMIT_MAX) {
            sx_err_set(&err, SX_EINVAL, "invalid limit");
            api_refuse(req, NULL, &err,
                       api_details1("limit", "must be an integer between 1 and 1000"));
            return;
        }
        page.limit = (int)v;
    }
    const char *c = http_req_query(req, "cursor");
    if (c && c[0])
        page.cursor = c;
    page.items = json_array();
    if (fn(req, api, &page, &err) != 0) {
        json_decref(page.items);
        api_refuse(req, NULL, &err, page.details);
        return;
    }
    json_decref(page.details);
    http_respond_json(req, 200,
                      json_pack("{s:o,s:o}", "items", page.items, "next_cursor",
                                page.next_cursor ? json_string(page.next_cursor) : json_null()));
}

int api_query_bool(http_request *req, const char *name, int *out, json_t **details, sx_err *err)
{
    *out = -1;
    const char *v = http_req_query(req, name);
    if (v == NULL)
        return 0;
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        *out = v[0] == 't';
        return 0;
    }
    *details = api_details1(name, "must be true or false");
    return sx_err_set(err, SX_EINVAL, "invalid %s", name);
}

/* ------------------------------------------------------------------ entity tags */

void api_set_etag(http_request *req, int version)
{
    char tag[32];
    snprintf(tag, sizeof(tag), "\"%d\"", version);
    http_req_set_header(req, "ETag", tag);
}

bool api_if_match_or_respond(http_request *req, const api_change *ch, int *version)
{
    *version = 0;
    const char *h = http_req_header(req, "If-Match");
    if (h == NULL)
        return true;
    while (*h == ' ' || *h == '\t')
        h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (n == 1 && h[0] == '*')
        return true;
    long long v = n >= 3 && h[0] == '"' && h[n - 1] == '"'
                      ? sx_parse_digits(h + 1, n - 2, 9, 1, 999999999)
                      : -1;
    if (v < 1) {
        sx_err err;
        sx_err_set(&err, SX_EINVAL, "invalid If-Match header");
        api_refuse(req, ch, &err,
                   api_details1("If-Match", "must be \"*\" or one entity tag as returned in "
                                            "ETag, such as \"3\""));
        return false;
    }
    *version = (int)v;
    return true;
}

/* ------------------------------------------------------------------ caller and audit */

const char *api_user(http_request *req)
{
    const rest_principal *p = rest_principal_of(req);
    return p && p->user && p->user[0] ? p->user : "anonymous";
}

const char *api_role(http_request *req)
{
    const rest_principal *p = rest_principal_of(req);
    return p && p->role ? p->role : "";
}

/* ------------------------------------------------------------------ JSON forms */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *strv_json(char **v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

json_t *api_config_json(const cfg_record *c, const cfg_version *latest)
{
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:o,s:i,s:o,s:s,s:s,s:s}", "id", c->id, "namespace", c->ns, "name", c->name,
        "groups", strv_json(c->groups, c->group_count), "version", c->latest_version,
        "live_version", c->live_version ? json_integer(c->live_version) : json_null(), "created_by",
        c->created_by, "created_at", c->created_at, "updated_at", c->updated_at);
    if (c->deleted_at)
        json_object_set_new(o, "deleted_at", json_string(c->deleted_at));
    json_object_set_new(o, "source", json_string(cfg_source_name(c->source)));
    json_object_set_new(o, "source_ref", c->source_ref ? json_string(c->source_ref) : json_null());
    if (latest) {
        json_object_set_new(o, "checksum", json_string(latest->checksum));
        json_object_set_new(o, "author", json_string(latest->author));
        json_object_set_new(o, "message", json_string(latest->message ? latest->message : ""));
        json_object_set_new(o, "draft", json_boolean(latest->draft));
        json_object_set_new(o, "source_version",
                            latest->source_version ? json_integer(latest->source_version)
                                                   : json_null());
        if (latest->spec)
            json_object_set(o, "spec", latest->spec);
    }
    return o;
}

json_t *api_version_json(const cfg_version *v)
{
    json_t *o = json_pack("{s:s,s:i,s:s,s:s,s:s,s:b,s:o,s:s}", "config_id", v->config_id, "version",
                          v->version, "checksum", v->checksum, "author", v->author, "message",
                          v->message ? v->message : "", "draft", v->draft, "source_version",
                          v->source_version ? json_integer(v->source_version) : json_null(),
                          "created_at", v->created_at);
    if (v->spec)
        json_object_set(o, "spec", v->spec);
    return o;
}

json_t *api_snapshot_json(const snap_record *s)
{
    json_t *sources = json_array();
    for (size_t i = 0; i < s->source_count; i++)
        json_array_append_new(sources, json_pack("{s:s,s:i}", "config_id", s->sources[i].config_id,
                                                 "version", s->sources[i].version));
    json_t *o = json_pack("{s:I,s:s,s:I,s:s,s:I,s:o,s:s,s:s,s:s}", "id", (json_int_t)s->id, "group",
                          s->group, "version", (json_int_t)s->version, "checksum", s->checksum,
                          "size_bytes", (json_int_t)s->encoded_len, "sources", sources, "reason",
                          s->reason ? s->reason : "", "created_by", s->created_by, "created_at",
                          s->created_at);
    /* A deployment's staged snapshot: served only to the nodes it pins. */
    json_object_set_new(o, "deployment_id",
                        s->deployment_id ? json_string(s->deployment_id) : json_null());
    if (s->ir)
        json_object_set(o, "ir", s->ir);
    return o;
}

static json_t *json_or_empty(const json_t *j)
{
    return j ? json_deep_copy(j) : json_object();
}

json_t *api_node_json(const node_record *n)
{
    json_t *o = json_object();
    json_object_set_new(o, "node_id", json_string(n->node_id));
    json_object_set_new(o, "group", json_string(n->group));
    json_object_set_new(o, "namespace", json_string(n->ns ? n->ns : ""));
    json_object_set_new(o, "client", json_string(n->client ? n->client : ""));
    json_object_set_new(o, "protocol", json_string(n->protocol ? n->protocol : ""));
    json_object_set_new(o, "labels", json_or_empty(n->labels));
    json_object_set_new(o, "metadata", json_or_empty(n->metadata));
    json_object_set_new(o, "locality", json_or_empty(n->locality));
    json_object_set_new(o, "connected", json_boolean(n->connected));
    json_object_set_new(o, "state", json_string(n->state ? n->state : "disconnected"));
    json_object_set_new(o, "nacking", json_boolean(n->nacking));
    json_object_set_new(o, "replica_id", str_or_null(n->replica_id));
    json_object_set_new(o, "disconnect_reason", str_or_null(n->disconnect_reason));
    json_object_set_new(o, "first_seen", str_or_null(n->first_seen));
    json_object_set_new(o, "last_seen", str_or_null(n->last_seen));
    json_object_set_new(o, "desired_version",
                        n->desired_version ? json_integer(n->desired_version) : json_null());
    json_object_set_new(o, "deployment_id", str_or_null(n->deployment_id));
    json_object_set_new(o, "sent_version",
                        n->sent_version ? json_integer(n->sent_version) : json_null());
    json_object_set_new(o, "sent_at", str_or_null(n->sent_at));
    json_object_set_new(o, "acked_version",
                        n->acked_version ? json_integer(n->acked_version) : json_null());
    json_object_set_new(o, "acked_at", str_or_null(n->acked_at));
    json_t *nack = json_null();
    if (n->last_nack_at || n->last_nack_error)
        nack =
            json_pack("{s:o,s:o,s:o}", "version",
                      n->last_nack_version ? json_integer(n->last_nack_version) : json_null(),
                      "error", str_or_null(n->last_nack_error), "at", str_or_null(n->last_nack_at));
    json_object_set_new(o, "last_nack", nack);
    json_object_set_new(o, "nack_count", json_integer(n->nack_count));
    json_t *report = json_null();
    if (n->reported)
        report = json_pack("{s:b,s:o,s:o,s:o}", "ready", n->report_ready, "version",
                           str_or_null(n->report_version), "message",
                           str_or_null(n->report_message), "at", str_or_null(n->reported_at));
    json_object_set_new(o, "status_report", report);
    return o;
}

json_t *api_audit_json(const audit_entry *e)
{
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", (json_int_t)e->id, "at", e->at,
                          "user", e->actor, "role", e->actor_role ? e->actor_role : "", "action",
                          e->action, "resource_type", e->resource_type, "resource_id",
                          e->resource_id ? e->resource_id : "", "result", e->result);
    json_object_set_new(o, "status_code",
                        e->status_code ? json_integer(e->status_code) : json_null());
    json_object_set_new(o, "request_id", str_or_null(e->request_id));
    json_object_set_new(o, "source_ip", str_or_null(e->source_ip));
    json_object_set_new(o, "details", json_or_empty(e->details));
    return o;
}

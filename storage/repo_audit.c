/*
 * repo_audit.c — appends to and reads the audit log.
 *
 * Design: "newest first" is id order (ids grow with insertion), so paging is a keyset
 * on id alone and stays stable while new entries arrive; the time filters use the
 * at column. Optional filters are "($n IS NULL OR col = $n)": PostgreSQL plans an
 * unnamed parameterised statement with the actual values, so the NULL branches fold
 * away and the matching index (actor, action or resource, each with id) is used.
 */
#include "storage/repo_audit.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/base/mem.h"
#include "storage/repo_common.h"

#define AUDIT_COLS                                                                                 \
    "id, " REPO_TS("at") ", actor, actor_role, action, resource_type, resource_id, result,"        \
                         " status_code, request_id, host(source_ip), details"

static int required(const char *field, const char *v, sx_err *err)
{
    if (v == NULL || v[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "%s is required", field);
    return 0;
}

static bool valid_ip(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static bool valid_result(const char *r)
{
    return r && (strcmp(r, AUDIT_SUCCESS) == 0 || strcmp(r, AUDIT_DENIED) == 0 ||
                 strcmp(r, AUDIT_FAILED) == 0);
}

/* s, or its capped copy in a with name added to truncated. */
static const char *cap_text(sx_arena *a, const char *s, const char *name, json_t *truncated)
{
    if (s == NULL || strlen(s) <= AUDIT_TEXT_MAX)
        return s;
    json_array_append_new(truncated, json_string(name));
    return sx_arena_strndup(a, s, repo_utf8_len(s, AUDIT_TEXT_MAX));
}

/* Caps the top-level strings of details (the request path, the route, a client's
 * request id...) in place. */
static void cap_details(json_t *details, json_t *truncated)
{
    const char *key;
    json_t *v;
    json_object_foreach(details, key, v)
    {
        if (!json_is_string(v) || json_string_length(v) <= AUDIT_TEXT_MAX)
            continue;
        const char *s = json_string_value(v);
        json_string_setn(v, s, repo_utf8_len(s, AUDIT_TEXT_MAX));
        json_array_append_new(truncated, json_string(key));
    }
}

int audit_repo_append(pg_conn *c, const audit_new *in, long long *id, sx_err *err)
{
    if (id)
        *id = 0;
    int rc;
    if ((rc = required("actor", in->actor, err)) || (rc = required("action", in->action, err)) ||
        (rc = required("resource_type", in->resource_type, err)))
        return rc;
    if (!valid_result(in->result))
        return sx_err_set(err, SX_EINVAL, "result must be success, denied or failed");
    if ((rc = repo_check_object("details", in->details, err)) != 0)
        return rc;
    if (in->source_ip && in->source_ip[0] && !valid_ip(in->source_ip))
        return sx_err_set(err, SX_EINVAL, "source_ip \"%s\" is not an ip address", in->source_ip);
    sx_arena *a = sx_arena_create();
    json_t *details = in->details ? json_copy((json_t *)in->details) : json_object();
    if (in->client_request_id)
        json_object_set_new(details, "client_request_id", json_string(in->client_request_id));
    json_t *truncated = json_array();
    cap_details(details, truncated);
    const char *actor = cap_text(a, in->actor, "actor", truncated);
    const char *resource_id = cap_text(a, in->resource_id, "resource_id", truncated);
    if (json_array_size(truncated) > 0)
        json_object_set(details, "truncated", truncated);
    json_decref(truncated);
    const char *p[] = {
        actor,
        in->actor_role ? in->actor_role : "",
        in->action,
        in->resource_type,
        resource_id ? resource_id : "",
        in->result,
        in->status_code ? repo_i64_param(a, in->status_code) : NULL,
        in->request_id,
        in->source_ip && in->source_ip[0] ? in->source_ip : NULL,
        repo_json_param(a, details),
    };
    json_decref(details);
    rc = repo_query_i64(
        c,
        "INSERT INTO audit_log (actor, actor_role, action, resource_type, resource_id,"
        "   result, status_code, request_id, source_ip, details)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7::int, $8, $9::inet, $10::jsonb)"
        " RETURNING id",
        10, p, id, err);
    sx_arena_destroy(a);
    return rc;
}

static int read_entry(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err)
{
    audit_entry *o = item;
    memset(o, 0, sizeof(*o));
    long long status;
    int rc;
    if ((rc = repo_i64(r, row, 0, 0, &o->id, err)) || (rc = repo_i64(r, row, 8, 0, &status, err)) ||
        (rc = repo_json(a, r, row, 11, &o->details, err)))
        return rc;
    REPO_STRS(a, r, row, 1, &o->at, &o->actor, &o->actor_role, &o->action, &o->resource_type,
              &o->resource_id, &o->result);
    o->status_code = (int)status;
    o->request_id = repo_str(a, r, row, 9);
    o->source_ip = repo_str(a, r, row, 10);
    return 0;
}

/* Newest first: $8 the id to start below, $9 the limit. */
static const repo_page_spec audit_page = {"i", {0}, 8, 9, sizeof(audit_entry), read_entry};

int audit_repo_list(pg_conn *c, const audit_filter *f, sx_arena *a, audit_list *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    audit_filter all = {0};
    if (f == NULL)
        f = &all;
    if (f->result && !valid_result(f->result))
        return sx_err_set(err, SX_EINVAL, "result must be success, denied or failed");
    const char *p[] = {
        f->actor, f->action, f->resource_type, f->resource_id, f->result, f->since, f->until,
        NULL,     NULL,
    };
    int rc = repo_list_query(c, a, &audit_page, f->limit, f->cursor,
                             "SELECT " AUDIT_COLS " FROM audit_log"
                             " WHERE ($1::text IS NULL OR actor = $1)"
                             "   AND ($2::text IS NULL OR action = $2)"
                             "   AND ($3::text IS NULL OR resource_type = $3)"
                             "   AND ($4::text IS NULL OR resource_id = $4)"
                             "   AND ($5::text IS NULL OR result = $5)"
                             "   AND ($6::timestamptz IS NULL OR at >= $6::timestamptz)"
                             "   AND ($7::timestamptz IS NULL OR at < $7::timestamptz)"
                             "   AND ($8::bigint IS NULL OR id < $8::bigint)"
                             " ORDER BY id DESC LIMIT $9::int",
                             9, p, REPO_LIST_REF(out), err);
    if (rc == SX_EINVAL && err && strncmp(err->sqlstate, "22", 2) == 0)
        sx_err_prefix(err, "invalid since or until time");
    return rc;
}

/*
 * repo_audit.h — the append-only audit log (table audit_log): who did what to which
 * resource, from where, with what result.
 *
 * Entries are appended on the caller's connection, normally inside the transaction
 * of the change they describe, so a change and its audit row commit or vanish
 * together. The table refuses UPDATE, DELETE and TRUNCATE; there is no function to
 * change an entry. Each row is chained to the previous row of its writer (the
 * session's application_name, the replica id) by the table's insert trigger; see
 * storage/audit_chain.h.
 *
 * Memory: results live in the caller's sx_arena (storage/repo_common.h). Failures:
 * SX_EINVAL for bad input (message names the field; a malformed source_ip or time is
 * reported by the database as SX_EINVAL too), database errors otherwise.
 */
#ifndef SX_STORAGE_REPO_AUDIT_H
#define SX_STORAGE_REPO_AUDIT_H

#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"
#include "storage/repo_list.h"

/* Longest actor, resource_id and top-level details string stored, in bytes: longer
 * ones are cut at a character boundary and named in details.truncated (an array). */
#define AUDIT_TEXT_MAX 1024

/* The three results an entry can record. */
#define AUDIT_SUCCESS "success"
#define AUDIT_DENIED  "denied"
#define AUDIT_FAILED  "failed"

typedef struct audit_entry {
    long long id;        /* increasing with insertion */
    char *at;            /* RFC 3339 UTC (the writing transaction's start) */
    char *actor;         /* user, or "system" / a replica id for automatic actions */
    char *actor_role;    /* "admin", "operator", "viewer", or "" */
    char *action;        /* "config.create", "deployment.rollback", ... */
    char *resource_type; /* "config", "deployment", "group", ... */
    char *resource_id;   /* "" when none */
    char *result;        /* AUDIT_SUCCESS, AUDIT_DENIED or AUDIT_FAILED */
    int status_code;     /* HTTP status; 0 when none */
    char *request_id;    /* NULL when none */
    char *source_ip;     /* NULL when none */
    json_t *details;     /* object, e.g. {"before_version": 3, "after_version": 4} */
} audit_entry;

/* Input of audit_repo_append; pointers borrowed. */
typedef struct audit_new {
    const char *actor;             /* required */
    const char *actor_role;        /* NULL = "" */
    const char *action;            /* required */
    const char *resource_type;     /* required */
    const char *resource_id;       /* NULL = "" */
    const char *result;            /* required: AUDIT_SUCCESS, AUDIT_DENIED or AUDIT_FAILED */
    int status_code;               /* 0 = none */
    const char *request_id;        /* NULL = none */
    const char *source_ip;         /* IPv4 or IPv6 text; NULL = none */
    const json_t *details;         /* object; NULL = {} */
    const char *client_request_id; /* the X-Request-Id the client sent, stored in details as
                                      "client_request_id"; NULL = none */
} audit_new;

/* Filters of audit_repo_list; NULL fields match everything. */
typedef struct audit_filter {
    const char *actor;
    const char *action;
    const char *resource_type;
    const char *resource_id;
    const char *result;
    const char *since; /* RFC 3339; entries at or after */
    const char *until; /* RFC 3339; entries before */
    int limit;
    const char *cursor;
} audit_filter;

/* A page of audit_entry: newest first. */
REPO_LIST(audit_list, audit_entry);

/* Appends one entry; *id (NULL allowed) receives its id. */
int audit_repo_append(pg_conn *c, const audit_new *in, long long *id, sx_err *err) SX_MUSTCHECK;

/* One page of entries matching f (NULL = all), newest first. */
int audit_repo_list(pg_conn *c, const audit_filter *f, sx_arena *a, audit_list *out,
                    sx_err *err) SX_MUSTCHECK;

#endif

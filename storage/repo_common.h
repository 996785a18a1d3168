/*
 * repo_common.h — what every repository (storage/repo_*.c) shares: reading columns
 * into the caller's arena, passing arrays and JSON as parameters, opaque pagination
 * cursors, and RFC 3339 timestamps.
 *
 * Memory style of all repositories: every struct, string, array and json_t a
 * repository returns lives in the sx_arena the caller passes and is released when
 * that arena is destroyed (json_t values are decref'd by an arena cleanup; take a
 * reference with json_incref to keep one longer). Nothing returned is freed
 * individually; copy what must outlive the arena.
 *
 * Arrays travel as JSON text ("$1::jsonb" unpacked with jsonb_array_elements_text on
 * the server, "to_jsonb(array)" on the way back), so no array literal is ever
 * assembled by hand.
 */
#ifndef SX_STORAGE_REPO_COMMON_H
#define SX_STORAGE_REPO_COMMON_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "server/base/arena.h"
#include "server/base/err.h"
#include "storage/pg_pool.h"

/* SQL expression rendering a timestamptz as RFC 3339 UTC with microseconds,
 * "2024-05-01T12:00:00.123456Z", whatever the session's DateStyle and TimeZone. */
#define REPO_TS(expr) "to_char((" expr ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

#define REPO_LIMIT_DEFAULT 100
#define REPO_LIMIT_MAX     1000

/* A page size: REPO_LIMIT_DEFAULT for limit <= 0, at most REPO_LIMIT_MAX. */
int repo_limit(int limit);

/* Copy of a text column in a (NULL when the value is SQL NULL). */
char *repo_str(sx_arena *a, const PGresult *r, int row, int col);
/* Integer column; dflt when SQL NULL. SX_EINTERNAL when it is not an integer. */
int repo_i64(const PGresult *r, int row, int col, long long dflt, long long *out,
             sx_err *err) SX_MUSTCHECK;
/* Boolean column ("t"); false when SQL NULL. */
bool repo_bool(const PGresult *r, int row, int col);
/* JSON column parsed into a json_t owned by a (NULL when SQL NULL). SX_EINTERNAL
 * when the server sent something that is not JSON. */
int repo_json(sx_arena *a, const PGresult *r, int row, int col, json_t **out,
              sx_err *err) SX_MUSTCHECK;
/* A column holding a JSON array of strings (select to_jsonb(text_array)): the strings
 * and their count, all in a (an empty array gives *out NULL and *n 0). */
int repo_strv(sx_arena *a, const PGresult *r, int row, int col, char ***out, size_t *n,
              sx_err *err) SX_MUSTCHECK;

/* Compact JSON text of j in a, for a $n::jsonb parameter; NULL for NULL j. */
char *repo_json_param(sx_arena *a, const json_t *j);
/* JSON array text of n strings in a (v may be NULL when n is 0). */
char *repo_strv_param(sx_arena *a, const char *const *v, size_t n);
/* Decimal text of v in a. */
char *repo_i64_param(sx_arena *a, long long v);

/* An opaque cursor for key (a JSON array of the last row's sort key): base64url of
 * its compact JSON, in a. */
char *repo_cursor_encode(sx_arena *a, const json_t *key);
/* Decodes a cursor made by repo_cursor_encode into a JSON array of exactly n
 * elements owned by a. SX_EINVAL "invalid cursor" for anything else. */
int repo_cursor_decode(sx_arena *a, const char *cursor, size_t n, json_t **key,
                       sx_err *err) SX_MUSTCHECK;

/* For lists keyed by one integer (versions, ids): *param is NULL without a cursor, else
 * the decimal text of the key a cursor made by repo_cursor_encode holds, in a, ready
 * for a "$n::bigint IS NULL OR key < $n" condition. SX_EINVAL "invalid cursor" for
 * anything else. */
int repo_cursor_i64_param(sx_arena *a, const char *cursor, const char **param,
                          sx_err *err) SX_MUSTCHECK;

/* Sets err to SX_EINVAL "invalid cursor" and returns SX_EINVAL; for a cursor that
 * decodes but holds the wrong kind of key. */
int repo_bad_cursor(sx_err *err);

/* Whether s is a UUID in its canonical text form (any case). */
bool repo_is_uuid(const char *s);

/* Runs a statement on c and gives its affected-row count in *rows (NULL allowed). */
int repo_exec_count(pg_conn *c, const char *sql, int n, const char *const *p, int *rows,
                    sx_err *err) SX_MUSTCHECK;

/* Registers json_decref(j) on a and returns j (NULL allowed). */
json_t *repo_own_json(sx_arena *a, json_t *j);

#endif

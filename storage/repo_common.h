/*
 * repo_common.h — what every repository (storage/repo_*.c) shares: reading columns
 * into the caller's arena, passing arrays and JSON as parameters, opaque pagination
 * cursors, and RFC 3339 timestamps.
 *
 * Memory style of all repositories: every struct, string, array and json_t a
 * repository returns lives in the sx_arena the caller passes and is released when
 * that arena is destroyed (json_t values are decref'd by an arena cleanup; take a
 * reference with json_incref to keep one longer). Nothing returned is freed
 * individually; copy what must outlive the arena. The PGresults of a function that is
 * given an arena belong to that arena too (repo_query), so an early return cannot leak
 * one.
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
/* Copies of the text columns col, col + 1, ... into the string fields listed, in order
 * (see repo_str): REPO_STRS(a, r, row, 2, &o->at, &o->type) reads columns 2 and 3. */
#define REPO_STRS(a, r, row, col, ...)                                                             \
    repo_strs(a, r, row, col, (char **[]){__VA_ARGS__},                                            \
              sizeof((char **[]){__VA_ARGS__}) / sizeof(char **))
void repo_strs(sx_arena *a, const PGresult *r, int row, int col, char **const *fields, size_t n);
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

/* ------------------------------------------------------------------ results */

/* Registers PQclear(r) on a and returns r (NULL allowed): the result lives as long as
 * the arena, so no way out of the caller can leak it. */
PGresult *repo_own_result(sx_arena *a, PGresult *r);

/* pg_exec (see pg_pool.h) whose result, when out is not NULL, belongs to a: the caller
 * never calls PQclear. On failure *out is NULL. Every call keeps its result until a is
 * destroyed, so code that runs queries in a loop gives each round its own arena. */
int repo_query(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
               PGresult **out, sx_err *err) SX_MUSTCHECK;

/* Reads row of r into item (an array element, zeroed), allocating in a. */
typedef int (*repo_row_fn)(sx_arena *a, const PGresult *r, int row, void *item, sx_err *err);

/* Runs a query on c and reads every row of its result (which belongs to a) with read
 * into a new array of item_size-byte items in a. items is the address of the caller's
 * pointer to such items (a T ** for a T of item_size bytes): it receives the array (NULL
 * when there is no row) and *count its length. On failure the array is NULL and *count
 * 0. */
int repo_query_rows(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                    size_t item_size, repo_row_fn read, void *items, size_t *count,
                    sx_err *err) SX_MUSTCHECK;

/* Runs a query on c and reads the first row of its result (which belongs to a), if
 * any, with read into a new item of item_size bytes in a. out is the address of the
 * caller's pointer to such an item (a T ** for a T of item_size bytes): it receives the
 * item, or NULL when there is no row or on failure. */
int repo_query_one(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                   size_t item_size, repo_row_fn read, void *out, sx_err *err) SX_MUSTCHECK;

/* ------------------------------------------------------------------ keyset pages
 *
 * A list query pages by keyset: "ORDER BY key LIMIT limit + 1" after the key of the
 * previous page's last row. The extra row says whether a next page exists; the cursor
 * handed to the client is base64url (RFC 4648 §5, no padding) of the compact JSON array
 * of the last returned row's key, e.g. [42] or ["default","web","<uuid>"]. Clients keep
 * cursors across upgrades, so that text is a wire format: it never changes.
 *
 * A repository describes each list once, in a static repo_page_spec, and keeps only its
 * SQL and its row reader:
 *
 *     static const repo_page_spec by_id = {"i", {0}, 2, 3, sizeof(thing), read_thing};
 *     ...
 *     const char *p[] = {owner, NULL, NULL};  // $2 the key, $3 the limit: filled here
 *     return repo_list_query(c, a, &by_id, limit, cursor,
 *                            "SELECT ... WHERE owner = $1 AND ($2::bigint IS NULL"
 *                            " OR id < $2::bigint) ORDER BY id DESC LIMIT $3::int",
 *                            3, p, REPO_LIST_REF(out), err);
 */

#define REPO_KEY_MAX 3

/* How one list pages. key has one letter per sort-key element: 'i' an integer, 's' a
 * string, 'u' a UUID (text); key_cols[k] is the result column holding element k.
 * key_param is the $n of the statement's first key element (the others follow it),
 * NULL for all of them on the first page; limit_param is the $n of its LIMIT. */
typedef struct repo_page_spec {
    const char *key;
    int key_cols[REPO_KEY_MAX];
    int key_param;
    int limit_param;
    size_t item_size;
    repo_row_fn read;
} repo_page_spec;

/* A page read: count items of the spec's item_size bytes, and the cursor of the next
 * page (NULL on the last page), all in the arena. */
typedef struct repo_page {
    void *items;
    size_t count;
    char *next_cursor;
} repo_page;

/* The fields of a list struct (REPO_LIST) a page goes to: items is the address of its
 * items pointer (a T ** for the spec's item type T). */
typedef struct repo_list_ref {
    void *items;
    size_t *count;
    char **next_cursor;
} repo_list_ref;
#define REPO_LIST_REF(list) ((repo_list_ref){&(list)->items, &(list)->count, &(list)->next_cursor})

/* Copies page into the list l names. */
void repo_list_store(repo_list_ref l, const repo_page *page);

/* The n parameters of a page of limit rows (see repo_limit) after cursor (NULL: the
 * first page): a copy of p in a whose key and limit parameters are set. SX_EINVAL
 * "invalid cursor" for a cursor that is not the next_cursor of a list with this kind
 * of key. */
int repo_page_params(sx_arena *a, const repo_page_spec *s, int limit, const char *cursor, int n,
                     const char *const *p, const char ***params, sx_err *err) SX_MUSTCHECK;
/* Reads the first limit rows of r, run with repo_page_params' parameters, into *out,
 * and the next cursor when r holds one more. On failure *out is zeroed and the row
 * reader's code is returned. */
int repo_page_read(sx_arena *a, const repo_page_spec *s, int limit, const PGresult *r,
                   repo_page *out, sx_err *err) SX_MUSTCHECK;
/* One page of a list on c: repo_page_params, repo_query (the result belongs to a), then
 * repo_page_read. On failure *out is zeroed. */
int repo_page_query(pg_conn *c, sx_arena *a, const repo_page_spec *s, int limit, const char *cursor,
                    const char *sql, int n, const char *const *p, repo_page *out,
                    sx_err *err) SX_MUSTCHECK;

/* repo_page_query straight into the list l names (REPO_LIST_REF(out)): the list is
 * zeroed on failure. */
int repo_list_query(pg_conn *c, sx_arena *a, const repo_page_spec *s, int limit, const char *cursor,
                    const char *sql, int n, const char *const *p, repo_list_ref l,
                    sx_err *err) SX_MUSTCHECK;

/* 0 when j is NULL or a JSON object, else SX_EINVAL "<what> must be a json object". */
int repo_check_object(const char *what, const json_t *j, sx_err *err) SX_MUSTCHECK;

/* The length of s cut to at most max bytes, at a UTF-8 character boundary. */
size_t repo_utf8_len(const char *s, size_t max);

/* Whether s is a UUID in its canonical text form (any case). */
bool repo_is_uuid(const char *s);

/* Runs a statement on c; *out (NULL allowed) receives the integer in the first column
 * of its first row (0 for SQL NULL) and is left as it is when there is no row. */
int repo_query_i64(pg_conn *c, const char *sql, int n, const char *const *p, long long *out,
                   sx_err *err) SX_MUSTCHECK;

/* Runs a statement on c and gives its affected-row count in *rows (NULL allowed). */
int repo_exec_count(pg_conn *c, const char *sql, int n, const char *const *p, int *rows,
                    sx_err *err) SX_MUSTCHECK;

/* Runs a statement on c that must change exactly one row: SX_ENOTFOUND with the message
 * of fmt when it changed none (or more than one). */
int repo_exec_one(pg_conn *c, const char *sql, int n, const char *const *p, sx_err *err,
                  const char *fmt, ...) SX_PRINTF(6, 7) SX_MUSTCHECK;

/* Runs a DELETE of rows older than an age: sql's only parameter, $1, is older_than_ms
 * (at least 0, else SX_EINVAL naming what); *deleted (NULL allowed) gets the count. */
int repo_prune(pg_conn *c, const char *sql, long long older_than_ms, const char *what,
               long long *deleted, sx_err *err) SX_MUSTCHECK;

/* Registers json_decref(j) on a and returns j (NULL allowed). */
json_t *repo_own_json(sx_arena *a, json_t *j);

#endif

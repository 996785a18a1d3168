/*
 * repo_common.c — helpers shared by the repositories (see repo_common.h).
 *
 * Cursors are base64url (RFC 4648 §5, no padding) of a compact JSON array holding the
 * sort key of the last row returned; they are opaque to clients but not secret, and a
 * tampered cursor can at worst start a page elsewhere. Base64 comes from OpenSSL's
 * EVP_EncodeBlock / EVP_DecodeBlock; only the alphabet swap is done here.
 */
#include "storage/repo_common.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "server/base/mem.h"

int repo_limit(int limit)
{
    if (limit <= 0)
        return REPO_LIMIT_DEFAULT;
    return limit > REPO_LIMIT_MAX ? REPO_LIMIT_MAX : limit;
}

char *repo_str(sx_arena *a, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return NULL;
    return sx_arena_strndup(a, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}

void repo_strs(sx_arena *a, const PGresult *r, int row, int col, char **const *fields, size_t n)
{
    for (size_t i = 0; i < n; i++)
        *fields[i] = repo_str(a, r, row, col + (int)i);
}

int repo_i64(const PGresult *r, int row, int col, long long dflt, long long *out, sx_err *err)
{
    if (PQgetisnull(r, row, col)) {
        *out = dflt;
        return 0;
    }
    const char *s = PQgetvalue(r, row, col);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return sx_err_set(err, SX_EINTERNAL, "column %s is not an integer: \"%s\"", PQfname(r, col),
                          s);
    *out = v;
    return 0;
}

bool repo_bool(const PGresult *r, int row, int col)
{
    return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] == 't';
}

static void decref_cb(void *p)
{
    json_decref((json_t *)p);
}

json_t *repo_own_json(sx_arena *a, json_t *j)
{
    if (j)
        sx_arena_defer(a, decref_cb, j);
    return j;
}

int repo_json(sx_arena *a, const PGresult *r, int row, int col, json_t **out, sx_err *err)
{
    *out = NULL;
    if (PQgetisnull(r, row, col))
        return 0;
    json_error_t je;
    json_t *j =
        json_loadb(PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col), JSON_DECODE_ANY, &je);
    if (j == NULL)
        return sx_err_set(err, SX_EINTERNAL, "column %s is not valid json: %s", PQfname(r, col),
                          je.text);
    *out = repo_own_json(a, j);
    return 0;
}

int repo_strv(sx_arena *a, const PGresult *r, int row, int col, char ***out, size_t *n, sx_err *err)
{
    *out = NULL;
    *n = 0;
    json_t *j;
    int rc = repo_json(a, r, row, col, &j, err);
    if (rc || j == NULL)
        return rc;
    if (!json_is_array(j))
        return sx_err_set(err, SX_EINTERNAL, "column %s is not a json array", PQfname(r, col));
    size_t count = json_array_size(j);
    if (count == 0)
        return 0;
    char **v = sx_arena_alloc(a, count * sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        const char *s = json_string_value(json_array_get(j, i));
        if (s == NULL)
            return sx_err_set(err, SX_EINTERNAL, "column %s holds a non-string element",
                              PQfname(r, col));
        v[i] = sx_arena_strdup(a, s);
    }
    *out = v;
    *n = count;
    return 0;
}

char *repo_json_param(sx_arena *a, const json_t *j)
{
    if (j == NULL)
        return NULL;
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        abort(); /* only on out-of-memory: the arena's allocators abort likewise */
    char *copy = sx_arena_strdup(a, s);
    free(s);
    return copy;
}

char *repo_strv_param(sx_arena *a, const char *const *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(v[i] ? v[i] : ""));
    char *s = repo_json_param(a, arr);
    json_decref(arr);
    return s;
}

char *repo_i64_param(sx_arena *a, long long v)
{
    return sx_arena_printf(a, "%lld", v);
}

static char *cursor_encode(sx_arena *a, const json_t *key)
{
    char *text = repo_json_param(a, key);
    size_t n = strlen(text);
    unsigned char *out = sx_arena_alloc(a, 4 * ((n + 2) / 3) + 1);
    int len = EVP_EncodeBlock(out, (const unsigned char *)text, (int)n);
    while (len > 0 && out[len - 1] == '=')
        len--;
    out[len] = '\0';
    for (int i = 0; i < len; i++) {
        if (out[i] == '+')
            out[i] = '-';
        else if (out[i] == '/')
            out[i] = '_';
    }
    return (char *)out;
}

static int bad_cursor(sx_err *err)
{
    sx_err_set(err, SX_EINVAL, "invalid cursor");
    sx_err_detail(err, "A cursor must be the next_cursor value of a previous page of the "
                       "same list.");
    return SX_EINVAL;
}

static int cursor_decode(sx_arena *a, const char *cursor, size_t n, json_t **key, sx_err *err)
{
    *key = NULL;
    size_t len = cursor ? strlen(cursor) : 0;
    if (len == 0 || len > 4096 || len % 4 == 1)
        return bad_cursor(err);
    size_t padded = (len + 3) / 4 * 4;
    unsigned char *in = sx_arena_alloc(a, padded + 1);
    for (size_t i = 0; i < len; i++) {
        char c = cursor[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (!isalnum((unsigned char)c))
            return bad_cursor(err);
        in[i] = (unsigned char)c;
    }
    for (size_t i = len; i < padded; i++)
        in[i] = '=';
    unsigned char *out = sx_arena_alloc(a, padded / 4 * 3 + 1);
    int m = EVP_DecodeBlock(out, in, (int)padded);
    if (m < 0)
        return bad_cursor(err);
    m -= (int)(padded - len); /* EVP_DecodeBlock counts the padding as zero bytes */
    json_t *j = json_loadb((const char *)out, (size_t)m, 0, NULL);
    if (j == NULL || !json_is_array(j) || json_array_size(j) != n) {
        json_decref(j);
        return bad_cursor(err);
    }
    *key = repo_own_json(a, j);
    return 0;
}

int repo_check_object(const char *what, const json_t *j, sx_err *err)
{
    if (j && !json_is_object(j))
        return sx_err_set(err, SX_EINVAL, "%s must be a json object", what);
    return 0;
}

size_t repo_utf8_len(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

bool repo_is_uuid(const char *s)
{
    if (s == NULL || strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
        } else if (!isxdigit((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

int repo_query_i64(pg_conn *c, const char *sql, int n, const char *const *p, long long *out,
                   sx_err *err)
{
    PGresult *r;
    int rc = pg_exec(c, sql, n, p, &r, err);
    if (rc)
        return rc;
    long long v = 0;
    if (PQntuples(r) > 0 && (rc = repo_i64(r, 0, 0, 0, &v, err)) == 0 && out)
        *out = v;
    PQclear(r);
    return rc;
}

int repo_exec_count(pg_conn *c, const char *sql, int n, const char *const *p, int *rows,
                    sx_err *err)
{
    PGresult *r;
    int rc = pg_exec(c, sql, n, p, &r, err);
    if (rc)
        return rc;
    if (rows)
        *rows = (int)strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

int repo_exec_one(pg_conn *c, const char *sql, int n, const char *const *p, sx_err *err,
                  const char *fmt, ...)
{
    int rows = 0;
    int rc = repo_exec_count(c, sql, n, p, &rows, err);
    if (rc == 0 && rows != 1) {
        va_list ap;
        va_start(ap, fmt);
        rc = sx_err_vset(err, SX_ENOTFOUND, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int repo_prune(pg_conn *c, const char *sql, long long older_than_ms, const char *what,
               long long *deleted, sx_err *err)
{
    if (deleted)
        *deleted = 0;
    if (older_than_ms < 0)
        return sx_err_set(err, SX_EINVAL, "%s must not be negative", what);
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", older_than_ms);
    const char *p[] = {ms};
    int rows = 0;
    int rc = repo_exec_count(c, sql, 1, p, &rows, err);
    if (rc == 0 && deleted)
        *deleted = rows;
    return rc;
}

static void clear_cb(void *p)
{
    PQclear((PGresult *)p);
}

PGresult *repo_own_result(sx_arena *a, PGresult *r)
{
    return sx_arena_defer(a, clear_cb, r);
}

int repo_query(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
               PGresult **out, sx_err *err)
{
    PGresult *r = NULL;
    int rc = pg_exec(c, sql, n, p, out ? &r : NULL, err);
    if (out)
        *out = repo_own_result(a, r);
    return rc;
}

/* Reads the first n rows of r into a new array of item_size-byte items in a. */
static int read_rows(sx_arena *a, const PGresult *r, size_t n, size_t item_size, repo_row_fn read,
                     void **items, sx_err *err)
{
    unsigned char *v = n ? sx_arena_alloc(a, n * item_size) : NULL;
    *items = NULL;
    for (size_t i = 0; i < n; i++) {
        int rc = read(a, r, (int)i, v + i * item_size, err);
        if (rc)
            return rc;
    }
    *items = v;
    return 0;
}

int repo_query_rows(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                    size_t item_size, repo_row_fn read, void *items, size_t *count, sx_err *err)
{
    void *v = NULL;
    *count = 0;
    PGresult *r;
    int rc = repo_query(c, a, sql, n, p, &r, err);
    if (rc == 0 && (rc = read_rows(a, r, (size_t)PQntuples(r), item_size, read, &v, err)) == 0)
        *count = (size_t)PQntuples(r);
    else
        v = NULL;
    memcpy(items, &v, sizeof(v));
    return rc;
}

int repo_query_one(pg_conn *c, sx_arena *a, const char *sql, int n, const char *const *p,
                   size_t item_size, repo_row_fn read, void *out, sx_err *err)
{
    void *v = NULL;
    PGresult *r;
    int rc = repo_query(c, a, sql, n, p, &r, err);
    if (rc == 0 && PQntuples(r) > 0) {
        v = sx_arena_alloc(a, item_size);
        if ((rc = read(a, r, 0, v, err)) != 0)
            v = NULL;
    }
    memcpy(out, &v, sizeof(v));
    return rc;
}

/* ------------------------------------------------------------------ keyset pages */

int repo_page_params(sx_arena *a, const repo_page_spec *s, int limit, const char *cursor, int n,
                     const char *const *p, const char ***params, sx_err *err)
{
    size_t nkey = strlen(s->key);
    const char **v = sx_arena_alloc(a, (size_t)n * sizeof(*v));
    for (int i = 0; i < n; i++)
        v[i] = p[i];
    const char **after = v + s->key_param - 1;
    for (size_t k = 0; k < nkey; k++)
        after[k] = NULL;
    v[s->limit_param - 1] = repo_i64_param(a, repo_limit(limit) + 1);
    *params = v;
    if (cursor == NULL)
        return 0;
    json_t *key;
    int rc = cursor_decode(a, cursor, nkey, &key, err);
    if (rc)
        return rc;
    for (size_t k = 0; k < nkey; k++) {
        json_t *e = json_array_get(key, k);
        const char *text = json_string_value(e);
        if (s->key[k] == 'i' && json_is_integer(e))
            after[k] = repo_i64_param(a, json_integer_value(e));
        else if ((s->key[k] == 's' && text) || (s->key[k] == 'u' && repo_is_uuid(text)))
            after[k] = text;
        else
            return bad_cursor(err);
    }
    return 0;
}

/* The cursor after row of r: its key columns as a JSON array, encoded. */
static int row_cursor(sx_arena *a, const PGresult *r, int row, const repo_page_spec *s, char **out,
                      sx_err *err)
{
    json_t *key = repo_own_json(a, json_array());
    for (size_t k = 0; s->key[k]; k++) {
        int col = s->key_cols[k];
        if (s->key[k] == 'i') {
            long long v;
            int rc = repo_i64(r, row, col, 0, &v, err);
            if (rc)
                return rc;
            json_array_append_new(key, json_integer((json_int_t)v));
        } else {
            json_array_append_new(key, json_string(PQgetvalue(r, row, col)));
        }
    }
    *out = cursor_encode(a, key);
    return 0;
}

int repo_page_read(sx_arena *a, const repo_page_spec *s, int limit, const PGresult *r,
                   repo_page *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    limit = repo_limit(limit);
    int rows = PQntuples(r);
    size_t n = rows > limit ? (size_t)limit : (size_t)rows;
    void *items;
    int rc = read_rows(a, r, n, s->item_size, s->read, &items, err);
    if (rc == 0 && rows > limit)
        rc = row_cursor(a, r, (int)n - 1, s, &out->next_cursor, err);
    if (rc) {
        memset(out, 0, sizeof(*out));
        return rc;
    }
    out->items = items;
    out->count = n;
    return 0;
}

int repo_page_query(pg_conn *c, sx_arena *a, const repo_page_spec *s, int limit, const char *cursor,
                    const char *sql, int n, const char *const *p, repo_page *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    const char **params;
    PGresult *r;
    int rc = repo_page_params(a, s, limit, cursor, n, p, &params, err);
    if (rc == 0 && (rc = repo_query(c, a, sql, n, params, &r, err)) == 0)
        rc = repo_page_read(a, s, limit, r, out, err);
    return rc;
}

void repo_list_store(repo_list_ref l, const repo_page *page)
{
    memcpy(l.items, &page->items, sizeof(page->items));
    *l.count = page->count;
    *l.next_cursor = page->next_cursor;
}

int repo_list_query(pg_conn *c, sx_arena *a, const repo_page_spec *s, int limit, const char *cursor,
                    const char *sql, int n, const char *const *p, repo_list_ref l, sx_err *err)
{
    repo_page pg;
    int rc = repo_page_query(c, a, s, limit, cursor, sql, n, p, &pg, err);
    repo_list_store(l, &pg);
    return rc;
}

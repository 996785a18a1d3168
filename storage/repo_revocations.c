/*
 * repo_revocations.c — revoked bearer tokens in PostgreSQL (see repo_revocations.h).
 *
 * The list is small (a revocation is an operator's act), so a replica loads it whole;
 * subject rows are reduced to each subject's latest time on the server.
 */
#include "storage/repo_revocations.h"

#include <string.h>

#include "storage/pg_listener.h"
#include "storage/repo_common.h"

typedef struct add_ctx {
    const char *jti, *subject, *before;
    sx_arena *a;
    revoke_added *out;
} add_ctx;

static int add_tx(pg_conn *c, void *vctx, sx_err *err)
{
    add_ctx *x = vctx;
    const char *p[3] = {x->jti, x->subject, x->before};
    PGresult *r = NULL;
    int rc = repo_query(c, x->a,
                        "INSERT INTO token_revocations (jti, subject, issued_before)"
                        " VALUES ($1, $2, CASE WHEN $2::text IS NULL THEN NULL"
                        "                      ELSE COALESCE($3::timestamptz, now()) END)"
                        " RETURNING id, " REPO_TS("issued_before"),
                        3, p, &r, err);
    if (rc != 0)
        return rc;
    long long id = 0;
    if ((rc = repo_i64(r, 0, 0, 0, &id, err)) != 0)
        return rc;
    x->out->id = id;
    x->out->issued_before = repo_str(x->a, r, 0, 1);
    return pg_notify(c, REVOKE_NOTIFY_CHANNEL, "", err);
}

static bool text_ok(const char *s)
{
    return s == NULL || (*s != '\0' && strlen(s) <= REVOKE_MAX_TEXT);
}

int revoke_repo_add(pg_pool *p, const char *jti, const char *subject, const char *before,
                    sx_arena *a, revoke_added *out, sx_err *err)
{
    memset(out, 0, sizeof(*out));
    if ((jti == NULL) == (subject == NULL))
        return sx_err_set(err, SX_EINVAL, "a revocation names either a token id or a user");
    if (jti && before)
        return sx_err_set(err, SX_EINVAL, "a time applies to a user's tokens, not to a token id");
    if (!text_ok(jti) || !text_ok(subject))
        return sx_err_set(err, SX_EINVAL, "a token id or user must be 1 to %d bytes",
                          REVOKE_MAX_TEXT);
    add_ctx x = {.jti = jti, .subject = subject, .before = before, .a = a, .out = out};
    int rc = pg_tx(p, add_tx, &x, err);
    /* 22007/22008: the time is not one PostgreSQL reads. */
    if (rc == SX_EINVAL && before &&
        (strcmp(err->sqlstate, "22007") == 0 || strcmp(err->sqlstate, "22008") == 0)) {
        sx_err_set(err, SX_EINVAL, "invalid time \"%.64s\"", before);
        sx_err_hint(err, "Give an RFC 3339 time such as 2026-01-31T12:00:00Z.");
    }
    return rc;
}

int revoke_repo_load(pg_pool *p, sx_arena *a, revoke_row **rows, size_t *n, sx_err *err)
{
    *rows = NULL;
    *n = 0;
    pg_conn *c = NULL;
    int rc = pg_acquire(p, &c, err);
    if (rc != 0)
        return rc;
    PGresult *r = NULL;
    rc = repo_query(c, a,
                    "SELECT jti, NULL::text, NULL::bigint FROM token_revocations"
                    " WHERE jti IS NOT NULL"
                    " UNION ALL"
                    " SELECT NULL, subject, floor(extract(epoch FROM max(issued_before)))::bigint"
                    " FROM token_revocations WHERE subject IS NOT NULL GROUP BY subject",
                    0, NULL, &r, err);
    pg_release(p, c);
    if (rc != 0)
        return rc;
    int nr = PQntuples(r);
    revoke_row *v = nr ? sx_arena_alloc(a, (size_t)nr * sizeof(*v)) : NULL;
    for (int i = 0; i < nr; i++) {
        long long before = 0;
        if ((rc = repo_i64(r, i, 2, 0, &before, err)) != 0)
            return rc;
        v[i] = (revoke_row){
            .jti = repo_str(a, r, i, 0), .subject = repo_str(a, r, i, 1), .issued_before = before};
    }
    *rows = v;
    *n = (size_t)nr;
    return 0;
}

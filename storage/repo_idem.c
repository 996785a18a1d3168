/*
 * repo_idem.c — the stored answers of requests sent with an idempotency key.
 *
 * Design: the claim is one INSERT ... ON CONFLICT on the primary key (subject, key).
 * A fresh key inserts a row whose status and response are NULL until the same
 * transaction answers it; a key older than the TTL is taken over by the DO UPDATE, whose
 * WHERE keeps a live key untouched. Either way RETURNING gives a row only when the key
 * is now this transaction's. When it gives none, the key is held by a committed answer,
 * which the following SELECT reads (READ COMMITTED: each statement sees what committed
 * before it began, and the INSERT waited for the holder to end). An uncommitted claim
 * of another transaction is never visible, so no reader ever sees a NULL answer.
 */
#include "storage/repo_idem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/repo_common.h"

#define IDEM_COLS "request_hash, status, response, " REPO_TS("created_at")

bool idem_repo_key_valid(const char *key)
{
    if (key == NULL)
        return false;
    size_t n = 0;
    for (; key[n]; n++)
        if ((unsigned char)key[n] < 0x20 || (unsigned char)key[n] > 0x7e || n >= IDEM_KEY_MAX)
            return false;
    return n > 0;
}

static bool hash_valid(const char *h)
{
    if (h == NULL || strlen(h) != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return false;
    return true;
}

static int check_key(const char *subject, const char *key, sx_err *err)
{
    if (subject == NULL || subject[0] == '\0')
        return sx_err_set(err, SX_EINVAL, "an idempotency key needs a subject");
    if (!idem_repo_key_valid(key))
        return sx_err_set(err, SX_EINVAL,
                          "an idempotency key is 1 to %d printable ASCII characters", IDEM_KEY_MAX);
    return 0;
}

/* The answer in row 0 of r into a new record in a; NULL when r has no row. */
static int read_record(sx_arena *a, const PGresult *r, idem_record **out, sx_err *err)
{
    *out = NULL;
    if (PQntuples(r) == 0)
        return 0;
    idem_record *rec = sx_arena_alloc(a, sizeof(*rec));
    long long status;
    int rc = repo_i64(r, 0, 1, 0, &status, err);
    if (rc)
        return rc;
    rec->status = (int)status;
    REPO_STRS(a, r, 0, 0, &rec->request_hash);
    REPO_STRS(a, r, 0, 2, &rec->response, &rec->created_at);
    if (rec->response == NULL)
        return sx_err_set(err, SX_EINTERNAL, "idempotency key holds no answer");
    *out = rec;
    return 0;
}

int idem_repo_claim(pg_conn *c, const char *subject, const char *key, const char *request_hash,
                    long long ttl_ms, sx_arena *a, idem_record **existing, sx_err *err)
{
    *existing = NULL;
    int rc = check_key(subject, key, err);
    if (rc)
        return rc;
    if (!hash_valid(request_hash))
        return sx_err_set(err, SX_EINVAL, "a request hash is 64 lowercase hex digits");
    if (ttl_ms < 0)
        return sx_err_set(err, SX_EINVAL, "the idempotency key ttl must not be negative");
    const char *p[] = {subject, key, request_hash, repo_i64_param(a, ttl_ms)};
    PGresult *r;
    rc = repo_query(c, a,
                    "INSERT INTO idempotency_keys AS k (subject, key, request_hash)"
                    " VALUES ($1, $2, $3)"
                    " ON CONFLICT (subject, key) DO UPDATE"
                    "   SET request_hash = EXCLUDED.request_hash, status = NULL,"
                    "       response = NULL, created_at = now()"
                    "   WHERE k.created_at < now() - $4::bigint * interval '1 millisecond'"
                    " RETURNING 1",
                    4, p, &r, err);
    if (rc || PQntuples(r) == 1)
        return rc;
    rc = repo_query(c, a,
                    "SELECT " IDEM_COLS " FROM idempotency_keys"
                    " WHERE subject = $1 AND key = $2",
                    2, p, &r, err);
    if (rc == 0 && (rc = read_record(a, r, existing, err)) == 0 && *existing == NULL)
        rc = sx_err_set(err, SX_EINTERNAL, "idempotency key vanished while it was claimed");
    return rc;
}

int idem_repo_answer(pg_conn *c, const char *subject, const char *key, int status, const char *body,
                     sx_err *err)
{
    int rc = check_key(subject, key, err);
    if (rc)
        return rc;
    if (status < 100 || status > 599 || body == NULL)
        return sx_err_set(err, SX_EINVAL, "an answer needs a status of 100..599 and a body");
    char st[16];
    snprintf(st, sizeof(st), "%d", status);
    const char *p[] = {subject, key, st, body};
    return repo_exec_one(c,
                         "UPDATE idempotency_keys SET status = $3::int, response = $4"
                         " WHERE subject = $1 AND key = $2 AND status IS NULL",
                         4, p, err, "the transaction holds no claim of this idempotency key");
}

int idem_repo_get(pg_conn *c, const char *subject, const char *key, long long ttl_ms, sx_arena *a,
                  idem_record **out, sx_err *err)
{
    *out = NULL;
    int rc = check_key(subject, key, err);
    if (rc)
        return rc;
    const char *p[] = {subject, key, repo_i64_param(a, ttl_ms < 0 ? 0 : ttl_ms)};
    PGresult *r;
    rc = repo_query(c, a,
                    "SELECT " IDEM_COLS " FROM idempotency_keys"
                    " WHERE subject = $1 AND key = $2 AND status IS NOT NULL"
                    "   AND created_at >= now() - $3::bigint * interval '1 millisecond'",
                    3, p, &r, err);
    return rc ? rc : read_record(a, r, out, err);
}

int idem_repo_prune(pg_conn *c, long long older_than_ms, long long *deleted, sx_err *err)
{
    return repo_prune(c,
                      "DELETE FROM idempotency_keys"
                      " WHERE created_at < now() - $1::bigint * interval '1 millisecond'",
                      older_than_ms, "the idempotency key ttl", deleted, err);
}

/*
 * repo_certs.c — the managed serving certificate (see repo_certs.h).
 *
 * Design: one row per name. Insert-if-absent and replace-if-unchanged are single
 * statements, so concurrent replicas need no lock: the database picks one winner.
 */
#include "storage/repo_certs.h"

#include <stdio.h>

#include "storage/repo_common.h"

int cert_repo_get(pg_conn *c, const char *name, sx_arena *a, cert_record *out, bool *found,
                  sx_err *err)
{
    *found = false;
    const char *p[] = {name};
    PGresult *r = NULL;
    int rc = pg_exec(c,
                     "SELECT name, cert_pem, key_pem, serial,"
                     "   floor(extract(epoch FROM not_after))::bigint, issued_by"
                     " FROM serving_certificates WHERE name = $1",
                     1, p, &r, err);
    if (rc != 0)
        return rc;
    if (PQntuples(r) == 1) {
        out->name = repo_str(a, r, 0, 0);
        out->cert_pem = repo_str(a, r, 0, 1);
        out->key_pem = repo_str(a, r, 0, 2);
        out->serial = repo_str(a, r, 0, 3);
        long long na = 0;
        rc = repo_i64(r, 0, 4, 0, &na, err);
        out->not_after = na;
        out->issued_by = repo_str(a, r, 0, 5);
        *found = rc == 0;
    }
    PQclear(r);
    return rc;
}

static int check(const cert_record *r, sx_err *err)
{
    if (r->name == NULL || r->cert_pem == NULL || r->key_pem == NULL || r->serial == NULL ||
        r->issued_by == NULL)
        return sx_err_set(err, SX_EINVAL, "a serving certificate needs every field");
    return 0;
}

int cert_repo_insert(pg_conn *c, const cert_record *r, bool *inserted, sx_err *err)
{
    *inserted = false;
    int rc = check(r, err);
    if (rc != 0)
        return rc;
    char na[24];
    snprintf(na, sizeof(na), "%lld", r->not_after);
    const char *p[] = {r->name, r->cert_pem, r->key_pem, r->serial, na, r->issued_by};
    int rows = 0;
    rc = repo_exec_count(c,
                         "INSERT INTO serving_certificates"
                         "   (name, cert_pem, key_pem, serial, not_after, issued_by)"
                         " VALUES ($1, $2, $3, $4, to_timestamp($5::bigint), $6)"
                         " ON CONFLICT (name) DO NOTHING",
                         6, p, &rows, err);
    *inserted = rc == 0 && rows == 1;
    return rc;
}

int cert_repo_replace(pg_conn *c, const cert_record *r, const char *old_serial, bool *replaced,
                      sx_err *err)
{
    *replaced = false;
    int rc = check(r, err);
    if (rc != 0)
        return rc;
    char na[24];
    snprintf(na, sizeof(na), "%lld", r->not_after);
    const char *p[] = {r->name, r->cert_pem, r->key_pem, r->serial, na, r->issued_by, old_serial};
    int rows = 0;
    rc = repo_exec_count(c,
                         "UPDATE serving_certificates SET cert_pem = $2, key_pem = $3,"
                         "   serial = $4, not_after = to_timestamp($5::bigint), issued_by = $6,"
                         "   issued_at = now()"
                         " WHERE name = $1 AND serial = $7",
                         7, p, &rows, err);
    *replaced = rc == 0 && rows == 1;
    return rc;
}
